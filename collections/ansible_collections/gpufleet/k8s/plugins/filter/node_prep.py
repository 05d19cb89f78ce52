# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Filter for the gpu_node_prep role: the per-host plan (module_utils/node/node_prep.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.node.node_prep import node_prep_plan


def gpu_node_prep_plan(inputs):
    """Packages, initramfs command, EPEL/CRB and errors for one host; see module_utils/node/node_prep."""
    return node_prep_plan(dict(inputs))


class FilterModule(object):
    def filters(self):
        return {"gpu_node_prep_plan": gpu_node_prep_plan}
