# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The fleet GPU report: what the fleet holds, what is requested, what sits idle.

Inputs are plain data so the report can be built from recorded files: the normalized plan,
the inventory groups, per-host GPU facts (``gpufleet.k8s.nvidia_gpu_info``), Node and Pod
lists from the API server, and a Prometheus instant-query response for average
``DCGM_FI_DEV_GPU_UTIL``. Every input but the plan is optional: in render mode the report is
built from the inventory alone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import html
import json

from ansible_collections.gpufleet.k8s.plugins.module_utils.expected import POOL_LABEL, expected_resources

GPU_RESOURCE_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-")
ACTIVE_PHASES = ("Pending", "Running")


def _num(value, default=0.0):
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def pod_gpu_requests(pod):
    """GPUs a pod holds: the sum of nvidia.com/gpu* and MIG limits over its containers."""
    total = 0
    spec = pod.get("spec") or {}
    for container in spec.get("containers") or []:
        limits = (container.get("resources") or {}).get("limits") or {}
        for name, value in limits.items():
            if name.startswith(GPU_RESOURCE_PREFIXES):
                total += int(_num(value))
    return total


def parse_utilisation(response):
    """{node: [util %, ...]} from a Prometheus instant-query (vector) response."""
    out = {}
    if not response or response.get("status") != "success":
        return out
    for sample in (response.get("data") or {}).get("result") or []:
        metric = sample.get("metric") or {}
        node = metric.get("kubernetes_node") or metric.get("Hostname") or metric.get("instance")
        if node is None:
            continue
        out.setdefault(node, []).append(_num((sample.get("value") or [0, "0"])[1]))
    return out


def build_report(plan, groups=None, gpu_facts=None, nodes=None, pods=None, utilisation=None, idle_percent=10.0):
    groups = groups or {}
    gpu_facts = gpu_facts or {}
    util = parse_utilisation(utilisation)
    live = nodes is not None
    node_pool = {}
    node_alloc = {}
    for node in nodes or []:
        meta = node.get("metadata") or {}
        pool = (meta.get("labels") or {}).get(POOL_LABEL)
        if pool:
            node_pool[meta["name"]] = pool
            alloc = (node.get("status") or {}).get("allocatable") or {}
            node_alloc[meta["name"]] = sum(int(_num(v)) for k, v in alloc.items() if k.startswith(GPU_RESOURCE_PREFIXES))
    requested = {}
    for pod in pods or []:
        if (pod.get("status") or {}).get("phase") not in ACTIVE_PHASES:
            continue
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name:
            requested[node_name] = requested.get(node_name, 0) + pod_gpu_requests(pod)

    pool_rows, node_rows, hints = [], [], []
    for pool in plan["pools"]:
        per_node = sum(expected_resources(pool).values())
        if live:
            members = sorted(n for n, p in node_pool.items() if p == pool["name"])
        else:
            members = sorted(groups.get(pool.get("node_group") or "", []))
        planned_nodes = len(members) if members else (pool.get("min_nodes") or 0)
        max_nodes = pool.get("max_nodes")
        capacity = sum(node_alloc.get(n, 0) for n in members) if live else planned_nodes * per_node
        req = sum(requested.get(n, 0) for n in members)
        pool_util = [u for n in members for u in util.get(n, [])]
        avg = round(sum(pool_util) / len(pool_util), 1) if pool_util else None
        row = {
            "pool": pool["name"], "gpu_type": pool["gpu_type"], "gpus_per_node": pool["gpus_per_node"],
            "sharing": pool["sharing"]["mode"], "nodes": planned_nodes, "gpus": planned_nodes * pool["gpus_per_node"],
            "max_nodes": max_nodes, "schedulable_per_node": per_node, "capacity": capacity,
            "max_capacity": (max_nodes * per_node) if max_nodes is not None else None,
            "requested": req if live else None, "idle": (capacity - req) if live else None,
            "avg_utilisation": avg,
        }
        pool_rows.append(row)
        if max_nodes is not None and planned_nodes >= max_nodes and max_nodes > 0:
            hints.append("pool %s is %s its max (%d of %d nodes): raise max_nodes or expect pending GPU pods"
                         % (pool["name"], "at" if live else "planned at", planned_nodes, max_nodes))
        for name in members:
            node_util = util.get(name, [])
            node_avg = round(sum(node_util) / len(node_util), 1) if node_util else None
            facts = gpu_facts.get(name) or {}
            row_n = {"node": name, "pool": pool["name"], "allocatable": node_alloc.get(name) if live else per_node,
                     "requested": requested.get(name, 0) if live else None, "avg_utilisation": node_avg,
                     "driver": facts.get("driver_version") or "", "gpus": len(facts.get("gpus") or [])}
            node_rows.append(row_n)
            if live and row_n["allocatable"] and row_n["requested"] == 0:
                hints.append("node %s: all %d GPUs idle (nothing requested): scale the pool down or lower min_nodes"
                             % (name, row_n["allocatable"]))
            elif node_avg is not None and row_n["requested"] and node_avg < idle_percent:
                hints.append("node %s: %d GPU(s) allocated but only %.1f%% utilised (< %.0f%%): right-size the "
                             "requests or share GPUs (time-slicing/MPS/MIG)" % (name, row_n["requested"], node_avg, idle_percent))
    totals = {
        "pools": len(pool_rows), "nodes": sum(r["nodes"] for r in pool_rows),
        "gpus": sum(r["gpus"] for r in pool_rows),
        "capacity": sum(r["capacity"] for r in pool_rows),
        "requested": sum(r["requested"] or 0 for r in pool_rows) if live else None,
    }
    return {
        "cluster": plan.get("cluster_name"), "platform": plan.get("platform"),
        "source": "cluster" if live else "inventory (render mode)",
        "idle_percent": idle_percent, "totals": totals, "pools": pool_rows, "nodes": node_rows, "hints": hints,
    }


def _fmt(value):
    return "-" if value is None else str(value)


def render_markdown(report):
    lines = ["# GPU fleet report: %s (%s)" % (report["cluster"], report["platform"]), "",
             "Source: %s. Pools: %d, nodes: %d, GPUs: %d, schedulable GPU units (after sharing): %d%s." % (
                 report["source"], report["totals"]["pools"], report["totals"]["nodes"], report["totals"]["gpus"],
                 report["totals"]["capacity"],
                 "" if report["totals"]["requested"] is None else ", requested: %d" % report["totals"]["requested"]),
             "", "## Pools", "",
             "| pool | GPU type | GPUs/node | sharing | nodes | GPUs | max nodes | schedulable | max schedulable | requested | idle | avg util % |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["pools"]:
        lines.append("| %s | %s | %d | %s | %d | %d | %s | %d | %s | %s | %s | %s |" % (
            r["pool"], r["gpu_type"], r["gpus_per_node"], r["sharing"], r["nodes"], r["gpus"], _fmt(r["max_nodes"]),
            r["capacity"], _fmt(r["max_capacity"]), _fmt(r["requested"]), _fmt(r["idle"]), _fmt(r["avg_utilisation"])))
    lines += ["", "## Nodes", "", "| node | pool | allocatable | requested | avg util % | driver |", "|---|---|---|---|---|---|"]
    for n in report["nodes"]:
        lines.append("| %s | %s | %s | %s | %s | %s |" % (n["node"], n["pool"], _fmt(n["allocatable"]),
                                                       _fmt(n["requested"]), _fmt(n["avg_utilisation"]), n["driver"] or "-"))
    lines += ["", "## Right-sizing hints", ""]
    lines += ["- " + h for h in report["hints"]] or ["- none"]
    return "\n".join(lines) + "\n"


def _bars(title, items, colour):
    """A horizontal bar chart as inline SVG: items = [(label, value, max)]."""
    height = 24 * len(items) + 30
    scale = max([m for _l, _v, m in items] + [1])
    parts = ['<svg class="chart" role="img" aria-label="%s" width="680" height="%d" xmlns="http://www.w3.org/2000/svg">'
             % (html.escape(title), height), '<text x="0" y="16" class="t">%s</text>' % html.escape(title)]
    for i, (label, value, maximum) in enumerate(items):
        y = 28 + 24 * i
        parts.append('<text x="0" y="%d">%s</text>' % (y + 14, html.escape(label)))
        parts.append('<rect x="150" y="%d" width="%d" height="16" fill="#e5e7eb"/>' % (y, int(380 * maximum / scale)))
        parts.append('<rect class="bar" data-label="%s" data-value="%s" x="150" y="%d" width="%d" height="16" fill="%s"/>'
                     % (html.escape(label), value, y, int(380 * value / scale), colour))
        parts.append('<text x="%d" y="%d">%s</text>' % (155 + int(380 * max(value, maximum) / scale), y + 13,
                                                         html.escape("%s / %s" % (value, maximum))))
    parts.append("</svg>")
    return "".join(parts)


def render_html(report):
    esc = html.escape
    rows = "".join(
        "<tr><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%d</td><td>%d</td><td>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            esc(r["pool"]), esc(r["gpu_type"]), r["gpus_per_node"], esc(r["sharing"]), r["nodes"], r["gpus"], _fmt(r["max_nodes"]),
            r["capacity"], _fmt(r["requested"]), _fmt(r["idle"]), _fmt(r["avg_utilisation"])) for r in report["pools"])
    node_rows = "".join("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
        esc(n["node"]), esc(n["pool"]), _fmt(n["allocatable"]), _fmt(n["requested"]), _fmt(n["avg_utilisation"]),
        esc(n["driver"] or "-")) for n in report["nodes"])
    charts = [_bars("Schedulable GPUs per pool (of max)",
                    [(r["pool"], r["capacity"], r["max_capacity"] if r["max_capacity"] is not None else r["capacity"])
                     for r in report["pools"]], "#2563eb")]
    if report["totals"]["requested"] is not None:
        charts.append(_bars("Requested GPUs per pool (of schedulable)",
                            [(r["pool"], r["requested"], r["capacity"]) for r in report["pools"]], "#16a34a"))
    util_items = [(r["pool"], r["avg_utilisation"], 100) for r in report["pools"] if r["avg_utilisation"] is not None]
    if util_items:
        charts.append(_bars("Average GPU utilisation % per pool", util_items, "#d97706"))
    hints = "".join("<li>%s</li>" % esc(h) for h in report["hints"]) or "<li>none</li>"
    return """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>GPU fleet report: {cluster}</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2em;color:#111}} table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}} th{{background:#f3f4f6}}
svg.chart{{display:block;margin:1em 0;font-size:12px}} .t{{font-weight:bold}}
</style></head><body>
<h1>GPU fleet report: {cluster} ({platform})</h1>
<p id="summary">Source: {source}. Pools: {pools}, nodes: {nodes}, GPUs: <span id="gpus">{gpus}</span>,
schedulable GPU units (after sharing): <span id="capacity">{capacity}</span>.</p>
<h2>Pools</h2>
<table id="pools"><thead><tr><th>pool</th><th>GPU type</th><th>GPUs/node</th><th>sharing</th><th>nodes</th><th>GPUs</th><th>max nodes</th>
<th>schedulable</th><th>requested</th><th>idle</th><th>avg util %</th></tr></thead><tbody>{rows}</tbody></table>
{charts}
<h2>Nodes</h2>
<table id="nodes"><thead><tr><th>node</th><th>pool</th><th>allocatable</th><th>requested</th><th>avg util %</th><th>driver</th></tr></thead>
<tbody>{node_rows}</tbody></table>
<h2>Right-sizing hints</h2><ul id="hints">{hints}</ul>
</body></html>
""".format(cluster=esc(str(report["cluster"])), platform=esc(str(report["platform"])), source=esc(report["source"]),
           pools=report["totals"]["pools"], nodes=report["totals"]["nodes"], gpus=report["totals"]["gpus"],
           capacity=report["totals"]["capacity"],
           rows=rows, charts="\n".join(charts), node_rows=node_rows, hints=hints)


def render_files(report):
    """{filename: text} of the three report files."""
    return {
        "fleet.json": json.dumps(report, indent=2, sort_keys=True) + "\n",
        "fleet.md": render_markdown(report),
        "fleet.html": render_html(report),
    }
