# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Jinja2 filters exposing gpufleet's rendering logic to roles."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.device_plugin import plugin_configs
from ansible_collections.gpufleet.k8s.plugins.module_utils.plain import plain
from ansible_collections.gpufleet.k8s.plugins.module_utils.selfmanaged import node_objects


def pool_node_objects(pools, groups):
    """Partial Node objects (labels, taints) for every host of every pool's inventory group."""
    out = []
    for pool in plain(pools):
        out.extend(node_objects(pool, plain(groups.get(pool["node_group"], []))))
    return out


class FilterModule(object):
    def filters(self):
        return {
            "pool_node_objects": pool_node_objects,
            "device_plugin_configs": plugin_configs,
        }
