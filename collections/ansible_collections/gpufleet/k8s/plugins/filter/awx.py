# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Filters for configuring AWX / Automation Controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.awx_survey import workflow_nodes


class FilterModule(object):
    def filters(self):
        return {"awx_workflow_nodes": workflow_nodes}
