"""EKS: Karpenter v1 objects per pool (checked with the npm schemas generated from the real CRDs),
and the v1alpha5 -> v1 migration (table-driven, on v1alpha5 fixtures in the format the old guides used)."""
import copy
import os

import pytest

from crd_schema import assert_crs_valid, validate_crs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.karpenter import NVIDIA_AL2023_SSM, karpenter_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.karpenter_v1alpha5 import (
    load_v1alpha5, migrate, seconds_to_duration)
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.pools_check import resolve_settings
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pool

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "karpenter")

H100 = normalize_pool({"name": "train-h100", "gpu_type": "h100-80gb", "gpus_per_node": 8,
                       "zones": ["us-east-1a", "us-east-1b"], "max_nodes": 4, "disk_size_gb": 500,
                       "consolidate_after": "1h"})
L4 = normalize_pool({"name": "infer-l4", "gpu_type": "l4", "capacity_types": ["spot", "on-demand"],
                     "zones": ["us-east-1a"], "max_gpus": 20, "weight": 50, "max_cpu": 400, "max_memory_gb": 1600,
                     "labels": {"team": "ml"}, "max_pods": 58})


def objects(*pools, **settings):
    return karpenter_objects(list(pools), resolve_settings(settings), "ml-prod")


def by_kind(objs, kind, name):
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)


def req(nodepool, key):
    reqs = nodepool["spec"]["template"]["spec"]["requirements"]
    return [r["values"] for r in reqs if r["key"] == key and r["operator"] == "In"]


def test_objects_are_valid_for_the_karpenter_v1_crds():
    assert_crs_valid(objects(H100, L4))


def test_the_schema_check_can_fail():
    bad = objects(H100)
    bad[1]["spec"]["disruption"]["consolidationPolicy"] = "WhenIdle"
    del bad[0]["spec"]["amiSelectorTerms"]
    results = validate_crs(bad)
    assert [r["ok"] for r in results] == [False, False]
    assert "amiSelectorTerms" in results[0]["error"] and "consolidationPolicy" in results[1]["error"]


@pytest.mark.parametrize("pool,key,values", [
    (H100, "karpenter.sh/capacity-type", ["on-demand"]),
    (L4, "karpenter.sh/capacity-type", ["spot", "on-demand"]),
    (H100, "topology.kubernetes.io/zone", ["us-east-1a", "us-east-1b"]),
    (H100, "karpenter.k8s.aws/instance-family", ["p5"]),
    (L4, "karpenter.k8s.aws/instance-family", ["g6"]),
    (H100, "karpenter.k8s.aws/instance-gpu-name", ["h100"]),
    (H100, "karpenter.k8s.aws/instance-gpu-manufacturer", ["nvidia"]),
    (H100, "karpenter.k8s.aws/instance-gpu-count", ["8"]),
    (L4, "karpenter.k8s.aws/instance-gpu-count", ["1"]),
])
def test_nodepool_requirements(pool, key, values):
    nodepool = by_kind(objects(pool), "NodePool", pool["name"])
    assert req(nodepool, key) == [values]


def test_nodepool_limits_disruption_weight_taints_labels():
    objs = objects(H100, L4)
    h100, l4 = by_kind(objs, "NodePool", "train-h100"), by_kind(objs, "NodePool", "infer-l4")
    assert h100["spec"]["limits"] == {"nvidia.com/gpu": "32"}
    assert l4["spec"]["limits"] == {"nvidia.com/gpu": "20", "cpu": "400", "memory": "1600G"}
    assert h100["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1h"}
    assert l4["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30m"}
    assert "weight" not in h100["spec"] and l4["spec"]["weight"] == 50
    assert h100["spec"]["template"]["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert l4["spec"]["template"]["metadata"]["labels"] == {
        "gpufleet.io/pool": "infer-l4", "nvidia.com/device-plugin.config": "infer-l4", "team": "ml"}
    assert h100["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "train-h100"}
    assert h100["spec"]["template"]["spec"]["expireAfter"] == "720h"


def test_ec2nodeclass_selects_the_nvidia_ami_and_carries_kubelet_disk_role_selectors():
    objs = objects(H100, L4, eks_kubernetes_version="1.34")
    h100, l4 = by_kind(objs, "EC2NodeClass", "train-h100"), by_kind(objs, "EC2NodeClass", "infer-l4")
    assert h100["spec"]["amiSelectorTerms"] == [{"ssmParameter": NVIDIA_AL2023_SSM % "1.34"}]
    assert "/nvidia/" in h100["spec"]["amiSelectorTerms"][0]["ssmParameter"]
    assert h100["spec"]["amiFamily"] == "AL2023"
    assert h100["spec"]["kubelet"] == {"maxPods": 110} and l4["spec"]["kubelet"] == {"maxPods": 58}
    assert h100["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "500Gi"
    assert h100["spec"]["role"] == "KarpenterNodeRole-ml-prod"
    assert h100["spec"]["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "ml-prod"}}]
    assert h100["spec"]["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "ml-prod"}}]


def test_default_gpu_nodeclass_uses_the_nvidia_ssm_parameter():
    for gpu_type, count in (("t4", 1), ("a10g", 4), ("l40s", 8), ("a100-80gb", 8), ("h200-141gb", 8), ("b200", 8)):
        pool = normalize_pool({"name": "p", "gpu_type": gpu_type, "gpus_per_node": count, "zones": ["us-east-1a"],
                               "max_nodes": 1})
        for obj in objects(pool):
            if obj["kind"] == "EC2NodeClass":
                assert all("alias" not in t for t in obj["spec"]["amiSelectorTerms"])


# The node's CPU architecture follows the pool's GPU type (gpu_catalog cpu_arch). No GPU type of the catalog is on
# EKS with arm64 hosts yet (gb200's EKS facts are not documented), so these tests add a TEST-ONLY catalog entry
# built from a real arm64 NVIDIA instance family as Karpenter's instance-type reference lists it: g5g (Graviton2,
# NVIDIA T4G; karpenter.k8s.aws/instance-gpu-name t4g, kubernetes.io/arch arm64, 1 or 2 GPUs).
ARM_STANDIN = {"arch": "turing", "memory_gib": 16, "cpu_arch": "arm64", "eks_families": ["g5g"],
               "eks_gpu_name": "t4g", "eks_gpu_counts": [1, 2], "gke_accelerator": None, "gke_machine_family": None,
               "gke_gpu_counts": []}
ARM_SSM = "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/nvidia/recommended/image_id"
X86_SSM = "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/nvidia/recommended/image_id"


@pytest.fixture
def arm_type(monkeypatch):
    from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_TYPES
    monkeypatch.setitem(GPU_TYPES, "test-arm-t4g", dict(ARM_STANDIN))
    return normalize_pool({"name": "arm-t4g", "gpu_type": "test-arm-t4g", "gpus_per_node": 2,
                           "zones": ["us-east-1a"], "max_nodes": 2})


def test_an_arm64_gpu_type_gets_an_arm64_nodepool_and_the_arm64_nvidia_ami(arm_type):
    objs = objects(arm_type, H100, eks_kubernetes_version="1.34")
    arm_pool, x86_pool = by_kind(objs, "NodePool", "arm-t4g"), by_kind(objs, "NodePool", "train-h100")
    assert req(arm_pool, "kubernetes.io/arch") == [["arm64"]]
    assert req(x86_pool, "kubernetes.io/arch") == [["amd64"]]
    assert req(arm_pool, "karpenter.k8s.aws/instance-gpu-name") == [["t4g"]]
    assert by_kind(objs, "EC2NodeClass", "arm-t4g")["spec"]["amiSelectorTerms"] == [{"ssmParameter": ARM_SSM}]
    assert by_kind(objs, "EC2NodeClass", "train-h100")["spec"]["amiSelectorTerms"] == [{"ssmParameter": X86_SSM}]
    assert_crs_valid(objs)


def test_one_pool_never_mixes_architectures(arm_type):
    """A NodePool names exactly one architecture, and its node class the AMI of that one."""
    (pool,) = [o for o in objects(arm_type) if o["kind"] == "NodePool"]
    arch = [r for r in pool["spec"]["template"]["spec"]["requirements"] if r["key"] == "kubernetes.io/arch"]
    assert arch == [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]


def test_a_pinned_ami_alias_serves_both_architectures(arm_type):
    """Karpenter's al2023@<version> alias resolves the NVIDIA variant per architecture itself."""
    objs = objects(arm_type, eks_ami_version="v20251103")
    assert by_kind(objs, "EC2NodeClass", "arm-t4g")["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20251103"}]
    assert_crs_valid(objs)


def test_amd64_types_keep_the_x86_64_ami():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_TYPES, cpu_arch
    for gpu_type in sorted(GPU_TYPES):
        facts = GPU_TYPES[gpu_type]
        if not facts["eks_families"]:
            continue
        assert cpu_arch(gpu_type) == "amd64", gpu_type
        pool = normalize_pool({"name": "p", "gpu_type": gpu_type, "gpus_per_node": facts["eks_gpu_counts"][0],
                               "zones": ["us-east-1a"], "max_nodes": 1})
        cls = by_kind(objects(pool, eks_kubernetes_version="1.34"), "EC2NodeClass", "p")
        assert cls["spec"]["amiSelectorTerms"] == [{"ssmParameter": X86_SSM}]


def test_pinned_ami_version_renders_the_al2023_alias_without_ami_family():
    """Issue 14: the SSM 'recommended' parameter re-rolls every GPU node on each AMI release; the AL2023
    alias resolves the NVIDIA variant per instance type (Karpenter >= v1.0), so it pins a release."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.karpenter import ec2nodeclass
    from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.pools_check import resolve_settings
    pool = normalize_pool({"name": "p", "gpu_type": "l4", "zones": ["us-east-1a"], "max_nodes": 1})
    cls = ec2nodeclass(pool, resolve_settings({"gpu_pools_eks_ami_version": "v20251103"}), "c")
    assert cls["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20251103"}]
    assert "amiFamily" not in cls["spec"]
    assert_crs_valid([cls])


def test_settings_and_pool_override_the_defaults():
    pool = copy.deepcopy(H100)
    pool["ami_selector_terms"] = [{"name": "my-gpu-ami-*", "owner": "self"}]
    objs = objects(pool, L4, eks_ami_selector_terms=[{"id": "ami-0123456789abcdef0"}], eks_node_role="NodeRole",
                   eks_subnet_selector_terms=[{"id": "subnet-1"}])
    assert by_kind(objs, "EC2NodeClass", "train-h100")["spec"]["amiSelectorTerms"] == [
        {"name": "my-gpu-ami-*", "owner": "self"}]
    assert by_kind(objs, "EC2NodeClass", "infer-l4")["spec"]["amiSelectorTerms"] == [{"id": "ami-0123456789abcdef0"}]
    assert by_kind(objs, "EC2NodeClass", "infer-l4")["spec"]["role"] == "NodeRole"
    assert by_kind(objs, "EC2NodeClass", "infer-l4")["spec"]["subnetSelectorTerms"] == [{"id": "subnet-1"}]
    assert_crs_valid(objs)


# --- migration ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_migration():
    return migrate(load_v1alpha5(os.path.join(FIXTURES, "v1alpha5-gpu-provisioner.yaml")), "1.33", "ml-prod")


@pytest.fixture(scope="module")
def inline_migration():
    return migrate(load_v1alpha5(os.path.join(FIXTURES, "v1alpha5-consolidation-inline-provider.yaml")), "1.33", "demo")


def _get(obj, path):
    for key in path.split("."):
        obj = obj[int(key)] if isinstance(obj, list) else obj[key]
    return obj


MIGRATED = [
    # (fixture, kind, path, expected)
    ("gpu", "NodePool", "spec.disruption", {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"}),
    ("gpu", "NodePool", "spec.template.spec.nodeClassRef",
     {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}),
    ("gpu", "NodePool", "spec.limits", {"cpu": "1000", "memory": "4000Gi", "nvidia.com/gpu": "32"}),
    ("gpu", "NodePool", "spec.template.spec.expireAfter", "720h"),
    ("gpu", "NodePool", "spec.template.metadata.labels", {"workload": "gpu"}),
    ("gpu", "NodePool", "spec.template.spec.taints", [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]),
    ("gpu", "NodePool", "spec.weight", 10),
    ("gpu", "EC2NodeClass", "spec.kubelet", {"maxPods": 110}),
    ("gpu", "EC2NodeClass", "spec.amiSelectorTerms", [{"ssmParameter": NVIDIA_AL2023_SSM % "1.33"}]),
    ("gpu", "EC2NodeClass", "spec.amiFamily", "AL2023"),
    ("gpu", "EC2NodeClass", "spec.instanceProfile", "KarpenterNodeInstanceProfile-ml-prod"),
    ("gpu", "EC2NodeClass", "spec.subnetSelectorTerms", [{"tags": {"karpenter.sh/discovery": "ml-prod"}}]),
    ("gpu", "EC2NodeClass", "spec.blockDeviceMappings.0.ebs.volumeSize", "200Gi"),
    ("inline", "NodePool", "spec.disruption", {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}),
    ("inline", "NodePool", "spec.limits", {"cpu": "200"}),
    ("inline", "NodePool", "spec.template.spec.expireAfter", "Never"),
    ("inline", "NodePool", "spec.template.spec.requirements.1.key", "karpenter.sh/nodepool"),
    ("inline", "EC2NodeClass", "spec.kubelet", {"maxPods": 58, "systemReserved": {"cpu": "100m"}}),
    ("inline", "EC2NodeClass", "spec.securityGroupSelectorTerms",
     [{"id": "sg-0123456789abcdef0"}, {"id": "sg-0fedcba9876543210"}]),
    ("inline", "EC2NodeClass", "spec.amiSelectorTerms", [{"alias": "al2023@latest"}]),
    ("inline", "EC2NodeClass", "spec.role", "KarpenterNodeRole-demo"),
]


@pytest.mark.parametrize("which,kind,path,expected", MIGRATED, ids=["%s:%s:%s" % m[:3] for m in MIGRATED])
def test_migration_maps_fields(gpu_migration, inline_migration, which, kind, path, expected):
    objs = (gpu_migration if which == "gpu" else inline_migration)[0]
    obj = next(o for o in objs if o["kind"] == kind)
    assert _get(obj, path) == expected


@pytest.mark.parametrize("which,fragment", [
    ("gpu", "ttlSecondsAfterEmpty: 30 -> disruption {consolidationPolicy: WhenEmpty, consolidateAfter: 30s}"),
    ("gpu", "kubeletConfiguration.maxPods -> EC2NodeClass gpu kubelet.maxPods"),
    ("gpu", "providerRef {name: gpu} -> nodeClassRef {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}"),
    ("gpu", "limits.resources.cpu -> limits.cpu"),
    ("gpu", "ttlSecondsUntilExpired: 2592000 -> spec.template.spec.expireAfter: 720h"),
    ("gpu", "amiFamily AL2 -> AL2023"),
    ("inline", "consolidation.enabled: true -> disruption {consolidationPolicy: WhenEmptyOrUnderutilized"),
    ("inline", "requirement karpenter.sh/provisioner-name -> karpenter.sh/nodepool"),
])
def test_migration_lists_what_changed(gpu_migration, inline_migration, which, fragment):
    changes = (gpu_migration if which == "gpu" else inline_migration)[1]
    assert any(fragment in c for c in changes), changes


@pytest.mark.parametrize("which,fragment", [
    ("gpu", "the SSM parameter names Kubernetes 1.33"),
    ("inline", "kubeletConfiguration.dockerBridge has no v1 field"),
    ("inline", "spec.role is a guess (KarpenterNodeRole-demo)"),
    ("inline", "alias al2023@latest; pin a version"),
])
def test_migration_lists_what_needs_input(gpu_migration, inline_migration, which, fragment):
    needs = (gpu_migration if which == "gpu" else inline_migration)[2]
    assert any(fragment in n for n in needs), needs


def test_migrated_objects_are_valid_v1(gpu_migration, inline_migration):
    assert_crs_valid(gpu_migration[0] + inline_migration[0])


@pytest.mark.parametrize("docs,fragment", [
    ([], "no YAML document"),
    (["just a string"], "not a mapping"),
    ([{"apiVersion": "karpenter.sh/v1beta1", "kind": "NodePool", "metadata": {"name": "x"}}], "not a Provisioner"),
    ([{"apiVersion": "v1", "kind": "ConfigMap"}], "not a Provisioner"),
    ([{"apiVersion": "karpenter.k8s.aws/v1alpha1", "kind": "AWSNodeTemplate", "metadata": {"name": "x"}}],
     "holds no Provisioner"),
    ([{"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "x"},
       "spec": {"ttlSecondsAfterEmpty": "30"}}], "whole number of seconds"),
    ([{"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "spec": {}}], "no metadata.name"),
])
def test_migration_refuses_what_is_not_a_provisioner(docs, fragment):
    with pytest.raises(GpufleetError) as err:
        migrate(docs)
    assert fragment in err.value.msg and "; use" in err.value.msg


@pytest.mark.parametrize("seconds,duration", [(30, "30s"), (90, "90s"), (300, "5m"), (3600, "1h"), (2592000, "720h"),
                                              (0, "0s")])
def test_seconds_to_duration(seconds, duration):
    assert seconds_to_duration(seconds, "x") == duration


# ---------------------------------------------------------------------------------------------
# Issue 14: inputs the migration used to convert silently into selectors that match nothing.
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tricky_migration():
    return migrate(load_v1alpha5(os.path.join(FIXTURES, "v1alpha5-tricky-inputs.yaml")), "1.33", "ml-prod")


def test_ami_ids_names_and_owners_become_id_and_owned_name_terms(tricky_migration):
    cls = next(o for o in tricky_migration[0] if o["kind"] == "EC2NodeClass")
    assert cls["spec"]["amiSelectorTerms"] == [
        {"id": "ami-0123456789abcdef0"}, {"id": "ami-0fedcba9876543210"},
        {"name": "amazon-eks-gpu-node-1.29-*", "owner": "amazon"},
        {"name": "amazon-eks-gpu-node-1.29-*", "owner": "123456789012"},
        {"name": "my-gpu-ami-*", "owner": "amazon"}, {"name": "my-gpu-ami-*", "owner": "123456789012"}]
    assert cls["spec"]["subnetSelectorTerms"] == [{"id": "subnet-0123456789abcdef0"}, {"id": "subnet-0fedcba9876543210"}]
    assert not any("tags" in t and any(k.startswith("aws") for k in t["tags"]) for t in cls["spec"]["amiSelectorTerms"])


def test_string_numbers_are_converted_and_flagged(tricky_migration):
    objs, _changes, needs = tricky_migration
    cls = next(o for o in objs if o["kind"] == "EC2NodeClass")
    pool = next(o for o in objs if o["kind"] == "NodePool")
    assert cls["spec"]["kubelet"]["maxPods"] == 110
    gpu_count = next(r for r in pool["spec"]["template"]["spec"]["requirements"]
                     if r["key"] == "karpenter.k8s.aws/instance-gpu-count")
    assert gpu_count["values"] == ["8"]
    assert_crs_valid(objs)
    assert any("kubeletConfiguration.maxPods is the string '110'; v1 needs a number, written as 110" in n for n in needs)
    assert any("value 8 is not a string" in n for n in needs)


@pytest.mark.parametrize("fragment", [
    "requirement topology.kubernetes.io/zone: ap-south-1 is a region, not a zone",
    "requirement topology.kubernetes.io/zone: aps1-az1 is a zone ID",
    "requirement karpenter.k8s.aws/instance-family: gx9 is not an NVIDIA GPU instance family",
    "the node class now uses AL2023 (nodeadm) user data, which AL2 AMIs do not run",
])
def test_needs_input_lists_what_would_select_nothing(tricky_migration, fragment):
    needs = tricky_migration[2]
    assert any(fragment in n for n in needs), needs
    assert not any("ap-south-1a is" in n for n in needs)


# ---------------------------------------------------------------------------------------------
# Issue 26: a CPU pool given the GPU AMI, two NodePools with one name, capacity types copied blindly.
# ---------------------------------------------------------------------------------------------

def _fixture(name):
    return load_v1alpha5(os.path.join(FIXTURES, name))


def test_a_provisioner_that_keeps_gpu_families_out_is_a_cpu_pool():
    objs, _changes, needs = migrate(_fixture("v1alpha5-cpu-pool-excluding-gpus.yaml"), "1.33", "ml-prod")
    general = by_kind(objs, "EC2NodeClass", "general")
    gpu = by_kind(objs, "EC2NodeClass", "gpu")
    assert general["spec"]["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert gpu["spec"]["amiSelectorTerms"] == [{"ssmParameter": NVIDIA_AL2023_SSM % "1.33"}]
    # the NotIn values are not judged as GPU families of a GPU pool
    assert not any("Provisioner general" in n and "GPU instance family" in n for n in needs), needs
    assert_crs_valid(objs)


@pytest.mark.parametrize("operator,values,gpu", [
    ("In", ["g5"], True), ("In", ["m5", "g5"], True), ("NotIn", ["g5", "p4d"], False), ("In", ["m5"], False),
    ("Exists", None, False),
])
def test_instance_family_requirement_decides_the_ami(operator, values, gpu):
    req = {"key": "karpenter.k8s.aws/instance-family", "operator": operator}
    if values is not None:
        req["values"] = values
    doc = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "p"},
           "spec": {"requirements": [req]}}
    cls = by_kind(migrate([doc])[0], "EC2NodeClass", "p")
    assert ("ssmParameter" in cls["spec"]["amiSelectorTerms"][0]) is gpu


@pytest.mark.parametrize("key,operator,values,gpu", [
    ("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist", None, False),
    ("karpenter.k8s.aws/instance-gpu-count", "Lt", ["1"], False),
    ("karpenter.k8s.aws/instance-gpu-count", "In", ["0"], False),
    ("karpenter.k8s.aws/instance-gpu-count", "Gt", ["0"], True),
    ("karpenter.k8s.aws/instance-gpu-count", "In", ["1", "8"], True),
    ("karpenter.k8s.aws/instance-gpu-name", "NotIn", ["a10g"], False),
    ("karpenter.k8s.aws/instance-gpu-manufacturer", "Exists", None, True),
])
def test_gpu_key_requirements_select_gpus_only_when_they_ask_for_them(key, operator, values, gpu):
    req = {"key": key, "operator": operator}
    if values is not None:
        req["values"] = values
    doc = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "p"},
           "spec": {"requirements": [req]}}
    cls = by_kind(migrate([doc])[0], "EC2NodeClass", "p")
    assert ("ssmParameter" in cls["spec"]["amiSelectorTerms"][0]) is gpu


def test_two_provisioners_with_one_name_are_refused():
    with pytest.raises(GpufleetError) as err:
        migrate(_fixture("v1alpha5-same-name-twice.yaml"))
    assert err.value.msg.startswith("documents 0 and 1 are both Provisioner gpu; one name would become two NodePool "
                                    "objects with the same name")
    assert "; use one of: a unique metadata.name per Provisioner" in err.value.msg


def test_two_node_templates_with_one_name_are_refused():
    template = {"apiVersion": "karpenter.k8s.aws/v1alpha1", "kind": "AWSNodeTemplate", "metadata": {"name": "t"}}
    prov = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "t"}, "spec": {}}
    with pytest.raises(GpufleetError) as err:
        migrate([template, prov, dict(template)])
    assert "documents 0 and 2 are both AWSNodeTemplate t" in err.value.msg and "EC2NodeClass" in err.value.msg
    # a Provisioner and its AWSNodeTemplate may share a name (that is the usual pairing)
    assert migrate([template, prov])[0]


@pytest.mark.parametrize("operator,values,ok", [
    ("In", ["spot", "on-demand"], True), ("In", ["reserved"], True), ("NotIn", ["spot"], True),
    ("In", ["spot", "preemptible"], False), ("NotIn", ["Spot"], False), ("In", ["on_demand"], False),
])
def test_capacity_types_must_be_ones_karpenter_knows(operator, values, ok):
    doc = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "metadata": {"name": "p"},
           "spec": {"requirements": [{"key": "karpenter.sh/capacity-type", "operator": operator, "values": values}]}}
    if ok:
        pool = by_kind(migrate([doc])[0], "NodePool", "p")
        assert pool["spec"]["template"]["spec"]["requirements"][0]["values"] == values
        return
    with pytest.raises(GpufleetError) as err:
        migrate([doc])
    assert "Provisioner p: requirement karpenter.sh/capacity-type:" in err.value.msg
    assert err.value.msg.endswith("is not a capacity type Karpenter v1 knows; use one of: spot, on-demand, reserved")


def test_unknown_capacity_type_file_is_refused():
    with pytest.raises(GpufleetError) as err:
        migrate(_fixture("v1alpha5-unknown-capacity-type.yaml"))
    assert "'preemptible' is not a capacity type" in err.value.msg


# Shared and MIG pools: Karpenter counts a pool's usage from its nodes' capacity, which the device plugin sets
# (replicas per GPU, MIG instances per GPU), so the limit is in that unit; a NodeOverlay gives the pool's instance
# types that capacity while Karpenter plans. (pool changes, limits, overlay capacity or None)
SHARED = [
    ({}, {"nvidia.com/gpu": "20"}, None),
    ({"sharing": {"mode": "time-slicing", "replicas": 4}}, {"nvidia.com/gpu": "80"}, {"nvidia.com/gpu": "4"}),
    ({"sharing": {"mode": "mps", "replicas": 2}, "max_gpus": None, "max_nodes": 5, "gpus_per_node": 4},
     {"nvidia.com/gpu": "40"}, {"nvidia.com/gpu": "8"}),
    ({"sharing": {"mode": "time-slicing", "replicas": 4, "rename_by_default": True}},
     {"nvidia.com/gpu.shared": "80"}, {"nvidia.com/gpu.shared": "4"}),
    ({"gpu_type": "h100-80gb", "gpus_per_node": 8, "max_gpus": 16,
      "sharing": {"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.10gb"}},
     {"nvidia.com/gpu": "112"}, {"nvidia.com/gpu": "56"}),
    ({"gpu_type": "h100-80gb", "gpus_per_node": 8, "max_gpus": 16,
      "sharing": {"mode": "mig", "mig_strategy": "mixed", "mig_profile": "3g.40gb"}},
     {"nvidia.com/mig-3g.40gb": "32"}, {"nvidia.com/mig-3g.40gb": "16"}),
    ({"max_gpus": None}, {}, None),
]


@pytest.mark.parametrize("changes,limits,capacity", SHARED)
def test_shared_pools_limit_in_the_advertised_unit_and_get_a_node_overlay(changes, limits, capacity):
    pool = normalize_pool(dict(L4, max_cpu=None, max_memory_gb=None, **changes))
    objs = objects(pool)
    assert by_kind(objs, "NodePool", "infer-l4")["spec"]["limits"] == limits
    overlays = [o for o in objs if o["kind"] == "NodeOverlay"]
    if capacity is None:
        assert overlays == []
        return
    assert overlays == [{
        "apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
        "metadata": {"name": "infer-l4", "labels": {"app.kubernetes.io/managed-by": "gpufleet"}},
        "spec": {"requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["infer-l4"]}],
                 "capacity": capacity}}]
    assert objs[-1] is overlays[0]  # after every pool's node class and NodePool


def test_node_overlays_are_valid_for_the_karpenter_crds():
    pools = [normalize_pool(dict(L4, max_cpu=None, max_memory_gb=None, **changes)) for changes, _l, _c in SHARED]
    objs = [o for pool in pools for o in objects(pool)]
    assert any(o["kind"] == "NodeOverlay" for o in objs)
    assert_crs_valid(objs)
