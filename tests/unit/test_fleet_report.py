"""The fleet report from recorded cluster and Prometheus data, and from the inventory alone."""
import json
import os
import re
from html.parser import HTMLParser

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import (
    build_report, parse_utilisation, pod_gpu_requests)
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report_render import render_files
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "report")
PLAN = {"cluster_name": "example", "platform": "kubeadm", "pools": normalize_pools([
    {"name": "train-a100", "gpu_type": "a100-80gb", "gpus_per_node": 8, "min_nodes": 2, "max_nodes": 2,
     "sharing": {"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.10gb"}},
    {"name": "infer-l4", "gpu_type": "l4", "gpus_per_node": 1, "min_nodes": 3, "max_nodes": 6,
     "sharing": {"mode": "time-slicing", "replicas": 4}},
])}


def fixture(name):
    with open(os.path.join(FIX, name)) as handle:
        return json.load(handle)


def live_report():
    return build_report(PLAN, nodes=fixture("nodes.json")["items"], pods=fixture("pods.json")["items"],
                        utilisation=fixture("prometheus.json"), idle_percent=10,
                        utilisation_scale=1.0)  # recorded DCGM_FI_DEV_GPU_UTIL, already in percent


def test_pod_requests_count_gpu_and_mig_limits_only():
    pod = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "4"}}},
                                   {"resources": {"limits": {"nvidia.com/mig-1g.10gb": 3}}}, {}]}}
    assert pod_gpu_requests(pod) == 5


def test_utilisation_grouped_by_node():
    util = parse_utilisation(fixture("prometheus.json"), 1.0)
    assert len(util["a100-node-01.example.internal"]) == 8 and util["l4-node-02.example.internal"] == [41.0]
    assert parse_utilisation({"status": "error"}) == {}


def test_live_report_numbers():
    report = live_report()
    train, infer = report["pools"]
    assert (train["nodes"], train["gpus"], train["capacity"], train["requested"], train["idle"]) == (2, 16, 112, 56, 56)
    assert train["avg_utilisation"] == 44.9  # (718/8 + 0) / 2 nodes' 16 samples
    assert (infer["nodes"], infer["capacity"], infer["requested"], infer["idle"]) == (3, 12, 3, 9)
    assert report["totals"] == {"pools": 2, "nodes": 5, "gpus": 19, "capacity": 124, "requested": 59,
                                "pending_gpu_pods": 0, "idle_gpu_hours": 273.0, "idle_cost": None}
    # idle GPU-hours over the 24h window: physical GPUs x hours x (1 - utilisation)
    assert train["idle_gpu_hours"] == 211.7   # 16 x 24 x (1 - 0.44875), from the unrounded mean
    assert report["source"] == "cluster"


def test_right_sizing_hints():
    hints = live_report()["hints"]
    # at its max but half its GPU units free and no GPU pod waiting: no demand, no "raise max_nodes"
    assert not any("is at its max" in h for h in hints)
    assert any(h.startswith("node a100-node-02.example.internal: all 56 GPU units idle") for h in hints)  # only a Succeeded pod
    assert any(h.startswith("node l4-node-03.example.internal: all 4 GPU units idle") for h in hints)
    assert any(h.startswith("node l4-node-01.example.internal: 2 GPU unit(s) allocated but only 3.5% utilised") for h in hints)
    assert not any("l4-node-02" in h for h in hints)  # 41% utilised: fine
    assert not any("infer-l4 is at its max" in h for h in hints)  # 3 of 6


def _pending_gpu_pod(pool=None, gpus=1):
    spec = {"containers": [{"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if pool:
        spec["nodeSelector"] = {"gpufleet.io/pool": pool}
    return {"metadata": {"name": "waiting", "namespace": "ml"}, "spec": spec, "status": {"phase": "Pending"}}


AT_MAX = "pool train-a100 is at its max (2 of 2 nodes): raise max_nodes or expect pending GPU pods"


def test_at_its_max_needs_pending_gpu_pods_or_high_use():
    nodes, pods = fixture("nodes.json")["items"], fixture("pods.json")["items"]

    def hints(extra_pods):
        return build_report(PLAN, nodes=nodes, pods=pods + extra_pods, utilisation_scale=1.0)["hints"]

    assert AT_MAX in hints([_pending_gpu_pod("train-a100")])
    assert AT_MAX in hints([_pending_gpu_pod()])  # unpinned: it could go to any pool
    assert AT_MAX not in hints([_pending_gpu_pod("infer-l4")])  # waits for another pool
    # 51 more units requested on the train nodes: 107 of 112 (> 90 %)
    busy = dict(_pending_gpu_pod(gpus=51), status={"phase": "Running"})
    busy["spec"]["nodeName"] = "a100-node-02.example.internal"
    assert AT_MAX in hints([busy])
    # a fully idle pool at its max: only the scale-down hints, never "raise max_nodes"
    idle = build_report(PLAN, nodes=nodes, pods=[], utilisation_scale=1.0)["hints"]
    assert AT_MAX not in idle and any("all 56 GPU units idle" in h for h in idle)


def test_pending_gpu_pods_per_pool_and_in_total():
    nodes, pods = fixture("nodes.json")["items"], fixture("pods.json")["items"]
    extra = [_pending_gpu_pod("infer-l4"), _pending_gpu_pod("infer-l4", 2), _pending_gpu_pod(), _pending_gpu_pod("gone")]
    cpu_only = {"metadata": {"name": "cpu"}, "spec": {"containers": [{}]}, "status": {"phase": "Pending"}}
    report = build_report(PLAN, nodes=nodes, pods=pods + extra + [cpu_only], utilisation_scale=1.0)
    # a pool counts the GPU pods pinned to it (the fleet view's right-sizing reads it); the total also
    # counts the unpinned one and the one pinned to a pool this inventory does not have
    assert [(p["pool"], p["pending_gpu_pods"]) for p in report["pools"]] == [("train-a100", 0), ("infer-l4", 2)]
    assert report["totals"]["pending_gpu_pods"] == 4
    render = build_report(PLAN, groups={"gpu_pool_infer_l4": ["l1"]})
    assert render["totals"]["pending_gpu_pods"] is None and render["pools"][1]["pending_gpu_pods"] is None


def test_render_mode_report_from_the_inventory_alone():
    groups = {"gpu_pool_train_a100": ["a1", "a2"], "gpu_pool_infer_l4": ["l1"]}
    report = build_report(PLAN, groups=groups)
    assert report["source"] == "inventory (render mode)"
    assert [(p["nodes"], p["capacity"], p["requested"]) for p in report["pools"]] == [(2, 112, None), (1, 4, None)]
    assert [n["node"] for n in report["nodes"]] == ["a1", "a2", "l1"]


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.cells, self.bars, self._in_cell = {}, [], [], False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids[attrs["id"]] = tag
        if tag == "rect" and attrs.get("class") == "bar":
            self.bars.append((attrs["data-label"], attrs["data-value"], int(attrs["width"])))
        self._in_cell = tag == "td"

    def handle_data(self, data):
        if self._in_cell:
            self.cells.append(data)
            self._in_cell = False


def test_files_are_deterministic_and_html_is_self_contained_with_numbers():
    files = render_files(live_report())
    assert files == render_files(live_report())
    assert json.loads(files["fleet.json"])["totals"]["capacity"] == 124
    assert "| train-a100 | a100-80gb | 8 | mig | 2 | 16 | 2 | 112 | 112 | 56 | 56 | 44.9 | 211.7 | - | 580.95.05 |" in files["fleet.md"]
    page = files["fleet.html"]
    assert not re.search(r"<(script|link)\b|src=\"http", page)  # no external resources, no scripts
    parser = _Collect()
    parser.feed(page)
    assert {"summary", "pools", "nodes", "hints", "capacity", "gpus"} <= set(parser.ids)
    assert parser.cells[:14] == ["train-a100", "a100-80gb", "8", "mig", "2", "16", "2", "112", "56", "56", "44.9",
                                 "211.7", "-", "580.95.05"]
    bars = {(label, value) for label, value, _w in parser.bars}
    # physical GPUs (16 A100 vs 3 L4), not MIG slices vs time-slices (112 vs 12)
    assert ("train-a100", "16") in bars and ("infer-l4", "3") in bars and ("train-a100", "44.9") in bars
    assert ("train-a100", "50.0") in bars and ("infer-l4", "25.0") in bars   # requested share of schedulable units
    widths = {(label, value): w for label, value, w in parser.bars}
    assert widths[("train-a100", "16")] > widths[("infer-l4", "3")] > 0
    assert max(len(line) for line in page.splitlines()) < 400   # reviewable diffs: no single-line HTML
