# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The fleet-wide report: every cluster's report (``build/<inventory>/report/fleet.json``, written by
``gpufleet.k8s.fleet_report``) summed per region, cloud, cluster, pool and GPU type, with right-sizing
across clusters and the totals of earlier runs as a trend.

Units: ``gpus`` are physical GPUs (they add up across pools); ``capacity`` and ``requested`` are
schedulable GPU units (MIG slices and time-slices count one each), comparable only inside one pool.
So a pool's allocation is turned into physical GPUs first: ``allocated_gpus = gpus x requested /
capacity`` (requested capped at capacity), and every allocation percentage is ``allocated_gpus /
gpus`` over the pools that report requests (render-mode reports have none).

Clusters whose run succeeded (status ``ok``) and left a report are counted. A cluster this run skipped
(not selected) is counted from its earlier report when it has one (state ``earlier report``, its report's
timestamp shown). A failed cluster, or one without a readable report, is listed with its message and not
summed: an older report of a cluster whose run failed may no longer describe it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import first_link, link_message
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.k8s_syntax import dns_label_error

VAR = "fleet_overview_clusters"
CLOUDS = ("aws", "gcp", "onprem")
STATUSES = ("ok", "failed", "skipped")
COUNTED = ("ok", "earlier report")  # the cluster states whose report is summed
TIMESTAMP = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$")
# history/<UTC timestamp>.json; nothing else in that folder is ever read or removed
HISTORY_FILE = re.compile(r"^(\d{8}T\d{6}Z)\.json$")
HISTORY_DIR = "history"
# the totals a trend point keeps, in the order the page draws them
TREND_KEYS = ("gpus", "allocation_percent", "idle_gpu_hours", "idle_cost")
# a pool with at least this many whole GPUs unallocated (and no GPU pod waiting) can give capacity away
IDLE_GPUS_MIN = 1.0


def check_clusters(clusters, var=VAR):
    """The cluster list with defaults filled; GpufleetError naming the entry and field otherwise."""
    if not isinstance(clusters, list):
        raise GpufleetError("%s must be a list of clusters ({name, cloud, region, tags, report_json, status, "
                            "message}), got %s" % (var, type(clusters).__name__))
    out, seen = [], set()
    for i, entry in enumerate(clusters):
        where = "%s[%d]" % (var, i)
        if not isinstance(entry, dict):
            raise GpufleetError("%s must be a dict, got %s" % (where, type(entry).__name__))
        unknown = sorted(set(entry) - {"name", "cloud", "region", "tags", "report_json", "status", "message"})
        if unknown:
            raise GpufleetError("%s: unknown key(s) %s; allowed: name, cloud, region, tags, report_json, status, "
                                "message" % (where, ", ".join(unknown)))
        name = entry.get("name")
        problem = dns_label_error(name) if isinstance(name, str) else "is missing or not a string"
        if problem:
            raise GpufleetError("%s.name %s (a cluster name is a DNS label)" % (where, problem))
        if name in seen:
            raise GpufleetError("%s.name: cluster %s is listed twice; names are unique in a fleet" % (where, name))
        seen.add(name)
        if entry.get("cloud") not in CLOUDS:
            raise GpufleetError("%s.cloud is %r; allowed: %s" % (where, entry.get("cloud"), ", ".join(CLOUDS)))
        if not isinstance(entry.get("region"), str) or not entry["region"]:
            raise GpufleetError("%s.region must be a non-empty string (a cloud region or an on-prem location)" % where)
        status = entry.get("status") or "ok"
        if status not in STATUSES:
            raise GpufleetError("%s.status is %r; allowed: %s" % (where, status, ", ".join(STATUSES)))
        tags = entry.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise GpufleetError("%s.tags must be a list of strings" % where)
        report = entry.get("report_json")
        if report is not None and not isinstance(report, str):
            raise GpufleetError("%s.report_json must be a path (string)" % where)
        out.append({"name": name, "cloud": entry["cloud"], "region": entry["region"], "tags": sorted(tags),
                    "report_json": os.path.expanduser(report) if report else None, "status": status, "message": str(entry.get("message") or "")})
    return out


def check_timestamp(value, var="generated_at"):
    if not isinstance(value, str) or not TIMESTAMP.match(value):
        raise GpufleetError("%s is %r; it must be a UTC timestamp such as 2026-12-03T04:05:06Z" % (var, value))
    return value


def history_name(generated_at):
    """``history/`` file name of a run: 2026-12-03T04:05:06Z -> 20261203T040506Z.json."""
    return "%s%s%sT%s%s%sZ.json" % TIMESTAMP.match(check_timestamp(generated_at)).groups()


def load_report(path):
    """(report, None) or (None, why there is none) for one cluster's fleet.json; never follows a link."""
    if not path:
        return None, "no report path given"
    link = first_link(path)
    if link:
        return None, link_message(link)
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (IOError, OSError) as exc:
        return None, ("no report at %s (the report stage did not run for this cluster)" % path
                      if not os.path.exists(path) else "cannot read %s: %s" % (path, exc))
    except ValueError as exc:
        return None, "%s is not JSON: %s" % (path, exc)
    if not isinstance(data, dict) or not isinstance(data.get("pools"), list) or not isinstance(data.get("totals"), dict):
        return None, "%s is not a gpufleet fleet report (no pools and totals)" % path
    return data, None


def read_reports(clusters):
    """{name: (report or None, problem or None)} for the clusters whose run succeeded or was skipped."""
    return dict((c["name"], load_report(c["report_json"])) for c in clusters if c["status"] != "failed")


def _num(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def pool_row(cluster, row):
    """One pool of one cluster in the fleet view's units (see the module docstring)."""
    gpus = _num(row.get("gpus")) or 0
    capacity = _num(row.get("capacity")) or 0
    requested = _num(row.get("requested"))
    allocated = None
    if requested is not None:
        allocated = round(gpus * min(requested, capacity) / float(capacity), 2) if capacity else 0.0
    return {
        "cluster": cluster["name"], "cloud": cluster["cloud"], "region": cluster["region"],
        "pool": str(row.get("pool")), "gpu_type": str(row.get("gpu_type")), "sharing": row.get("sharing"),
        "nodes": _num(row.get("nodes")) or 0, "gpus": gpus, "max_gpus": _num(row.get("max_gpus")),
        "capacity": capacity, "requested": requested, "allocated_gpus": allocated,
        "pending_gpu_pods": _num(row.get("pending_gpu_pods")) if requested is not None else None,
        "avg_utilisation": _num(row.get("avg_utilisation")),
        "idle_gpu_hours": _num(row.get("idle_gpu_hours")), "idle_cost": _num(row.get("idle_cost")),
    }


def _total(rows, key, digits=None):
    values = [r[key] for r in rows if r[key] is not None]
    if not values:
        return None
    return round(sum(values), digits) if digits is not None else sum(values)


def sums(rows):
    """The figures of a group of pool rows (a region, a cloud, a cluster, a pool name, a GPU type, the fleet)."""
    allocated = _total(rows, "allocated_gpus", 2)
    with_requests = sum(r["gpus"] for r in rows if r["requested"] is not None)
    return {
        "clusters": len(set(r["cluster"] for r in rows)), "pools": len(rows),
        "nodes": sum(r["nodes"] for r in rows), "gpus": sum(r["gpus"] for r in rows),
        "max_gpus": _total(rows, "max_gpus"),  # the pools' ceilings (max_nodes x GPUs per node), where set
        "capacity": sum(r["capacity"] for r in rows), "requested": _total(rows, "requested"),
        "allocated_gpus": allocated,
        "allocation_percent": round(100.0 * allocated / with_requests, 1) if allocated is not None and with_requests
        else None,
        "pending_gpu_pods": _total(rows, "pending_gpu_pods"),
        "idle_gpu_hours": _total(rows, "idle_gpu_hours", 1), "idle_cost": _total(rows, "idle_cost", 2),
    }


def group(rows, keys):
    """[{key fields..., figures}] per distinct value of ``keys``, sorted by them."""
    buckets = {}
    for r in rows:
        buckets.setdefault(tuple(r[k] for k in keys), []).append(r)
    out = []
    for value in sorted(buckets):
        entry = dict(zip(keys, value))
        entry.update(sums(buckets[value]))
        out.append(entry)
    return out


def _where(row):
    return "pool %s of cluster %s (%s/%s)" % (row["pool"], row["cluster"], row["cloud"], row["region"])


def rebalance(rows):
    """Right-sizing across clusters: each pool with GPU pods pending gets the pool of the same GPU type in
    another cluster that has whole GPUs unallocated and nothing pending, nearest first (same region, then
    same cloud), then the most GPUs left. Each pending pod counts as one GPU taken from what that pool has
    left, so the hints spread over the idle pools. [{gpu_type, idle, idle_gpus, pending, pending_gpu_pods}]."""
    left = dict(((r["cluster"], r["pool"]), r["gpus"] - r["allocated_gpus"]) for r in rows
                if r["allocated_gpus"] is not None and r["pending_gpu_pods"] == 0)
    out = []
    for want in sorted(rows, key=lambda r: (r["gpu_type"], -(r["pending_gpu_pods"] or 0), r["cluster"], r["pool"])):
        if not want["pending_gpu_pods"]:
            continue
        donors = [r for r in rows if r["gpu_type"] == want["gpu_type"] and r["cluster"] != want["cluster"]
                  and left.get((r["cluster"], r["pool"]), 0) >= IDLE_GPUS_MIN]
        if not donors:
            continue
        give = sorted(donors, key=lambda r: (r["region"] != want["region"] or r["cloud"] != want["cloud"],
                                             r["cloud"] != want["cloud"], -left[(r["cluster"], r["pool"])],
                                             r["cluster"], r["pool"]))[0]
        key = (give["cluster"], give["pool"])
        out.append({"gpu_type": want["gpu_type"],
                    "idle": {k: give[k] for k in ("cluster", "cloud", "region", "pool")},
                    "idle_gpus": round(left[key], 2),
                    "pending": {k: want[k] for k in ("cluster", "cloud", "region", "pool")},
                    "pending_gpu_pods": want["pending_gpu_pods"]})
        left[key] -= want["pending_gpu_pods"]
    return out


def rebalance_hint(move):
    idle, pending = move["idle"], move["pending"]
    return ("GPU type %s: %s has %s GPU(s) unallocated while %s has %d GPU pod(s) pending: move that work to %s, "
            "or shift capacity (lower %s's %s min_nodes, raise %s's %s max_nodes)"
            % (move["gpu_type"], _where(idle), _plain(move["idle_gpus"]), _where(pending), move["pending_gpu_pods"],
               idle["cluster"], idle["cluster"], idle["pool"], pending["cluster"], pending["pool"]))


def _plain(number):
    return ("%d" % number) if float(number).is_integer() else ("%s" % number)


def _cluster_state(cluster, reports):
    if cluster["status"] == "failed":
        return "failed", cluster["message"] or "the run did not finish for this cluster"
    report, problem = reports.get(cluster["name"], (None, "not read"))
    if cluster["status"] == "skipped":
        return ("earlier report", cluster["message"]) if report is not None else (
            "skipped", "%s; %s" % (cluster["message"] or "not run", problem))
    if report is None:
        return "no report", problem
    return "ok", cluster["message"]


def build_overview(clusters, reports, generated_at=None, title="GPU fleet"):
    """The fleet view (plain data, JSON-ready) from checked ``clusters`` and ``read_reports``' result."""
    rows, cluster_rows, problems = [], [], []
    for cluster in clusters:
        state, message = _cluster_state(cluster, reports)
        entry = {k: cluster[k] for k in ("name", "cloud", "region", "tags")}
        entry.update(state=state, message=message)
        if state not in COUNTED:
            problems.append(entry)
            cluster_rows.append(dict(entry, **sums([])))
            continue
        report = reports[cluster["name"]][0]
        mine = [pool_row(cluster, r) for r in report["pools"] if isinstance(r, dict)]
        rows.extend(mine)
        total_pending = _num(report["totals"].get("pending_gpu_pods"))
        pinned = _total(mine, "pending_gpu_pods") or 0
        entry.update(platform=report.get("platform"), source=report.get("source"),
                     report_generated_at=report.get("generated_at"), hints=len(report.get("hints") or []),
                     pending_unpinned=(total_pending - pinned) if total_pending is not None else None)
        entry.update(sums(mine))
        cluster_rows.append(entry)
    rows.sort(key=lambda r: (r["cluster"], r["pool"]))
    moves = rebalance(rows)
    totals = sums(rows)
    states = [c["state"] for c in cluster_rows]
    totals.update(clusters=len(cluster_rows), reporting=states.count("ok"), earlier=states.count("earlier report"),
                  failed=states.count("failed"), skipped=states.count("skipped"), no_report=states.count("no report"))
    overview = {
        "title": title, "totals": totals,
        "by_region": group(rows, ("cloud", "region")), "by_cloud": group(rows, ("cloud",)),
        "by_gpu_type": group(rows, ("gpu_type",)), "by_pool": group(rows, ("pool",)),
        "clusters": sorted(cluster_rows, key=lambda c: c["name"]), "pools": rows,
        "problems": sorted(problems, key=lambda c: c["name"]),
        "rebalance": moves, "hints": [rebalance_hint(m) for m in moves],
    }
    if generated_at:
        overview["generated_at"] = check_timestamp(generated_at)
    return overview


def same_fleet(a, b):
    """Whether two overviews say the same apart from their timestamp and trend."""
    strip = ("generated_at", "trend")
    return json.loads(json.dumps(dict((k, v) for k, v in a.items() if k not in strip), sort_keys=True)) == \
        json.loads(json.dumps(dict((k, v) for k, v in b.items() if k not in strip), sort_keys=True))


def history_names(dest):
    """The history files under ``dest``/history (names matching the pattern, links included so that
    they are refused rather than skipped), sorted oldest first."""
    folder = os.path.join(dest, HISTORY_DIR)
    if os.path.islink(folder):
        raise GpufleetError(link_message(folder))
    if not os.path.isdir(folder):
        return []
    return sorted(n for n in os.listdir(folder) if HISTORY_FILE.match(n))


def read_history(dest, names):
    """{name: overview} of the readable history files (regular files only; a broken one is left out)."""
    out = {}
    for name in names:
        path = os.path.join(dest, HISTORY_DIR, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        try:
            with open(path) as handle:
                data = json.load(handle)
        except (IOError, OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("totals"), dict):
            out[name] = data
    return out


def trend_point(overview):
    point = {"generated_at": overview.get("generated_at")}
    point.update((k, overview["totals"].get(k)) for k in TREND_KEYS)
    return point


def plan_history(names, current, keep):
    """(kept, removed) history names once ``current`` is added: ``current`` and the newest ``keep`` - 1 others."""
    if not isinstance(keep, int) or isinstance(keep, bool) or keep < 1:
        raise GpufleetError("fleet_overview_history is %r; it must be a whole number of runs, at least 1" % (keep,))
    others = sorted(set(names) - {current})
    cut = max(len(others) - (keep - 1), 0)
    return sorted(others[cut:] + [current]), others[:cut]


def with_history(overview, dest, keep):
    """The files to write and remove under ``dest``: ``({name: text}, [removed names], overview)``.
    A run that finds the fleet as the newest history entry describes it keeps that entry's timestamp (no new
    point, nothing rewritten: a re-run reports no change)."""
    names = history_names(dest)
    history = read_history(dest, names)
    if names and names[-1] in history and same_fleet(history[names[-1]], overview):
        overview = dict(overview, generated_at=history[names[-1]].get("generated_at") or overview["generated_at"])
    current = history_name(overview["generated_at"])
    kept, removed = plan_history(names, current, keep)
    points = [trend_point(history[n]) for n in kept if n != current and n in history]
    overview = dict(overview, trend=points + [trend_point(overview)])
    entry = dict((k, v) for k, v in overview.items() if k != "trend")
    files = {"%s/%s" % (HISTORY_DIR, current): json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n"}
    return files, ["%s/%s" % (HISTORY_DIR, n) for n in removed], overview
