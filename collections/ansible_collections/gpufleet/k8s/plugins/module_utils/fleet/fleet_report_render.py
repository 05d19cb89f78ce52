# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The fleet GPU report as files: ``fleet.md``, ``fleet.html`` (its charts inline SVG)
and ``fleet.json``, from the report fleet_report.build_report makes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import html
import json


def _fmt(value):
    return "-" if value is None else str(value)


def _money(value):
    return "-" if value is None else "%.2f" % value


def _summary(report):
    t = report["totals"]
    text = "Source: %s. Pools: %d, nodes: %d, GPUs: %d, schedulable GPU units (after sharing): %d%s." % (
        report["source"], t["pools"], t["nodes"], t["gpus"], t["capacity"],
        "" if t["requested"] is None else ", requested: %d" % t["requested"])
    if t.get("idle_gpu_hours") is not None:
        cost = "" if t.get("idle_cost") is None else " (cost %s)" % _money(t["idle_cost"])
        text += " Idle GPU-hours over %s: %s%s." % (report["window"], t["idle_gpu_hours"], cost)
    return text


def render_markdown(report):
    lines = ["# GPU fleet report: %s (%s)" % (report["cluster"], report["platform"]), ""]
    if report.get("generated_at"):
        lines += ["Generated at %s (utilisation window %s)." % (report["generated_at"], report["window"]), ""]
    lines += [_summary(report), "", "## Pools", "",
              "| pool | GPU type | GPUs/node | sharing | nodes | GPUs | max nodes | schedulable | max schedulable | requested "
              "| idle | avg util % | idle GPU-h | idle cost | drivers |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["pools"]:
        lines.append("| %s | %s | %d | %s | %d | %d | %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            r["pool"], r["gpu_type"], r["gpus_per_node"], r["sharing"], r["nodes"], r["gpus"], _fmt(r["max_nodes"]),
            r["capacity"], _fmt(r["max_capacity"]), _fmt(r["requested"]), _fmt(r["idle"]), _fmt(r["avg_utilisation"]),
            _fmt(r.get("idle_gpu_hours")), _money(r.get("idle_cost")), ", ".join(r.get("drivers") or []) or "-"))
    lines += ["", "## Nodes", "", "| node | pool | allocatable | requested | avg util % | driver |", "|---|---|---|---|---|---|"]
    for n in report["nodes"]:
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            n["node"], n["pool"], _fmt(n["allocatable"]), _fmt(n["requested"]), _fmt(n["avg_utilisation"]),
            n["driver"] or "-"))
    lines += ["", "## Right-sizing hints", ""]
    lines += ["- " + h for h in report["hints"]] or ["- none"]
    return "\n".join(lines) + "\n"


def _bars(title, items, colour, chart_id):
    """A horizontal bar chart as inline SVG, one element per line: items = [(label, value, max)]."""
    height = 24 * len(items) + 30
    scale = max([m for _l, _v, m in items] + [1])
    parts = ['<svg id="%s" class="chart" role="img" aria-label="%s" width="680" height="%d" '
             'xmlns="http://www.w3.org/2000/svg">' % (chart_id, html.escape(title), height),
             '<text x="0" y="16" class="t">%s</text>' % html.escape(title)]
    for i, (label, value, maximum) in enumerate(items):
        y = 28 + 24 * i
        parts.append('<text x="0" y="%d">%s</text>' % (y + 14, html.escape(label)))
        parts.append('<rect x="150" y="%d" width="%d" height="16" fill="#e5e7eb"/>' % (y, int(380 * maximum / scale)))
        parts.append('<rect class="bar" data-label="%s" data-value="%s" x="150" y="%d" width="%d" height="16" fill="%s"/>'
                     % (html.escape(label), value, y, int(380 * value / scale), colour))
        parts.append('<text x="%d" y="%d">%s</text>' % (
            155 + int(380 * max(value, maximum) / scale), y + 13, html.escape("%s / %s" % (value, maximum))))
    parts.append("</svg>")
    return "\n".join(parts)


def render_html(report):
    esc = html.escape
    rows = "\n".join(
        "<tr><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%d</td><td>%d</td><td>%s</td><td>%d</td><td>%s</td>"
        "<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
            esc(r["pool"]), esc(r["gpu_type"]), r["gpus_per_node"], esc(r["sharing"]), r["nodes"], r["gpus"],
            _fmt(r["max_nodes"]), r["capacity"], _fmt(r["requested"]), _fmt(r["idle"]), _fmt(r["avg_utilisation"]),
            _fmt(r.get("idle_gpu_hours")), _money(r.get("idle_cost")), esc(", ".join(r.get("drivers") or []) or "-"))
        for r in report["pools"])
    node_rows = "\n".join("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
        esc(n["node"]), esc(n["pool"]), _fmt(n["allocatable"]), _fmt(n["requested"]), _fmt(n["avg_utilisation"]),
        esc(n["driver"] or "-")) for n in report["nodes"])
    # Physical GPUs compare across pools; schedulable units (MIG slices, time-slices) do not.
    charts = [_bars("GPUs per pool (of max)",
                    [(r["pool"], r["gpus"], r["max_gpus"] if r.get("max_gpus") is not None else r["gpus"])
                     for r in report["pools"]], "#2563eb", "chart-gpus")]
    if report["totals"]["requested"] is not None:
        charts.append(_bars("Requested share of each pool's schedulable units, %",
                            [(r["pool"], round(100.0 * r["requested"] / r["capacity"], 1) if r["capacity"] else 0, 100)
                             for r in report["pools"]], "#16a34a", "chart-requested"))
    util_items = [(r["pool"], r["avg_utilisation"], 100) for r in report["pools"] if r["avg_utilisation"] is not None]
    if util_items:
        charts.append(_bars("Average GPU utilisation % per pool", util_items, "#d97706", "chart-utilisation"))
    hints = "\n".join("<li>%s</li>" % esc(h) for h in report["hints"]) or "<li>none</li>"
    generated = ('<p id="generated">Generated at %s (utilisation window %s).</p>'
                 % (esc(report["generated_at"]), esc(str(report["window"])))) if report.get("generated_at") else ""
    return """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>GPU fleet report: {cluster}</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2em;color:#111}} table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}} th{{background:#f3f4f6}}
svg.chart{{display:block;margin:1em 0;font-size:12px}} .t{{font-weight:bold}}
</style></head><body>
<h1>GPU fleet report: {cluster} ({platform})</h1>
{generated}
<p id="summary">{summary}</p>
<p>GPUs: <span id="gpus">{gpus}</span>, schedulable GPU units: <span id="capacity">{capacity}</span>.</p>
<h2>Pools</h2>
<table id="pools"><thead><tr><th>pool</th><th>GPU type</th><th>GPUs/node</th><th>sharing</th><th>nodes</th><th>GPUs</th>
<th>max nodes</th><th>schedulable</th><th>requested</th><th>idle</th><th>avg util %</th><th>idle GPU-h</th><th>idle cost</th>
<th>drivers</th></tr></thead>
<tbody>
{rows}
</tbody></table>
{charts}
<h2>Nodes</h2>
<table id="nodes"><thead><tr><th>node</th><th>pool</th><th>allocatable</th><th>requested</th><th>avg util %</th><th>driver</th></tr></thead>
<tbody>
{node_rows}
</tbody></table>
<h2>Right-sizing hints</h2>
<ul id="hints">
{hints}
</ul>
</body></html>
""".format(cluster=esc(str(report["cluster"])), platform=esc(str(report["platform"])), generated=generated,
           summary=esc(_summary(report)), gpus=report["totals"]["gpus"], capacity=report["totals"]["capacity"],
           rows=rows, charts="\n".join(charts), node_rows=node_rows, hints=hints)


def render_files(report):
    """{filename: text} of the three report files."""
    return {
        "fleet.json": json.dumps(report, indent=2, sort_keys=True) + "\n",
        "fleet.md": render_markdown(report),
        "fleet.html": render_html(report),
    }
