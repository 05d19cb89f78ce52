"""A cluster's part of the fleet pools in preflight (module_utils/fleet/cluster_pools.py): appended to
gpufleet_gpu_pools before every check, named by their own variable, a name clash refused naming both
variables, and the regional offering check for every pool when gpufleet_fleet_cluster has cloud/region."""
import copy

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight

OWN = {"name": "train-h100", "gpu_type": "h100-80gb", "gpus_per_node": 8, "zones": ["us-east-1a"], "max_nodes": 4}
FLEET = {"name": "infer-l4", "gpu_type": "l4", "gpus_per_node": 1, "zones": ["us-east-1a", "us-east-1b"],
         "min_nodes": 1, "max_nodes": 12}
CLUSTER = {"name": "eks-use1", "cloud": "aws", "region": "us-east-1", "tags": ["prod"]}


def params(pools=(OWN,), fleet=(FLEET,), cluster=CLUSTER, platform="eks", **extra):
    values = {"gpufleet_fleet_pools": copy.deepcopy(list(fleet) if isinstance(fleet, tuple) else fleet),
              "gpufleet_fleet_cluster": copy.deepcopy(cluster)}
    values = dict((k, v) for k, v in values.items() if v is not None)
    values.update(extra)
    return {"platform": platform, "cluster_name": "ml", "addons_mode": "standalone", "apply": False,
            "pools": copy.deepcopy(list(pools)), "extra": values}


def test_fleet_pools_are_appended_and_normalized():
    errors, warnings, plan = run_preflight(params())
    assert errors == [] and warnings == []
    assert [p["name"] for p in plan["pools"]] == ["train-h100", "infer-l4"]
    assert plan["pools"][1]["node_group"] == "gpu_pool_infer_l4" and plan["pools"][1]["capacity_types"] == ["on-demand"]
    assert plan["fleet_pools"] == ["infer-l4"]
    assert plan["gpus_max"] == 4 * 8 + 12


def test_without_fleet_variables_nothing_changes():
    errors, _warnings, plan = run_preflight(params(fleet=None, cluster=None))
    assert errors == [] and [p["name"] for p in plan["pools"]] == ["train-h100"] and "fleet_pools" not in plan


def test_a_cluster_with_only_fleet_pools():
    errors, _warnings, plan = run_preflight(params(pools=[]))
    assert errors == [] and [p["name"] for p in plan["pools"]] == ["infer-l4"]


def test_name_clash_names_both_variables():
    errors, _warnings, plan = run_preflight(params(fleet=[dict(FLEET, name="train-h100")]))
    assert errors == ["gpufleet_fleet_pools[0].name: 'train-h100' is also the name of gpufleet_gpu_pools[0]: a fleet "
                      "pool and a pool of the cluster's own may not share a name (both would render the same "
                      "NodePool, ComputeClass and node label); rename one of them, in the fleet file's "
                      "fleet_run_pools or in gpufleet_gpu_pools"]
    assert [p["name"] for p in plan["pools"]] == ["train-h100"]


def test_existing_pool_checks_apply_to_fleet_pools_by_their_own_name():
    bad = [dict(FLEET, name="ok-l4"), dict(FLEET, name="bad-l4", gpus_per_node=2, zones=["us-west-2a"])]
    errors, _warnings, _plan = run_preflight(params(fleet=bad))
    assert any(e.startswith("gpufleet_fleet_pools[1].gpus_per_node: 2 is not offered for l4 on EKS") for e in errors), errors
    assert any(e.startswith("gpufleet_fleet_pools[1].zones[0]: 'us-west-2a' is not in region us-east-1")
               for e in errors), errors
    assert not any("gpufleet_gpu_pools[1]" in e or "gpufleet_gpu_pools[2]" in e for e in errors), errors


def test_index_after_a_clash_still_names_the_right_fleet_pool():
    fleet = [dict(FLEET, name="train-h100"), dict(FLEET, name="x", gpu_type="nope")]
    errors, _warnings, _plan = run_preflight(params(fleet=fleet))
    # the clash stops the run before the pool checks; the spec check of the second one names index 1
    assert any(e.startswith("gpufleet_fleet_pools[1].gpu_type: 'nope' is not a known GPU type") for e in errors), errors


def test_unoffered_gpu_type_refused_for_own_and_fleet_pools():
    own = dict(OWN, zones=["eu-west-1a"])
    fleet = dict(FLEET, zones=["eu-west-1a"])
    cluster = dict(CLUSTER, region="eu-west-1")
    errors, _warnings, _plan = run_preflight(params(pools=[own], fleet=[fleet], cluster=cluster))
    assert any(e.startswith("gpufleet_gpu_pools[0]: pool train-h100: gpu_type h100-80gb (p5) is not offered in "
                            "cluster eks-use1 (aws region eu-west-1); regions that offer it: ") for e in errors), errors
    assert any(e.startswith("gpufleet_fleet_pools[0]: pool infer-l4: gpu_type l4 (g6) is not offered in cluster "
                            "eks-use1 (aws region eu-west-1)") for e in errors), errors


def test_no_regional_check_without_a_fleet_cluster():
    own = dict(OWN, zones=["eu-west-1a"])
    errors, _warnings, _plan = run_preflight(params(pools=[own], fleet=[], cluster=None))
    assert errors == []


def test_gke_zone_that_does_not_offer_the_accelerator():
    own = {"name": "l4", "gpu_type": "l4", "gpus_per_node": 1, "zones": ["us-central1-a", "us-central1-f"],
           "max_nodes": 2}
    cluster = {"name": "gke-usc1", "cloud": "gcp", "region": "us-central1"}
    errors, _warnings, _plan = run_preflight(params(pools=[own], fleet=[], cluster=cluster, platform="gke"))
    assert any(e.startswith("gpufleet_gpu_pools[0].zones[1]: pool l4: zone us-central1-f of cluster gke-usc1")
               for e in errors), errors


def test_unknown_region_warns():
    own = dict(OWN, zones=["mx-central-1a"])
    errors, warnings, _plan = run_preflight(params(pools=[own], fleet=[], cluster=dict(CLUSTER, region="mx-central-1")))
    assert errors == [] and any("'mx-central-1'" in w and "not checked" in w for w in warnings), warnings


@pytest.mark.parametrize("fleet, cluster, extra, var, fragment", [
    ("pools", CLUSTER, {}, "gpufleet_fleet_pools", "must be a list of GPU pools"),
    ([FLEET], "eks", {}, "gpufleet_fleet_cluster", "must be a mapping with name, cloud, region"),
    ([FLEET], dict(CLUSTER, zone="a"), {}, "gpufleet_fleet_cluster", "unknown key(s) zone; use one of: name, cloud"),
    ([FLEET], dict(CLUSTER, cloud="azure"), {}, "gpufleet_fleet_cluster.cloud", "'azure' is not allowed; use one of: aws"),
    ([FLEET], dict(CLUSTER, cloud="gcp", region="us-central1"), {}, "gpufleet_fleet_cluster.cloud",
     "'gcp' does not run gpufleet_platform eks; use one of: aws"),
    ([FLEET], dict(CLUSTER, platform="gke"), {}, "gpufleet_fleet_cluster.platform",
     "'gke' (the fleet file's platform of cluster eks-use1) is not this inventory's gpufleet_platform 'eks'"),
    ([FLEET], dict(CLUSTER, region=""), {}, "gpufleet_fleet_cluster.region", "'' is not a region"),
    ([FLEET], CLUSTER, {"gpu_pools_region": "us-east-2"}, "gpufleet_fleet_cluster.region",
     "differs from this inventory's gpu_pools_region 'us-east-2'"),
])
def test_bad_fleet_inputs(fleet, cluster, extra, var, fragment):
    errors, _warnings, _plan = run_preflight(params(fleet=fleet, cluster=cluster, **extra))
    hits = [e for e in errors if e.startswith(var + ": ")]
    assert hits and any(fragment in e for e in hits), errors


def test_platform_given_and_equal_passes():
    errors, _warnings, _plan = run_preflight(params(cluster=dict(CLUSTER, platform="eks")))
    assert errors == []


def test_onprem_cluster_takes_fleet_pools_without_zones():
    fleet = {"name": "infer-l4", "gpu_type": "l4", "gpus_per_node": 1, "min_nodes": 0, "max_nodes": 3}
    cluster = {"name": "onprem-fra", "cloud": "onprem", "region": "fra1"}
    p = params(pools=[], fleet=[fleet], cluster=cluster, platform="kubeadm")
    errors, warnings, plan = run_preflight(p)
    assert errors == [] and plan["pools"][0]["node_group"] == "gpu_pool_infer_l4", (errors, warnings)
