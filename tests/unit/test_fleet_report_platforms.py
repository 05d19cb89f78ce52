"""The fleet report on EKS, GKE and a MIG pool, from recorded API and Prometheus answers
(tests/fixtures/report/{eks,gke,mig}; no cluster or Prometheus here) with the inventories' real
pools: nodes mapped to pools on every platform, drivers from GFD labels, MIG-aware utilisation,
idle GPU-hours and cost, driver skew, pools with 0 schedulable GPUs, the timestamp."""
import json
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import (
    build_report, utilisation_query)
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report_render import render_files
from report_fixtures import FIX, live, plan_of


def live_inputs(case):
    """(nodes, pods) of a recorded case."""
    out = []
    for name in ("nodes.json", "pods.json"):
        with open(os.path.join(FIX, case, name)) as handle:
            out.append(json.load(handle)["items"])
    return out


def by_pool(report):
    return {r["pool"]: r for r in report["pools"]}


def test_eks_karpenter_nodes_map_to_their_pools():
    report = live("eks", plan_of("eks", "eks"), prices={"h100-80gb": 6.0, "l4": 0.8})
    pools = by_pool(report)
    assert [n["node"] for n in report["nodes"] if n["pool"] == "train-h100"] == ["ip-10-0-1-11.ec2.internal"]
    # one by karpenter.sh/nodepool, one by placement (instance family g6 + GPU l4)
    assert [n["node"] for n in report["nodes"] if n["pool"] == "infer-l4"] == [
        "ip-10-0-2-21.ec2.internal", "ip-10-0-2-22.ec2.internal"]
    h100, l4 = pools["train-h100"], pools["infer-l4"]
    assert (h100["nodes"], h100["gpus"], h100["capacity"], h100["requested"], h100["avg_utilisation"]) == (1, 8, 8, 8, 75.0)
    assert (l4["nodes"], l4["gpus"], l4["capacity"], l4["requested"], l4["avg_utilisation"]) == (2, 2, 8, 1, 15.0)
    assert h100["idle_gpu_hours"] == 48.0 and h100["idle_cost"] == 288.0        # 8 GPUs x 24 h x 25 % x 6.0
    assert l4["idle_gpu_hours"] == 40.8 and l4["idle_cost"] == 32.64
    assert report["totals"]["idle_cost"] == 320.64
    drivers = {n["node"]: n["driver"] for n in report["nodes"]}
    assert drivers["ip-10-0-1-11.ec2.internal"] == "570.172.08"       # nvidia.com/cuda.driver-version.full
    assert drivers["ip-10-0-2-22.ec2.internal"] == "550.163.01"       # major/minor/rev labels
    assert "pool infer-l4: driver skew, nodes run 550.163.01, 570.172.08: upgrade them to one version" in report["hints"]
    assert "node ip-10-0-3-31.ec2.internal has GPUs but matches no pool of the inventory" in report["hints"]
    assert report["unmatched_gpu_nodes"] == ["ip-10-0-3-31.ec2.internal"]   # the m6i node is no GPU node


def test_gke_nodes_by_accelerator_and_compute_class_and_empty_pool_flagged():
    report = live("gke", plan_of("gke", "gke"))
    pools = by_pool(report)
    assert [n["node"] for n in report["nodes"]] == [
        "gke-research-nap-a2-highgpu-2g-spot-1a2b3c-x7k2", "gke-research-infer-l4-cc-9f8e-abcd"]
    assert (pools["train-a100"]["nodes"], pools["train-a100"]["capacity"]) == (1, 0)
    assert ("pool train-a100: 1 node(s) but 0 schedulable GPUs: the device plugin is not running there or "
            "MIG/sharing is not configured yet") in report["hints"]
    assert (pools["infer-l4"]["capacity"], pools["infer-l4"]["requested"], pools["infer-l4"]["avg_utilisation"]) == (2, 1, 2.0)
    assert any(h.startswith("node gke-research-infer-l4-cc-9f8e-abcd: 1 GPU unit(s) allocated but only 2.0% utilised")
               for h in report["hints"])
    assert report["totals"]["idle_cost"] is None   # no price table given


def test_mig_pool_counts_gpus_not_slices_and_reads_instance_utilisation():
    plan = plan_of("example", "kubeadm")
    report = live("mig", plan, prices={"a100-80gb": 3.0}, idle_percent=20)
    train = by_pool(report)["train-a100"]
    assert (train["nodes"], train["gpus"], train["capacity"], train["requested"]) == (1, 8, 56, 14)
    assert train["avg_utilisation"] == 11.2          # 7 of 56 MIG instances at 90 %
    assert train["idle_gpu_hours"] == 170.4 and train["idle_cost"] == 511.2
    assert any(h.startswith("node a100-node-01.example.internal: 14 GPU unit(s) allocated but only 11.2% utilised")
               for h in report["hints"])
    assert report["nodes"][0]["driver"] == "580.95.05"


def test_timestamp_only_when_given_and_pages_show_it():
    plan = plan_of("example", "kubeadm")
    report = live("mig", plan, generated_at="2026-12-01T03:00:00Z")
    files = render_files(report)
    assert "Generated at 2026-12-01T03:00:00Z (utilisation window 24h)." in files["fleet.md"]
    assert '<p id="generated">Generated at 2026-12-01T03:00:00Z' in files["fleet.html"]
    assert "generated_at" not in build_report(plan)    # render mode stays byte-identical


def _respelled(answer, old, new):
    """The same Prometheus answer with the node's label ``old`` renamed ``new`` (None: left out)."""
    out = {"status": answer["status"], "data": {"resultType": "vector", "result": []}}
    for sample in answer["data"]["result"]:
        metric = dict(sample["metric"])
        name = metric.pop(old)
        if new:
            metric[new] = name
        out["data"]["result"].append({"metric": metric, "value": sample["value"]})
    return out


@pytest.mark.parametrize("label", ["hostname", "Hostname", "kubernetes_node"])
def test_pool_utilisation_joins_whichever_label_names_the_node(label):
    """The answers carry the node as ``hostname`` (the report's query names it so; the pinned exporter 4.6.0-4.8.3
    spells it so); an answer keeping an older exporter's ``Hostname`` or only the scrape job's ``kubernetes_node``
    joins the same Nodes and pools (module_utils/addons/dcgm_labels.py)."""
    plan = plan_of("eks", "eks")
    with open(os.path.join(FIX, "eks", "prometheus.json")) as handle:
        answer = _respelled(json.load(handle), "hostname", label)
    report = build_report(plan, nodes=live_inputs("eks")[0], pods=live_inputs("eks")[1], utilisation=answer)
    pools = by_pool(report)
    assert (pools["train-h100"]["avg_utilisation"], pools["infer-l4"]["avg_utilisation"]) == (75.0, 15.0)


def test_report_query_names_the_node_hostname():
    query = utilisation_query("24h")
    assert query.startswith("avg by (hostname, gpu, GPU_I_ID) (") and "[24h]" in query
    for label in ("kubernetes_node", "hostname", "Hostname"):
        assert '"%s"' % label in query


def test_report_role_asks_prometheus_the_query_of_the_filter():
    """roles/fleet_report sends the query of gpufleet.k8s.fleet_report_utilisation_query (one definition in
    module_utils), not a PromQL text of its own."""
    import yaml
    from ansible_collections.gpufleet.k8s.plugins.filter.fleet_report import FilterModule
    from report_fixtures import ROOT
    with open(os.path.join(ROOT, "roles", "fleet_report", "tasks", "main.yml")) as handle:
        tasks = yaml.safe_load(handle)
    task = next(t for t in tasks if t.get("name", "").startswith("Query the average GPU utilisation"))
    assert task["vars"]["__fleet_report_query"] == "{{ fleet_report_window | gpufleet.k8s.fleet_report_utilisation_query }}"
    assert FilterModule().filters()["fleet_report_utilisation_query"]("24h") == utilisation_query("24h")
