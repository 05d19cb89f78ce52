"""The inventory contract: pool normalization and every bad input preflight must refuse."""
import copy

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pool

GOOD_POOL = {"name": "train-a100", "gpu_type": "a100-80gb", "gpus_per_node": 8, "max_nodes": 2,
             "sharing": {"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.10gb", "mig_preconfigured": True}}
GOOD = {"platform": "kubeadm", "cluster_name": "c1", "addons_mode": "standalone",
        "pools": [GOOD_POOL, {"name": "infer-l4", "gpu_type": "l4", "sharing": {"mode": "time-slicing", "replicas": 4}}],
        "apply": False}


def with_(path, value):
    params = copy.deepcopy(GOOD)
    target = params
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    last = keys[-1]
    if value is KeyError:
        del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return params


def test_good_inventory_passes_and_normalizes():
    errors, warnings, plan = run_preflight(copy.deepcopy(GOOD))
    assert errors == []
    assert plan["pools"][1]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert plan["pools"][1]["node_group"] == "gpu_pool_infer_l4"
    assert plan["pools"][1]["gpus_per_node"] == 1
    assert plan["gpus_max"] == 16


def test_normalize_keeps_user_values_and_does_not_mutate():
    pool = {"name": "p", "gpu_type": "t4", "taints": [], "sharing": {"mode": "mps", "replicas": 3}}
    before = copy.deepcopy(pool)
    out = normalize_pool(pool)
    assert pool == before
    assert out["taints"] == [] and out["sharing"]["replicas"] == 3


BAD = [
    (with_("platform", "aks"), "gpufleet_platform", "one of: eks, gke"),
    (with_("platform", None), "gpufleet_platform", "openshift"),
    (with_("addons_mode", "both"), "gpufleet_addons_mode", "standalone, operator, none"),
    (with_("pools", []), "gpufleet_gpu_pools", "non-empty list"),
    (with_("pools.0.gpu_type", KeyError), "gpufleet_gpu_pools[0].gpu_type", "is required; use one of: a100-40gb"),
    (with_("pools.0.gpu_type", "rtx4090"), "gpufleet_gpu_pools[0].gpu_type", "not a known GPU type"),
    (with_("pools.0.name", "Train_A100"), "gpufleet_gpu_pools[0].name", "DNS label"),
    (with_("pools.1.name", "train-a100"), "gpufleet_gpu_pools[1].name", "used twice"),
    (with_("pools.0.gpus_per_node", 0), "gpufleet_gpu_pools[0].gpus_per_node", "from 1 to 16"),
    (with_("pools.0.gpus_per_node", "8"), "gpufleet_gpu_pools[0].gpus_per_node", "from 1 to 16"),
    (with_("pools.0.capacity_types", ["preemptible"]), "gpufleet_gpu_pools[0].capacity_types", "spot, on-demand"),
    (with_("pools.0.min_nodes", 3), "gpufleet_gpu_pools[0].max_nodes", "below min_nodes"),
    (with_("pools.0.max_nodes", -1), "gpufleet_gpu_pools[0].max_nodes", "integer >= 0"),
    (with_("pools.0.taints", [{"key": "a", "effect": "Never"}]), "gpufleet_gpu_pools[0].taints[0].effect", "NoSchedule"),
    (with_("pools.0.consolidate_after", "5 minutes"), "gpufleet_gpu_pools[0].consolidate_after", "30s, 10m"),
    (with_("pools.0.sharing", {"mode": "slices"}), "gpufleet_gpu_pools[0].sharing.mode", "time-slicing, mps, mig"),
    (with_("pools.1.sharing", {"mode": "time-slicing", "replicas": 0}), "gpufleet_gpu_pools[1].sharing.replicas", ">= 2"),
    (with_("pools.1.sharing", {"mode": "mps", "replicas": -2}), "gpufleet_gpu_pools[1].sharing.replicas", ">= 2"),
    (with_("pools.0.sharing", {"mode": "mig", "mig_strategy": "all"}), "gpufleet_gpu_pools[0].sharing.mig_strategy", "single, mixed"),
    (with_("pools.1.sharing", {"mode": "mig"}), "gpufleet_gpu_pools[1].sharing.mode", "MIG is not available on gpu_type 'l4'"),
    (with_("pools.0", "a100"), "gpufleet_gpu_pools[0]", "must be a mapping"),
]


@pytest.mark.parametrize("params,var,fragment", BAD, ids=[b[1] + ":" + b[2][:20] for b in BAD])
def test_bad_input_is_refused_naming_the_variable(params, var, fragment):
    errors, _warnings, _plan = run_preflight(params)
    matching = [e for e in errors if e.startswith(var + ":")]
    assert matching, "no error for %s in %s" % (var, errors)
    assert any(fragment in e for e in matching), matching
