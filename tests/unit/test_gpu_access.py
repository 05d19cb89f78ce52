"""What makes a pod get a GPU, per platform and mode, and MIG / GKE sharing end to end.

No GPU, cluster or GKE API runs here: the tests check that the pieces gpufleet renders agree
with each other (container runtime default vs. runtimeClassName in placement; MIG layout label
vs. device-plugin strategy vs. the resource placement requests; GKE sharing labels vs. the
resource GKE advertises), using NVIDIA's MIG profile table (module_utils/core/mig.py) and GKE's label
names as documented.
"""
import copy
import os

import re

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.model import gpu_access
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import pool_plugin_config
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.expected import expected_resources
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.gpu_operator import operator_values
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.karpenter import nodepool
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.mig import MIG_PROFILES
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.placement import example_job, placement
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.selfmanaged import node_objects
from k8s_schema import assert_valid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ZONES = {"eks": ["us-east-1a"], "gke": ["us-central1-a"], "gke-autopilot": ["us-central1-a"]}
MIXED = {"name": "mig-h100", "gpu_type": "h100-80gb", "gpus_per_node": 8, "max_nodes": 2,
         "sharing": {"mode": "mig", "mig_strategy": "mixed", "mig_profile": "1g.10gb"}}


def preflight(platform, mode, pools, **extra):
    pools = [dict(p, zones=ZONES[platform]) if platform in ZONES else dict(p) for p in copy.deepcopy(pools)]
    return run_preflight({"platform": platform, "cluster_name": "c", "addons_mode": mode, "pools": pools,
                          "apply": False, "extra": extra})


def toolkit_env(values):
    return {e["name"]: e["value"] for e in values["toolkit"].get("env", [])}


# ---------------------------------------------------------------------------------------------
# 1. The runtime default and what placement emits agree, per platform and mode.
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("platform", ["kubeadm", "k3s", "rke2", "k0s", "microk8s"])
def test_operator_toolkit_makes_nvidia_the_default_runtime(platform):
    """Old code wrote CONTAINERD_SET_AS_DEFAULT=false while placement sets no runtimeClassName:
    pods got nvidia.com/gpu but no devices."""
    extra = {"gpu_operator_host_toolkit": False}
    errors, _w, plan = preflight(platform, "operator", [{"name": "p", "gpu_type": "l4"}], **extra)
    assert errors == []
    env = toolkit_env(operator_values(plan, extra))
    assert env["CONTAINERD_SET_AS_DEFAULT"] == "true"
    assert plan["gpu_access"] == gpu_access.access(platform, "operator", extra)
    assert plan["gpu_access"]["how"] == "runtime-default" and plan["gpu_access"]["runtime_class"] is None
    job = example_job(plan["pools"][0], platform, "img", "ns", plan["gpu_access"]["runtime_class"])
    assert "runtimeClassName" not in job["spec"]["template"]["spec"]


def test_k0s_operator_toolkit_runs_k0s_containerd_binary():
    extra = {"gpu_operator_host_toolkit": False}
    _e, _w, plan = preflight("k0s", "operator", [{"name": "p", "gpu_type": "l4"}], **extra)
    env = toolkit_env(operator_values(plan, extra))
    assert env["RUNTIME_EXECUTABLE_PATH"] == "/var/lib/k0s/bin/containerd"
    assert env["CONTAINERD_CONFIG"] == "/etc/k0s/containerd.d/nvidia.toml"
    _e, _w, plan = preflight("kubeadm", "operator", [{"name": "p", "gpu_type": "l4"}], **extra)
    assert "RUNTIME_EXECUTABLE_PATH" not in toolkit_env(operator_values(plan, extra))


@pytest.mark.parametrize("platform,mode,extra,runtime_class", [
    ("kubeadm", "standalone", {}, None),
    ("kubeadm", "standalone", {"nvidia_container_toolkit_set_as_default": False}, "nvidia"),
    ("k3s", "standalone", {"nvidia_container_toolkit_set_as_default": "false"}, "nvidia"),
    ("kubeadm", "operator", {}, None),
    ("kubeadm", "operator", {"nvidia_container_toolkit_set_as_default": False}, "nvidia"),
    ("kubeadm", "operator", {"gpu_operator_host_toolkit": False, "nvidia_container_toolkit_set_as_default": False}, None),
    ("eks", "standalone", {}, None),
    ("gke", "standalone", {}, None),
    ("gke-autopilot", "none", {}, None),
    ("openshift", "operator", {}, None),
])
def test_pods_name_the_runtime_class_exactly_when_nvidia_is_not_the_default(platform, mode, extra, runtime_class):
    pool = {"name": "p", "gpu_type": "l4", "max_nodes": 1}
    errors, _w, plan = preflight(platform, mode, [pool], **extra)
    assert errors == []
    assert plan["gpu_access"]["runtime_class"] == runtime_class
    job = example_job(plan["pools"][0], platform, "img", "ns", plan["gpu_access"]["runtime_class"])
    assert_valid(job)
    assert job["spec"]["template"]["spec"].get("runtimeClassName") == runtime_class


# ---------------------------------------------------------------------------------------------
# 3. MIG: profile vs GPU type, who partitions, the label, and what the node advertises.
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("gpu_type,profile", [("a100-80gb", "1g.5gb"), ("h200-141gb", "1g.10gb"),
                                              ("a100-40gb", "7g.80gb"), ("b200", "1g.18gb")])
def test_mig_profile_the_gpu_does_not_have_is_refused(gpu_type, profile):
    pool = {"name": "p", "gpu_type": gpu_type, "sharing": {"mode": "mig", "mig_strategy": "mixed",
                                                           "mig_profile": profile}}
    errors, _w, _p = preflight("kubeadm", "operator", [pool])
    assert errors == ["gpufleet_gpu_pools[0].sharing.mig_profile: %r is not a MIG profile of gpu_type %s; use one of: %s"
                      % (profile, gpu_type, ", ".join(sorted(MIG_PROFILES[gpu_type])))]


@pytest.mark.parametrize("gpu_type", sorted(MIG_PROFILES))
def test_every_profile_of_the_table_is_accepted(gpu_type):
    pools = [{"name": "p%d" % i, "gpu_type": gpu_type, "sharing": {"mode": "mig", "mig_strategy": "mixed",
                                                                   "mig_profile": prof}}
             for i, prof in enumerate(sorted(MIG_PROFILES[gpu_type]))]
    assert preflight("kubeadm", "operator", pools)[0] == []


def test_standalone_mig_is_refused_with_the_reason_unless_preconfigured():
    errors = preflight("kubeadm", "standalone", [MIXED])[0]
    assert len(errors) == 1
    assert errors[0].startswith("gpufleet_gpu_pools[0].sharing.mode: MIG with gpufleet_addons_mode=standalone: "
                                "nothing partitions the GPUs")
    assert "use one of: gpufleet_addons_mode: operator" in errors[0] and "mig_preconfigured: true" in errors[0]
    pre = dict(MIXED, sharing=dict(MIXED["sharing"], mig_preconfigured=True))
    assert preflight("kubeadm", "standalone", [pre])[0] == []


def test_the_removal_runs_a_mode_switch_gives_pass_preflight_with_a_mig_pool():
    # mode_switch's commands: standalone with the add-ons absent, operator with the operator absent
    assert preflight("kubeadm", "standalone", [MIXED], nvidia_device_plugin_state="absent",
                     dcgm_exporter_state="absent")[0] == []
    no_profile = {"name": "p", "gpu_type": "a100-80gb", "sharing": {"mode": "mig", "mig_strategy": "single"}}
    assert preflight("kubeadm", "operator", [no_profile], gpu_operator_state="absent")[0] == []


def test_operator_mig_without_profile_is_refused():
    pool = {"name": "p", "gpu_type": "a100-80gb", "sharing": {"mode": "mig", "mig_strategy": "single"}}
    errors = preflight("kubeadm", "operator", [pool])[0]
    assert errors == ["gpufleet_gpu_pools[0].sharing.mig_profile: is required for MIG with gpufleet_addons_mode="
                      "operator: the MIG manager partitions by the node label nvidia.com/mig.config=all-<profile> "
                      "(without it the GPUs stay all-disabled); use one of: "
                      + ", ".join(sorted(MIG_PROFILES["a100-80gb"]))]


def test_mig_preconfigured_must_be_a_boolean_on_a_mig_pool():
    bad = dict(MIXED, sharing=dict(MIXED["sharing"], mig_preconfigured="yes"))
    assert "gpufleet_gpu_pools[0].sharing.mig_preconfigured: 'yes' is not a boolean" in preflight(
        "kubeadm", "operator", [bad])[0][0]
    other = {"name": "p", "gpu_type": "l4", "sharing": {"mode": "none", "mig_preconfigured": True}}
    assert preflight("kubeadm", "operator", [other])[0][0].startswith(
        "gpufleet_gpu_pools[0].sharing.mig_preconfigured: is only used with mode mig")


def advertised_on_self_managed(pool_labels, plugin_config, gpu_type, gpus):
    """What a node advertises, derived only from what gpufleet rendered: the MIG manager applies
    ``all-<profile>`` from the node label, the device plugin reports it per its strategy."""
    layout = pool_labels.get("nvidia.com/mig.config")
    strategy = plugin_config["flags"]["migStrategy"]
    if not layout:
        return {"nvidia.com/gpu": gpus}
    profile = layout[len("all-"):]
    count = MIG_PROFILES[gpu_type][profile] * gpus
    return {("nvidia.com/mig-" + profile) if strategy == "mixed" else "nvidia.com/gpu": count}


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_mig_pool_end_to_end_self_managed_operator(strategy):
    pool = dict(MIXED, sharing=dict(MIXED["sharing"], mig_strategy=strategy))
    errors, _w, plan = preflight("kubeadm", "operator", [pool])
    assert errors == []
    norm = plan["pools"][0]
    node = node_objects(norm, ["n1"])[0]
    assert node["metadata"]["labels"]["nvidia.com/mig.config"] == "all-1g.10gb"
    values = operator_values(plan, {})
    assert values["migManager"]["enabled"] is True and values["mig"]["strategy"] == strategy
    plugin = yaml.safe_load(values["devicePlugin"]["config"]["data"]["mig-h100"])
    advertised = advertised_on_self_managed(node["metadata"]["labels"], plugin, "h100-80gb", 8)
    assert advertised == expected_resources(norm)
    requested = placement(norm, "kubeadm")["resources"]["limits"]
    assert set(requested) == set(advertised)
    assert list(requested.values()) == [1]


def test_mig_label_on_the_eks_nodepool_template():
    errors, _w, plan = preflight("eks", "operator", [MIXED])
    assert errors == []
    labels = nodepool(plan["pools"][0])["spec"]["template"]["metadata"]["labels"]
    assert labels["nvidia.com/mig.config"] == "all-1g.10gb"
    assert placement(plan["pools"][0], "eks")["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": 1}


def test_preconfigured_mig_pool_gets_no_layout_label():
    pre = dict(MIXED, sharing=dict(MIXED["sharing"], mig_preconfigured=True))
    _e, _w, plan = preflight("kubeadm", "standalone", [pre])
    assert "nvidia.com/mig.config" not in node_objects(plan["pools"][0], ["n1"])[0]["metadata"]["labels"]


# ---------------------------------------------------------------------------------------------
# 4. GKE: sharing through GKE's own node labels; what GKE advertises is nvidia.com/gpu.
# ---------------------------------------------------------------------------------------------

def gke_terms(fragment):
    if "nodeSelector" in fragment:
        return fragment["nodeSelector"]
    exprs = fragment["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"]
    return {e["key"]: e["values"][0] for e in exprs}


@pytest.mark.parametrize("platform", ["gke", "gke-autopilot"])
@pytest.mark.parametrize("sharing,labels", [
    ({"mode": "time-slicing", "replicas": 4},
     {"cloud.google.com/gke-gpu-sharing-strategy": "time-sharing", "cloud.google.com/gke-max-shared-clients-per-gpu": "4"}),
    ({"mode": "mps", "replicas": 3},
     {"cloud.google.com/gke-gpu-sharing-strategy": "mps", "cloud.google.com/gke-max-shared-clients-per-gpu": "3"}),
    ({"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.5gb"},
     {"cloud.google.com/gke-gpu-partition-size": "1g.5gb"}),
    ({"mode": "none"}, {}),
])
@pytest.mark.parametrize("compute_class", [False, True])
def test_gke_placement_asks_for_gke_native_sharing(platform, sharing, labels, compute_class):
    pool = {"name": "p", "gpu_type": "a100-40gb", "gpus_per_node": 2, "max_nodes": 2, "sharing": sharing,
            "compute_class": compute_class}
    errors, _w, plan = preflight(platform, "none" if platform == "gke-autopilot" else "standalone", [pool])
    assert errors == []
    frag = placement(plan["pools"][0], platform)
    terms = gke_terms(frag)
    for key in ("cloud.google.com/gke-gpu-sharing-strategy", "cloud.google.com/gke-max-shared-clients-per-gpu",
                "cloud.google.com/gke-gpu-partition-size"):
        assert terms.get(key) == labels.get(key)
    # Google's device plugin advertises every shared GPU / partition as nvidia.com/gpu.
    assert frag["resources"]["limits"] == {"nvidia.com/gpu": 1 if sharing["mode"] != "none" else 2}
    assert_valid(example_job(plan["pools"][0], platform, "img", "ns"))


@pytest.mark.parametrize("platform", ["gke", "gke-autopilot"])
@pytest.mark.parametrize("sharing,error", [
    ({"mode": "mig", "mig_strategy": "mixed", "mig_profile": "1g.5gb"},
     "gpufleet_gpu_pools[0].sharing.mig_strategy: 'mixed' is not possible on"),
    ({"mode": "mig", "mig_strategy": "single"}, "gpufleet_gpu_pools[0].sharing.mig_profile: is required for MIG on"),
    ({"mode": "time-slicing", "replicas": 2, "rename_by_default": True},
     "gpufleet_gpu_pools[0].sharing.rename_by_default: true is not possible on"),
])
def test_gke_sharing_gke_cannot_give_is_refused(platform, sharing, error):
    pool = {"name": "p", "gpu_type": "a100-40gb", "max_nodes": 2, "sharing": sharing}
    errors = preflight(platform, "none", [pool])[0]
    assert any(e.startswith(error) for e in errors), errors


# ---------------------------------------------------------------------------------------------
# 7. One coherent set of versions (the table in docs/reference/tables.md: test_generated_docs.py).
# ---------------------------------------------------------------------------------------------

# What each GPU Operator chart ships, from NVIDIA's release notes / the chart's Chart.yaml
# (recorded here; no registry is reachable). The standalone images must be the chart's own.
CHART_COMPONENTS = {
    "v25.3.4": {"device_plugin": "v0.17.4", "dcgm_exporter": "4.3.1-4.4.0", "nfd": "v0.17.3"},
    "v25.10.1": {"device_plugin": "v0.18.1", "dcgm_exporter": "4.4.2-4.7.0", "nfd": "v0.18.2"},
    # v26.7.0's Chart.yaml depends on the node-feature-discovery chart 0.19.0 (image v0.19.0)
    "v26.7.0": {"device_plugin": "v0.20.0", "dcgm_exporter": "4.6.0-4.8.3", "nfd": "v0.19.0"},
}


def test_standalone_images_are_the_pinned_charts_own():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.core import versions
    chart = versions.CHARTS["gpu_operator"]["version"]
    shipped = CHART_COMPONENTS[chart]
    for name, tag in shipped.items():
        assert re.sub(r"-(ubuntu|distroless).*$", "", versions.IMAGES[name]["tag"]) == tag, name
    # The OLM channel follows the chart's minor release.
    assert versions.OLM_PACKAGES["gpu_operator"]["channel"] == chart.rsplit(".", 1)[0]


def test_gke_operator_mode_with_sharing_is_a_warning_naming_the_pool():
    pool = {"name": "p", "gpu_type": "l4", "max_nodes": 1, "sharing": {"mode": "time-slicing", "replicas": 2}}
    errors, warnings, _plan = preflight("gke", "operator", [pool])
    assert errors == []
    assert any(w.startswith("gpufleet_gpu_pools[0].sharing: GKE shares and partitions GPUs through Google's")
               for w in warnings), warnings
    assert not any("GKE shares" in w for w in preflight("gke", "standalone", [pool])[1])


# issue 28 section 2: gpufleet's node stage partitions a standalone MIG pool (sharing.mig_manager gpufleet)
GPUFLEET_MIG = {"name": "mig-h200", "gpu_type": "h200-141gb", "gpus_per_node": 8, "max_nodes": 2,
                "sharing": {"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.18gb", "mig_manager": "gpufleet"}}


def with_sharing(**changes):
    pool = copy.deepcopy(GPUFLEET_MIG)
    pool["sharing"].update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del pool["sharing"][key]
    return pool


@pytest.mark.parametrize("platform", ["kubeadm", "k3s", "rke2", "k0s", "microk8s"])
def test_standalone_mig_partitioned_by_gpufleet_passes_on_self_managed_platforms(platform):
    assert preflight(platform, "standalone", [GPUFLEET_MIG])[0] == []


@pytest.mark.parametrize("platform, mode, pool, message", [
    ("kubeadm", "standalone", with_sharing(mig_profile=None),
     "gpufleet_gpu_pools[0].sharing.mig_profile: is required with mig_manager gpufleet: the node stage partitions "
     "every GPU of the pool into it; use one of: 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb"),
    ("kubeadm", "operator", GPUFLEET_MIG,
     "gpufleet_gpu_pools[0].sharing.mig_manager: gpufleet with gpufleet_addons_mode=operator: the GPU Operator's MIG "
     "manager partitions the GPUs"),
    ("eks", "standalone", GPUFLEET_MIG,
     "gpufleet_gpu_pools[0].sharing.mig_manager: gpufleet partitions MIG only on the hosts of self-managed clusters "
     "(gpufleet_platform kubeadm, k3s, rke2, k0s, microk8s); on eks use one of"),
    ("kubeadm", "standalone", with_sharing(mig_manager="mig-parted"),
     "gpufleet_gpu_pools[0].sharing.mig_manager: 'mig-parted' is not allowed; use one of: gpufleet, or drop it"),
    ("kubeadm", "standalone", with_sharing(mig_preconfigured=True),
     "gpufleet_gpu_pools[0].sharing.mig_manager: gpufleet with mig_preconfigured: true: the GPUs are partitioned "
     "either by you or by gpufleet"),
    ("kubeadm", "standalone", with_sharing(mig_profile="1g.10gb"),
     "gpufleet_gpu_pools[0].sharing.mig_profile: '1g.10gb' is not a MIG profile of gpu_type h200-141gb"),
    ("kubeadm", "standalone", {"name": "p", "gpu_type": "l4", "sharing": {"mode": "none", "mig_manager": "gpufleet"}},
     "gpufleet_gpu_pools[0].sharing.mig_manager: is only used with mode mig"),
])
def test_gpufleet_mig_refusals(platform, mode, pool, message):
    errors = preflight(platform, mode, [pool])[0]
    assert any(e.startswith(message) for e in errors), errors


def test_gpufleet_mig_pool_gets_the_device_plugin_strategy_and_no_operator_label():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import pool_plugin_config
    from ansible_collections.gpufleet.k8s.plugins.module_utils.model.gpu_access import mig_config_label
    assert pool_plugin_config(GPUFLEET_MIG)["flags"]["migStrategy"] == "single"
    assert pool_plugin_config(with_sharing(mig_strategy="mixed"))["flags"]["migStrategy"] == "mixed"
    assert mig_config_label(GPUFLEET_MIG) == {}
    assert mig_config_label(with_sharing(mig_manager=None)) == {"nvidia.com/mig.config": "all-1g.18gb"}
