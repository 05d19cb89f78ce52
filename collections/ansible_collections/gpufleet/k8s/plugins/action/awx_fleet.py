# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Action plugin of gpufleet.k8s.awx_fleet: runs the module in the controller's worker process when the
task targets the controller (see plugin_utils/controller_module.py), else as a module."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.modules import awx_fleet
from ansible_collections.gpufleet.k8s.plugins.plugin_utils.controller_module import ControllerAction


class ActionModule(ControllerAction):
    MODULE = awx_fleet
    NAME = "gpufleet.k8s.awx_fleet"
