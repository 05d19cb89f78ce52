# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Jinja2 filter for the NVIDIA device plugin: its per-pool sharing configurations."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import plugin_configs


class FilterModule(object):
    def filters(self):
        return {
            "device_plugin_configs": plugin_configs,
        }
