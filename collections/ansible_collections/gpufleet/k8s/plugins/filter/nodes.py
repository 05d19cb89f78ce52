# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Jinja2 filters for the self-managed GPU hosts: their Node names and the labels and taints of their Node objects."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.node_names import node_names
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import plain
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.selfmanaged import node_objects, pool_nodes


def _pool_nodes(pools, groups, hostvars):
    try:
        return pool_nodes(pools, groups, hostvars or {})
    except GpufleetError as exc:
        raise AnsibleFilterError(exc.msg)


def pool_node_objects(pools, groups, hostvars=None):
    """Partial Node objects (labels, taints) for every host of every pool's inventory group, named
    after each host's ``gpufleet_node_name`` (default: the inventory hostname)."""
    names = {d["host"]: d["name"] for d in _pool_nodes(pools, groups, hostvars)}
    out = []
    for pool in plain(pools):
        out.extend(node_objects(pool, plain(groups.get(pool["node_group"], [])), names))
    return out


def gpu_pool_nodes(pools, groups, hostvars=None):
    """The ``nodes`` of gpufleet.k8s.node_labels: per pool host its Node name, labels and taints."""
    return [{k: d[k] for k in ("name", "host", "labels", "taints")} for d in _pool_nodes(pools, groups, hostvars)]


def gpu_node_names(hosts, hostvars):
    """{host: Node name} (gpufleet_node_name, default the inventory hostname)."""
    try:
        return node_names(list(hosts or []), hostvars or {})
    except GpufleetError as exc:
        raise AnsibleFilterError(exc.msg)


class FilterModule(object):
    def filters(self):
        return {
            "pool_node_objects": pool_node_objects,
            "gpu_pool_nodes": gpu_pool_nodes,
            "gpu_node_names": gpu_node_names,
        }
