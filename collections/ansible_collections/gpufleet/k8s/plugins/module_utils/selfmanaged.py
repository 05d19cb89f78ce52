# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Self-managed clusters: the labels and taints gpufleet puts on the nodes of each pool.

The objects are partial Node objects meant for server-side apply with field manager
``gpufleet``: the API server then tracks which labels and taints gpufleet owns, so a later
apply removes only those, never a label or taint another manager set.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.gpu_access import mig_config_label

POOL_LABEL = "gpufleet.io/pool"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"


def pool_node_labels(pool):
    """The labels gpufleet owns on a pool's nodes (also the Karpenter NodePool template labels):
    pool name, device-plugin config name and, for MIG pools, the MIG manager's layout
    ``nvidia.com/mig.config=all-<profile>``."""
    labels = {POOL_LABEL: pool["name"], DEVICE_PLUGIN_CONFIG_LABEL: pool["name"]}
    labels.update(mig_config_label(pool))
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


def node_objects(pool, hosts):
    """Partial Node objects for every host of ``pool`` (hosts as Kubernetes node names)."""
    labels = pool_node_labels(pool)
    taints = pool_taints(pool)
    objects = []
    for host in sorted(hosts):
        obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": host, "labels": dict(labels)}}
        if taints:
            obj["spec"] = {"taints": [dict(t) for t in taints]}
        objects.append(obj)
    return objects
