"""The node of a GPU series, whichever dcgm-exporter version served it (module_utils/addons/dcgm_labels.py): the
pinned 4.6.0-4.8.3 names it ``hostname``, releases before it ``Hostname``, and one run with ``--no-hostname``
not at all (gpufleet's scrape job adds ``kubernetes_node``). The real Prometheus (Debian's package) scrapes
three STAND-IN exporters serving the generated fixtures of tests/fixtures/dcgm/ (pinned: gpu-h3 XID 13, gpu-h4
XID 79; 4.5.3-4.8.2: gpu-h5 XID 79, gpu-h6 row remap failure; pinned with --no-hostname, target labelled
kubernetes_node=gpu-h7: XID 79) and evaluates gpufleet's rendered alert rules, remediation's and the report's
queries and the dashboard's node variable and panels."""
import json
import re
import time

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import gpu_monitoring as gm
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_labels import node_name
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation as rem
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation_metrics as metrics
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import (
    parse_utilisation, utilisation_query)
from prom_standin import binary_or_skip, fixture_path, prometheus, query

pytestmark = pytest.mark.contract

PLAN = {"cluster_name": "example", "platform": "kubeadm", "addons_mode": "standalone", "apply": False}
EXPORTERS = [("unhealthy.prom", {}), ("old-unhealthy.prom", {}),
             ("no-hostname-unhealthy.prom", {"kubernetes_node": "gpu-h7"})]
NODES = ("gpu-h3", "gpu-h4", "gpu-h5", "gpu-h6", "gpu-h7")


@pytest.mark.parametrize("labels, expected", [
    ({"hostname": "n1"}, "n1"),                                        # pinned exporter
    ({"Hostname": "n1"}, "n1"),                                        # before 4.6.0-4.8.3
    ({"kubernetes_node": "n1"}, "n1"),                                 # --no-hostname, the scrape job's label
    ({"kubernetes_node": "n1", "hostname": "dcgm-exporter-x2v9q"}, "n1"),  # the scrape job's label wins
    ({"kubernetes_node": "n1", "Hostname": "pod-x"}, "n1"),
    ({"hostname": "n1", "Hostname": "n2"}, "n1"),
    ({"kubernetes_node": "", "hostname": "n1"}, "n1"),                 # empty is unset
    ({"node": "n1"}, "n1"),                                            # kube-state-metrics
    ({"instance": "n1:9400"}, "n1"), ({"instance": "n1"}, "n1"),
    ({"instance": "[fd00::1]:9400"}, "[fd00::1]"),
    ({"gpu": "0"}, None), ({}, None), (None, None),
])
def test_node_name_order(labels, expected):
    assert node_name(labels) == expected


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    binary = binary_or_skip(pytest)
    targets = [(fixture_path(name), labels) for name, labels in EXPORTERS]
    with prometheus(binary, tmp_path_factory.mktemp("prom"), targets, rules=gm.rules_file(PLAN, {})) as (url, _e):
        yield url


KEY = b"k" * 32   # the records' MAC key (the Secret gpufleet-system/gpufleet-remediation-key)


def node(name, record=None):
    meta = {"name": name, "uid": "uid-" + name}
    ann = {rem.RECORD_ANNOTATION: json.dumps(rem.signed(record, {"metadata": meta}, KEY))} if record else {}
    return {"metadata": dict(meta, labels={"gpufleet.io/pool": "train"}, annotations=ann, resourceVersion="1"),
            "spec": {"taints": [rem.TAINT] if record else [], **({"unschedulable": True} if record else {})},
            "status": {"capacity": {"nvidia.com/gpu": "1"}, "allocatable": {"nvidia.com/gpu": "1"}}}


def test_remediation_evidence_from_every_exporter_version(prom):
    thresholds = rem.validate_policy({})["thresholds"]
    found = metrics.findings(metrics.read_all(prom, "5m", thresholds), thresholds, rem.xid_verdict)
    flat = dict((n, sorted((f["source"], f["verdict"], f["gpu"]) for f in fs)) for n, fs in found.items())
    assert flat == {"gpu-h3": [("xid", "application", "0")], "gpu-h4": [("xid", "unhealthy", "0")],
                    "gpu-h5": [("xid", "unhealthy", "0")], "gpu-h6": [("row_remap_failure", "unhealthy", "1")],
                    "gpu-h7": [("xid", "unhealthy", "0")]}
    # gpu-h4 was taken out by an earlier run and still shows XID 79: kept out, not restored
    nodes = [node("gpu-h4", record={"tainted": True, "cordoned": True})] + [node(n) for n in ("gpu-h1", "gpu-h3")]
    pools = [{"name": "train", "min_nodes": 1}]
    decided = rem.plan(nodes, pools, "kubeadm", found, rem.validate_policy({"dry_run": False}), key=KEY)
    plan = dict((e["name"], e["decision"]) for e in decided)
    assert plan["gpu-h4"] == "continue"


def test_alerts_name_the_node_whichever_exporter_raised_them(prom):
    deadline = time.monotonic() + 30
    while True:
        alerts = query(prom, "ALERTS")["data"]["result"]
        firing = sorted((a["metric"]["alertname"], a["metric"].get("hostname")) for a in alerts
                        if a["metric"]["alertstate"] == "firing" and a["metric"]["alertname"] != "GpuXidError")
        if len(firing) >= 7 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert firing == [("GpuFellOffTheBus", "gpu-h4"), ("GpuFellOffTheBus", "gpu-h5"), ("GpuFellOffTheBus", "gpu-h7"),
                      ("GpuIdle", "gpu-h4"), ("GpuIdle", "gpu-h5"), ("GpuIdle", "gpu-h7"),  # engine active 0
                      ("GpuRowRemapFailure", "gpu-h6")]


def test_report_utilisation_of_every_exporter_version(prom):
    util = parse_utilisation(query(prom, utilisation_query("5m")))
    assert sorted(util) == list(NODES)
    assert util["gpu-h3"] == [62.0] and util["gpu-h6"] == [90.0]


def _grafana(expr, node=".*", gpu=".*", pool=".*"):
    return expr.replace("$node", node).replace("$gpu", gpu).replace("$pool", pool)


def test_dashboard_node_variable_and_filter_across_exporter_versions(prom):
    board = gm.dashboard(gm.settings(PLAN, {}))
    variables = dict((v["name"], v) for v in board["templating"]["list"])
    inner = re.match(r"query_result\((.*)\)$", variables["node"]["query"]["query"]).group(1)
    answer = query(prom, _grafana(inner))["data"]["result"]
    pattern = re.compile(variables["node"]["regex"].strip("/"))
    # Grafana applies the regex to each result's text, e.g. {hostname="gpu-h3"} 1
    values = sorted(pattern.search('{hostname="%s"}' % r["metric"]["hostname"]).group(1) for r in answer)
    assert values == list(NODES)
    xid = next(p for p in board["panels"] if p["title"].startswith("Last XID"))["targets"][0]["expr"]
    picked = query(prom, _grafana(xid, node="gpu-h4|gpu-h5|gpu-h7"))["data"]["result"]
    assert sorted((r["metric"]["hostname"], r["value"][1]) for r in picked) == [
        ("gpu-h4", "79"), ("gpu-h5", "79"), ("gpu-h7", "79")]
    gpu_var = re.match(r"query_result\((.*)\)$", variables["gpu"]["query"]["query"]).group(1)
    assert [r["metric"]["gpu"] for r in query(prom, _grafana(gpu_var, node="gpu-h6"))["data"]["result"]] == ["1"]
