# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The fleet-wide report's files (``fleet_overview.build_overview``'s data): ``report.json``,
``report.md`` and ``index.html``, one self-contained page (no script, no external resource; charts
as inline SVG) whose tables fit the window's width at any number of clusters."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import html
import json

BLUE, GREEN, ORANGE, PURPLE, GREY = "#2563eb", "#16a34a", "#d97706", "#7c3aed", "#e5e7eb"
TOP_CLUSTERS = 20          # bars in the per-cluster chart (the table lists every cluster)
LABEL_CHARS = 24           # chart labels longer than this are cut (the full name is the bar's tooltip)


def fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return ("%d" % value) if value.is_integer() else ("%.2f" % value).rstrip("0").rstrip(".")
    return str(value)


def money(value):
    return "-" if value is None else "%.2f" % value


FIGURES = [("clusters", "clusters", fmt), ("pools", "pools", fmt), ("nodes", "nodes", fmt), ("GPUs", "gpus", fmt),
           ("max GPUs", "max_gpus", fmt), ("schedulable", "capacity", fmt), ("requested", "requested", fmt),
           ("allocated GPUs", "allocated_gpus", fmt), ("allocation %", "allocation_percent", fmt),
           ("pending GPU pods", "pending_gpu_pods", fmt), ("idle GPU-h", "idle_gpu_hours", fmt),
           ("idle cost", "idle_cost", money)]
_NO_CLUSTERS = [f for f in FIGURES if f[1] != "clusters"]

# (element id, heading, the overview's key, leading columns)
TABLES = [
    ("regions", "Per region", "by_region", [("cloud", "cloud", str), ("region", "region", str)] + FIGURES),
    ("clouds", "Per cloud", "by_cloud", [("cloud", "cloud", str)] + FIGURES),
    ("gpu-types", "Per GPU type", "by_gpu_type", [("GPU type", "gpu_type", str)] + FIGURES),
    ("pool-names", "Per pool (same name in several clusters summed)", "by_pool", [("pool", "pool", str)] + FIGURES),
    ("clusters", "Per cluster", "clusters",
     [("cluster", "name", str), ("cloud", "cloud", str), ("region", "region", str), ("state", "state", str),
      ("report of", "report_generated_at", str)] + [f for f in _NO_CLUSTERS if f[1] != "pools"]
     + [("hints", "hints", fmt)]),
    ("pools", "Every pool", "pools",
     [("cluster", "cluster", str), ("pool", "pool", str), ("GPU type", "gpu_type", str), ("sharing", "sharing", fmt),
      ("nodes", "nodes", fmt), ("GPUs", "gpus", fmt), ("max GPUs", "max_gpus", fmt), ("schedulable", "capacity", fmt),
      ("requested", "requested", fmt), ("allocated GPUs", "allocated_gpus", fmt),
      ("pending GPU pods", "pending_gpu_pods", fmt), ("avg util %", "avg_utilisation", fmt),
      ("idle GPU-h", "idle_gpu_hours", fmt), ("idle cost", "idle_cost", money)]),
]
REBALANCE = [("GPU type", "gpu_type", str), ("idle: cluster / pool", "idle", str), ("idle region", "idle_region", str),
             ("unallocated GPUs", "idle_gpus", fmt), ("pending: cluster / pool", "pending", str),
             ("pending region", "pending_region", str), ("pending GPU pods", "pending_gpu_pods", fmt)]
TREND_CHARTS = [("chart-trend-gpus", "GPUs", "gpus", BLUE),
                ("chart-trend-allocation", "Allocation %", "allocation_percent", GREEN),
                ("chart-trend-idle", "Idle GPU-hours", "idle_gpu_hours", ORANGE),
                ("chart-trend-cost", "Idle cost", "idle_cost", PURPLE)]


def cell(row, key, show):
    value = row.get(key)
    return show(value) if value is not None or show is not str else "-"


def summary(ov):
    t = ov["totals"]
    text = ("Clusters: %d (%d reporting, %d from an earlier report, %d failed, %d skipped, %d without a report). "
            "Pools: %d, nodes: %d, GPUs: %d" % (t["clusters"], t["reporting"], t["earlier"], t["failed"], t["skipped"],
                                                t["no_report"], t["pools"], t["nodes"], t["gpus"]))
    if t["allocated_gpus"] is not None:
        text += ", allocated: %s GPUs (%s%%)" % (fmt(t["allocated_gpus"]), fmt(t["allocation_percent"]))
    if t["pending_gpu_pods"] is not None:
        text += ", pending GPU pods: %d" % t["pending_gpu_pods"]
    if t["idle_gpu_hours"] is not None:
        text += ", idle GPU-hours: %s" % fmt(t["idle_gpu_hours"])
    if t["idle_cost"] is not None:
        text += ", idle cost: %s" % money(t["idle_cost"])
    return text + "."


def _md_table(columns, rows):
    lines = ["| " + " | ".join(c[0] for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r, key, show).replace("|", "\\|") for _h, key, show in columns) + " |" for r in rows]
    return lines


def render_markdown(ov):
    lines = ["# %s: fleet report" % ov["title"], ""]
    if ov.get("generated_at"):
        lines += ["Generated at %s." % ov["generated_at"], ""]
    lines += [summary(ov), "", "## Clusters without figures", ""]
    lines += ["- %s (%s/%s): %s: %s" % (p["name"], p["cloud"], p["region"], p["state"], p["message"] or "-")
              for p in ov["problems"]] or ["- none"]
    lines += ["", "## Right-sizing across the fleet", ""]
    lines += ["- " + h for h in ov["hints"]] or ["- none"]
    trend = ov.get("trend") or []
    if len(trend) >= 2:
        lines += ["", "## Trend (last %d runs)" % len(trend), ""]
        columns = [("run", "generated_at", str)]
        columns += [(t, k, money if k == "idle_cost" else fmt) for _i, t, k, _c in TREND_CHARTS]
        lines += _md_table(columns, trend)
    for _id, heading, key, columns in TABLES:
        lines += ["", "## " + heading, ""] + _md_table(columns, ov[key])
    return "\n".join(lines) + "\n"


def _label(text):
    text = str(text)
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "\u2026"


def bar_chart(chart_id, title, items, colour, part_colour=None, part_name=""):
    """Horizontal bars as inline SVG, scaled to the window: items = [(label, value, part or None)]; the part
    (e.g. the allocated GPUs of all GPUs) is drawn over the value's bar in ``part_colour``."""
    esc = html.escape
    height = 40 + 22 * len(items)
    top = max([v for _l, v, _p in items] + [1])
    legend = (' <tspan fill="%s">&#9632; %s</tspan>' % (part_colour, esc(part_name))) if part_colour else ""
    out = ['<svg id="%s" class="chart" role="img" aria-label="%s" viewBox="0 0 720 %d" preserveAspectRatio="xMinYMin '
           'meet" xmlns="http://www.w3.org/2000/svg">' % (chart_id, esc(title), height),
           '<text x="0" y="16" class="t">%s%s</text>' % (esc(title), legend)]
    for i, (label, value, part) in enumerate(items):
        y = 28 + 22 * i
        width = int(round(420.0 * value / top))
        out.append('<text x="0" y="%d"><title>%s</title>%s</text>' % (y + 13, esc(str(label)), esc(_label(label))))
        out.append('<rect x="190" y="%d" width="420" height="16" fill="%s"/>' % (y, GREY))
        out.append('<rect class="bar" data-label="%s" data-value="%s" x="190" y="%d" width="%d" height="16" fill="%s"/>'
                   % (esc(str(label)), fmt(value), y, width, colour))
        text = fmt(value)
        if part is not None and part_colour:
            out.append('<rect class="part" data-value="%s" x="190" y="%d" width="%d" height="16" fill="%s"/>'
                       % (fmt(part), y, int(round(420.0 * min(part, value) / top)), part_colour))
            text = "%s / %s" % (fmt(part), fmt(value))
        out.append('<text x="616" y="%d">%s</text>' % (y + 13, esc(text)))
    out.append("</svg>")
    return "\n".join(out)


def line_chart(chart_id, title, points, colour):
    """A trend as inline SVG: points = [(run timestamp, value or None)], oldest first."""
    esc = html.escape
    values = [v for _t, v in points if v is not None]
    top = max(values + [1])
    left, width, base = 60, 280, 150
    step = width / float(max(len(points) - 1, 1))
    out = ['<svg id="%s" class="trend" role="img" aria-label="%s" viewBox="0 0 360 190" '
           'xmlns="http://www.w3.org/2000/svg">' % (chart_id, esc(title)),
           '<text x="0" y="16" class="t">%s</text>' % esc(title),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#9ca3af"/>' % (left, base, left + width, base),
           '<text x="0" y="34">%s</text><text x="0" y="%d">0</text>' % (esc(fmt(top)), base)]
    coords = [(left + step * i, base - 115.0 * v / top, t, v) for i, (t, v) in enumerate(points) if v is not None]
    if len(coords) > 1:
        out.append('<polyline fill="none" stroke="%s" stroke-width="4" points="%s"/>'
                   % (colour, " ".join("%.1f,%.1f" % (x, y) for x, y, _t, _v in coords)))
    for x, y, stamp, value in coords:
        label = esc(stamp or "")
        out.append('<circle class="point" data-run="%s" data-value="%s" cx="%.1f" cy="%.1f" r="5" fill="%s">'
                   '<title>%s: %s</title></circle>' % (label, fmt(value), x, y, colour, label, fmt(value)))
    if points:
        out.append('<text x="%d" y="%d">%s</text>' % (left, base + 20, esc(points[0][0] or "")))
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (left + width, base + 36, esc(points[-1][0] or "")))
    out.append("</svg>")
    return "\n".join(out)


def charts(ov):
    out = [bar_chart("chart-regions", "GPUs per region (allocated of all)",
                     [("%s/%s" % (r["cloud"], r["region"]), r["gpus"], r["allocated_gpus"]) for r in ov["by_region"]],
                     BLUE, GREEN, "allocated"),
           bar_chart("chart-gpu-types", "GPUs per GPU type (allocated of all)",
                     [(r["gpu_type"], r["gpus"], r["allocated_gpus"]) for r in ov["by_gpu_type"]],
                     BLUE, GREEN, "allocated")]
    idle = [(("%s/%s" % (r["cloud"], r["region"])), r["idle_gpu_hours"], None) for r in ov["by_region"]
            if r["idle_gpu_hours"] is not None]
    if idle:
        out.append(bar_chart("chart-idle-regions", "Idle GPU-hours per region", idle, ORANGE))
    ranked = sorted((c for c in ov["clusters"] if c["state"] in ("ok", "earlier report")),
                    key=lambda c: (-(c["idle_gpu_hours"] or 0), -c["gpus"], c["name"]))[:TOP_CLUSTERS]
    if any(c["idle_gpu_hours"] is not None for c in ranked):
        out.append(bar_chart("chart-clusters", "Clusters with the most idle GPU-hours (top %d)" % TOP_CLUSTERS,
                             [(c["name"], c["idle_gpu_hours"] or 0, None) for c in ranked], ORANGE))
    elif ranked:
        out.append(bar_chart("chart-clusters", "Clusters with the most GPUs (top %d, allocated of all)" % TOP_CLUSTERS,
                             [(c["name"], c["gpus"], c["allocated_gpus"]) for c in ranked], BLUE, GREEN, "allocated"))
    return out


def _html_table(table_id, columns, rows):
    esc = html.escape
    head = "".join("<th>%s</th>" % esc(c[0]) for c in columns)
    body = "\n".join("<tr>%s</tr>" % "".join("<td>%s</td>" % esc(cell(r, key, show)) for _h, key, show in columns)
                     for r in rows)
    return '<div class="wrap"><table id="%s"><thead><tr>%s</tr></thead>\n<tbody>\n%s\n</tbody></table></div>' % (
        table_id, head, body)


def trends(ov):
    points = ov.get("trend") or []
    if len(points) < 2:
        return '<p id="no-trend">Trends are drawn from the second run on (%d run kept so far).</p>' % len(points)
    return '<div id="trends">%s</div>' % "\n".join(
        line_chart(chart_id, "%s (last %d runs)" % (title, len(points)),
                   [(p.get("generated_at"), p.get(key)) for p in points], colour)
        for chart_id, title, key, colour in TREND_CHARTS)


STYLE = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#111;max-width:100%}
h1{font-size:1.6em} .wrap{max-width:100%} table{border-collapse:collapse;margin:.5em 0 1.5em;width:100%;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;overflow-wrap:anywhere} th{background:#f3f4f6}
tbody tr:nth-child(even){background:#fafafa} svg{font-size:12px;font-family:system-ui,sans-serif}
svg.chart{display:block;width:100%;max-width:900px;height:auto;margin:1em 0} .t{font-weight:bold}
#trends{display:flex;flex-wrap:wrap;gap:1em} svg.trend{width:100%;max-width:440px;height:auto}
li{margin:.3em 0}"""


def render_html(ov):
    esc = html.escape
    problems = "\n".join("<li><b>%s</b> (%s/%s): %s: %s</li>" % (
        esc(p["name"]), esc(p["cloud"]), esc(p["region"]), esc(p["state"]), esc(p["message"] or "-"))
        for p in ov["problems"]) or "<li>none</li>"
    moves = [dict(gpu_type=m["gpu_type"], idle="%s / %s" % (m["idle"]["cluster"], m["idle"]["pool"]),
                  idle_region="%s/%s" % (m["idle"]["cloud"], m["idle"]["region"]), idle_gpus=m["idle_gpus"],
                  pending="%s / %s" % (m["pending"]["cluster"], m["pending"]["pool"]),
                  pending_region="%s/%s" % (m["pending"]["cloud"], m["pending"]["region"]),
                  pending_gpu_pods=m["pending_gpu_pods"]) for m in ov["rebalance"]]
    hints = (_html_table("rebalance", REBALANCE, moves) if moves else '<p id="no-hints">none</p>')
    generated = '<p id="generated">Generated at %s.</p>' % esc(ov["generated_at"]) if ov.get("generated_at") else ""
    tables = "\n".join("<h2>%s</h2>\n%s" % (esc(heading), _html_table(table_id, columns, ov[key]))
                       for table_id, heading, key, columns in TABLES)
    return """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}: fleet report</title>
<style>
{style}
</style></head><body>
<h1>{title}: fleet report</h1>
{generated}
<p id="summary">{summary}</p>
{totals}
<h2>Clusters without figures</h2>
<ul id="problems">
{problems}
</ul>
<h2>Trends</h2>
{trends}
<h2>Capacity and allocation</h2>
{charts}
<h2>Right-sizing across the fleet</h2>
<p>Pools with GPU pods pending, each beside a pool of the same GPU type in another cluster (nearest first) whose
GPUs sit unallocated: move the work there, or lower the idle pool's min_nodes and raise the waiting pool's
max_nodes.</p>
{hints}
{tables}
</body></html>
""".format(title=esc(str(ov["title"])), style=STYLE, generated=generated, summary=esc(summary(ov)),
           totals=_html_table("totals", FIGURES, [ov["totals"]]), problems=problems, hints=hints,
           trends=trends(ov), charts="\n".join(charts(ov)), tables=tables)


def render_files(ov):
    """{file name: text} of the three report files (the history entry is ``fleet_overview.with_history``'s)."""
    return {
        "report.json": json.dumps(ov, indent=1, sort_keys=True) + "\n",
        "report.md": render_markdown(ov),
        "index.html": render_html(ov),
    }
