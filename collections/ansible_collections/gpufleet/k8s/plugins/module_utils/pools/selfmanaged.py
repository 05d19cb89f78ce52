# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Self-managed clusters: the labels and taints gpufleet puts on the nodes of each pool.

The rendered objects are partial Node objects, a readable record of what gpufleet sets. In apply
mode ``gpufleet.k8s.node_labels`` writes them (module_utils/pools/node_ownership.py says why that is a
read-modify-write and not a server-side apply). Hosts map to Node names through
``gpufleet_node_name`` (default: the inventory hostname).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.node_names import node_names
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.gpu_access import mig_config_label
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.dra import node_labels as dra_node_labels

POOL_LABEL = "gpufleet.io/pool"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"


def pool_node_labels(pool):
    """The labels gpufleet owns on a pool's nodes (also the Karpenter NodePool template labels):
    pool name, device-plugin config name and, for MIG pools, the MIG manager's layout
    ``nvidia.com/mig.config=all-<profile>``."""
    labels = {POOL_LABEL: pool["name"], DEVICE_PLUGIN_CONFIG_LABEL: pool["name"]}
    labels.update(mig_config_label(pool))
    labels.update(dra_node_labels(pool))
    labels.update({str(k): str(v) for k, v in (pool.get("labels") or {}).items()})
    return labels


def pool_taints(pool):
    out = []
    for taint in pool.get("taints") or []:
        item = {"key": taint["key"], "effect": taint["effect"]}
        if taint.get("value") not in (None, ""):
            item["value"] = str(taint["value"])
        out.append(item)
    return out


def node_objects(pool, hosts, names=None):
    """Partial Node objects for every host of ``pool`` (``names``: {host: Node name}, default the host)."""
    labels = pool_node_labels(pool)
    taints = pool_taints(pool)
    objects = []
    for name in sorted((names or {}).get(h, h) for h in hosts):
        obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels)}}
        if taints:
            obj["spec"] = {"taints": [dict(t) for t in taints]}
        objects.append(obj)
    return objects


def pool_nodes(pools, groups, hostvars):
    """What gpufleet wants on each pool host's Node: ``[{"host", "name", "pool", "labels", "taints"}]``,
    sorted by Node name. Raises GpufleetError for a host in two pools' groups or a bad Node name."""
    member = {}
    errors = []
    for pool in pools:
        for host in groups.get(pool["node_group"]) or []:
            if host in member and member[host]["name"] != pool["name"]:
                errors.append("host %s is in the node groups of pools %s and %s; a Node belongs to one pool"
                              % (host, member[host]["name"], pool["name"]))
            member.setdefault(host, pool)
    if errors:
        raise GpufleetError("; ".join(errors), errors=errors)
    names = node_names(sorted(member), hostvars)
    out = [{"host": host, "name": names[host], "pool": pool["name"],
            "labels": pool_node_labels(pool), "taints": pool_taints(pool)} for host, pool in member.items()]
    return sorted(out, key=lambda d: d["name"])
