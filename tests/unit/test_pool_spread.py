"""Pools spread across the clusters of a fleet: the share split, explicit bounds, and every refusal
naming its variable path and the allowed values (module_utils/fleet/pool_spread.py)."""
import copy
import itertools

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import pool_spread
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import validate_pools, normalize_pools
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems

CLUSTERS = [
    {"name": "onprem-fra", "cloud": "onprem", "region": "fra1", "platform": "kubeadm"},
    {"name": "eks-use1", "cloud": "aws", "region": "us-east-1", "platform": "eks"},
    {"name": "gke-usc1", "cloud": "gcp", "region": "us-central1", "platform": "gke"},
    {"name": "eks-euw1", "cloud": "aws", "region": "eu-west-1", "platform": "eks"},
]

L4 = {"name": "infer-l4", "gpu_type": "l4", "gpus_per_node": 1, "max_nodes": 20, "min_nodes": 2,
      "spread": [{"cluster": "eks-use1", "share": 60, "zones": ["us-east-1a", "us-east-1b"]},
                 {"cluster": "gke-usc1", "share": 40, "zones": ["us-central1-a"]}]}


def pool(**changes):
    out = copy.deepcopy(L4)
    out.update(changes)
    return out


def errors_of(pools, clusters=CLUSTERS):
    with pytest.raises(GpufleetError) as exc:
        pool_spread.split_pools(pools, clusters)
    return exc.value.details["errors"]


@pytest.mark.parametrize("total, shares, expected", [
    (20, [60, 40], [12, 8]),
    (10, [34, 33, 33], [4, 3, 3]),        # 3.4, 3.3, 3.3: the largest remainder gets the last node
    (10, [33, 33, 34], [3, 3, 4]),
    (1, [50, 50], [1, 0]),                # tie: the earlier part
    (7, [25, 25, 25, 25], [2, 2, 2, 1]),
    (0, [70, 30], [0, 0]),
    (3, [10, 45, 45], [0, 2, 1]),         # 0.3, 1.35, 1.35 -> floors 0, 1, 1; one left: 0.35 ties, earlier wins
])
def test_largest_remainder(total, shares, expected):
    assert pool_spread.largest_remainder(total, shares) == expected
    assert sum(expected) == total


def test_largest_remainder_always_adds_up_and_keeps_min_below_max():
    for shares in ([50, 50], [60, 40], [34, 33, 33], [10, 20, 70], [1, 1, 98], [25, 25, 25, 25]):
        for mn, mx in itertools.combinations_with_replacement(range(0, 13), 2):
            low = pool_spread.largest_remainder(mn, shares)
            high = pool_spread.largest_remainder(mx, shares)
            assert sum(low) == mn and sum(high) == mx
            assert all(a <= b for a, b in zip(low, high)), (shares, mn, mx, low, high)


def test_share_split_per_cluster():
    out = pool_spread.split_pools([pool()], CLUSTERS)
    assert sorted(out) == ["eks-euw1", "eks-use1", "gke-usc1", "onprem-fra"]
    assert out["onprem-fra"] == [] and out["eks-euw1"] == []
    eks, = out["eks-use1"]
    gke, = out["gke-usc1"]
    assert (eks["min_nodes"], eks["max_nodes"], eks["zones"]) == (1, 12, ["us-east-1a", "us-east-1b"])
    assert (gke["min_nodes"], gke["max_nodes"], gke["zones"]) == (1, 8, ["us-central1-a"])
    assert "spread" not in eks and eks["gpu_type"] == "l4" and eks["name"] == "infer-l4"


def test_parts_are_valid_gpufleet_gpu_pools():
    out = pool_spread.split_pools([pool()], CLUSTERS)
    for name in ("eks-use1", "gke-usc1"):
        problems = Problems()
        validate_pools(normalize_pools(out[name]), "eks" if name.startswith("eks") else "gke", problems)
        assert problems.errors == []


def test_max_gpus_split_too():
    out = pool_spread.split_pools([pool(max_gpus=9, max_nodes=None)], CLUSTERS)
    assert [out["eks-use1"][0]["max_gpus"], out["gke-usc1"][0]["max_gpus"]] == [5, 4]
    assert "max_nodes" not in out["eks-use1"][0]


def test_explicit_bounds_and_onprem_node_group():
    spread = [{"cluster": "onprem-fra", "min_nodes": 1, "max_nodes": 3, "node_group": "gpu_fra"},
              {"cluster": "eks-use1", "min_nodes": 0, "max_nodes": 4, "zones": ["us-east-1a"]}]
    out = pool_spread.split_pools([pool(spread=spread, max_nodes=None, min_nodes=None)], CLUSTERS)
    onprem, = out["onprem-fra"]
    assert (onprem["min_nodes"], onprem["max_nodes"], onprem["node_group"]) == (1, 3, "gpu_fra")
    assert "zones" not in onprem
    assert out["eks-use1"][0]["max_nodes"] == 4


def test_onprem_part_without_node_group_keeps_the_default():
    spread = [{"cluster": "onprem-fra", "max_nodes": 3}]
    out = pool_spread.split_pools([pool(spread=spread, max_nodes=None, min_nodes=None)], CLUSTERS)
    assert "node_group" not in out["onprem-fra"][0]
    assert normalize_pools(out["onprem-fra"])[0]["node_group"] == "gpu_pool_infer_l4"


def test_selected_limits_the_result_not_the_check():
    out = pool_spread.split_pools([pool()], CLUSTERS, selected=["gke-usc1"])
    assert list(out) == ["gke-usc1"] and out["gke-usc1"][0]["max_nodes"] == 8


def test_empty_pools():
    assert pool_spread.split_pools([], CLUSTERS[:2]) == {"onprem-fra": [], "eks-use1": []}


@pytest.mark.parametrize("pools, var, words", [
    ("infer", "fleet_run_pools", ["must be a list", "a string"]),
    ([pool(spread=[])], "fleet_run_pools[0].spread", ["non-empty list", "eks-use1, gke-usc1"]),
    ([pool(spread=[{"cluster": "eks-us", "share": 100, "zones": ["us-east-1a"]}])], "fleet_run_pools[0].spread[0].cluster",
     ["'eks-us' is not a cluster", "one of: eks-euw1, eks-use1, gke-usc1, onprem-fra"]),
    ([pool(spread=[L4["spread"][0], dict(L4["spread"][0], share=40)])], "fleet_run_pools[0].spread[1].cluster",
     ["eks-use1 is listed twice", "spread[0]"]),
    ([pool(spread=[dict(L4["spread"][0], share=50), L4["spread"][1]])], "fleet_run_pools[0].spread",
     ["add up to 90 (50 + 40)", "add up to 100"]),
    ([pool(spread=[dict(L4["spread"][0], max_nodes=3), L4["spread"][1]])], "fleet_run_pools[0].spread[0]",
     ["has share and max_nodes", "one of: share"]),
    ([pool(spread=[dict(L4["spread"][0], share=0), dict(L4["spread"][1], share=100)])],
     "fleet_run_pools[0].spread[0].share", ["0 is not allowed", "1 to 100"]),
    ([pool(spread=[dict(L4["spread"][0], share="60"), L4["spread"][1]])],
     "fleet_run_pools[0].spread[0].share", ["'60' is not allowed"]),
    ([pool(spread=[L4["spread"][0], {"cluster": "gke-usc1", "max_nodes": 4, "zones": ["us-central1-a"]}])],
     "fleet_run_pools[0].spread", ["mixes parts with share (spread[0])", "explicit bounds (spread[1])"]),
    ([pool(spread=[{"cluster": "eks-use1", "max_nodes": 4, "zones": ["us-east-1a"]}])], "fleet_run_pools[0].max_nodes",
     ["fleet total that shares split", "spread[].max_nodes"]),
    ([pool(spread=[{"cluster": "eks-use1", "share": 100}])], "fleet_run_pools[0].spread[0].zones",
     ["is required for aws cluster eks-use1", "zones of us-east-1"]),
    ([pool(spread=[{"cluster": "eks-use1", "share": 100, "zones": ["us-east-2a"]}])],
     "fleet_run_pools[0].spread[0].zones[0]", ["in region us-east-2, not in us-east-1", "zones of us-east-1"]),
    ([pool(spread=[{"cluster": "gke-usc1", "share": 100, "zones": ["us-central1"]}])],
     "fleet_run_pools[0].spread[0].zones[0]", ["not a gcp zone name"]),
    ([pool(spread=[{"cluster": "gke-usc1", "share": 100, "zones": ["us-central1-a", "us-central1-a"]}])],
     "fleet_run_pools[0].spread[0].zones[1]", ["listed twice"]),
    ([pool(spread=[{"cluster": "onprem-fra", "share": 100, "zones": ["fra1-a"]}])],
     "fleet_run_pools[0].spread[0].zones", ["onprem cluster onprem-fra has no cloud zones", "node_group"]),
    ([pool(spread=[{"cluster": "eks-use1", "share": 100, "zones": ["us-east-1a"], "node_group": "g"}])],
     "fleet_run_pools[0].spread[0].node_group", ["only for onprem clusters"]),
    ([pool(spread=[{"cluster": "onprem-fra", "share": 100, "node_group": ""}])],
     "fleet_run_pools[0].spread[0].node_group", ["not an inventory group name"]),
    ([pool(spread=[{"cluster": "onprem-fra", "share": 100, "weight": 3}])], "fleet_run_pools[0].spread[0]",
     ["unknown key(s) weight", "one of: cluster, share"]),
    ([pool(zones=["us-east-1a"])], "fleet_run_pools[0].zones", ["move them to spread[].zones"]),
    ([pool(max_nodes=1, min_nodes=0)], "fleet_run_pools[0].spread[1].share",
     ["40% of max_nodes 1 leaves cluster gke-usc1 with max_nodes 0 (no node could start"]),
    ([pool(gpus_per_node=4, max_gpus=6, max_nodes=None)], "fleet_run_pools[0].spread[1].share",
     ["40% of max_gpus 6 leaves cluster gke-usc1 with max_gpus 2 (no node could start: it needs at least 4)"]),
    ([pool(), pool()], "fleet_run_pools[1].name", ["'infer-l4' is used twice"]),
    ([pool(name="Infer")], "fleet_run_pools[0].name", ["not a valid pool name", "DNS label"]),
    ([pool(gpu_tpye="l4")], "fleet_run_pools[0]", ["unknown key(s) gpu_tpye", "spread"]),
    ([pool(spread=[{"cluster": "eks-use1", "min_nodes": 5, "max_nodes": 4, "zones": ["us-east-1a"]}],
           max_nodes=None, min_nodes=None)], "fleet_run_pools[0].spread[0].max_nodes", ["4 is below min_nodes 5"]),
    ([pool(spread=[{"cluster": "eks-use1", "max_nodes": -1, "zones": ["us-east-1a"]}], max_nodes=None, min_nodes=None)],
     "fleet_run_pools[0].spread[0].max_nodes", ["-1 is not allowed", ">= 0"]),
    ([pool(max_nodes=2, min_nodes=3)], "fleet_run_pools[0].max_nodes", ["2 is below min_nodes 3"]),
])
def test_refusals_name_the_variable(pools, var, words):
    errors = errors_of(pools)
    hits = [e for e in errors if e.startswith(var + ": ")]
    assert hits, errors
    for word in words:
        assert any(word in e for e in hits), (word, hits)


def test_cluster_with_unknown_cloud():
    clusters = [{"name": "x", "cloud": "azure", "region": "westeurope"}]
    errors = errors_of([pool(spread=[{"cluster": "x", "share": 100}])], clusters)
    assert any(e.startswith("fleet_run_pools[0].spread[0].cluster: cluster x has cloud 'azure'") and
               "one of: aws, gcp, onprem" in e for e in errors), errors


def test_variable_name_is_the_callers():
    with pytest.raises(GpufleetError) as exc:
        pool_spread.split_pools([pool(spread=[])], CLUSTERS, var="pools_of_fleet")
    assert exc.value.details["errors"][0].startswith("pools_of_fleet[0].spread: ")


def test_unoffered_gpu_type_refused_with_the_regions_that_offer_it():
    # a10g: EC2 g5; the recorded catalog has no g5 in... every recorded AWS region has g5, so use p5e
    h200 = pool(gpu_type="h200-141gb", gpus_per_node=8, min_nodes=0,
                spread=[{"cluster": "eks-euw1", "share": 100, "zones": ["eu-west-1a"]}])
    errors = errors_of([h200])
    msg, = [e for e in errors if e.startswith("fleet_run_pools[0].spread[0]: ")]
    for word in ("pool infer-l4", "h200-141gb (p5e, p5en)", "cluster eks-euw1 (aws region eu-west-1)",
                 "regions that offer it: ", "us-east-1", "us-west-2"):
        assert word in msg, (word, msg)
    assert "eu-west-1," not in msg.split("regions that offer it: ")[1]


def test_gpu_type_not_on_the_cloud_at_all():
    errors = errors_of([pool(gpu_type="a10g", spread=[{"cluster": "gke-usc1", "share": 100,
                                                        "zones": ["us-central1-a"]}])])
    assert any("a10g is not offered on gcp at all" in e for e in errors), errors


def test_unknown_region_warns_and_passes():
    clusters = [{"name": "eks-x", "cloud": "aws", "region": "mx-central-1"}]
    warnings = []
    out = pool_spread.split_pools([pool(spread=[{"cluster": "eks-x", "share": 100, "zones": ["mx-central-1a"]}])],
                                  clusters, warnings=warnings)
    assert out["eks-x"][0]["max_nodes"] == 20
    assert len(warnings) == 1 and "'mx-central-1'" in warnings[0] and "not checked" in warnings[0]


def test_max_gpus_at_gpus_per_node_passes():
    out = pool_spread.split_pools([pool(gpus_per_node=4, max_gpus=10, max_nodes=None)], CLUSTERS)
    assert [out["eks-use1"][0]["max_gpus"], out["gke-usc1"][0]["max_gpus"]] == [6, 4]


def test_spread_rows_and_markdown():
    rows = pool_spread.spread_rows([pool(gpus_per_node=4, spread=[
        dict(L4["spread"][0]), dict(L4["spread"][1])])], CLUSTERS)
    assert [(r["cluster"], r["share"], r["min_nodes"], r["max_nodes"], r["max_gpus"]) for r in rows] == [
        ("eks-use1", 60, 1, 12, 48), ("gke-usc1", 40, 1, 8, 32)]
    assert rows[0]["region"] == "us-east-1" and rows[1]["zones"] == ["us-central1-a"]
    text = pool_spread.spread_markdown(rows)
    assert "| infer-l4 | l4 | eks-use1 | aws | us-east-1 | us-east-1a, us-east-1b | 60% | 1-12 | 48 |" in text
    assert pool_spread.spread_markdown([]) == ""


def test_spread_rows_unbounded_and_explicit():
    spread = [{"cluster": "onprem-fra", "min_nodes": 1}]
    rows = pool_spread.spread_rows([pool(spread=spread, max_nodes=None, min_nodes=None)], CLUSTERS)
    assert rows == [{"pool": "infer-l4", "cluster": "onprem-fra", "cloud": "onprem", "region": "fra1", "zones": [],
                     "share": None, "min_nodes": 1, "max_nodes": None, "max_gpus": None, "gpu_type": "l4"}]
    assert "| - | - | 1-unbounded | unbounded |" in pool_spread.spread_markdown(rows)
