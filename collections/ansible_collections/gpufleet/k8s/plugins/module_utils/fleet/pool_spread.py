# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Pools spread across the clusters of a fleet (``fleet_run_pools``, docs/fleet-pools.md).

A fleet pool is a ``gpufleet_gpu_pools`` pool without ``zones`` plus ``spread``: one part per
cluster, each with a ``share`` (percent of the pool's fleet-wide ``min_nodes``/``max_nodes``/
``max_gpus``) or explicit ``min_nodes``/``max_nodes``/``max_gpus``, and the cluster's ``zones``
(aws, gcp) or ``node_group`` (onprem). ``split_pools`` turns the fleet pools into each cluster's
``gpufleet_fleet_pools``; the cluster's own preflight then runs every pool check on them.

Shares are split by the largest-remainder method: each part gets the floor of its exact part, and
the nodes left over go to the parts with the largest fractions (ties: the earlier part), so the
parts always add up to the fleet total.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, Problems, kind_of, one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import gpu_regions
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import DNS_LABEL, POOL_KEYS
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.pools_check import zone_region

CLOUDS = ("aws", "gcp", "onprem")
# The keys of one part of ``spread``.
PART_KEYS = ("cluster", "share", "min_nodes", "max_nodes", "max_gpus", "zones", "node_group")
BOUND_KEYS = ("min_nodes", "max_nodes", "max_gpus")
# zone_region's cloud names
ZONE_PLATFORM = {"aws": "eks", "gcp": "gke"}
ZONE_EXAMPLE = {"aws": "us-east-1a", "gcp": "us-central1-a"}


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def largest_remainder(total, shares):
    """Split the integer ``total`` by ``shares`` (percent, adding up to 100) into integers that add up
    to ``total``: floors first, the rest one each to the largest fractions (ties: earlier first)."""
    exact = [total * share for share in shares]        # in hundredths
    parts = [value // 100 for value in exact]
    left = total - sum(parts)
    order = sorted(range(len(shares)), key=lambda i: (-(exact[i] % 100), i))
    for i in order[:left]:
        parts[i] += 1
    return parts


def _clusters_by_name(clusters):
    out = {}
    for cluster in clusters or []:
        if isinstance(cluster, dict) and isinstance(cluster.get("name"), str):
            out[cluster["name"]] = cluster
    return out


def _check_part(var, part, pool, cluster, problems):
    """The per-part checks that need the cluster: zones or node group, and the regional offering."""
    cloud = cluster.get("cloud")
    region = cluster.get("region")
    zones = part.get("zones")
    if cloud in ZONE_PLATFORM:
        if zones is None or zones == []:
            problems.error(var + ".zones", "is required for %s cluster %s (region %s); use a list of zones of %s, "
                           "e.g. [%s]" % (cloud, cluster["name"], region, region, _zone_example(cloud, region)))
        elif not isinstance(zones, list):
            problems.error(var + ".zones", "must be a list of zones of %s, got %s (%r)" % (region, kind_of(zones), zones))
        else:
            seen = set()
            for j, zone in enumerate(zones):
                zvar = "%s.zones[%d]" % (var, j)
                zr = zone_region(zone, ZONE_PLATFORM[cloud])
                if zr is None:
                    problems.error(zvar, "%r is not a %s zone name; use one of: zones of %s, e.g. %s"
                                   % (zone, cloud, region, _zone_example(cloud, region)))
                elif zr != region:
                    problems.error(zvar, "%r is in region %s, not in %s, the region of cluster %s; use one of: "
                                   "zones of %s" % (zone, zr, region, cluster["name"], region))
                if zone in seen:
                    problems.error(zvar, "%r is listed twice; use each zone once, in preference order" % (zone,))
                seen.add(zone)
        if "node_group" in part:
            problems.error(var + ".node_group", "is only for onprem clusters (the inventory group of the pool's "
                           "hosts); %s cluster %s provisions its nodes itself: drop it" % (cloud, cluster["name"]))
    else:
        if zones:
            problems.error(var + ".zones", "onprem cluster %s has no cloud zones (its pool is a self-managed pool "
                           "on the hosts of node_group); drop zones" % cluster["name"])
        group = part.get("node_group")
        if "node_group" in part and not (isinstance(group, str) and group.strip()):
            problems.error(var + ".node_group", "%r is not an inventory group name; use the group of the pool's "
                           "hosts in that cluster's inventory, or drop it for gpu_pool_<pool name with _>" % (group,))
    gpu_regions.check_offering(var, pool, cluster, zones if isinstance(zones, list) else [], problems)


def _zone_example(cloud, region):
    if isinstance(region, str) and region:
        return region + ("a" if cloud == "aws" else "-a")
    return ZONE_EXAMPLE.get(cloud, "us-east-1a")


def _check_bound(var, value, problems):
    if not _is_int(value) or value < 0:
        problems.error(var, "%r is not allowed; use an integer >= 0" % (value,))
        return False
    return True


def _plan_pool(var, pool, clusters, problems):
    """``[(part, cluster, bounds)]`` for one fleet pool, after checking it; bounds: the part's
    min_nodes/max_nodes/max_gpus (only those that are set)."""
    spread = pool.get("spread")
    if not isinstance(spread, list) or not spread:
        problems.error(var + ".spread", "must be a non-empty list of parts, one per cluster, e.g. [{cluster: %s, "
                       "share: 100, zones: [...]}]; clusters: %s"
                       % (next(iter(sorted(clusters)), "c1"), ", ".join(sorted(clusters)) or "(none)"))
        return []
    if "zones" in pool:
        problems.error(var + ".zones", "a fleet pool's zones belong to its parts; move them to spread[].zones "
                       "(each cluster lives in its own region)")
    parts = []
    seen = {}
    for j, part in enumerate(spread):
        pvar = "%s.spread[%d]" % (var, j)
        if not isinstance(part, dict):
            problems.error(pvar, "must be a mapping with cluster and share (or min_nodes/max_nodes), got %s"
                           % kind_of(part))
            continue
        unknown = sorted((k for k in part if k not in PART_KEYS), key=str)
        if unknown:
            problems.error(pvar, "unknown key(s) %s; use %s" % (", ".join(str(k) for k in unknown), one_of(PART_KEYS)))
        name = part.get("cluster")
        cluster = clusters.get(name) if isinstance(name, str) else None
        if cluster is None:
            problems.error(pvar + ".cluster", "%r is not a cluster of the fleet; use %s"
                           % (name, one_of(sorted(clusters)) if clusters else "a cluster of fleet_run_clusters"))
        elif name in seen:
            problems.error(pvar + ".cluster", "%s is listed twice (also spread[%d]); give each cluster one part"
                           % (name, seen[name]))
        else:
            seen[name] = j
            if cluster.get("cloud") not in CLOUDS:
                problems.error(pvar + ".cluster", "cluster %s has cloud %r; use %s"
                               % (name, cluster.get("cloud"), one_of(CLOUDS)))
            else:
                _check_part(pvar, part, pool, cluster, problems)
        if "share" in part:
            explicit = [k for k in BOUND_KEYS if k in part]
            if explicit:
                problems.error(pvar, "has share and %s; use one of: share (a percent of the pool's fleet total), "
                               "explicit min_nodes/max_nodes/max_gpus" % ", ".join(explicit))
            share = part["share"]
            if not _is_int(share) or not 1 <= share <= 100:
                problems.error(pvar + ".share", "%r is not allowed; use an integer percent from 1 to 100" % (share,))
        else:
            for key in BOUND_KEYS:
                if key in part:
                    _check_bound("%s.%s" % (pvar, key), part[key], problems)
            mn, mx = part.get("min_nodes"), part.get("max_nodes")
            if _is_int(mn) and _is_int(mx) and mx < mn:
                problems.error(pvar + ".max_nodes", "%d is below min_nodes %d" % (mx, mn))
        parts.append((j, part, cluster))
    return _bounds(var, pool, parts, problems)


def _bounds(var, pool, parts, problems):
    """Each part's bounds: the shares of the fleet totals, or the part's explicit ones."""
    sharing = [p for p in parts if "share" in p[1]]
    explicit = [p for p in parts if "share" not in p[1]]
    if sharing and explicit:
        problems.error(var + ".spread", "mixes parts with share (spread[%s]) and parts with explicit bounds "
                       "(spread[%s]); use one of: share in every part, min_nodes/max_nodes in every part"
                       % (", ".join(str(p[0]) for p in sharing), ", ".join(str(p[0]) for p in explicit)))
        return []
    if explicit:
        for key in (k for k in BOUND_KEYS if pool.get(k) is not None):
            problems.error(var + "." + key, "is a fleet total that shares split; with explicit bounds in every "
                           "part, set %s in the parts (spread[].%s) and drop it here" % (key, key))
        return [(part, cluster, dict((k, part[k]) for k in BOUND_KEYS if k in part)) for _j, part, cluster in parts]
    shares = [p[1].get("share") for p in parts]
    if not all(_is_int(s) for s in shares):
        return []
    if sum(shares) != 100:
        problems.error(var + ".spread", "the shares add up to %d (%s); use shares that add up to 100"
                       % (sum(shares), " + ".join(str(s) for s in shares)))
        return []
    out = [(part, cluster, {}) for _j, part, cluster in parts]
    for key in BOUND_KEYS:
        total = pool.get(key)
        if total is None:
            continue
        if not _check_bound(var + "." + key, total, problems):
            continue
        for (part, cluster, bounds), value in zip(out, largest_remainder(total, shares)):
            bounds[key] = value
    mn, mx = pool.get("min_nodes"), pool.get("max_nodes")
    if _is_int(mn) and _is_int(mx) and mx < mn:
        problems.error(var + ".max_nodes", "%d is below min_nodes %d" % (mx, mn))
    for (j, part, cluster), (_p, _c, bounds) in zip(parts, out):
        gpn = pool.get("gpus_per_node", 1)
        least = {"max_nodes": 1, "max_gpus": gpn if _is_int(gpn) and gpn > 0 else 1}
        for key in ("max_nodes", "max_gpus"):
            if bounds.get(key) is not None and bounds[key] < least[key] and pool.get(key):
                problems.error("%s.spread[%d].share" % (var, j), "%d%% of %s %d leaves cluster %s with %s %d (no "
                               "node could start: it needs at least %d); raise %s, raise the share, or use explicit "
                               "bounds" % (part["share"], key, pool[key], part.get("cluster"), key, bounds[key],
                                           least[key], key))
        if bounds.get("min_nodes", 0) > bounds.get("max_nodes", bounds.get("min_nodes", 0)):
            bounds["min_nodes"] = bounds["max_nodes"]
    return out


def _cluster_pool(pool, part, cluster, bounds):
    out = dict((k, copy.deepcopy(v)) for k, v in pool.items() if k not in ("spread",) + BOUND_KEYS)
    out.update(bounds)
    if cluster.get("cloud") in ZONE_PLATFORM:
        out["zones"] = list(part.get("zones") or [])
    elif part.get("node_group"):
        out["node_group"] = part["node_group"]
    return out


def _plan(pools, clusters, var):
    """``(problems, [(pool index, pool, [(part, cluster, bounds)])])``."""
    problems = Problems()
    known = _clusters_by_name(clusters)
    if not isinstance(pools, list):
        problems.error(var, "must be a list of fleet pools, got %s; use e.g. [{name: infer-l4, gpu_type: l4, "
                       "max_nodes: 10, spread: [{cluster: ..., share: 100, zones: [...]}]}]" % kind_of(pools))
        return problems, []
    out = []
    names = {}
    for i, pool in enumerate(pools):
        var_i = "%s[%d]" % (var, i)
        if not isinstance(pool, dict):
            problems.error(var_i, "must be a mapping (a GPU pool with spread), got %s" % kind_of(pool))
            continue
        name = pool.get("name")
        if not isinstance(name, str) or not DNS_LABEL.match(name):
            problems.error(var_i + ".name", "%r is not a valid pool name; use a DNS label (lower-case letters, "
                           "digits and '-', at most 63 characters)" % (name,))
        elif name in names:
            problems.error(var_i + ".name", "pool name %r is used twice (also %s[%d]); fleet pool names must be "
                           "unique" % (name, var, names[name]))
        else:
            names[name] = i
        unknown = sorted((k for k in pool if k not in POOL_KEYS and k != "spread"), key=str)
        if unknown:
            problems.error(var_i, "unknown key(s) %s; use %s" % (", ".join(str(k) for k in unknown),
                                                                 one_of(sorted(set(POOL_KEYS) - {"zones"}) + ["spread"])))
        out.append((i, pool, _plan_pool(var_i, pool, known, problems)))
    return problems, out


def _raise(problems, var):
    if problems.errors:
        raise GpufleetError("%s: %d problem(s):\n- %s" % (var, len(problems.errors), "\n- ".join(problems.errors)),
                            errors=list(problems.errors))


def split_pools(pools, clusters, var="fleet_run_pools", selected=None, warnings=None):
    """Each cluster's part of the fleet pools: ``{cluster name: [pools in the gpufleet_gpu_pools format]}``
    for every cluster of ``clusters`` (or of the names in ``selected``), ``[]`` for a cluster without a part.

    ``clusters``: the fleet's clusters (mappings with name, cloud, region); pass them all, so that a part
    naming a cluster left out of this run is not taken for a typo, and ``selected`` to limit the result.
    Raises GpufleetError naming every problem with its variable path. Warnings (a region the recorded
    catalog does not know) go to the list ``warnings`` when given."""
    warnings = [] if warnings is None else warnings
    known = _clusters_by_name(clusters)
    problems, planned = _plan(pools, clusters, var)
    warnings.extend(problems.warnings)
    _raise(problems, var)
    names = [n for n in known if selected is None or n in selected]
    out = dict((name, []) for name in names)
    for _i, pool, parts in planned:
        for part, cluster, bounds in parts:
            if cluster["name"] in out:
                out[cluster["name"]].append(_cluster_pool(pool, part, cluster, bounds))
    return out


def _max_gpus(pool, bounds):
    if bounds.get("max_gpus") is not None:
        return bounds["max_gpus"]
    if bounds.get("max_nodes") is not None:
        gpn = pool.get("gpus_per_node", 1)
        return bounds["max_nodes"] * gpn if _is_int(gpn) else None
    return None


def spread_rows(pools, clusters, var="fleet_run_pools", selected=None):
    """One row per pool and cluster part, for the plan and the report: pool, cluster, cloud, region,
    zones, share (None for explicit bounds), min_nodes, max_nodes (None: unbounded), max_gpus."""
    problems, planned = _plan(pools, clusters, var)
    _raise(problems, var)
    rows = []
    for _i, pool, parts in planned:
        for part, cluster, bounds in parts:
            if selected is not None and cluster["name"] not in selected:
                continue
            rows.append({
                "pool": pool["name"], "cluster": cluster["name"], "cloud": cluster.get("cloud"),
                "region": cluster.get("region"), "zones": list(part.get("zones") or []),
                "share": part.get("share"), "min_nodes": bounds.get("min_nodes", 0),
                "max_nodes": bounds.get("max_nodes"), "max_gpus": _max_gpus(pool, bounds),
                "gpu_type": pool.get("gpu_type"),
            })
    return rows


def spread_markdown(rows):
    """The spread as a Markdown table (``## Pools spread across clusters``), '' when there is none."""
    if not rows:
        return ""
    lines = ["## Pools spread across clusters", "",
             "| pool | GPU type | cluster | cloud | region | zones | share | nodes (min-max) | max GPUs |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s-%s | %s |" % (
            row["pool"], row.get("gpu_type") or "", row["cluster"], row["cloud"], row["region"],
            ", ".join(row["zones"]) or "-", "-" if row["share"] is None else "%d%%" % row["share"],
            row["min_nodes"], "unbounded" if row["max_nodes"] is None else row["max_nodes"],
            "unbounded" if row["max_gpus"] is None else row["max_gpus"]))
    return "\n".join(lines) + "\n"
