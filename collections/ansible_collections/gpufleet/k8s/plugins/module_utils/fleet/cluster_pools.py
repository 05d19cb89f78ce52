# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""A cluster's part of the fleet pools (``gpufleet_fleet_pools``) and its place in the fleet
(``gpufleet_fleet_cluster``), as preflight reads them (docs/fleet-pools.md).

``merge`` appends the fleet pools to ``gpufleet_gpu_pools`` before every other check, so that every
pool check applies to them, and refuses a pool name both lists use. Messages about a merged pool
name it by its own variable: ``rename`` turns ``gpufleet_gpu_pools[k]`` past the cluster's own pools
into ``gpufleet_fleet_pools[k - n]``. ``check`` runs the regional offering check (core/gpu_regions.py)
for every pool when the cluster's cloud and region are known.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import gpu_regions
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import kind_of, one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import (
    CLOUD_PLATFORMS, POOLS_VAR, SELF_MANAGED_PLATFORMS)

FLEET_POOLS_VAR = "gpufleet_fleet_pools"
FLEET_CLUSTER_VAR = "gpufleet_fleet_cluster"
CLUSTER_KEYS = ("name", "cloud", "region", "tags", "platform")
# the platforms each cloud runs
CLOUD_OF_PLATFORM = dict([("eks", "aws"), ("gke", "gcp"), ("gke-autopilot", "gcp")]
                         + [(p, "onprem") for p in SELF_MANAGED_PLATFORMS])
_INDEX = re.compile(re.escape(POOLS_VAR) + r"\[(\d+)\]")


def _extra(params):
    return params.get("extra") or {}


def fleet_cluster(params):
    value = _extra(params).get(FLEET_CLUSTER_VAR)
    return value if isinstance(value, dict) else {}


def merge(params, problems):
    """``(params with the fleet pools appended to pools, number of the cluster's own pools, index)``:
    ``index[k]`` is the gpufleet_fleet_pools index of the k-th appended pool (a pool refused for a name
    clash is left out). The problems of the two fleet variables go to ``problems``."""
    extra = _extra(params)
    own = params.get("pools")
    fleet = extra.get(FLEET_POOLS_VAR)
    _check_cluster(params, problems)
    count = len(own) if isinstance(own, list) else 0
    if fleet is None or fleet == []:
        return params, count, []
    if not isinstance(fleet, list):
        problems.error(FLEET_POOLS_VAR, "must be a list of GPU pools (the cluster's part of the fleet pools, "
                       "written by the fleet run), got %s; use a list, or [] for none" % kind_of(fleet))
        return params, count, []
    if not isinstance(own, list):
        # gpufleet_gpu_pools itself is refused by name (spec.validate_pools); nothing to append to
        return params, count, []
    names = dict((p.get("name"), i) for i, p in enumerate(own) if isinstance(p, dict) and isinstance(p.get("name"), str))
    index = []
    for j, pool in enumerate(fleet):
        name = pool.get("name") if isinstance(pool, dict) else None
        if isinstance(name, str) and name in names:
            problems.error("%s[%d].name" % (FLEET_POOLS_VAR, j), "%r is also the name of %s[%d]: a fleet pool and a "
                           "pool of the cluster's own may not share a name (both would render the same NodePool, "
                           "ComputeClass and node label); rename one of them, in the fleet file's fleet_run_pools "
                           "or in %s" % (name, POOLS_VAR, names[name], POOLS_VAR))
        else:
            index.append(j)
    return dict(params, pools=list(own) + [fleet[j] for j in index]), count, index


def rename(messages, own, index=None):
    """``messages`` with every ``gpufleet_gpu_pools[k]`` past the ``own`` pools named as the fleet pool."""
    def sub(match):
        k = int(match.group(1))
        if k < own:
            return match.group(0)
        j = k - own
        return "%s[%d]" % (FLEET_POOLS_VAR, index[j] if index is not None and j < len(index) else j)
    return [_INDEX.sub(sub, message) for message in messages]


def _check_cluster(params, problems):
    value = _extra(params).get(FLEET_CLUSTER_VAR)
    if value is None or value == {}:
        return
    if not isinstance(value, dict):
        problems.error(FLEET_CLUSTER_VAR, "must be a mapping with %s (written by the fleet run), got %s"
                       % (", ".join(CLUSTER_KEYS), kind_of(value)))
        return
    unknown = sorted(str(k) for k in value if k not in CLUSTER_KEYS)
    if unknown:
        problems.error(FLEET_CLUSTER_VAR, "unknown key(s) %s; use %s" % (", ".join(unknown), one_of(CLUSTER_KEYS)))
    cloud = value.get("cloud")
    if "cloud" in value and cloud not in gpu_regions.CLOUDS + ("onprem",):
        problems.error(FLEET_CLUSTER_VAR + ".cloud", "%r is not allowed; use %s" % (cloud, one_of(("aws", "gcp", "onprem"))))
        cloud = None
    region = value.get("region")
    if "region" in value and not (isinstance(region, str) and region.strip()):
        problems.error(FLEET_CLUSTER_VAR + ".region", "%r is not a region; use the cloud region (e.g. us-east-1, "
                       "us-central1) or, on premises, a location label" % (region,))
    platform = params.get("platform")
    given = value.get("platform")
    if given is not None and given != platform:
        problems.error(FLEET_CLUSTER_VAR + ".platform", "%r (the fleet file's platform of cluster %s) is not this "
                       "inventory's gpufleet_platform %r; use one of: %s, or point the fleet file at the right "
                       "inventory" % (given, value.get("name"), platform, platform))
    if cloud and platform in CLOUD_OF_PLATFORM and CLOUD_OF_PLATFORM[platform] != cloud:
        problems.error(FLEET_CLUSTER_VAR + ".cloud", "%r does not run gpufleet_platform %s; use one of: %s"
                       % (cloud, platform, CLOUD_OF_PLATFORM[platform]))
    settings_region = _extra(params).get("gpu_pools_region")
    if cloud in gpu_regions.CLOUDS and platform in CLOUD_PLATFORMS and isinstance(region, str) and settings_region \
            and settings_region != region:
        problems.error(FLEET_CLUSTER_VAR + ".region", "%r (the fleet file's region of cluster %s) differs from this "
                       "inventory's gpu_pools_region %r; use one of: %s"
                       % (region, value.get("name"), settings_region, settings_region))


def check(params, plan, problems):
    """Preflight check: every pool's GPU type offered in the cluster's cloud region (when known)."""
    cluster = fleet_cluster(params)
    if cluster.get("cloud") not in gpu_regions.CLOUDS or not isinstance(cluster.get("region"), str):
        return
    where = dict(cluster)
    where.setdefault("name", plan.get("cluster_name"))
    for i, pool in enumerate(plan.get("pools") or []):
        if isinstance(pool, dict):
            zones = pool.get("zones") if isinstance(pool.get("zones"), list) else []
            gpu_regions.check_offering("%s[%d]" % (POOLS_VAR, i), pool, where, zones, problems)
