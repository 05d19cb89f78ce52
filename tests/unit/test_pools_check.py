"""Provisioning rules of the GPU pools: every bad input preflight must refuse, naming its variable."""
import copy
import os

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.pools import pools_check
from ansible_collections.gpufleet.k8s.plugins.module_utils.model import spec
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "karpenter")

EKS_POOL = {"name": "train-h100", "gpu_type": "h100-80gb", "gpus_per_node": 8, "zones": ["us-east-1a", "us-east-1b"],
            "max_nodes": 4}
GKE_POOL = {"name": "train-a100", "gpu_type": "a100-40gb", "gpus_per_node": 2, "capacity_types": ["spot"],
            "zones": ["us-central1-a", "us-central1-b"], "max_nodes": 8}
SELF_POOL = {"name": "infer-l4", "gpu_type": "l4", "gpus_per_node": 1, "max_nodes": 3}


def params(platform, pool, **extra):
    # OpenShift's supported add-on path is the GPU Operator (standalone there is refused by the add-on checks)
    return {"platform": platform, "cluster_name": "c1", "addons_mode": "operator" if platform == "openshift" else "standalone",
            "apply": False,
            "pools": [copy.deepcopy(pool)], "extra": dict(extra)}


def pool_with(base, **changes):
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is KeyError:
            out.pop(key, None)
        else:
            out[key] = value
    return out


@pytest.mark.parametrize("platform,pool", [
    ("eks", EKS_POOL), ("gke", GKE_POOL), ("gke-autopilot", pool_with(GKE_POOL, gpu_type="l4", gpus_per_node=1)),
    ("kubeadm", SELF_POOL), ("k3s", SELF_POOL), ("openshift", SELF_POOL),
])
def test_good_pools_pass(platform, pool):
    errors, warnings, _plan = run_preflight(params(platform, pool))
    assert errors == [] and warnings == []


P0 = "gpufleet_gpu_pools[0]"
BAD = [
    # (platform, pool, extra settings, variable, fragment of the message)
    ("gke", pool_with(GKE_POOL, gpu_type="a10g", gpus_per_node=1), {}, P0 + ".gpu_type",
     "'a10g' is not offered on GKE; use one of: a100-40gb"),
    ("gke-autopilot", pool_with(GKE_POOL, gpu_type="l40s", gpus_per_node=1), {}, P0 + ".gpu_type",
     "not offered on GKE Autopilot"),
    ("eks", pool_with(EKS_POOL, zones=[]), {}, P0 + ".zones", "is empty; EKS pools need at least one zone"),
    ("gke", pool_with(GKE_POOL, zones=KeyError), {}, P0 + ".zones", "is empty; GKE pools need"),
    ("eks", pool_with(EKS_POOL, max_gpus=4), {}, P0 + ".max_gpus", "4 is below gpus_per_node 8"),
    ("kubeadm", pool_with(SELF_POOL, capacity_types=["spot"]), {}, P0 + ".capacity_types",
     "kubeadm has no spot capacity; use one of: [on-demand]"),
    ("gke-autopilot", pool_with(GKE_POOL, gpu_type="l4", gpus_per_node=1), {"gpu_pools_gke_nap": "enabled"},
     "gpu_pools_gke_nap", "Autopilot has no node auto-provisioning config file"),
    ("eks", EKS_POOL, {"gpu_pools_karpenter_migrate_files": [os.path.join(FIXTURES, "not-a-provisioner.yaml")]},
     "gpu_pools_karpenter_migrate_files[0]", "is karpenter.sh/v1beta1/NodePool, not a Provisioner"),
    ("eks", EKS_POOL, {"gpu_pools_karpenter_migrate_files": [os.path.join(FIXTURES, "both-ttl-and-consolidation.yaml")]},
     "gpu_pools_karpenter_migrate_files[0]", "sets both ttlSecondsAfterEmpty and consolidation.enabled"),
    ("eks", EKS_POOL, {"gpu_pools_karpenter_migrate_files": ["/nonexistent/provisioner.yaml"]},
     "gpu_pools_karpenter_migrate_files[0]", "is not a readable file"),
    ("gke", GKE_POOL, {"gpu_pools_karpenter_migrate_files": [os.path.join(FIXTURES, "v1alpha5-gpu-provisioner.yaml")]},
     "gpu_pools_karpenter_migrate_files", "Karpenter exists only on eks"),
    ("eks", pool_with(EKS_POOL, zones=["us-east-1a", "us-west-2b"]), {}, P0 + ".zones[1]",
     "'us-west-2b' is not in region us-east-1"),
    ("eks", EKS_POOL, {"gpu_pools_region": "eu-west-1"}, P0 + ".zones[0]", "not in region eu-west-1"),
    ("gke", pool_with(GKE_POOL, zones=["us-central1a"]), {}, P0 + ".zones[0]", "is not a GKE zone name"),
    ("eks", pool_with(EKS_POOL, zones=["us-east-1a", "us-east-1a"]), {}, P0 + ".zones[1]", "listed twice"),
    ("eks", pool_with(EKS_POOL, gpus_per_node=2), {}, P0 + ".gpus_per_node",
     "2 is not offered for h100-80gb on EKS; use one of: 1, 8"),
    ("gke", pool_with(GKE_POOL, gpu_type="t4", gpus_per_node=8), {}, P0 + ".gpus_per_node",
     "not offered for t4 on GKE; use one of: 1, 2, 4"),
    ("eks", pool_with(EKS_POOL, max_nodes=KeyError), {}, P0 + ".max_nodes", "needs max_nodes or max_gpus"),
    ("eks", pool_with(EKS_POOL, weight=0), {}, P0 + ".weight", "from 1 to 100"),
    ("eks", pool_with(EKS_POOL, ami_selector_terms=[{"alias": "bottlerocket@latest"}]), {},
     P0 + ".ami_selector_terms[0].alias", "refused for GPU pools: only the AL2023 alias resolves the NVIDIA"),
    ("eks", EKS_POOL, {"gpu_pools_eks_ami_selector_terms": [{"alias": "al2@v20250505"}]},
     "gpu_pools_eks_ami_selector_terms[0].alias", "use one of: al2023@vYYYYMMDD (pinned)"),
    ("eks", EKS_POOL, {"gpu_pools_eks_ami_family": "Bottlerocket"}, "gpu_pools_eks_ami_family",
     "'Bottlerocket' is refused for GPU pools"),
    ("eks", EKS_POOL, {"gpu_pools_eks_ami_version": "20251103"}, "gpu_pools_eks_ami_version",
     "'20251103' is not an AL2023 AMI release; use vYYYYMMDD"),
    ("eks", EKS_POOL, {"gpu_pools_eks_karpenter_version": "1.3.2"}, "gpu_pools_eks_karpenter_version",
     "1.3.2 is below 1.4, the first karpenter-provider-aws with amiSelectorTerms.ssmParameter"),
    ("eks", EKS_POOL, {"gpu_pools_eks_subnet_selector_terms": [{"tag": {"a": "b"}}]},
     "gpu_pools_eks_subnet_selector_terms[0]", "unknown key(s) tag"),
    ("kubeadm", pool_with(SELF_POOL, compute_class=True), {}, P0 + ".compute_class", "only possible on GKE"),
    ("eks", pool_with(EKS_POOL, disk_size_gb=5), {}, P0 + ".disk_size_gb", "from 10 to 65536"),
    ("gke", pool_with(GKE_POOL, max_pods=300), {}, P0 + ".max_pods", "from 1 to 256"),
    ("eks", pool_with(EKS_POOL, expire_after="30 days"), {}, P0 + ".expire_after", "not a duration"),
    ("eks", pool_with(EKS_POOL, max_memory_gb=0), {}, P0 + ".max_memory_gb", "integer >= 1"),
    ("eks", pool_with(EKS_POOL, instance_type="p5.48xlarge"), {}, P0, "unknown key(s) instance_type"),
    ("kubeadm", pool_with(SELF_POOL, ami_selector_terms=[{"id": "ami-1"}]), {}, P0 + ".ami_selector_terms",
     "only used on eks"),
    ("eks", EKS_POOL, {"gpu_pools_eks_kubernetes_version": 1.33}, "gpu_pools_eks_kubernetes_version",
     "quoted minor version"),
    ("gke", GKE_POOL, {"gpu_pools_gke_image_type": "COS"}, "gpu_pools_gke_image_type", "COS_CONTAINERD"),
    ("gke", GKE_POOL, {"gpu_pools_gke_disk_type": "hyperdisk-ml"}, "gpu_pools_gke_disk_type", "pd-balanced"),
    ("gke", GKE_POOL, {"gpu_pools_gke_nap_cpu_min": 64, "gpu_pools_gke_nap_cpu_max": 32},
     "gpu_pools_gke_nap_cpu_max", "32 is below gpu_pools_gke_nap_cpu_min 64"),
    ("gke", GKE_POOL, {"gpu_pools_gke_nap": "yes"}, "gpu_pools_gke_nap", "use one of: auto, enabled, disabled"),
    ("k3s", SELF_POOL, {"gpu_pools_gke_nap": "enabled"}, "gpu_pools_gke_nap", "only on GKE Standard"),
    ("gke", GKE_POOL, {"gpu_pools_region": "us-central-1"}, "gpu_pools_region", "not a GKE region name"),
    ("eks", EKS_POOL, {"gpu_pools_example_image": "nvcr.io/nvidia/k8s/cuda-sample:latest"},
     "gpu_pools_example_image", "is not pinned"),
    ("eks", EKS_POOL, {"gpu_pools_examples": "yes"}, "gpu_pools_examples", "use one of: true, false"),
]


@pytest.mark.parametrize("platform,pool,extra,var,fragment", BAD, ids=["%s:%s" % (b[3], b[4][:24]) for b in BAD])
def test_bad_input_is_refused_naming_the_variable(platform, pool, extra, var, fragment):
    errors, _warnings, _plan = run_preflight(params(platform, pool, **extra))
    matching = [e for e in errors if e.startswith(var + ":")]
    assert matching, "no error for %s in %s" % (var, errors)
    assert any(fragment in e for e in matching), matching
    # every message says what to use instead
    assert all("; use" in e for e in matching), matching


def test_mixed_capacity_on_self_managed_only_warns():
    errors, warnings, _ = run_preflight(params("kubeadm", pool_with(SELF_POOL, capacity_types=["on-demand", "spot"])))
    assert errors == []
    assert warnings == ["gpufleet_gpu_pools[0].capacity_types: spot is ignored on kubeadm (self-managed nodes)"]


def test_settings_defaults_equal_the_role_defaults():
    with open(os.path.join(ROOT, "roles", "gpu_pools", "defaults", "main.yml")) as handle:
        role = yaml.safe_load(handle)
    assert {k[len("gpu_pools_"):]: v for k, v in role.items()} == pools_check.settings_defaults()


def test_settings_defaults_equal_the_argument_specs():
    with open(os.path.join(ROOT, "roles", "gpu_pools", "meta", "argument_specs.yml")) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    documented = {k[len("gpu_pools_"):]: v.get("default") for k, v in options.items() if k.startswith("gpu_pools_")}
    assert documented == pools_check.settings_defaults()


def test_resolve_settings_accepts_prefixed_and_short_names_and_ignores_others():
    out = pools_check.resolve_settings({"gpu_pools_region": "us-east-1", "gke_disk_type": "pd-ssd", "other": 1})
    assert out["region"] == "us-east-1" and out["gke_disk_type"] == "pd-ssd" and "other" not in out


@pytest.mark.parametrize("zone,platform,region", [
    ("us-east-1a", "eks", "us-east-1"),
    ("eu-central-2c", "eks", "eu-central-2"),
    ("us-gov-west-1a", "eks", "us-gov-west-1"),
    ("us-central1-a", "gke", "us-central1"),
    ("europe-west4-b", "gke-autopilot", "europe-west4"),
    ("us-central1-a", "eks", None),
    ("us-east-1a", "gke", None),
    ("us-east-1", "eks", None),
])
def test_zone_region(zone, platform, region):
    assert pools_check.zone_region(zone, platform) == region


@pytest.mark.parametrize("pools,expected", [
    ([{"zones": ["a", "b"]}, {"zones": ["b", "c"]}], ["a", "b", "c"]),
    ([{"zones": ["c"]}, {"zones": ["a", "c"]}], ["c", "a"]),
    ([{"zones": []}, {}], []),
])
def test_spread_zones_keeps_first_preference_order_without_repeats(pools, expected):
    assert pools_check.spread_zones(pools) == expected


@pytest.mark.parametrize("pool,limit", [
    ({"gpus_per_node": 8, "max_nodes": 4, "max_gpus": None}, 32),
    ({"gpus_per_node": 8, "max_nodes": 4, "max_gpus": 16}, 16),
    ({"gpus_per_node": 1, "max_nodes": None, "max_gpus": None}, None),
])
def test_pool_gpu_limit(pool, limit):
    assert spec.pool_gpu_limit(pool) == limit


@pytest.mark.parametrize("platform,pool,warning", [
    ("eks", pool_with(EKS_POOL, capacity_types=["on-demand", "spot"]),
     "gpufleet_gpu_pools[0].capacity_types: Karpenter tries spot first"),
    ("gke", pool_with(GKE_POOL, taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]),
     "gpufleet_gpu_pools[0].taints: GKE puts its own nvidia.com/gpu taint"),
    ("k3s", pool_with(SELF_POOL, zones=["a"]), "gpufleet_gpu_pools[0].zones: zones are ignored on k3s"),
])
def test_warnings_name_the_variable(platform, pool, warning):
    errors, warnings, _ = run_preflight(params(platform, pool))
    assert errors == []
    assert any(w.startswith(warning) for w in warnings), warnings
