"""The API server's syntax rules (module_utils/model/k8s_syntax.py) as tables, and the preflight checks
built on them. The rules follow apimachinery's validation (IsQualifiedName, IsValidLabelValue,
IsDNS1123Label/Subdomain) and core taint validation; no API server runs here, so the accepted and
refused values below are the ones those functions accept and refuse."""
import glob
import os

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.model import k8s_syntax as ks
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.node_names import node_names
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("value", [
    "app", "nvidia.com/gpu", "example.com/team_a", "a.b-c/x.y_z", "A", "x" * 63, "a" * 253 + "/b",
    "node-role.kubernetes.io/gpu", "9x",
])
def test_qualified_names_accepted(value):
    assert ks.qualified_name_error(value) is None


@pytest.mark.parametrize("value,reason", [
    ("", "empty name part"),
    ("a/b/c", "more than one '/'"),
    ("/a", "empty prefix"),
    ("a/", "empty name part"),
    ("Example.com/a", "prefix 'Example.com' is not a DNS subdomain"),
    ("a_b.com/x", "is not a DNS subdomain"),
    ("x" * 64, "64 characters long"),
    ("a" * 254 + "/b", "at most 253"),
    ("-a", "is not allowed"),
    ("a-", "is not allowed"),
    ("a b", "is not allowed"),
    ("ä", "is not allowed"),
    (None, "must be a string, got null"),
    (3, "must be a string, got a number"),
])
def test_qualified_names_refused(value, reason):
    assert reason in ks.qualified_name_error(value)


@pytest.mark.parametrize("value", ["", "a", "A.b_c-D", "x" * 63, "1"])
def test_label_values_accepted(value):
    assert ks.label_value_error(value) is None


@pytest.mark.parametrize("value,reason", [
    ("x" * 64, "at most 63"), ("a b", "not a label value"), ("a/b", "not a label value"),
    ("-a", "not a label value"), ("a.", "not a label value"),
    (None, "got null"), (True, "got a boolean"), (1, "got a number"), ({}, "got a mapping"), ([], "got a list"),
])
def test_label_values_refused(value, reason):
    assert reason in ks.label_value_error(value)


@pytest.mark.parametrize("value,ok", [
    ("gpu-operator", True), ("a", True), ("x" * 63, True), ("x" * 64, False), ("A", False), ("a.b", False),
    ("a_b", False), ("-a", False), ("a-", False), ("", False), (None, False),
])
def test_dns_label(value, ok):
    assert (ks.dns_label_error(value) is None) is ok


@pytest.mark.parametrize("value,ok", [
    ("gpu-01", True), ("gpu-01.example.com", True), ("10.0.0.5", True), ("a" * 253, True), ("a" * 254, False),
    ("GPU-01", False), ("gpu_01", False), ("gpu..01", False), (".gpu", False), ("gpu-.x", False),
])
def test_node_names(value, ok):
    """Preflight refuses Node names with the mapping the apply path uses (node_ownership.node_names)."""
    try:
        node_names(["host-1"], {"host-1": {"gpufleet_node_name": value}})
        accepted = True
    except GpufleetError:
        accepted = False
    assert accepted is ok


@pytest.mark.parametrize("key,self_managed,refused", [
    ("gpufleet.io/pool", False, "set by gpufleet itself"),
    ("nvidia.com/device-plugin.config", True, "set by gpufleet itself"),
    ("kubernetes.io/hostname", True, "reserved prefix kubernetes.io/"),
    ("topology.kubernetes.io/zone", True, "reserved prefix topology.kubernetes.io/"),
    ("k8s.io/x", True, "reserved prefix k8s.io/"),
    ("x.k8s.io/y", True, "reserved prefix x.k8s.io/"),
    ("karpenter.sh/nodepool", False, "reserved prefix karpenter.sh/"),
    ("karpenter.k8s.aws/instance-family", False, "reserved prefix karpenter.k8s.aws/"),
    ("cloud.google.com/gke-spot", False, "reserved prefix cloud.google.com/"),
    ("node-role.kubernetes.io/gpu", False, "reserved prefix node-role.kubernetes.io/"),
    ("node-role.kubernetes.io/gpu", True, None),
    ("node.kubernetes.io/instance-group", False, None),
    ("node-restriction.kubernetes.io/team", False, None),
    ("gpufleet.io/workload", False, None),
    ("example.com/team", False, None),
    ("team", False, None),
    ("mykubernetes.io/x", False, None),
])
def test_reserved_labels(key, self_managed, refused):
    reason = ks.reserved_label_error(key, self_managed)
    if refused is None:
        assert reason is None
    else:
        assert refused in reason


@pytest.mark.parametrize("name,platform,ok", [
    ("ml-prod", "eks", True), ("ML_prod1", "eks", True), ("ml.prod", "eks", False), ("-ml", "eks", False),
    ("c" * 46, "eks", True), ("c" * 47, "eks", False),
    ("research", "gke", True), ("Research", "gke", False), ("r" * 41, "gke", False), ("1abc", "gke", False),
    ("example", "kubeadm", True), ("team/prod", "kubeadm", False), ("", "kubeadm", False), ("a b", "k3s", False),
    (None, "k3s", False),
])
def test_cluster_names(name, platform, ok):
    assert (ks.cluster_name_error(name, platform) is None) is ok


def test_long_eks_cluster_name_is_fine_with_an_explicit_role():
    assert ks.cluster_name_error("c" * 60, "eks", {"eks_node_role": "MyRole"}) is None


@pytest.mark.parametrize("value,ok", [
    (True, True), (False, True), ("false", True), ("Yes", True), ("off", True), (0, True), (1, True),
    ("maybe", False), (2, False), (None, False), ("", False), ([], False),
])
def test_booleans(value, ok):
    assert (ks.bool_error(value) is None) is ok


def test_bool_vars_are_every_bool_in_the_argument_specs():
    declared = set()
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        with open(path) as handle:
            for entry in yaml.safe_load(handle)["argument_specs"].values():
                declared |= {k for k, v in (entry.get("options") or {}).items() if v.get("type") == "bool"}
    assert declared and set(ks.bool_vars()) == declared
    assert set(ks.BOOL_VARS_CHECKED_ELSEWHERE) <= declared


def params(pools, platform="kubeadm", inventory=None, **extra):
    return dict(platform=platform, cluster_name="c1", addons_mode="standalone", pools=pools, apply=False,
                extra=extra, inventory=inventory or {})


POOL = {"name": "p", "gpu_type": "l4", "node_group": "gpu_pool_p"}
INV = {"groups": {"all": ["h1"], "gpu_nodes": ["h1"], "gpu_pool_p": ["h1"]}, "node_names": {"h1": ""}}
EKS = {"name": "p", "gpu_type": "l4", "zones": ["us-east-1a"], "max_nodes": 2}


def errors_of(p):
    return run_preflight(p)[0]


@pytest.mark.parametrize("desc,p,expected", [
    ("taints unique by key and effect",
     params([dict(POOL, taints=[{"key": "a", "effect": "NoSchedule"}, {"key": "a", "value": "x", "effect": "NoSchedule"}])],
            inventory=INV),
     "gpufleet_gpu_pools[0].taints[1]: taint a:NoSchedule repeats gpufleet_gpu_pools[0].taints[0]"),
    ("same key, other effect is fine, but a bad value is not",
     params([dict(POOL, taints=[{"key": "a", "effect": "NoSchedule"}, {"key": "a", "value": "b c", "effect": "NoExecute"}])],
            inventory=INV),
     "gpufleet_gpu_pools[0].taints[1].value: taint value"),
    ("label value null", params([dict(POOL, labels={"team": None})], inventory=INV),
     "gpufleet_gpu_pools[0].labels['team']: label value must be a quoted string, got null"),
    ("node group missing", params([dict(POOL, node_group="gpu_pool_x")], inventory=INV),
     "gpufleet_gpu_pools[0].node_group: 'gpu_pool_x' is not a group of the inventory"),
    ("two pools on one group", params([POOL, dict(POOL, name="q")], inventory=INV),
     "gpufleet_gpu_pools[1].node_group: 'gpu_pool_p' is already the node group of gpufleet_gpu_pools[0]"),
    ("node name", params([POOL], inventory=dict(INV, node_names={"h1": "H_1"})),
     "gpufleet_node_name (host h1): 'H_1' is not a Kubernetes Node name"),
    ("two hosts on one Node", params([POOL], inventory=dict(INV, node_names={"h1": "gpu-1", "h2": "gpu-1"})),
     "gpufleet_node_name (host h2): Node 'gpu-1' is already the Node of host h1"),
    ("cloud max_nodes 0", params([dict(EKS, max_nodes=0)], platform="eks"),
     "gpufleet_gpu_pools[0].max_nodes: 0 gives the pool a GPU limit of 0"),
    ("zero expire_after", params([dict(EKS, expire_after="0h")], platform="eks"),
     "gpufleet_gpu_pools[0].expire_after: '0h' is zero"),
    ("string boolean in a pool", params([dict(EKS, compute_class="false")], platform="gke"),
     "gpufleet_gpu_pools[0].compute_class: 'false' is not a boolean"),
    ("bool var", params([POOL], inventory=INV, nvidia_container_toolkit_enable_cdi="enabled"),
     "nvidia_container_toolkit_enable_cdi: 'enabled' is not a boolean"),
    ("example namespace", params([POOL], inventory=INV, gpu_pools_example_namespace="A"),
     "gpu_pools_example_namespace: 'A' is not a namespace name"),
    ("pool name too long for the Job names", params([dict(POOL, name="p" * 49)], inventory=INV),
     "use at most 48 characters"),
])
def test_preflight_refuses(desc, p, expected):
    assert any(expected in e for e in errors_of(p)), errors_of(p)


@pytest.mark.parametrize("desc,p", [
    ("valid self-managed pool", params([dict(POOL, labels={"example.com/team": "ml", "gpufleet.io/workload": "x"},
                                             taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                                                     {"key": "nvidia.com/gpu", "effect": "NoExecute"}])],
                                       inventory=INV)),
    ("no inventory given (unit callers)", params([POOL])),
    ("node role label on a self-managed pool", params([dict(POOL, labels={"node-role.kubernetes.io/gpu": ""})],
                                                      inventory=INV)),
    ("quoted false from the command line", params([POOL], inventory=INV, nvidia_container_toolkit_enable_cdi="false")),
    ("pool name of 48 characters", params([dict(POOL, name="p" * 48, node_group="gpu_pool_p")], inventory=INV)),
])
def test_preflight_accepts(desc, p):
    assert errors_of(p) == []


@pytest.mark.parametrize("sharing", ["time-slicing", ["mig"], 3])
def test_sharing_that_is_not_a_mapping_is_a_message_not_an_exception(sharing):
    errors = errors_of(params([dict(POOL, sharing=sharing)], inventory=INV))
    assert any(e.startswith("gpufleet_gpu_pools[0].sharing: must be a mapping") for e in errors), errors


@pytest.mark.parametrize("gpu_type", [["l4"], {"a": 1}])
def test_unhashable_gpu_type_is_a_message_not_an_exception(gpu_type):
    errors = errors_of(params([dict(POOL, gpu_type=gpu_type)], inventory=INV))
    assert any(e.startswith("gpufleet_gpu_pools[0].gpu_type:") for e in errors), errors
