"""The fleet-wide report (gpufleet.k8s.fleet_overview): sums per region, cloud, cluster, pool and GPU type
worked out by hand, right-sizing across clusters, clusters that failed or have no report, history kept
and pruned, trends, check mode, re-runs and determinism. The clusters' reports are the real per-cluster
format: fleet_report's build_report on Node, Pod and Prometheus objects written here."""
import json
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import fleet_overview as fo
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_overview_render import render_files
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import build_report
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from ansible_collections.gpufleet.k8s.plugins.modules import fleet_overview as module
from ansible_collections.gpufleet.k8s.plugins.plugin_utils.controller_module import run_in_process
from fleet_gen import gpu_pod, write_fleet

T1, T2, T3 = "2026-12-01T03:00:00Z", "2026-12-02T03:00:00Z", "2026-12-03T03:00:00Z"


def cluster_json(tmp, name, pools, util=None):
    """Write build/<name>/report/fleet.json for ``pools`` = [(pool, gpu type, GPUs/node, replicas, nodes,
    [units requested per node], pending pods pinned to the pool)], with ``util`` {pool: 0-1 ratio}."""
    spec, nodes, pods, samples = [], [], [], []
    for pool, gpu_type, per_node, replicas, count, used, pending in pools:
        sharing = {"mode": "time-slicing", "replicas": replicas} if replicas > 1 else {"mode": "none"}
        spec.append({"name": pool, "gpu_type": gpu_type, "gpus_per_node": per_node, "min_nodes": 0,
                     "max_nodes": 10, "sharing": sharing})
        for i in range(count):
            node = "%s-%s-%d" % (name, pool, i)
            nodes.append({"metadata": {"name": node, "labels": {"gpufleet.io/pool": pool}},
                          "status": {"allocatable": {"nvidia.com/gpu": str(per_node * replicas)}}})
            if used[i]:
                pods.append(gpu_pod(node + "-job", used[i], node=node))
            if pool in (util or {}):
                samples += [{"metric": {"hostname": node, "gpu": str(g)}, "value": [0, str(util[pool])]}
                            for g in range(per_node)]
        pods += [gpu_pod("%s-wait-%d" % (pool, j), 1, pool=pool) for j in range(pending)]
    report = build_report({"cluster_name": name, "platform": "kubeadm", "pools": normalize_pools(spec)}, nodes=nodes,
                          pods=pods, utilisation={"status": "success", "data": {"result": samples}},
                          prices={"h100-80gb": 6.0}, generated_at=T1)
    path = tmp / "build" / name / "report" / "fleet.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(report))
    return str(path)


@pytest.fixture
def fleet(tmp_path):
    """Three clusters with figures, one failed, one without a report (see the expected sums below)."""
    return [
        {"name": "a", "cloud": "aws", "region": "us-east-1", "tags": ["prod"], "report_json": cluster_json(
            tmp_path, "a", [("train-h100", "h100-80gb", 8, 1, 2, [8, 8], 2), ("infer-l4", "l4", 1, 4, 2, [2, 0], 0)],
            util={"train-h100": 0.5})},
        {"name": "b", "cloud": "gcp", "region": "us-central1", "report_json": cluster_json(
            tmp_path, "b", [("train-h100", "h100-80gb", 8, 1, 3, [8, 0, 0], 0)], util={"train-h100": 0.25})},
        {"name": "c", "cloud": "aws", "region": "us-east-1", "report_json": cluster_json(
            tmp_path, "c", [("infer-l4", "l4", 1, 1, 4, [1, 1, 1, 1], 0)])},
        {"name": "d", "cloud": "onprem", "region": "fra1", "status": "failed", "message": "apply stage: rc 2",
         "report_json": cluster_json(tmp_path, "d", [("train-h100", "h100-80gb", 8, 1, 1, [0], 0)])},
        {"name": "e", "cloud": "gcp", "region": "us-central1", "report_json": str(tmp_path / "none" / "fleet.json")},
    ]


def overview(clusters, generated_at=T1):
    checked = fo.check_clusters(clusters)
    return fo.build_overview(checked, fo.read_reports(checked), generated_at)


def figures(entry, *keys):
    return tuple(entry[k] for k in keys)


KEYS = ("clusters", "pools", "nodes", "gpus", "capacity", "requested", "allocated_gpus", "allocation_percent",
        "pending_gpu_pods", "idle_gpu_hours", "idle_cost")


def test_sums_per_region_cloud_cluster_pool_and_gpu_type(fleet):
    ov = overview(fleet)
    # a: h100 16 GPUs all requested (2 pending), l4 2 GPUs x 4 slices with 2 of 8 requested -> 0.5 GPU;
    # b: h100 24 GPUs, 8 requested; c: l4 4 GPUs all requested. Idle GPU-hours: a h100 16 x 24 h x 50 %,
    # b 24 x 24 h x 75 %; cost at 6.0 per GPU-hour. d failed, e has no report: neither is summed.
    regions = dict(("%s/%s" % (r["cloud"], r["region"]), figures(r, *KEYS)) for r in ov["by_region"])
    assert regions == {"aws/us-east-1": (2, 3, 8, 22, 28, 22, 20.5, 93.2, 2, 192.0, 1152.0),
                       "gcp/us-central1": (1, 1, 3, 24, 24, 8, 8.0, 33.3, 0, 432.0, 2592.0)}
    assert [(r["cloud"], r["gpus"], r["allocated_gpus"]) for r in ov["by_cloud"]] == [("aws", 22, 20.5), ("gcp", 24, 8.0)]
    # the ceilings: max_nodes 10 everywhere, x 8 GPUs (h100) or 1 (l4) per node
    assert [(r["region"], r["max_gpus"]) for r in ov["by_region"]] == [("us-east-1", 100), ("us-central1", 80)]
    assert ov["totals"]["max_gpus"] == 180
    types = dict((r["gpu_type"], figures(r, "clusters", "gpus", "allocated_gpus", "allocation_percent"))
                 for r in ov["by_gpu_type"])
    assert types == {"h100-80gb": (2, 40, 24.0, 60.0), "l4": (2, 6, 4.5, 75.0)}
    assert [(r["pool"], r["clusters"], r["gpus"], r["capacity"]) for r in ov["by_pool"]] == [
        ("infer-l4", 2, 6, 12), ("train-h100", 2, 40, 40)]
    clusters = dict((c["name"], (c["state"],) + figures(c, "gpus", "allocated_gpus", "pending_gpu_pods"))
                    for c in ov["clusters"])
    assert clusters == {"a": ("ok", 18, 16.5, 2), "b": ("ok", 24, 8.0, 0), "c": ("ok", 4, 4.0, 0),
                        "d": ("failed", 0, None, None), "e": ("no report", 0, None, None)}
    assert figures(ov["totals"], *KEYS) == (5, 4, 11, 46, 52, 30, 28.5, 62.0, 2, 624.0, 3744.0)
    assert figures(ov["totals"], "clusters", "reporting", "earlier", "failed", "skipped", "no_report") == (5, 3, 0, 1, 0, 1)


def test_an_idle_pool_is_named_beside_a_pool_of_its_gpu_type_with_pending_pods(fleet):
    ov = overview(fleet)
    assert ov["rebalance"] == [{
        "gpu_type": "h100-80gb", "idle_gpus": 16.0, "pending_gpu_pods": 2,
        "idle": {"cluster": "b", "cloud": "gcp", "region": "us-central1", "pool": "train-h100"},
        "pending": {"cluster": "a", "cloud": "aws", "region": "us-east-1", "pool": "train-h100"}}]
    assert ov["hints"] == [
        "GPU type h100-80gb: pool train-h100 of cluster b (gcp/us-central1) has 16 GPU(s) unallocated while pool "
        "train-h100 of cluster a (aws/us-east-1) has 2 GPU pod(s) pending: move that work to b, or shift capacity "
        "(lower b's train-h100 min_nodes, raise a's train-h100 max_nodes)"]
    # the l4 pools: c is fully allocated and a has nothing pending for l4: no hint
    files = render_files(dict(ov, trend=[]))
    assert "<td>h100-80gb</td><td>b / train-h100</td><td>gcp/us-central1</td><td>16</td>" in files["index.html"]
    assert "- " + ov["hints"][0] in files["report.md"]


def test_pending_pods_spread_over_idle_pools_nearest_first(tmp_path):
    mk = cluster_json
    clusters = [
        {"name": "wait", "cloud": "aws", "region": "us-east-1",
         "report_json": mk(tmp_path, "wait", [("p", "l4", 1, 1, 1, [1], 3)])},
        {"name": "near", "cloud": "aws", "region": "us-east-1",
         "report_json": mk(tmp_path, "near", [("p", "l4", 1, 1, 2, [0, 0], 0)])},
        {"name": "far", "cloud": "gcp", "region": "us-central1",
         "report_json": mk(tmp_path, "far", [("p", "l4", 1, 1, 9, [0] * 9, 0)])},
        {"name": "other-type", "cloud": "aws", "region": "us-east-1",
         "report_json": mk(tmp_path, "other-type", [("q", "h100-80gb", 8, 1, 1, [0], 0)])},
        {"name": "wait2", "cloud": "aws", "region": "us-east-1",
         "report_json": mk(tmp_path, "wait2", [("p", "l4", 1, 1, 1, [1], 1)])},
        {"name": "same-cloud", "cloud": "aws", "region": "eu-west-1",
         "report_json": mk(tmp_path, "same-cloud", [("p", "l4", 1, 1, 5, [0] * 5, 0)])},
    ]
    moves = [(m["pending"]["cluster"], m["idle"]["cluster"], m["idle_gpus"]) for m in overview(clusters)["rebalance"]]
    # the larger queue first, from the same region (2 GPUs left there, though far has 9), then the next one:
    # near has none left after 3 pending pods, so it goes to the same cloud's other region before another cloud;
    # the h100 pool never serves l4 pods
    assert moves == [("wait", "near", 2.0), ("wait2", "same-cloud", 5.0)]


@pytest.mark.parametrize("row, allocated", [
    ({"gpus": 8, "capacity": 8, "requested": 6}, 6.0),
    ({"gpus": 2, "capacity": 8, "requested": 3}, 0.75),      # time-slices: 3 of 8 slices of 2 GPUs
    ({"gpus": 8, "capacity": 4, "requested": 6}, 8.0),       # more running than schedulable now (a GPU lost)
    ({"gpus": 8, "capacity": 0, "requested": 0}, 0.0),       # device plugin not running
    ({"gpus": 8, "capacity": 8, "requested": None}, None),   # render mode: no requests known
])
def test_allocation_in_physical_gpus(row, allocated):
    cluster = {"name": "a", "cloud": "aws", "region": "r"}
    assert fo.pool_row(cluster, dict(row, pool="p", gpu_type="l4"))["allocated_gpus"] == allocated


def test_failed_skipped_and_unreadable_clusters_are_listed_with_their_message(tmp_path, fleet):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    os.symlink(fleet[1]["report_json"], str(tmp_path / "link.json"))
    extra = [{"name": "f", "cloud": "aws", "region": "eu-west-1", "report_json": str(bad)},
             {"name": "g", "cloud": "aws", "region": "eu-west-1", "report_json": str(tmp_path / "link.json")},
             {"name": "h", "cloud": "gcp", "region": "us-central1", "status": "skipped", "message": "not selected",
              "report_json": fleet[2]["report_json"]},
             {"name": "i", "cloud": "gcp", "region": "us-central1", "status": "skipped", "message": "not selected"}]
    ov = overview(fleet + extra)
    problems = dict((p["name"], (p["state"], p["message"])) for p in ov["problems"])
    assert sorted(problems) == ["d", "e", "f", "g", "i"]
    assert problems["d"] == ("failed", "apply stage: rc 2")
    assert problems["e"][0] == "no report" and "the report stage did not run for this cluster" in problems["e"][1]
    assert problems["f"][0] == "no report" and problems["f"][1].startswith("%s is not JSON" % bad)
    assert problems["g"][0] == "no report" and "is a symbolic link" in problems["g"][1]
    assert problems["i"] == ("skipped", "not selected; no report path given")
    # h was not run this time: summed from its earlier report (c's numbers), its state says so
    h = [c for c in ov["clusters"] if c["name"] == "h"][0]
    assert (h["state"], h["gpus"], h["report_generated_at"]) == ("earlier report", 4, T1)
    assert ov["totals"]["gpus"] == 46 + 4 and ov["totals"]["earlier"] == 1
    md, page = render_files(dict(ov, trend=[]))["report.md"], render_files(dict(ov, trend=[]))["index.html"]
    assert "- d (onprem/fra1): failed: apply stage: rc 2" in md
    assert "<li><b>d</b> (onprem/fra1): failed: apply stage: rc 2</li>" in page


@pytest.mark.parametrize("entry, message", [
    ({"cloud": "aws", "region": "r"}, "fleet_overview_clusters[0].name is missing or not a string"),
    ({"name": "Bad_Name", "cloud": "aws", "region": "r"}, "fleet_overview_clusters[0].name is not a DNS label"),
    ({"name": "a", "cloud": "azure", "region": "r"}, "fleet_overview_clusters[0].cloud is 'azure'; allowed: aws, gcp, onprem"),
    ({"name": "a", "cloud": "aws", "region": ""}, "fleet_overview_clusters[0].region must be a non-empty string"),
    ({"name": "a", "cloud": "aws", "region": "r", "status": "done"},
     "fleet_overview_clusters[0].status is 'done'; allowed: ok, failed, skipped"),
    ({"name": "a", "cloud": "aws", "region": "r", "tags": "prod"}, "fleet_overview_clusters[0].tags must be a list"),
    ({"name": "a", "cloud": "aws", "region": "r", "zone": "x"}, "fleet_overview_clusters[0]: unknown key(s) zone"),
])
def test_bad_cluster_entries_are_refused_naming_the_field(entry, message):
    with pytest.raises(GpufleetError) as err:
        fo.check_clusters([entry])
    assert err.value.msg.startswith(message), err.value.msg


def test_a_cluster_listed_twice_and_bad_timestamps_are_refused():
    with pytest.raises(GpufleetError, match=r"fleet_overview_clusters\[1\].name: cluster a is listed twice"):
        fo.check_clusters([{"name": "a", "cloud": "aws", "region": "r"}] * 2)
    for stamp in ("2026-12-01 03:00:00", "2026-12-01T03:00:00+01:00", "../x"):
        with pytest.raises(GpufleetError, match="generated_at is .*; it must be a UTC timestamp"):
            fo.history_name(stamp)
    assert fo.history_name(T1) == "20261201T030000Z.json"


def run(dest, clusters, generated_at, check_mode=False, diff=False, history=12):
    return run_in_process(module, dict(dest=str(dest), clusters=clusters, generated_at=generated_at, history=history),
                          check_mode=check_mode, diff=diff, name="gpufleet.k8s.fleet_overview")


def test_check_mode_writes_nothing_then_writes_then_a_rerun_changes_nothing(tmp_path, fleet):
    dest = tmp_path / "out"
    checked = run(dest, fleet, T1, check_mode=True, diff=True)
    assert checked["changed"] is True and not dest.exists()
    assert sorted(d["after_header"] for d in checked["diff"]) == [str(dest / n) for n in (
        "history/20261201T030000Z.json", "index.html", "report.json", "report.md")]
    first = run(dest, fleet, T1)
    assert first["changed"] is True and "failed" not in first
    assert sorted(os.listdir(str(dest))) == ["history", "index.html", "report.json", "report.md"]
    # a later run that finds the same fleet keeps the first run's timestamp: no new history point, no change
    again = run(dest, fleet, T2)
    assert again["changed"] is False and os.listdir(str(dest / "history")) == ["20261201T030000Z.json"]
    assert again["overview"]["generated_at"] == T1 and len(again["overview"]["trend"]) == 1
    assert run(dest, fleet, T2, check_mode=True)["changed"] is False


def test_history_keeps_the_last_runs_and_touches_nothing_else(tmp_path, fleet):
    dest = tmp_path / "out"
    history = dest / "history"
    history.mkdir(parents=True)
    old = ["20261120T030000Z.json", "20261121T030000Z.json", "20261122T030000Z.json"]
    for index, name in enumerate(old):
        history.joinpath(name).write_text(json.dumps({"generated_at": "2026-11-%dT03:00:00Z" % (20 + index),
                                                      "totals": {"gpus": 10 * index, "allocation_percent": 50.0,
                                                                 "idle_gpu_hours": 5.0, "idle_cost": None}}))
    keep = ["notes.txt", "20261101T030000Z.json.bak", "2026.json", "latest.json"]
    for name in keep:
        history.joinpath(name).write_text("mine")
    history.joinpath("20261001T030000Z").mkdir()
    result = run(dest, fleet, T3, history=3)
    assert result["removed"] == [str(history / "20261120T030000Z.json")]
    assert sorted(os.listdir(str(history))) == sorted(
        keep + ["20261001T030000Z", "20261121T030000Z.json", "20261122T030000Z.json", "20261203T030000Z.json"])
    assert all(history.joinpath(n).read_text() == "mine" for n in keep)
    trend = result["overview"]["trend"]
    assert [(p["generated_at"], p["gpus"]) for p in trend] == [
        ("2026-11-21T03:00:00Z", 10), ("2026-11-22T03:00:00Z", 20), (T3, 46)]
    page = (dest / "index.html").read_text()
    for chart in ("chart-trend-gpus", "chart-trend-allocation", "chart-trend-idle", "chart-trend-cost"):
        assert 'id="%s"' % chart in page
    assert page.count('class="point" data-run="2026-11-22T03:00:00Z"') == 4 - 1   # no idle cost in that run
    assert "| 2026-11-22T03:00:00Z | 20 | 50 | 5 | - |" in (dest / "report.md").read_text()


def test_one_run_has_no_trend_charts_and_history_of_one_keeps_only_this_run(tmp_path, fleet):
    dest = tmp_path / "out"
    run(dest, fleet, T1)
    page = (dest / "index.html").read_text()
    assert 'id="no-trend"' in page and "chart-trend" not in page
    changed = fleet[:2]
    result = run(dest, changed, T2, history=1)
    assert result["removed"] == [str(dest / "history" / "20261201T030000Z.json")]
    assert os.listdir(str(dest / "history")) == ["20261202T030000Z.json"]
    with pytest.raises(GpufleetError, match="fleet_overview_history is 0; it must be a whole number of runs, at least 1"):
        fo.plan_history([], "x", 0)


def test_links_in_the_history_are_refused_not_followed(tmp_path, fleet):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    dest = tmp_path / "out"
    dest.mkdir()
    os.symlink(str(elsewhere), str(dest / "history"))
    result = run(dest, fleet, T1)
    assert result["failed"] and "history is a symbolic link" in result["msg"], result
    assert os.listdir(str(elsewhere)) == [] and sorted(os.listdir(str(dest))) == ["history"]
    os.unlink(str(dest / "history"))
    (dest / "history").mkdir()
    target = elsewhere / "precious.json"
    target.write_text("keep")
    os.symlink(str(target), str(dest / "history" / "20261101T030000Z.json"))
    result = run(dest, fleet, T2, history=1)
    assert result["failed"] and "is a symbolic link" in result["msg"]
    assert target.read_text() == "keep" and not (dest / "index.html").exists()


def test_files_are_deterministic_whatever_the_order_of_the_clusters(tmp_path, fleet):
    one = render_files(overview(fleet))
    assert one == render_files(overview(fleet))
    assert one == render_files(overview(list(reversed(fleet))))
    page = one["index.html"]
    assert "<script" not in page and "<link" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    assert json.loads(one["report.json"])["totals"]["gpus"] == 46


def resum(clusters):
    """The totals worked out again straight from the clusters' fleet.json files (independent of the module)."""
    gpus = capacity = 0
    idle = 0.0
    for c in clusters:
        if c.get("status", "ok") != "ok" or not os.path.exists(c["report_json"]):
            continue
        with open(c["report_json"]) as handle:
            report = json.load(handle)
        gpus += sum(p["gpus"] for p in report["pools"])
        capacity += sum(p["capacity"] for p in report["pools"])
        idle += sum(p["idle_gpu_hours"] or 0 for p in report["pools"])
    return gpus, capacity, round(idle, 1)


def consistent(ov):
    """Problems with the sums: every breakdown must add up to the fleet totals."""
    out = []
    for key in ("by_region", "by_cloud", "by_gpu_type", "by_pool", "clusters", "pools"):
        for field in ("gpus", "capacity", "nodes"):
            if sum(r[field] for r in ov[key]) != ov["totals"][field]:
                out.append("%s.%s" % (key, field))
        if round(sum(r["idle_gpu_hours"] or 0 for r in ov[key]), 1) != ov["totals"]["idle_gpu_hours"]:
            out.append("%s.idle_gpu_hours" % key)
    return out


def test_100_generated_clusters_add_up_and_a_wrong_sum_is_caught(tmp_path):
    clusters = write_fleet(tmp_path, 100, failed=(5, 50), missing=(7,))
    ov = overview(clusters)
    assert ov["totals"]["clusters"] == 100 and ov["totals"]["reporting"] == 97
    assert (ov["totals"]["gpus"], ov["totals"]["capacity"], ov["totals"]["idle_gpu_hours"]) == resum(clusters)
    assert consistent(ov) == []
    wrong = json.loads(json.dumps(ov))
    wrong["by_region"][0]["gpus"] += 1
    wrong["pools"][3]["idle_gpu_hours"] = (wrong["pools"][3]["idle_gpu_hours"] or 0) + 0.5
    assert consistent(wrong) == ["by_region.gpus", "pools.idle_gpu_hours"]
    assert ov["hints"] and all(m["idle"]["cluster"] != m["pending"]["cluster"] for m in ov["rebalance"])
