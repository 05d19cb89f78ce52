# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""GPU dashboards and alerts (role gpu_monitoring): a Grafana dashboard for the dcgm-exporter
metrics in a ConfigMap for the Grafana sidecar, and alert rules as a PrometheusRule (when the
``monitoring.coreos.com`` API is there or forced) and as a plain Prometheus rules file.

The metrics are the same whoever runs the exporter (gpufleet's dcgm-exporter, the GPU Operator's,
GKE's managed DCGM): ``gpu`` is the GPU index, ``GPU_I_ID``/``GPU_I_PROFILE`` the MIG instance; the node
is named as ``dcgm_labels`` says (``kubernetes_node``, ``hostname`` or ``Hostname``, whichever a series
carries first, as ``hostname`` in every result, so that alerts and panels work across exporter versions).
Utilisation uses ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (reported per MIG instance; ``DCGM_FI_DEV_GPU_UTIL`` is
not). The pool comes from kube-state-metrics' ``kube_node_labels``
(its ``--metric-labels-allowlist`` must include ``nodes=[gpufleet.io/pool]``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_exporter import service_monitor_wanted
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_labels import NODE, series, with_node
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, Problems
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.k8s_syntax import check_label_map
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.namespace_ownership import reserved_problem
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import comments, dump_yaml

NAME = "gpufleet-gpu"
DASHBOARD_KEY = "gpufleet-gpus.json"
DASHBOARD_UID = "gpufleet-gpus"
EXPORTER_JOB = ".*dcgm-exporter.*"
# XIDs that mean the GPU needs a drain and a reset or a replacement (NVIDIA's XID catalogue):
# 48 double-bit ECC, 63/64 row remapping, 74 NVLink, 79 fell off the bus, 92 high single-bit ECC
# rate, 94/95 contained/uncontained ECC, 119/120 GSP.
CRITICAL_XIDS = (48, 63, 64, 74, 79, 92, 94, 95, 119, 120)
# The alerts a broken GPU raises link to gpufleet's remediation (playbooks/remediate.yml).
RUNBOOK_URL = "https://github.com/gpufleet/gpufleet/blob/main/docs/remediation.md"
REMEDIATION = ("ansible-playbook playbooks/remediate.yml -i <inventory> -e gpufleet_apply=true "
               "(a dry run; add -e gpu_remediation_dry_run=false to taint, cordon, drain and replace within limits)")
REMEDIATED_ALERTS = ("GpuFellOffTheBus", "GpuCriticalXid", "GpuRowRemapFailure", "GpuUncorrectableMemoryErrors",
                     "GpuMissing")


def defaults():
    """{variable: default} of the gpu_monitoring inputs, from its argument spec."""
    return role_specs.defaults("gpu_monitoring")


# Metrics the dashboard and the rules read besides the exporter's (up: Prometheus itself;
# kube_node_labels: kube-state-metrics).
OTHER_METRICS = ("up", "kube_node_labels")


def settings(plan, extra):
    """The role's inputs with defaults; ``auto`` decided: enabled unless gpufleet_addons_mode is
    none (GKE included: its managed DCGM exporter serves the same metrics)."""
    s = defaults()
    for key in list(s):
        if (extra or {}).get(key) is not None:
            s[key] = extra[key]
    enabled = s["gpu_monitoring_enabled"]
    if isinstance(enabled, str) and enabled.lower() == "auto":
        s["gpu_monitoring_enabled"] = plan.get("addons_mode") != "none"
    elif isinstance(enabled, bool):
        s["gpu_monitoring_enabled"] = enabled
    elif str(enabled).lower() in ("true", "yes", "false", "no"):
        s["gpu_monitoring_enabled"] = str(enabled).lower() in ("true", "yes")
    else:
        raise GpufleetError("gpu_monitoring_enabled: %r; use one of: auto, true, false" % (enabled,))
    for key in ("gpu_monitoring_idle_percent", "gpu_monitoring_temperature_celsius"):
        value = s[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 150:
            raise GpufleetError("%s: %r; use a number above 0 (percent or degrees Celsius)" % (key, value))
    return s


# Label maps put on the objects as given (the dashboard ConfigMap, the PrometheusRule).
LABEL_MAP_VARS = ("gpu_monitoring_dashboard_labels", "gpu_monitoring_rule_labels")


def problems(plan, extra):
    try:
        s = settings(plan, extra)
    except GpufleetError as exc:
        return [exc.msg]
    found = Problems()
    for var in LABEL_MAP_VARS:
        check_label_map(var, s[var], found)
    reserved = reserved_problem("gpu_monitoring_namespace", s["gpu_monitoring_namespace"], "gpufleet-monitoring")
    if reserved:
        found.error("gpu_monitoring_namespace", reserved)
    return found.errors


# --------------------------------------------------------------------------------------------
# Alert rules
# --------------------------------------------------------------------------------------------

# the alerts whose expression is wrapped whole in with_node (GpuMissing counts per node inside)
_PER_GPU_GROUPS = ("gpufleet-gpu-health", "gpufleet-gpu-usage")


def rule_groups(s):
    """Prometheus rule groups (the same in the PrometheusRule and the plain rules file); the alerts of a
    broken GPU carry ``runbook_url`` and ``remediation`` annotations naming playbooks/remediate.yml. The
    per-GPU alerts carry the node as ``hostname`` whichever label the exporter named it with."""
    groups = _rule_groups(s)
    for group in groups:
        for rule in group["rules"]:
            if group["name"] in _PER_GPU_GROUPS and rule["alert"] != "GpuMissing":
                rule["expr"] = with_node(rule["expr"])
            if rule["alert"] in REMEDIATED_ALERTS:
                rule["annotations"].update({"runbook_url": RUNBOOK_URL, "remediation": REMEDIATION})
    return groups


def _rule_groups(s):
    idle = float(s["gpu_monitoring_idle_percent"]) / 100.0
    where = "{{ $labels.%s }} GPU {{ $labels.gpu }}" % NODE
    xid = "DCGM_FI_DEV_XID_ERRORS"
    critical = " or ".join("%s == %d" % (xid, x) for x in CRITICAL_XIDS if x != 79)
    return [
        {"name": "gpufleet-gpu-health", "rules": [
            {"alert": "GpuFellOffTheBus",
             "expr": "%s == 79" % xid,
             "labels": {"severity": "critical"},
             "annotations": {
                 "summary": "GPU fell off the bus (XID 79) on " + where,
                 "description": "The driver lost the GPU. Drain the node and reboot it; if it happens again, "
                                "have the GPU replaced."}},
            {"alert": "GpuCriticalXid",
             "expr": critical,
             "labels": {"severity": "critical"},
             "annotations": {
                 "summary": "XID {{ $value }} on " + where,
                 "description": "An XID that needs the GPU drained and reset (ECC, row remapping, NVLink, GSP). "
                                "Look it up in NVIDIA's XID catalogue."}},
            {"alert": "GpuXidError",
             "expr": "%s != 0 unless (%s or %s == 79)" % (xid, critical, xid),
             "for": "5m",
             "labels": {"severity": "warning"},
             "annotations": {
                 "summary": "XID {{ $value }} on " + where,
                 "description": "The driver reported an XID error (often an application fault)."}},
            {"alert": "GpuRowRemapFailure",
             "expr": "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
             "labels": {"severity": "critical"},
             "annotations": {
                 "summary": "Row remapping failed on " + where,
                 "description": "The GPU ran out of spare memory rows: have it replaced."}},
            {"alert": "GpuUncorrectableMemoryErrors",
             "expr": "increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h]) > 0",
             "labels": {"severity": "warning"},
             "annotations": {
                 "summary": "Rows remapped for uncorrectable ECC errors on " + where,
                 "description": "Drain the node and reset the GPU so that the remapping takes effect."}},
            {"alert": "GpuTooHot",
             "expr": "DCGM_FI_DEV_GPU_TEMP > %s" % s["gpu_monitoring_temperature_celsius"],
             "for": "10m",
             "labels": {"severity": "warning"},
             "annotations": {"summary": where + " at {{ $value }} C"}},
            {"alert": "GpuMissing",
             "expr": "count by (%s) (%s) < count by (%s) (%s)" % (
                 NODE, with_node("DCGM_FI_DEV_GPU_TEMP"), NODE, with_node("DCGM_FI_DEV_GPU_TEMP offset 30m")),
             "for": "10m",
             "labels": {"severity": "critical"},
             "annotations": {
                 "summary": "{{ $labels.%s }} reports fewer GPUs than 30 minutes ago" % NODE,
                 "description": "A GPU stopped reporting metrics (fell off the bus or the driver lost it)."}},
        ]},
        {"name": "gpufleet-gpu-exporter", "rules": [
            {"alert": "DcgmExporterDown",
             "expr": 'up{job=~"%s"} == 0' % EXPORTER_JOB,
             "for": "5m",
             "labels": {"severity": "warning"},
             "annotations": {"summary": "dcgm-exporter on {{ $labels.instance }} cannot be scraped"}},
            {"alert": "DcgmExporterAbsent",
             "expr": 'absent(up{job=~"%s"})' % EXPORTER_JOB,
             "for": "15m",
             "labels": {"severity": "warning"},
             "annotations": {"summary": "No dcgm-exporter target is scraped: GPU metrics and alerts are blind"}},
        ]},
        {"name": "gpufleet-gpu-usage", "rules": [
            {"alert": "GpuIdle",
             "expr": "avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[%s]) < %s" % (s["gpu_monitoring_idle_for"], idle),
             "labels": {"severity": "info"},
             "annotations": {
                 "summary": (where + " (MIG instance {{ $labels.GPU_I_PROFILE }}) was idle for "
                             + s["gpu_monitoring_idle_for"]),
                 "description": "Graphics engine active below %s%% on average: release it or right-size the "
                                "pool." % s["gpu_monitoring_idle_percent"]}},
        ]},
    ]


def rules_file(plan, extra):
    """The plain Prometheus rules file (for ``rule_files``; ``promtool check rules`` reads it)."""
    s = settings(plan, extra)
    header = comments("GPU alert rules rendered by gpufleet for cluster %s, for Prometheus without the Operator:"
                      % plan.get("cluster_name"),
                      "list this file under rule_files. The PrometheusRule in this folder holds the same groups.")
    return header + dump_yaml({"groups": rule_groups(s)})


# --------------------------------------------------------------------------------------------
# Dashboard
# --------------------------------------------------------------------------------------------

def _panel(pid, title, exprs, unit, pos, kind="timeseries", legend="{{%s}} GPU {{gpu}} {{GPU_I_PROFILE}}" % NODE):
    targets = [{"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend,
                "datasource": {"type": "prometheus", "uid": "${datasource}"}} for i, expr in enumerate(exprs)]
    return {"id": pid, "type": kind, "title": title,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 8, "w": pos[2], "x": pos[0], "y": pos[1]},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {}, "targets": targets}


def _sel(metric, around="%s"):
    """``metric`` of the selected nodes and GPUs, the node as ``hostname`` (dcgm_labels.series)."""
    return series(metric, "$node", 'gpu=~"$gpu"', around)


def dashboard(s):
    pool_join = ('* on (%s) group_left (label_gpufleet_io_pool) label_replace('
                 'kube_node_labels{label_gpufleet_io_pool=~"$pool"}, "%s", "$1", "node", "(.*)")' % (NODE, NODE))
    by_node = "{{%s}}" % NODE
    panels = [
        _panel(1, "Utilisation by pool (graphics engine active, MIG-aware)",
               ["avg by (label_gpufleet_io_pool) (%s %s) * 100" % (_sel("DCGM_FI_PROF_GR_ENGINE_ACTIVE"), pool_join)],
               "percent", (0, 0, 12), legend="{{label_gpufleet_io_pool}}"),
        _panel(2, "Utilisation by node", ["avg by (%s) (%s) * 100" % (NODE, _sel("DCGM_FI_PROF_GR_ENGINE_ACTIVE"))],
               "percent", (12, 0, 12), legend=by_node),
        _panel(3, "Utilisation per GPU and MIG instance", ["%s * 100" % _sel("DCGM_FI_PROF_GR_ENGINE_ACTIVE")],
               "percent", (0, 8, 12)),
        _panel(4, "Tensor pipe active", ["%s * 100" % _sel("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")], "percent", (12, 8, 12)),
        _panel(5, "Framebuffer memory used",
               ["%s / (%s + %s) * 100" % (_sel("DCGM_FI_DEV_FB_USED"), _sel("DCGM_FI_DEV_FB_USED"),
                                          _sel("DCGM_FI_DEV_FB_FREE"))], "percent", (0, 16, 12)),
        _panel(6, "Power draw", [_sel("DCGM_FI_DEV_POWER_USAGE")], "watt", (12, 16, 12)),
        _panel(7, "GPU temperature", [_sel("DCGM_FI_DEV_GPU_TEMP")], "celsius", (0, 24, 12)),
        _panel(8, "Memory temperature", [_sel("DCGM_FI_DEV_MEMORY_TEMP")], "celsius", (12, 24, 12)),
        _panel(9, "Last XID error per GPU (0 = none)",
               ["max by (%s, gpu) (%s)" % (NODE, _sel("DCGM_FI_DEV_XID_ERRORS"))],
               "none", (0, 32, 8), kind="table", legend=by_node + " GPU {{gpu}}"),
        _panel(10, "Remapped rows (uncorrectable / correctable) and remap failures",
               [_sel("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"), _sel("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"),
                _sel("DCGM_FI_DEV_ROW_REMAP_FAILURE")], "none", (8, 32, 8), kind="table"),
        _panel(11, "PCIe replays per second", [_sel("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "rate(%s[5m])")], "ops",
               (16, 32, 8)),
        _panel(12, "SM clock", ["%s * 1000000" % _sel("DCGM_FI_DEV_SM_CLOCK")], "hertz", (0, 40, 12)),  # MHz
        _panel(13, "Exporter targets up", ['up{job=~"%s"}' % EXPORTER_JOB], "none", (12, 40, 12),
               legend="{{instance}}"),
    ]

    def variable(name, label, query, include_all=True, regex=""):
        return {"name": name, "label": label, "type": "query", "regex": regex,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "query": {"query": query, "refId": name}, "definition": query,
                "includeAll": include_all, "multi": True, "allValue": ".*", "refresh": 2, "sort": 1,
                "current": {"selected": True, "text": ["All"], "value": ["$__all"]}}

    return {
        "uid": DASHBOARD_UID,
        "title": "gpufleet / GPUs",
        "description": "dcgm-exporter metrics per pool, node, GPU and MIG instance (rendered by gpufleet)",
        "tags": ["gpufleet", "gpu", "dcgm"],
        "editable": False,
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "timezone": "",
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
             "current": {}, "hide": 0},
            variable("pool", "Pool", "label_values(kube_node_labels, label_gpufleet_io_pool)"),
            # label_values() reads one label: the node comes from a query naming it as dcgm_labels says
            variable("node", "Node", "query_result(count by (%s) (%s))" % (NODE, with_node("DCGM_FI_DEV_GPU_TEMP")),
                     regex='/%s="([^"]+)"/' % NODE),
            variable("gpu", "GPU", "query_result(count by (gpu) (%s))" % series("DCGM_FI_DEV_GPU_TEMP", "$node"),
                     regex='/gpu="([^"]+)"/'),
        ]},
        "annotations": {"list": []},
        "panels": panels,
    }


def dashboard_json(s):
    return json.dumps(dashboard(s), indent=1, sort_keys=True) + "\n"


# --------------------------------------------------------------------------------------------
# Objects
# --------------------------------------------------------------------------------------------

def _labels(extra=None):
    out = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/managed-by": "gpufleet",
           "app.kubernetes.io/part-of": "gpufleet"}
    out.update({str(k): str(v) for k, v in (extra or {}).items()})
    return out


def monitoring_objects(plan, extra, monitoring_api=False):
    """Namespace, dashboard ConfigMap and (when wanted) the PrometheusRule; empty when disabled."""
    s = settings(plan, extra)
    if not s["gpu_monitoring_enabled"]:
        return []
    ns = s["gpu_monitoring_namespace"]
    cm_labels = _labels(s["gpu_monitoring_dashboard_labels"])
    objs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": _labels()}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": NAME + "-dashboard", "namespace": ns, "labels": cm_labels,
                      "annotations": {"grafana_folder": str(s["gpu_monitoring_dashboard_folder"])}},
         "data": {DASHBOARD_KEY: dashboard_json(s)}},
    ]
    if service_monitor_wanted(s["gpu_monitoring_prometheus_rule"], monitoring_api, not plan.get("apply")):
        objs.append({"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
                     "metadata": {"name": NAME + "-alerts", "namespace": ns,
                                  "labels": _labels(s["gpu_monitoring_rule_labels"])},
                     "spec": {"groups": rule_groups(s)}})
    return objs


def check(params, plan, problems):
    """Preflight: the gpu_monitoring_* inputs."""
    for msg in problems_of(plan, params.get("extra") or {}):
        var, _sep, rest = msg.partition(": ")
        problems.error(var, rest)


def problems_of(plan, extra):
    return problems(plan, extra)
