# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Which GPU types each cloud region offers: the recorded regional catalog and its check.

The data (``gpu_regions_data``) is a recorded catalog, not a live query: AWS EC2 instance families
per region, Google Cloud accelerator types per zone. A region the catalog does not know is a
warning (the catalog may be older than the region); a GPU type a known region does not offer is an
error naming the pool, the cluster, the region and the regions that do offer it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_TYPES
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import gpu_regions_data as data

SOURCE = data.SOURCE
RECORDED = data.RECORDED
CLOUDS = ("aws", "gcp")


def aws_families(region):
    """EC2 GPU instance families offered in ``region`` (a set), None when the region is not recorded."""
    text = data.AWS_REGIONS.get(region)
    return None if text is None else set(text.split())


def gcp_zones(region):
    """``{zone: set of accelerator types}`` of ``region``, None when the region is not recorded."""
    zones = dict((zone, set(names)) for zone, names in data.GCP_ZONES.items() if zone.rsplit("-", 1)[0] == region)
    return zones or None


def recorded_names(cloud):
    """Every EC2 family (aws) or accelerator type (gcp) the catalog records in some region."""
    if cloud == "aws":
        return set(" ".join(data.AWS_REGIONS.values()).split())
    if cloud == "gcp":
        return set(name for names in data.GCP_ZONES.values() for name in names)
    return set()


def known_regions(cloud):
    if cloud == "aws":
        return sorted(data.AWS_REGIONS)
    if cloud == "gcp":
        return sorted(set(zone.rsplit("-", 1)[0] for zone in data.GCP_ZONES))
    return []


def what_offers(cloud, gpu_type):
    """What names ``gpu_type`` in the catalog of ``cloud``: the EC2 families or the GKE accelerator
    (a list, empty when the cloud has no such GPU)."""
    facts = GPU_TYPES.get(gpu_type) or {}
    if cloud == "aws":
        return list(facts.get("eks_families") or [])
    if cloud == "gcp":
        return [facts["gke_accelerator"]] if facts.get("gke_accelerator") else []
    return []


def offered_in(cloud, region, gpu_type):
    """True/False whether ``region`` offers ``gpu_type``; None when the region is not recorded."""
    names = set(what_offers(cloud, gpu_type))
    if cloud == "aws":
        families = aws_families(region)
        return None if families is None else bool(names & families)
    if cloud == "gcp":
        zones = gcp_zones(region)
        return None if zones is None else any(names & offered for offered in zones.values())
    return None


def regions_offering(cloud, gpu_type):
    return [region for region in known_regions(cloud) if offered_in(cloud, region, gpu_type)]


def zones_offering(region, gpu_type):
    """The zones of GCP ``region`` that offer ``gpu_type`` (sorted)."""
    names = set(what_offers("gcp", gpu_type))
    return sorted(zone for zone, offered in (gcp_zones(region) or {}).items() if names & offered)


def _catalog():
    return "recorded regional catalog of %s (core/gpu_regions_data.py)" % RECORDED


def check_offering(var, pool, cluster, zones, problems):
    """Refuse ``pool``'s GPU type where ``cluster`` (name, cloud, region) does not offer it.

    ``var`` names the pool (or the part of a fleet pool) in messages; ``zones`` are the zones the pool
    uses (GCP: each must offer the accelerator). Unknown regions warn; other clouds (onprem) pass."""
    cloud = cluster.get("cloud")
    region = cluster.get("region")
    gpu_type = pool.get("gpu_type")
    if cloud not in CLOUDS or not isinstance(gpu_type, str) or gpu_type not in GPU_TYPES:
        return
    where = "cluster %s (%s region %s)" % (cluster.get("name"), cloud, region)
    names = what_offers(cloud, gpu_type)
    if not names:
        problems.error(var, "pool %s: gpu_type %s is not offered on %s at all, so not in %s; use a gpu_type %s "
                       "offers" % (pool.get("name"), gpu_type, cloud, where, cloud))
        return
    if not set(names) & recorded_names(cloud):
        problems.warn(var, "pool %s: %s (%s) is not in the %s for any region, so whether %s offers it is not "
                      "checked" % (pool.get("name"), gpu_type, ", ".join(names), _catalog(), where))
        return
    offered = offered_in(cloud, region, gpu_type)
    if offered is None:
        problems.warn(var, "pool %s: region %r of %s is not in the %s, so whether it offers %s (%s) is not "
                      "checked; recorded %s regions: %s" % (pool.get("name"), region, where, _catalog(), gpu_type,
                                                            ", ".join(names), cloud, ", ".join(known_regions(cloud))))
        return
    if not offered:
        others = regions_offering(cloud, gpu_type)
        problems.error(var, "pool %s: gpu_type %s (%s) is not offered in %s; regions that offer it: %s (%s)"
                       % (pool.get("name"), gpu_type, ", ".join(names), where,
                          ", ".join(others) or "none recorded", _catalog()))
        return
    if cloud == "gcp":
        good = zones_offering(region, gpu_type)
        for j, zone in enumerate(zones or []):
            if isinstance(zone, str) and zone.rsplit("-", 1)[0] == region and zone not in good:
                problems.error("%s.zones[%d]" % (var, j), "pool %s: zone %s of %s does not offer %s (%s); zones of %s "
                               "that do: %s (%s)" % (pool.get("name"), zone, where, gpu_type, names[0], region,
                                                     ", ".join(good), _catalog()))
