"""Karpenter v1 disruption for training pools (issue 14 item 5): ``disruption_budgets`` become the
NodePool's spec.disruption.budgets (checked with the npm schemas generated from the real CRDs), and
``do_not_disrupt`` puts karpenter.sh/do-not-disrupt on the pods placed on the pool."""
import copy
import os

import pytest
import yaml

from crd_schema import assert_crs_valid, validate_crs
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.karpenter import karpenter_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.placement import example_job, placement
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.pools_check import resolve_settings
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
P0 = "gpufleet_gpu_pools[0]"
BUDGETS = [{"nodes": "0", "schedule": "0 8 * * mon-fri", "duration": "10h"},
           {"nodes": "10%", "reasons": ["Empty", "Drifted"]},
           {"nodes": "1", "schedule": "@daily", "duration": "1h30m", "reasons": ["Underutilized"]}]
EKS_POOL = {"name": "train-h100", "gpu_type": "h100-80gb", "gpus_per_node": 8, "zones": ["us-east-1a"],
            "max_nodes": 4}
SELF_POOL = {"name": "infer-l4", "gpu_type": "l4", "gpus_per_node": 1, "max_nodes": 3}


def nodepool(pool):
    objs = karpenter_objects([normalize_pool(pool)], resolve_settings({}), "ml-prod")
    return next(o for o in objs if o["kind"] == "NodePool")


def params(platform, pool):
    return {"platform": platform, "cluster_name": "c1", "addons_mode": "standalone", "apply": False,
            "pools": [copy.deepcopy(pool)], "extra": {}}


def test_budgets_become_the_nodepool_disruption_budgets_and_are_schema_valid():
    pool = dict(EKS_POOL, disruption_budgets=BUDGETS)
    obj = nodepool(pool)
    assert obj["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30m",
                                         "budgets": BUDGETS}
    objs = karpenter_objects([normalize_pool(pool)], resolve_settings({}), "ml-prod")
    assert_crs_valid(objs)


def test_no_budgets_leave_karpenters_default_budget():
    assert "budgets" not in nodepool(EKS_POOL)["spec"]["disruption"]


def test_the_schema_check_sees_a_bad_budget():
    obj = nodepool(dict(EKS_POOL, disruption_budgets=[{"nodes": "1"}]))
    obj["spec"]["disruption"]["budgets"][0]["nodes"] = "150%"
    result = validate_crs([obj])[0]
    assert not result["ok"] and "nodes" in result["error"]


def test_do_not_disrupt_annotates_placement_and_the_example_job_on_eks():
    pool = normalize_pool(dict(EKS_POOL, do_not_disrupt=True))
    assert placement(pool, "eks")["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    job = example_job(pool, "eks", "img:1", "gpu-examples")
    assert job["spec"]["template"]["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    assert job["spec"]["template"]["metadata"]["labels"] == {"gpufleet.io/pool": "train-h100"}


def test_without_do_not_disrupt_pods_carry_no_annotation():
    pool = normalize_pool(EKS_POOL)
    assert "annotations" not in placement(pool, "eks")
    assert "annotations" not in example_job(pool, "eks", "img:1", "ns")["spec"]["template"]["metadata"]


def test_placement_filter_passes_the_annotation_through():
    from ansible_collections.gpufleet.k8s.plugins.filter.placement import gpu_pod_placement
    frag = gpu_pod_placement(dict(EKS_POOL, do_not_disrupt=True), "eks")
    assert frag["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}


def test_eks_example_inventory_training_pool_uses_both():
    with open(os.path.join(ROOT, "inventories", "eks", "group_vars", "all", "gpufleet.yml")) as handle:
        inv = yaml.safe_load(handle)
    pool = next(p for p in inv["gpufleet_gpu_pools"] if p["name"] == "train-h100")
    errors, _warnings, _plan = run_preflight({"platform": "eks", "cluster_name": inv["gpufleet_cluster_name"],
                                              "addons_mode": inv["gpufleet_addons_mode"], "apply": False,
                                              "pools": [pool], "extra": {}})
    assert errors == []
    assert pool["do_not_disrupt"] is True and pool["expire_after"] == "Never"
    obj = nodepool(pool)
    assert obj["spec"]["disruption"]["budgets"] == pool["disruption_budgets"]
    assert_crs_valid([obj])


BAD = [
    ("eks", dict(EKS_POOL, disruption_budgets={"nodes": "1"}), P0 + ".disruption_budgets", "use a list of budgets"),
    ("eks", dict(EKS_POOL, disruption_budgets=["1"]), P0 + ".disruption_budgets[0]", "is not a budget"),
    ("eks", dict(EKS_POOL, disruption_budgets=[{"nodes": 1}]), P0 + ".disruption_budgets[0].nodes",
     "use a quoted node count"),
    ("eks", dict(EKS_POOL, disruption_budgets=[{"nodes": "150%"}]), P0 + ".disruption_budgets[0].nodes",
     "'150%' is not allowed"),
    ("eks", dict(EKS_POOL, disruption_budgets=[{"reasons": ["Empty"]}]), P0 + ".disruption_budgets[0].nodes",
     "None is not allowed"),
    ("eks", dict(EKS_POOL, disruption_budgets=[{"nodes": "1", "schedule": "@daily"}]),
     P0 + ".disruption_budgets[0].duration", "schedule and duration go together"),
    ("eks", dict(EKS_POOL, disruption_budgets=[{"nodes": "1", "duration": "8h"}]),
     P0 + ".disruption_budgets[0].schedule", "schedule and duration go together"),
    ("eks", dict(EKS_POOL, disruption_budgets=[{"nodes": "1", "schedule": "every day", "duration": "8h"}]),
     P0 + ".disruption_budgets[0].schedule", "'every day' is not a cron schedule"),
    ("eks", dict(EKS_POOL, disruption_budgets=[{"nodes": "1", "schedule": "@daily", "duration": "30s"}]),
     P0 + ".disruption_budgets[0].duration", "'30s' is not allowed"),
    ("eks", dict(EKS_POOL, disruption_budgets=[{"nodes": "1", "reasons": ["Expired"]}]),
     P0 + ".disruption_budgets[0].reasons", "Underutilized, Empty, Drifted"),
    ("eks", dict(EKS_POOL, disruption_budgets=[{"nodes": "1", "reasons": []}]),
     P0 + ".disruption_budgets[0].reasons", "[] is not allowed"),
    ("eks", dict(EKS_POOL, disruption_budgets=[{"nodes": "1", "reasons": ["Empty", "Empty"]}]),
     P0 + ".disruption_budgets[0].reasons", "distinct"),
    ("eks", dict(EKS_POOL, disruption_budgets=[{"nodes": "1", "max": "2"}]), P0 + ".disruption_budgets[0]",
     "unknown key(s) max"),
    ("eks", dict(EKS_POOL, disruption_budgets=[{"nodes": "1"}] * 51), P0 + ".disruption_budgets", "at most 50"),
    ("kubeadm", dict(SELF_POOL, disruption_budgets=[{"nodes": "1"}]), P0 + ".disruption_budgets",
     "only used on eks"),
    ("gke", dict(SELF_POOL, zones=["us-central1-a"], do_not_disrupt=True), P0 + ".do_not_disrupt",
     "only used on eks"),
    ("eks", dict(EKS_POOL, do_not_disrupt="yes"), P0 + ".do_not_disrupt", "not a boolean"),
]


@pytest.mark.parametrize("platform,pool,var,fragment", BAD, ids=["%s:%s" % (b[2], b[3][:24]) for b in BAD])
def test_bad_disruption_input_is_refused_naming_the_variable(platform, pool, var, fragment):
    errors, _warnings, _plan = run_preflight(params(platform, pool))
    matching = [e for e in errors if e.startswith(var + ":")]
    assert matching, "no error for %s in %s" % (var, errors)
    assert any(fragment in e for e in matching), matching
    assert all("; use" in e for e in matching), matching


def test_good_budgets_pass_preflight():
    errors, _warnings, _plan = run_preflight(params("eks", dict(EKS_POOL, disruption_budgets=BUDGETS,
                                                                  do_not_disrupt=True)))
    assert errors == []
