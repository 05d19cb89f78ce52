# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Jinja2 filter for switching the add-on mode: what of the other mode still runs on the cluster."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.mode_switch import switch_problem


class FilterModule(object):
    def filters(self):
        return {
            "addons_switch_problem": switch_problem,
        }
