"""GPU dashboard and alert rules: the rules checked and unit-tested with the real promtool (Debian
package prometheus, installed by scripts/harness-setup.sh), the PrometheusRule against the
prometheus-operator CRD schema (npm @kubernetes-models/prometheus-operator), the dashboard JSON
structurally and each of its queries parsed by promtool."""
import copy
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import gpu_monitoring as gm
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_exporter import DEFAULT_METRICS
from k8s_schema import assert_valid
from prom_schema import assert_valid_prometheus, validate_prometheus

HERE = os.path.dirname(os.path.abspath(__file__))
PROMTOOL_TESTS = os.path.join(os.path.dirname(HERE), "fixtures", "promtool", "gpu-alerts.test.yml")
PLAN = {"cluster_name": "example", "platform": "kubeadm", "addons_mode": "standalone", "apply": False}


def promtool(*args, cwd=None):
    exe = shutil.which("promtool")
    assert exe, "promtool is missing: run scripts/harness-setup.sh (Debian package prometheus)"
    return subprocess.run([exe] + list(args), capture_output=True, text=True, cwd=cwd, timeout=120)


def objects(**inputs):
    return gm.monitoring_objects(PLAN, inputs, False)


def test_rules_file_passes_promtool_check(tmp_path):
    path = tmp_path / "prometheus-rules.yml"
    path.write_text(gm.rules_file(PLAN, {}))
    proc = promtool("check", "rules", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 10 rules found" in proc.stdout


def test_alerts_fire_as_intended_in_promtool_unit_tests(tmp_path):
    (tmp_path / "prometheus-rules.yml").write_text(gm.rules_file(PLAN, {}))
    with open(PROMTOOL_TESTS) as handle:
        tests = yaml.safe_load(handle)
    tests["rule_files"] = ["prometheus-rules.yml"]
    (tmp_path / "t.yml").write_text(yaml.safe_dump(tests))
    proc = promtool("test", "rules", "t.yml", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_the_unit_tests_can_fail(tmp_path):
    """A rule that lost its XID 79 alert makes promtool's unit tests fail."""
    groups = yaml.safe_load(gm.rules_file(PLAN, {}))
    groups["groups"][0]["rules"][0]["expr"] = "DCGM_FI_DEV_XID_ERRORS == 80"
    (tmp_path / "prometheus-rules.yml").write_text(yaml.safe_dump(groups))
    with open(PROMTOOL_TESTS) as handle:
        tests = yaml.safe_load(handle)
    tests["rule_files"] = ["prometheus-rules.yml"]
    (tmp_path / "t.yml").write_text(yaml.safe_dump(tests))
    proc = promtool("test", "rules", "t.yml", cwd=str(tmp_path))
    assert proc.returncode != 0 and "GpuFellOffTheBus" in proc.stdout + proc.stderr


def test_thresholds_follow_the_inputs():
    text = gm.rules_file(PLAN, {"gpu_monitoring_idle_percent": 20, "gpu_monitoring_idle_for": "6h",
                                "gpu_monitoring_temperature_celsius": 90})
    assert "avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[6h]) < 0.2" in text
    assert "DCGM_FI_DEV_GPU_TEMP > 90" in text


def test_prometheus_rule_is_valid_for_the_crd_and_matches_the_rules_file():
    objs = gm.monitoring_objects(PLAN, {"gpu_monitoring_prometheus_rule": True,
                                        "gpu_monitoring_rule_labels": {"release": "kps"}}, False)
    rule = [o for o in objs if o["kind"] == "PrometheusRule"][0]
    assert_valid_prometheus([rule])
    assert rule["metadata"]["labels"]["release"] == "kps"
    assert rule["spec"]["groups"] == yaml.safe_load(gm.rules_file(PLAN, {}))["groups"]
    broken = copy.deepcopy(rule)
    broken["spec"]["groups"][0]["rules"][0]["for"] = 5
    ok, _out = validate_prometheus([broken])
    assert not ok, "the CRD schema check can fail"


@pytest.mark.parametrize("setting,apply,api,wanted", [
    ("auto", False, False, False), ("auto", True, False, False), ("auto", True, True, True),
    (True, False, False, True), ("false", True, True, False),
])
def test_prometheus_rule_only_when_the_api_exists_or_forced(setting, apply, api, wanted):
    objs = gm.monitoring_objects(dict(PLAN, apply=apply), {"gpu_monitoring_prometheus_rule": setting}, api)
    assert any(o["kind"] == "PrometheusRule" for o in objs) == wanted


def test_namespace_and_configmap_are_valid_kubernetes_objects():
    objs = objects()
    assert [o["kind"] for o in objs] == ["Namespace", "ConfigMap"]
    for obj in objs:
        assert_valid(obj)
    cm = objs[1]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "GPU"}


def test_disabled_with_addons_mode_none_and_bad_inputs_are_named():
    assert gm.monitoring_objects(dict(PLAN, addons_mode="none"), {}, False) == []
    assert gm.monitoring_objects(dict(PLAN, addons_mode="none"), {"gpu_monitoring_enabled": True}, False)
    assert gm.problems(PLAN, {"gpu_monitoring_enabled": "sometimes"}) == [
        "gpu_monitoring_enabled: 'sometimes'; use one of: auto, true, false"]
    assert gm.problems(PLAN, {"gpu_monitoring_idle_percent": "5"})[0].startswith("gpu_monitoring_idle_percent: '5'")


def dashboard():
    return json.loads(objects()[1]["data"][gm.DASHBOARD_KEY])


def exprs(board):
    return [t["expr"] for p in board["panels"] for t in p["targets"]]


def test_dashboard_structure():
    board = dashboard()
    assert board["uid"] == "gpufleet-gpus" and board["title"] and board["schemaVersion"] >= 36
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    cells = set()
    for panel in board["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24 and pos["h"] > 0
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, "panels overlap at %s: %s" % ((x, y), panel["title"])
                cells.add((x, y))
        assert panel["type"] in ("timeseries", "table", "stat")
        assert panel["datasource"]["uid"] == "${datasource}"
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}" and target["expr"]
    defined = {v["name"] for v in board["templating"]["list"]}
    assert defined == {"datasource", "pool", "node", "gpu"}
    used = set(re.findall(r"\$(\w+)", json.dumps(board["panels"]) + json.dumps(board["templating"])))
    used |= set(re.findall(r"\$\{(\w+)\}", json.dumps(board["panels"])))
    assert used - {"labels", "value", "1", "__all"} <= defined


def test_dashboard_reads_only_metrics_that_exist():
    exporter = {m[0] for m in DEFAULT_METRICS}
    names = set()
    for expr in exprs(dashboard()) + [q["query"]["query"] for q in dashboard()["templating"]["list"][1:]]:
        names |= set(re.findall(r"\b(DCGM_FI_[A-Z0-9_]+|up|kube_node_labels)\b", expr))
    assert names <= exporter | set(gm.OTHER_METRICS)
    for wanted in ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
                   "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"):
        assert wanted in names
    assert "DCGM_FI_DEV_GPU_UTIL" not in names, "not reported per MIG instance"


def test_every_dashboard_query_parses_with_promtool(tmp_path):
    rules = [{"record": "gpufleet:dashboard_query_%d" % i,
              "expr": re.sub(r"\$(pool|node|gpu)", ".*", expr)} for i, expr in enumerate(exprs(dashboard()))]
    path = tmp_path / "queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    proc = promtool("check", "rules", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump({"groups": [{"name": "d", "rules": [{"record": "x:y", "expr": "rate(up[5m]"}]}]}))
    assert promtool("check", "rules", str(bad)).returncode != 0


def test_dashboard_pool_join_and_node_filter_across_exporter_versions(tmp_path):
    """promtool evaluates the pool and node panels on series of the pinned exporter (hostname), an older one
    (Hostname) and one with only the scrape job's kubernetes_node, joined to kube_node_labels."""
    panels = dict((p["id"], p["targets"][0]["expr"]) for p in dashboard()["panels"])
    rules = [{"record": "board:pool", "expr": re.sub(r"\$(pool|node|gpu)", ".*", panels[1])},
             {"record": "board:node", "expr": panels[2].replace("$node", "old|bare").replace("$gpu", ".*")}]
    (tmp_path / "board.yml").write_text(yaml.safe_dump({"groups": [{"name": "board", "rules": rules}]}))
    series = [("DCGM_FI_PROF_GR_ENGINE_ACTIVE{hostname=\"new\", gpu=\"0\"}", "0.25x5"),
              ("DCGM_FI_PROF_GR_ENGINE_ACTIVE{Hostname=\"old\", gpu=\"0\"}", "0.75x5"),
              ("DCGM_FI_PROF_GR_ENGINE_ACTIVE{kubernetes_node=\"bare\", gpu=\"0\"}", "0.9x5"),
              ("kube_node_labels{node=\"new\", label_gpufleet_io_pool=\"a\"}", "1x5"),
              ("kube_node_labels{node=\"old\", label_gpufleet_io_pool=\"a\"}", "1x5"),
              ("kube_node_labels{node=\"bare\", label_gpufleet_io_pool=\"b\"}", "1x5")]
    tests = {"rule_files": ["board.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": [{"series": s, "values": v} for s, v in series],
        "promql_expr_test": [
            {"expr": "board:pool", "eval_time": "2m", "exp_samples": [
                {"labels": 'board:pool{label_gpufleet_io_pool="a"}', "value": 50},
                {"labels": 'board:pool{label_gpufleet_io_pool="b"}', "value": 90}]},
            {"expr": "board:node", "eval_time": "2m", "exp_samples": [
                {"labels": 'board:node{hostname="old"}', "value": 75},
                {"labels": 'board:node{hostname="bare"}', "value": 90}]}]}]}
    (tmp_path / "t.yml").write_text(yaml.safe_dump(tests))
    proc = promtool("test", "rules", "t.yml", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dashboard_variable_queries_parse_with_promtool(tmp_path):
    queries = [v["query"]["query"] for v in dashboard()["templating"]["list"][1:]]
    rules = [{"record": "gpufleet:variable_%d" % i, "expr": re.sub(r"\$(pool|node|gpu)", ".*", re.sub(
        r"^(query_result|label_values)\((.*)\)$", lambda m: m.group(2) if m.group(1) == "query_result" else "up", q))}
             for i, q in enumerate(queries)]
    path = tmp_path / "variables.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "variables", "rules": rules}]}))
    proc = promtool("check", "rules", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
