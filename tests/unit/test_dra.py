"""Pools with allocation: dra (module_utils/model/dra.py): preflight refusals naming the variable and the allowed
values, the DRA driver's Helm values, the claims per pool, placement, the device plugin kept off DRA nodes, the
mirror manifest, and docs/dra.md's version table. The real scheduler allocating these claims is
tests/integration/test_cp_dra.py."""
import os

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.model import dra
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import addons, dra_driver
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import mirror_manifest, mirror_scripts
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import versions
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import gpu_catalog
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_TYPES
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import device_plugin_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.placement import example_job, placement
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.selfmanaged import node_objects, pool_node_labels
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import DEFAULT_GPU_TAINT as DEFAULT_TAINT
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.smoke import smoke_job
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pool, normalize_pools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRA = {"name": "d", "gpu_type": "h100-80gb", "gpus_per_node": 4, "allocation": "dra", "max_nodes": 2}
ZONES = {"eks": ["us-east-1a"], "gke": ["us-central1-a"]}


def preflight(pools, platform="kubeadm", mode="standalone", **extra):
    pools = [dict(p, zones=ZONES[platform]) if platform in ZONES else dict(p) for p in pools]
    errors, _warnings, plan = run_preflight({"platform": platform, "cluster_name": "c", "addons_mode": mode,
                                             "pools": pools, "apply": False, "extra": extra})
    return errors, plan


def dra_errors(pools, **kw):
    """Only the problems about allocation/DRA (the inventory of these tests has no pool groups)."""
    errors, _plan = preflight(pools, **kw)
    return [e for e in errors if "node_group" not in e]


def test_a_dra_pool_on_kubernetes_1_34_passes():
    assert dra_errors([DRA], gpufleet_kubernetes_version="1.34") == []
    assert dra_errors([DRA], gpufleet_kubernetes_version="v1.35.2") == []


@pytest.mark.parametrize("extra,platform,want", [
    ({}, "kubeadm", "gpufleet_kubernetes_version: is not set, and pool(s) d use allocation dra, which needs "
                    "Kubernetes >= 1.34"),
    ({"gpufleet_kubernetes_version": "1.33"}, "kubeadm", "gpufleet_kubernetes_version: 1.33 is below 1.34"),
    ({"gpufleet_kubernetes_version": "one"}, "kubeadm", "gpufleet_kubernetes_version: 'one' is not a Kubernetes "
                                                        "version"),
    # EKS: the cluster's version the AMI is chosen by (default 1.33) until gpufleet_kubernetes_version says more
    ({}, "eks", "gpu_pools_eks_kubernetes_version: 1.33 is below 1.34"),
])
def test_dra_below_kubernetes_1_34_is_refused_naming_the_version_variable(extra, platform, want):
    errors = dra_errors([DRA], platform=platform, **extra)
    assert any(e.startswith(want) for e in errors), errors


@pytest.mark.parametrize("gpu_type", sorted(GPU_TYPES))
def test_the_largest_min_memory_gb_preflight_allows_is_what_the_driver_publishes(gpu_type):
    """The catalogue's dra_memory_mib is what the driver's ResourceSlice says (NVML, in MiB): the largest value
    preflight accepts renders a CEL quantity every such GPU reaches, one more is refused."""
    mib = GPU_TYPES[gpu_type]["dra_memory_mib"]
    most = gpu_catalog.published_memory_gib(gpu_type)
    assert most * 1024 <= mib < (most + 1) * 1024 and most < GPU_TYPES[gpu_type]["memory_gib"] + 1
    pool = dict(DRA, gpu_type=gpu_type, gpus_per_node=1)
    assert dra_errors([dict(pool, dra={"min_memory_gb": most})], gpufleet_kubernetes_version="1.34") == []
    assert any(".dra.min_memory_gb: %d is more than" % (most + 1) in e for e in dra_errors(
        [dict(pool, dra={"min_memory_gb": most + 1})], gpufleet_kubernetes_version="1.34"))


def test_a_mig_pools_min_memory_gb_is_not_held_against_the_whole_gpu():
    """A MIG pool renders no memory selector (its devices are MIG instances): nothing to refuse."""
    pool = dict(DRA, sharing={"mode": "mig", "mig_profile": "1g.10gb", "mig_preconfigured": True},
                dra={"min_memory_gb": 80})
    assert dra_errors([pool], gpufleet_kubernetes_version="1.34") == []


def test_eks_with_its_version_at_1_34_passes():
    assert dra_errors([dict(DRA, gpus_per_node=8)], platform="eks", gpu_pools_eks_kubernetes_version="1.34") == []


@pytest.mark.parametrize("pool,want", [
    (dict(DRA, allocation="drа"), "gpufleet_gpu_pools[0].allocation: 'drа' is not allowed; use one of: "
                                  "device-plugin, dra"),
    (dict(DRA, allocation="device-plugin", dra={"product_name": "x"}),
     "gpufleet_gpu_pools[0].dra: is only used with allocation dra"),
    (dict(DRA, dra={"prodcut_name": "x"}), "gpufleet_gpu_pools[0].dra: unknown key(s) prodcut_name; use one of: "
                                           "product_name, min_memory_gb"),
    (dict(DRA, dra="big"), "gpufleet_gpu_pools[0].dra: must be a mapping"),
    (dict(DRA, sharing={"mode": "time-slicing", "replicas": 4}),
     "gpufleet_gpu_pools[0].sharing: replicas only applies to the device plugin"),
    (dict(DRA, sharing={"mode": "mig", "mig_profile": "1g.10gb", "mig_strategy": "mixed",
                        "mig_preconfigured": True}),
     "gpufleet_gpu_pools[0].sharing: mig_strategy only applies to the device plugin"),
    (dict(DRA, sharing={"mode": "mig", "mig_preconfigured": True}),
     "gpufleet_gpu_pools[0].sharing.mig_profile: is required for a DRA pool with MIG"),
    (dict(DRA, sharing={"mode": "mps"}, dra={"time_slice_interval": "Long"}),
     "gpufleet_gpu_pools[0].dra.time_slice_interval: 'Long' is not allowed (sharing.mode is mps, not "
     "time-slicing); use one of: Default, Short, Medium, Long"),
    (dict(DRA, sharing={"mode": "time-slicing"}, dra={"time_slice_interval": "Forever"}),
     "gpufleet_gpu_pools[0].dra.time_slice_interval: 'Forever' is not allowed; use one of: Default"),
    (dict(DRA, sharing={"mode": "mps"}, dra={"mps_active_thread_percentage": 0}),
     "gpufleet_gpu_pools[0].dra.mps_active_thread_percentage: 0 is not allowed; use an integer from 1 to 100"),
    (dict(DRA, dra={"min_memory_gb": "80GB"}), "gpufleet_gpu_pools[0].dra.min_memory_gb: '80GB' is not allowed; "
                                               "use an integer >= 1"),
    # the driver publishes an H100 80GB HBM3 as 81559Mi (79.65 GiB): 80Gi never matches
    (dict(DRA, dra={"min_memory_gb": 80}), "gpufleet_gpu_pools[0].dra.min_memory_gb: 80 is more than a h100-80gb GPU "
                                           "has as the DRA driver publishes it (81559Mi, from NVML: 79.65 GiB), so the "
                                           "pool's claims would never be allocated; use at most 79"),
    (dict(DRA, gpu_type="h200-141gb", dra={"min_memory_gb": 141}),
     "gpufleet_gpu_pools[0].dra.min_memory_gb: 141 is more than a h200-141gb GPU has as the DRA driver publishes it "
     "(143771Mi, from NVML: 140.40 GiB), so the pool's claims would never be allocated; use at most 140"),
    (dict(DRA, dra={"product_name": "it's"}), "gpufleet_gpu_pools[0].dra.product_name: \"it's\" is not allowed"),
    (dict(DRA, dra={"claim_namespaces": "ml"}), "gpufleet_gpu_pools[0].dra.claim_namespaces: 'ml' is not allowed"),
])
def test_bad_pool_settings_are_refused_naming_the_key(pool, want):
    errors = dra_errors([pool], gpufleet_kubernetes_version="1.34")
    assert any(e.startswith(want) for e in errors), errors


@pytest.mark.parametrize("platform,mode,extra,want", [
    ("gke-autopilot", "none", {}, "gpufleet_gpu_pools: pool(s) d use allocation dra, which GKE Autopilot"),
    ("kubeadm", "none", {}, "gpufleet_addons_mode: none installs no DRA driver"),
    ("kubeadm", "standalone", {"nvidia_dra_driver_gpus_enabled": False},
     "nvidia_dra_driver_gpus_enabled: false publishes no GPU"),
    ("kubeadm", "standalone", {"nvidia_dra_driver_compute_domains_enabled": "yes"},
     "nvidia_dra_driver_compute_domains_enabled: 'yes' is not a boolean; use one of: true, false"),
    ("kubeadm", "standalone", {"nvidia_dra_driver_chart_version": "v0.5.0"},
     "nvidia_dra_driver_chart_version: 'v0.5.0' is not allowed; use a chart version such as 0.5.0"),
])
def test_bad_cluster_settings_are_refused(platform, mode, extra, want):
    errors = dra_errors([dict(DRA, max_nodes=1)], platform=platform, mode=mode, gpufleet_kubernetes_version="1.34",
                        **extra)
    assert any(e.startswith(want) for e in errors), errors


def test_device_plugin_pools_need_no_kubernetes_version():
    assert dra_errors([dict(DRA, allocation="device-plugin")]) == []


# ------------------------------------------------------------------------------------------ values
def plan_of(*pools, platform="kubeadm"):
    return {"platform": platform, "addons_mode": "standalone", "pools": normalize_pools(list(pools))}


def test_driver_values_select_the_dra_pools_nodes_and_pin_the_image():
    pool = dict(DRA, taints=[{"key": "team", "value": "ml", "effect": "NoSchedule"}])
    values = dra_driver.driver_values(plan_of(pool, {"name": "p", "gpu_type": "l4"}), {
        "gpufleet_registry_prefix": "mirror.local:5000", "gpufleet_image_pull_secrets": ["pull"]})
    assert values["kubeletPlugin"]["nodeSelector"] == {"gpufleet.io/gpu-allocation": "dra"}
    assert values["kubeletPlugin"]["affinity"] is None  # the chart's NFD/GFD affinity is removed
    # the chart's own default toleration (nvidia.com/gpu, which gpufleet's list replaces) and the DRA pools' taints
    # (the device-plugin pool's are not a DRA pool's)
    assert values["kubeletPlugin"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                                                      {"key": "team", "operator": "Exists", "effect": "NoSchedule"},
                                                      {"key": "gpufleet.io/gpu-allocation", "operator": "Exists",
                                                       "effect": "NoSchedule"}]
    # pinned by tag and NVIDIA's published digest (GPU Operator v26.7.0 OLM bundle), the mirror keeps the digest
    assert values["image"] == {"repository": "mirror.local:5000/nvidia/dra-driver-nvidia-gpu",
                               "tag": "v0.5.0@sha256:9b46984c0eb18def60e2b9817b874275f4b5b08d12d491de4f1a7b91b51d706c"}
    # the pre-v0.4.0 chart's object names, so an upgrade from gpufleet's v25.12.0 install duplicates nothing
    assert values["nameOverride"] == "nvidia-dra-driver-gpu"
    assert values["imagePullSecrets"] == [{"name": "pull"}]
    assert values["resources"] == {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}}
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["nvidiaDriverRoot"] == "/"


ARM_TOL = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}


def test_gpu_node_agents_tolerate_the_arm_taint_only_with_an_arm64_pool():
    """gb200 nodes are arm64, and GKE taints Arm nodes kubernetes.io/arch=arm64:NoSchedule: the DRA kubelet plugin
    and the GPU node agents (device plugin, dcgm-exporter, NFD, operator) must tolerate it to run there."""
    gb200 = dict(DRA, name="nvl", gpu_type="gb200", gpus_per_node=4)
    values = dra_driver.driver_values(plan_of(gb200, platform="gke"), {})
    assert ARM_TOL in values["kubeletPlugin"]["tolerations"]
    assert ARM_TOL in addons.gpu_tolerations(plan_of(gb200, {"name": "p", "gpu_type": "l4"}))
    assert ARM_TOL not in addons.gpu_tolerations(plan_of(DRA, {"name": "p", "gpu_type": "l4"}))
    assert ARM_TOL not in dra_driver.driver_values(plan_of(DRA, platform="gke"), {})["kubeletPlugin"]["tolerations"]


def test_driver_values_follow_the_settings_and_platform():
    digest = "sha256:" + "b" * 64
    values = dra_driver.driver_values(plan_of(DRA, platform="gke"), {
        "nvidia_dra_driver_compute_domains_enabled": True,
        "gpufleet_image_overrides": {"dra_driver": {"tag": "v0.5.1", "digest": digest}},
        "nvidia_dra_driver_values_overrides": {"kubeletPlugin": {"priorityClassName": "x"}, "logVerbosity": "6"}})
    assert values["nvidiaDriverRoot"] == "/home/kubernetes/bin/nvidia"
    assert values["resources"]["computeDomains"] == {"enabled": True}
    assert values["image"]["tag"] == "v0.5.1@" + digest
    assert values["kubeletPlugin"]["priorityClassName"] == "x"
    assert values["kubeletPlugin"]["nodeSelector"] == {"gpufleet.io/gpu-allocation": "dra"}  # deep merge
    assert values["nameOverride"] == "nvidia-dra-driver-gpu"
    assert values["logVerbosity"] == "6"


@pytest.mark.parametrize("modes,gates", [
    (["none"], None),
    (["mig"], None),
    (["time-slicing"], {"TimeSlicingSettings": True}),
    (["mps"], {"MPSSupport": True}),
    (["time-slicing", "mps", "none"], {"TimeSlicingSettings": True, "MPSSupport": True}),
])
def test_driver_values_enable_exactly_the_feature_gates_the_pools_sharing_needs(modes, gates):
    """The driver (v0.5.0 pkg/featuregates) refuses a GpuConfig with TimeSlicing or MPS unless its gate is on
    (tests/integration/test_dra_judge.py runs the driver's own validation on these values)."""
    pools = [dict(DRA, name="d%d" % i, sharing=dict({"mode": mode}, **({"mig_profile": "1g.10gb"} if mode == "mig"
                                                                        else {})))
             for i, mode in enumerate(modes)]
    # a device-plugin pool's sharing needs no DRA gate
    pools.append({"name": "p", "gpu_type": "l4", "sharing": {"mode": "mps", "replicas": 2}})
    values = dra_driver.driver_values(plan_of(*pools), {})
    assert values.get("featureGates") == gates


def test_chart_is_pinned_unless_overridden():
    assert dra_driver.chart(dra_driver.settings({}))["version"] == versions.CHARTS["dra_driver"]["version"] == "0.5.0"
    assert versions.CHARTS["dra_driver"]["name"] == "dra-driver-nvidia-gpu"
    assert dra_driver.chart(dra_driver.settings({"nvidia_dra_driver_chart_version": "0.4.1"}))["version"] == "0.4.1"


# ------------------------------------------------------------------------------------------ chart CRDs
def _recorded(name):
    with open(os.path.join(ROOT, "tests", "fixtures", "dra-driver", name)) as handle:
        return handle.read()


RENDERED = ("---\n# Source: dra-driver-nvidia-gpu/crds/resource.nvidia.com_computedomaincliques.yaml\n"
            + _recorded("resource.nvidia.com_computedomaincliques.yaml")
            + "---\n# Source: dra-driver-nvidia-gpu/crds/resource.nvidia.com_computedomains.yaml\n"
            + _recorded("resource.nvidia.com_computedomains.yaml")
            + "---\n# Source: dra-driver-nvidia-gpu/templates/deviceclasses.yaml\n"
              "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.nvidia.com}\n---\n"
              "# Source: dra-driver-nvidia-gpu/templates/empty.yaml\n---\n"
              "apiVersion: example.com/v1\nkind: CustomResourceDefinition\nmetadata: {name: not-a-crd}\n")


def test_chart_crds_keeps_only_the_custom_resource_definitions_in_order():
    crds = dra_driver.chart_crds(RENDERED)
    assert [c["metadata"]["name"] for c in crds] == ["computedomaincliques.resource.nvidia.com",
                                                    "computedomains.resource.nvidia.com"]
    assert all(c["apiVersion"] == "apiextensions.k8s.io/v1" for c in crds)


@pytest.mark.parametrize("text,want", [
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "holds no CustomResourceDefinition"),
    ("", "holds no CustomResourceDefinition"),
    ("kind: [unclosed\n", "is not YAML"),
    (None, "is NoneType, not text"),
])
def test_chart_crds_refuses_output_without_crds(text, want):
    with pytest.raises(GpufleetError) as err:
        dra_driver.chart_crds(text)
    assert want in err.value.msg


# ------------------------------------------------------------------------------------------ claims
def claims(pool, ns="ml"):
    return {o["metadata"]["name"]: o for o in dra.claim_objects(normalize_pool(pool), ns)}


def test_whole_gpu_pool_gets_one_gpu_and_node_worth_templates_with_cel_selectors():
    objs = claims(dict(DRA, dra={"product_name": "NVIDIA H100 80GB HBM3", "min_memory_gb": 79}))
    assert sorted(objs) == ["d-gpu", "d-gpus-4"]
    req = objs["d-gpus-4"]["spec"]["spec"]["devices"]["requests"][0]
    assert req["exactly"]["deviceClassName"] == "gpu.nvidia.com" and req["exactly"]["count"] == 4
    assert [s["cel"]["expression"] for s in req["exactly"]["selectors"]] == [
        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'",
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('79Gi')) >= 0"]
    assert {o["kind"] for o in objs.values()} == {"ResourceClaimTemplate"}
    assert {o["metadata"]["namespace"] for o in objs.values()} == {"ml"}
    # no selector when the pool names no model or memory
    assert "selectors" not in claims(DRA)["d-gpu"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]


def test_mig_pool_claims_one_device_of_its_profile_from_the_mig_class():
    objs = claims(dict(DRA, sharing={"mode": "mig", "mig_profile": "3g.40gb"}))
    (name,) = objs
    exactly = objs[name]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert name == "d-mig-3g.40gb" and exactly["deviceClassName"] == "mig.nvidia.com" and exactly["count"] == 1
    assert exactly["selectors"][0]["cel"]["expression"] == "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"


@pytest.mark.parametrize("mode,dra_settings,sharing", [
    ("time-slicing", {}, {"strategy": "TimeSlicing"}),
    ("time-slicing", {"time_slice_interval": "Short"}, {"strategy": "TimeSlicing",
                                                        "timeSlicingConfig": {"interval": "Short"}}),
    ("mps", {"mps_active_thread_percentage": 50}, {"strategy": "MPS",
                                                   "mpsConfig": {"defaultActiveThreadPercentage": 50}}),
])
def test_shared_pool_gets_a_shared_claim_with_the_drivers_gpuconfig(mode, dra_settings, sharing):
    objs = claims(dict(DRA, sharing={"mode": mode}, dra=dra_settings))
    assert sorted(objs) == ["d-gpu", "d-shared-gpu"]
    assert objs["d-shared-gpu"]["kind"] == "ResourceClaim"
    config = objs["d-shared-gpu"]["spec"]["devices"]["config"][0]
    assert config["requests"] == ["gpu"] and config["opaque"]["driver"] == "gpu.nvidia.com"
    assert config["opaque"]["parameters"] == {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
                                              "sharing": sharing}


def test_device_plugin_pools_get_no_claims_and_claim_namespaces_add_up():
    assert dra.claim_objects(normalize_pool({"name": "p", "gpu_type": "l4"}), "ml") == []
    objs = dra.claims_for_pools(normalize_pools([dict(DRA, dra={"claim_namespaces": ["team-a", "ml"]}),
                                                 {"name": "p", "gpu_type": "l4"}]), ["ml"])
    assert sorted({o["metadata"]["namespace"] for o in objs}) == ["ml", "team-a"] and len(objs) == 4


# ------------------------------------------------------------------------------------------ placement
def test_placement_of_a_dra_pool_claims_instead_of_a_limit():
    pool = normalize_pool(DRA)
    frag = placement(pool, "kubeadm")
    assert frag["resources"] == {"claims": [{"name": "gpu"}]}
    assert frag["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "d-gpus-4"}]
    assert placement(pool, "kubeadm", gpus=1)["resourceClaims"][0]["resourceClaimTemplateName"] == "d-gpu"
    shared = normalize_pool(dict(DRA, sharing={"mode": "mps"}))
    assert placement(shared, "eks")["resourceClaims"] == [{"name": "gpu", "resourceClaimName": "d-shared-gpu"}]


@pytest.mark.parametrize("pool,gpus,want", [
    (DRA, 2, "pool d renders claim templates for 1 or 4 GPU(s) per pod; ask for one of them, not 2"),
    (dict(DRA, sharing={"mode": "mps"}), 2, "pool d shares one GPU between its pods (DRA mps); ask for 1, not 2"),
    (dict(DRA, sharing={"mode": "mig", "mig_profile": "1g.10gb"}), 3, "pool d: a pod claims one MIG device"),
])
def test_placement_refuses_a_count_no_template_serves(pool, gpus, want):
    with pytest.raises(GpufleetError) as exc:
        placement(normalize_pool(pool), "kubeadm", gpus=gpus)
    assert exc.value.msg.startswith(want)


def test_example_and_smoke_jobs_of_a_dra_pool_carry_the_claims():
    pool = normalize_pool(DRA)
    example = example_job(pool, "kubeadm", "cuda:1", "ex")["spec"]["template"]["spec"]
    assert example["resourceClaims"][0]["resourceClaimTemplateName"] == "d-gpus-4"
    assert example["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert "nvidia.com/gpu" not in example["containers"][0]["resources"].get("limits", {})
    smoke = smoke_job(pool, "kubeadm", "cuda:1", "v", 60)["spec"]["template"]["spec"]
    assert smoke["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "d-gpu"}]
    assert smoke["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}


# ------------------------------------------------------------------------------------------ one GPU, one owner
def test_dra_pool_nodes_are_labelled_for_the_driver_and_against_the_operators_device_plugin():
    labels = pool_node_labels(normalize_pool(DRA))
    assert labels["gpufleet.io/gpu-allocation"] == "dra"
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert "gpufleet.io/gpu-allocation" not in pool_node_labels(normalize_pool({"name": "p", "gpu_type": "l4"}))


DRA_TAINT = {"key": "gpufleet.io/gpu-allocation", "value": "dra", "effect": "NoSchedule"}
DRA_TOLERATION = {"key": "gpufleet.io/gpu-allocation", "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize("platform", ["kubeadm", "eks"])
def test_dra_nodes_are_tainted_so_plain_gpu_pods_do_not_land_there_by_surprise(platform):
    """Issue 38, defect 10: the chart's gpu.nvidia.com DeviceClass carries extendedResourceName nvidia.com/gpu, so
    (DRAExtendedResource, on from Kubernetes 1.36) a plain nvidia.com/gpu pod can be given a DRA GPU. DRA pools'
    nodes carry gpufleet.io/gpu-allocation=dra:NoSchedule; the pool's own pods, the kubelet plugin and the GPU
    node agents tolerate it, a device-plugin pool's pods do not."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.karpenter import nodepool
    dra_pool = normalize_pool(dict(DRA, zones=["us-east-1a"]) if platform == "eks" else DRA)
    plug = normalize_pool({"name": "p", "gpu_type": "l4"})
    assert DRA_TAINT in dra_pool["taints"] and dict(DEFAULT_TAINT) in dra_pool["taints"]
    assert DRA_TAINT not in plug["taints"]
    if platform == "eks":
        assert DRA_TAINT in nodepool(dra_pool)["spec"]["template"]["spec"]["taints"]
    else:
        (node,) = node_objects(dra_pool, ["h1"])
        assert DRA_TAINT in node["spec"]["taints"]
    assert DRA_TOLERATION in placement(dra_pool, platform)["tolerations"]
    assert DRA_TOLERATION not in placement(plug, platform).get("tolerations", [])
    plan = plan_of(DRA, {"name": "p", "gpu_type": "l4"}, platform=platform)
    assert DRA_TOLERATION in dra_driver.driver_values(plan, {})["kubeletPlugin"]["tolerations"]
    assert DRA_TOLERATION in addons.gpu_tolerations(plan)   # GFD, dcgm-exporter, the operator's agents
    # a pool that accepts plain GPU pods says so with its own taint of that key (here: a preference only)
    soft = normalize_pool(dict(DRA, taints=[dict(DRA_TAINT, effect="PreferNoSchedule")]))
    assert soft["taints"] == [dict(DRA_TAINT, effect="PreferNoSchedule")]


def _plugin_terms(plan):
    ds = next(o for o in device_plugin_objects(plan, {}) if o["kind"] == "DaemonSet"
              and o["metadata"]["name"] == "nvidia-device-plugin")
    return ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]


def test_the_device_plugin_excludes_dra_nodes_only_when_there_are_dra_pools():
    exclusion = {"key": "gpufleet.io/gpu-allocation", "operator": "NotIn", "values": ["dra"]}
    mixed = _plugin_terms(plan_of(DRA, {"name": "p", "gpu_type": "l4"}))
    assert mixed and all(exclusion in t["matchExpressions"] for t in mixed)
    assert not any(exclusion in t["matchExpressions"] for t in _plugin_terms(plan_of({"name": "p", "gpu_type": "l4"})))


@pytest.mark.parametrize("mode", ["standalone", "operator"])
def test_every_config_a_nodes_label_names_is_in_the_device_plugin_configmap(mode):
    """GFD runs on DRA nodes too, and its config-manager crash-loops when the node's nvidia.com/device-plugin.config
    label names a config the ConfigMap lacks (issue 38, defect 5)."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.gpu_operator import operator_values
    pools = [dict(DRA, sharing={"mode": "mps"}), dict(DRA, name="dt", sharing={"mode": "time-slicing"}),
             dict(DRA, name="dm", sharing={"mode": "mig", "mig_profile": "1g.10gb"}), {"name": "p", "gpu_type": "l4"}]
    plan = dict(plan_of(*pools), addons_mode=mode)
    if mode == "standalone":
        data = next(o for o in device_plugin_objects(plan, {}) if o["kind"] == "ConfigMap")["data"]
    else:
        data = operator_values(plan, {})["devicePlugin"]["config"]["data"]
    for pool in plan["pools"]:
        assert pool_node_labels(pool)["nvidia.com/device-plugin.config"] in data, pool["name"]
    # what GFD reads on a DRA node: whole GPUs, no sharing (the driver shares per claim); MIG devices per profile
    for name, strategy in (("d", "none"), ("dt", "none"), ("dm", "mixed")):
        assert yaml.safe_load(data[name]) == {"version": "v1", "flags": {"migStrategy": strategy,
                                                                         "failOnInitError": True}}, name


# ------------------------------------------------------------------------------------------ mirror, docs
def test_mirror_manifest_lists_the_dra_chart_and_image_only_with_dra_pools():
    plan = dict(plan_of(DRA), cluster_name="c", inventory_name="inv")
    man = mirror_manifest.manifest(plan, {"gpufleet_mirror_chart_path": "/srv/charts"}, [])
    (chart,) = [c for c in man["charts"] if c["name"] == "dra-driver-nvidia-gpu"]
    assert (chart["version"], chart["mirror"]) == ("0.5.0", "/srv/charts/dra-driver-nvidia-gpu-0.5.0.tgz")
    assert any(i["name"] == "dra_driver" and i["tag"] == versions.IMAGES["dra_driver"]["tag"] for i in man["images"])
    scripts = mirror_scripts.scripts(man)
    assert "helm pull 'dra-driver-nvidia-gpu' --repo 'https://helm.ngc.nvidia.com/nvidia' --version '0.5.0'" \
        in scripts["fetch-charts.sh"]
    assert "helm template" not in scripts["fetch-images.sh"]  # one pinned image, listed; no operand walk
    plain = mirror_manifest.manifest(dict(plan_of({"name": "p", "gpu_type": "l4"}), cluster_name="c"), {}, [])
    assert not any(c["name"] == "dra-driver-nvidia-gpu" for c in plain["charts"])
    assert not any(i["name"] == "dra_driver" for i in plain["images"])


def test_docs_dra_holds_the_pinned_versions():
    with open(os.path.join(ROOT, "docs", "dra.md")) as handle:
        assert versions.dra_table_markdown() in handle.read()


SHARED_DRA_CHART = os.path.normpath(os.path.join(ROOT, "..", "shared", "charts", "dra-driver-nvidia-gpu-main-95932046"))


def test_every_value_gpufleet_sets_is_a_key_of_the_real_charts_values():
    """NVIDIA's chart has no values schema: a key it does not know is ignored without a word. Every key gpufleet's
    values set (all settings on) exists in the real chart's values.yaml, down to where the chart's default is a
    free-form map or list (nodeSelector, tolerations, featureGates, ...)."""
    if not os.path.isdir(SHARED_DRA_CHART):
        pytest.skip(reason="needs NVIDIA's DRA driver chart in ../shared/charts/ (%s is absent)" % SHARED_DRA_CHART)
    with open(os.path.join(SHARED_DRA_CHART, "values.yaml")) as handle:
        chart = yaml.safe_load(handle)
    pools = [dict(DRA, sharing={"mode": "mps"}, taints=[{"key": "t", "value": "v", "effect": "NoSchedule"}]),
             dict(DRA, name="t", sharing={"mode": "time-slicing"})]
    values = dra_driver.driver_values(plan_of(*pools), {"gpufleet_image_pull_secrets": ["pull"],
                                                         "nvidia_dra_driver_compute_domains_enabled": True})

    def unknown(ours, theirs, path):
        out = []
        for key, value in ours.items():
            if key not in theirs:
                out.append(path + key)
            elif isinstance(value, dict) and isinstance(theirs[key], dict) and theirs[key]:
                out.extend(unknown(value, theirs[key], path + key + "."))
        return out
    assert unknown(values, chart, "") == []
    assert "featureGates" in values and chart["featureGates"] == {}


def test_docs_dra_example_passes_preflight():
    """docs/dra.md's first example (its min_memory_gb was 80 on an H100, which the driver publishes as 79.65 GiB)."""
    with open(os.path.join(ROOT, "docs", "dra.md")) as handle:
        example = yaml.safe_load(handle.read().split("```yaml\n", 1)[1].split("```", 1)[0])
    pools = [dict(p, node_group="g") for p in example["gpufleet_gpu_pools"]]
    assert dra_errors(pools, gpufleet_kubernetes_version=example["gpufleet_kubernetes_version"]) == []


def test_role_defaults_equal_the_argument_spec():
    with open(os.path.join(ROOT, "roles", "nvidia_dra_driver", "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    assert {"nvidia_dra_driver_" + k: v for k, v in dra_driver.settings_defaults().items()} == defaults


def test_gke_refuses_node_auto_creation_for_a_dra_pool_and_says_how_to_create_the_node_pool():
    pool = dict(DRA, gpu_type="l4", gpus_per_node=1, compute_class=True)
    errors = dra_errors([pool], platform="gke", gpufleet_kubernetes_version="1.34")
    assert any(e.startswith("gpufleet_gpu_pools[0].compute_class: true asks GKE to create the pool's nodes, but "
                            "GKE's node auto-creation does not support DRA; use one of: false") for e in errors), errors
    _errors, warnings, _plan = run_preflight({
        "platform": "gke", "cluster_name": "c", "addons_mode": "standalone", "apply": False,
        "pools": [dict(pool, compute_class=False, zones=ZONES["gke"])],
        "extra": {"gpufleet_kubernetes_version": "1.34"}})
    (line,) = [w for w in warnings if w.startswith("gpufleet_gpu_pools: GKE: create the node pool(s) of d")]
    assert "gpu-driver-version=disabled" in line and "gke-no-default-nvidia-gpu-device-plugin=true" in line


def test_eks_warns_that_karpenter_does_not_simulate_dra_devices():
    _errors, warnings, _plan = run_preflight({
        "platform": "eks", "cluster_name": "c", "addons_mode": "standalone", "apply": False,
        "pools": [dict(DRA, gpus_per_node=8, zones=ZONES["eks"])],
        "extra": {"gpufleet_kubernetes_version": "1.34"}})
    assert any("kubernetes-sigs/karpenter#3228" in w for w in warnings), warnings


# ------------------------------------------------------------------------------------------ report
def test_the_report_counts_dra_devices_from_slices_and_allocations_from_claims():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import build_report
    plan = {"platform": "kubeadm", "cluster_name": "c",
            "pools": normalize_pools([dict(DRA, gpus_per_node=2), {"name": "p", "gpu_type": "l4", "gpus_per_node": 2}])}

    def node(name, pool, alloc=None):
        return {"metadata": {"name": name, "labels": {"gpufleet.io/pool": pool}},
                "status": {"allocatable": alloc or {"cpu": "8"}}}
    gpu = {"type": {"string": "gpu"}}
    slices = [{"spec": {"driver": "gpu.nvidia.com", "nodeName": "n-dra",
                        "devices": [{"name": "gpu-0", "attributes": gpu}, {"name": "gpu-1", "attributes": gpu}]}},
              {"spec": {"driver": "other.example.com", "nodeName": "n-dra", "devices": [{"name": "x"}]}}]
    claims = [{"status": {"allocation": {"devices": {"results": [
        {"driver": "gpu.nvidia.com", "pool": "n-dra", "device": "gpu-1", "request": "gpu"}]}}}}]
    pods = [{"spec": {"nodeName": "n-dra", "containers": [{"resources": {"claims": [{"name": "gpu"}]}}]},
             "status": {"phase": "Running"}},
            {"spec": {"nodeName": "n-plug", "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
             "status": {"phase": "Running"}}]
    report = build_report(plan, nodes=[node("n-dra", "d"), node("n-plug", "p", {"nvidia.com/gpu": "2"})],
                          pods=pods, slices=slices, claims=claims)
    rows = {r["pool"]: r for r in report["pools"]}
    assert (rows["d"]["capacity"], rows["d"]["requested"], rows["d"]["idle"]) == (2, 1, 1)
    assert (rows["p"]["capacity"], rows["p"]["requested"], rows["p"]["idle"]) == (2, 1, 1)
    # render mode: a DRA pool's planned capacity is its GPUs (no extended resource to expect)
    planned = build_report(dict(plan, pools=[dict(plan["pools"][0], min_nodes=3)]))
    assert planned["pools"][0]["capacity"] == 6


def test_the_report_counts_pending_dra_pods_as_pending_gpu_pods_of_their_pool():
    """Issue 38, defect 10: a pod waiting for a DRA GPU requests no extended resource; it still is a pending GPU pod,
    so the right-sizing hint ("at its max") covers DRA pools."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import build_report, report_pod
    plan = {"platform": "kubeadm", "cluster_name": "c",
            "pools": normalize_pools([dict(DRA, gpus_per_node=2, max_nodes=1),
                                      {"name": "p", "gpu_type": "l4", "gpus_per_node": 2, "max_nodes": 1}])}
    nodes = [{"metadata": {"name": "n-dra", "labels": {"gpufleet.io/pool": "d"}}, "status": {"allocatable": {}}},
             {"metadata": {"name": "n-plug", "labels": {"gpufleet.io/pool": "p"}},
              "status": {"allocatable": {"nvidia.com/gpu": "2"}}}]
    gpu = {"type": {"string": "gpu"}}
    slices = [{"spec": {"driver": "gpu.nvidia.com", "nodeName": "n-dra",
                        "devices": [{"name": "gpu-0", "attributes": gpu}, {"name": "gpu-1", "attributes": gpu}]}}]

    def pending(name, refs, generated=()):
        return report_pod({"metadata": {"namespace": "ml", "name": name, "annotations": {"secret": "x"}},
                           "spec": {"resourceClaims": refs, "containers": [
                               {"env": [{"name": "TOKEN", "value": "s3cret"}],
                                "resources": {"claims": [{"name": "gpu"}]}}]},
                           "status": {"phase": "Pending", "resourceClaimStatuses": list(generated)}})
    # the pool's own templates; a user's claim of the gpu class (no pool named); a claim of
    # another driver's class (not a GPU)
    own = pending("a", [{"name": "gpu", "resourceClaimTemplateName": "d-gpus-2"}],
                  [{"name": "gpu", "resourceClaimName": "a-gpu-x1"}])
    one = pending("b", [{"name": "gpu", "resourceClaimTemplateName": "d-gpu"}])
    user = pending("c", [{"name": "gpu", "resourceClaimTemplateName": "mine"}],
                   [{"name": "gpu", "resourceClaimName": "c-gpu-x2"}])
    other = pending("e", [{"name": "nic", "resourceClaimName": "nic"}])
    claims = [{"metadata": {"namespace": "ml", "name": "c-gpu-x2"},
               "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}},
              {"metadata": {"namespace": "ml", "name": "nic"},
               "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}]}}}]
    assert "env" not in str(own) and "annotations" not in str(own)   # the report keeps names only
    at_max = "pool d is at its max (1 of 1 nodes): raise max_nodes or expect pending GPU pods"
    report = build_report(plan, nodes=nodes, pods=[own, other], slices=slices, claims=claims)
    rows = {r["pool"]: r for r in report["pools"]}
    assert (rows["d"]["pending_gpu_pods"], rows["p"]["pending_gpu_pods"], report["totals"]["pending_gpu_pods"]) == \
        (1, 0, 1)
    assert at_max in report["hints"] and not any(h.startswith("pool p is at its max") for h in report["hints"])
    report = build_report(plan, nodes=nodes, pods=[one, user], slices=slices, claims=claims)
    rows = {r["pool"]: r for r in report["pools"]}
    # the user's claim waits for any DRA pool: in the total and d's hint, pinned to no pool's row
    assert (rows["d"]["pending_gpu_pods"], report["totals"]["pending_gpu_pods"]) == (1, 2)
    assert at_max in build_report(plan, nodes=nodes, pods=[user], slices=slices, claims=claims)["hints"]
    assert at_max not in build_report(plan, nodes=nodes, pods=[other], slices=slices, claims=claims)["hints"]


def test_eks_nodepool_of_a_dra_pool_labels_its_nodes_for_the_kubelet_plugin():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.karpenter import nodepool
    labels = nodepool(normalize_pool(dict(DRA, gpus_per_node=8)))["spec"]["template"]["metadata"]["labels"]
    assert labels["gpufleet.io/gpu-allocation"] == "dra" and labels["gpufleet.io/pool"] == "d"


def test_operator_mode_keeps_its_values_and_the_operators_device_plugin_off_dra_nodes_by_label():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.gpu_operator import mig_strategy, operator_values
    mixed = dict(plan_of(dict(DRA, sharing={"mode": "mig", "mig_profile": "1g.10gb"}),
                         {"name": "p", "gpu_type": "a100-80gb", "sharing": {"mode": "mig", "mig_strategy": "single",
                                                                           "mig_profile": "1g.10gb"}}),
                 addons_mode="operator")
    # a DRA pool's MIG devices are the DRA driver's: the operator's device plugin strategy follows the others
    assert mig_strategy(mixed) == "single"
    values = operator_values(mixed, {})
    data = values["devicePlugin"]["config"]["data"]
    assert "p" in data   # the DRA pool's config is GFD's: MIG devices labelled per profile, no sharing
    assert yaml.safe_load(data["d"])["flags"]["migStrategy"] == "mixed" and "sharing" not in yaml.safe_load(data["d"])
    assert pool_node_labels(mixed["pools"][0])["nvidia.com/gpu.deploy.device-plugin"] == "false"


def test_the_examples_render_holds_the_dra_pools_claims_in_the_examples_namespace_only():
    from ansible_collections.gpufleet.k8s.plugins.filter.placement import gpu_pool_examples
    objs = gpu_pool_examples([dict(DRA, dra={"claim_namespaces": ["ml"]}), {"name": "p", "gpu_type": "l4"}],
                             "kubeadm", "cuda:1", "gpufleet-examples")
    kinds = [(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")) for o in objs]
    assert kinds == [("Namespace", "gpufleet-examples", None),
                     ("ResourceClaimTemplate", "d-gpu", "gpufleet-examples"),
                     ("ResourceClaimTemplate", "d-gpus-4", "gpufleet-examples"),
                     ("Job", "gpu-example-d", "gpufleet-examples"), ("Job", "gpu-example-p", "gpufleet-examples")]


@pytest.mark.parametrize("platform,mode,extra,root", [
    ("kubeadm", "standalone", {}, "/"),
    ("kubeadm", "operator", {}, "/"),                                      # host driver (auto on kubeadm)
    ("kubeadm", "operator", {"gpu_operator_host_driver": False}, "/run/nvidia/driver"),
    ("openshift", "operator", {}, "/run/nvidia/driver"),                   # the operator installs the driver
    ("gke", "standalone", {}, "/home/kubernetes/bin/nvidia"),
    ("kubeadm", "operator", {"gpu_operator_host_driver": False, "nvidia_dra_driver_driver_root": "/opt/nv"}, "/opt/nv"),
])
def test_driver_root_follows_where_the_driver_is(platform, mode, extra, root):
    plan = dict(plan_of(DRA, platform=platform), addons_mode=mode)
    assert dra_driver.driver_values(plan, extra)["nvidiaDriverRoot"] == root


def test_a_pool_moving_back_to_the_device_plugin_loses_the_dra_labels_gpufleet_set():
    import json
    from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.node_ownership import OWNED_ANNOTATION, plan_node
    dra_labels = pool_node_labels(normalize_pool(DRA))
    node = {"metadata": {"name": "n1", "resourceVersion": "7", "labels": dict(dra_labels, other="x"),
                         "annotations": {OWNED_ANNOTATION: json.dumps({"labels": dra_labels, "taints": []})}}}
    plugin_labels = pool_node_labels(normalize_pool(dict(DRA, allocation="device-plugin")))
    plan = plan_node(node, plugin_labels, [])
    after = plan["after"]["labels"]
    assert "gpufleet.io/gpu-allocation" not in after and "nvidia.com/gpu.deploy.device-plugin" not in after
    assert after["other"] == "x" and after["gpufleet.io/pool"] == "d"


# ComputeDomains (dra.compute_domain): rendered per namespace, refused where they make no sense
NVL = {"name": "nvl", "gpu_type": "b200", "gpus_per_node": 4, "allocation": "dra", "max_nodes": 2,
       "dra": {"compute_domain": {"num_nodes": 2}}}
CD_ON = {"gpufleet_kubernetes_version": "1.34", "nvidia_dra_driver_compute_domains_enabled": True}


def test_a_compute_domain_pool_passes_with_the_compute_domain_part_on_and_is_warned_about_nvlink():
    pools = [NVL]
    errors, warnings, _plan = run_preflight({"platform": "kubeadm", "cluster_name": "c", "addons_mode": "standalone",
                                             "pools": pools, "apply": False, "extra": CD_ON})
    assert [e for e in errors if "node_group" not in e] == []
    assert any("pool(s) nvl render a ComputeDomain" in w and "multi-node NVLink" in w for w in warnings), warnings


# gb200 (GB200 NVL72: GCP A4X, AWS P6e-GB200) is sold only inside multi-node NVLink domains: no NVLink warning
NVL_GB200 = dict(NVL, name="nvl-gb200", gpu_type="gb200")


@pytest.mark.parametrize("platform", ["kubeadm", "gke"])
def test_a_gb200_compute_domain_pool_passes_without_the_nvlink_warning(platform):
    pool = dict(NVL_GB200, zones=["us-central1-a"]) if platform == "gke" else NVL_GB200
    errors, warnings, _plan = run_preflight({"platform": platform, "cluster_name": "c", "addons_mode": "standalone",
                                             "pools": [pool], "apply": False, "extra": CD_ON})
    assert [e for e in errors if "node_group" not in e] == []
    assert not [w for w in warnings if "render a ComputeDomain" in w], warnings


def test_the_nvlink_warning_names_only_the_pools_that_may_lack_multi_node_nvlink():
    errors, warnings, _plan = run_preflight({"platform": "kubeadm", "cluster_name": "c", "addons_mode": "standalone",
                                             "pools": [NVL_GB200, NVL], "apply": False, "extra": CD_ON})
    assert [e for e in errors if "node_group" not in e] == []
    (line,) = [w for w in warnings if "render a ComputeDomain" in w]
    assert "pool(s) nvl render" in line and "nvl-gb200" not in line


def test_a_gb200_compute_domain_renders_a_compute_domain():
    objs = dra.claims_for_pools(normalize_pools([NVL_GB200]), ["ml"])
    (domain,) = [o for o in objs if o["kind"] == "ComputeDomain"]
    assert domain["apiVersion"] == "resource.nvidia.com/v1beta1"
    assert domain["metadata"]["name"] == "nvl-gb200-compute-domain" and domain["spec"]["numNodes"] == 2


@pytest.mark.parametrize("pool, extra, want", [
    (NVL, {"gpufleet_kubernetes_version": "1.34"}, "gpufleet_gpu_pools[0].dra.compute_domain: pool nvl asks for a "
     "ComputeDomain, but nvidia_dra_driver_compute_domains_enabled is false"),
    (dict(NVL, gpu_type="l4"), CD_ON, "gpufleet_gpu_pools[0].dra.compute_domain: pool nvl has gpu_type l4 (ada), which "
     "has no multi-node NVLink"),
    (dict(NVL, gpu_type="a100-80gb"), CD_ON, "pool nvl has gpu_type a100-80gb (ampere), which has no multi-node "
     "NVLink, so a ComputeDomain's IMEX channels cannot span its nodes; use it with one of: b200, gb200, h100-80gb, "
     "h200-141gb"),
    (dict(NVL, sharing={"mode": "mig", "mig_profile": "1g.23gb"}), CD_ON, "gpufleet_gpu_pools[0].dra.compute_domain: "
     "pool nvl hands out MIG devices"),
    (dict(NVL, dra={"compute_domain": {"num_nodes": -1}}), CD_ON, "gpufleet_gpu_pools[0].dra.compute_domain.num_nodes: "
     "-1 is not allowed; use an integer >= 0"),
    (dict(NVL, dra={"compute_domain": {"channel_allocation_mode": "Many"}}), CD_ON,
     "gpufleet_gpu_pools[0].dra.compute_domain.channel_allocation_mode: 'Many' is not allowed; use one of: Single, All"),
    (dict(NVL, dra={"compute_domain": {"nodes": 2}}), CD_ON, "gpufleet_gpu_pools[0].dra.compute_domain: unknown "
     "key(s) nodes; use one of: num_nodes, channel_allocation_mode"),
    (dict(NVL, dra={"compute_domain": True}), CD_ON, "gpufleet_gpu_pools[0].dra.compute_domain: must be a mapping"),
    (dict(NVL, allocation="device-plugin"), CD_ON, "gpufleet_gpu_pools[0].dra: is only used with allocation dra"),
])
def test_compute_domain_settings_are_refused_where_they_make_no_sense(pool, extra, want):
    errors = dra_errors([pool], **extra)
    assert any(want in e for e in errors), errors


def test_a_compute_domain_is_rendered_per_namespace_with_the_crds_fields():
    pool = normalize_pool(dict(NVL, dra={"compute_domain": {"channel_allocation_mode": "All"},
                                         "claim_namespaces": ["team-a"]}))
    objs = [o for o in dra.claims_for_pools([pool], ["ml"]) if o["kind"] == "ComputeDomain"]
    assert [(o["apiVersion"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs] == [
        ("resource.nvidia.com/v1beta1", "ml", "nvl-compute-domain"), ("resource.nvidia.com/v1beta1", "team-a",
                                                                     "nvl-compute-domain")]
    assert objs[0]["spec"] == {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "nvl-compute-domain-channel"},
                                                          "allocationMode": "All"}}
    assert objs[0]["metadata"]["labels"]["gpufleet.io/pool"] == "nvl"
    assert [o for o in dra.claims_for_pools([pool], ["ml"], compute_domains=False) if o["kind"] == "ComputeDomain"] == []
    assert dra.pod_channel_claims(pool) == ({"name": "compute-domain-channel",
                                             "resourceClaimTemplateName": "nvl-compute-domain-channel"},
                                            {"name": "compute-domain-channel"})
    # pools without it render none; validate's claims leave ComputeDomains out
    assert [o for o in dra.claims_for_pools([normalize_pool(DRA)], ["ml"]) if o["kind"] == "ComputeDomain"] == []
    with open(os.path.join(ROOT, "roles", "gpu_validate", "vars", "main.yml")) as handle:
        assert "gpu_dra_claims([gpu_validate_namespace], false)" in handle.read()
