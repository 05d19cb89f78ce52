# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Filters for the nvidia_container_toolkit role (input checks and presets, from module_utils)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime.containerd_presets import (
    PLATFORM_PRESETS, PRESETS, check_inputs)


def nvidia_runtime_input_problems(preset, mode, config_version=None):
    """Problems of the role's runtime inputs, each ``"<variable>: <problem>; use one of: ..."``."""
    return check_inputs(preset, mode, config_version or None, var_prefix="nvidia_container_toolkit_runtime_")


def nvidia_runtime_preset(preset, platform):
    """The preset to use: the explicit one, else the one of ``gpufleet_platform``, else containerd."""
    return preset or PLATFORM_PRESETS.get(platform or "", "containerd")


def nvidia_runtime_preset_info(preset):
    """The preset's table row (files, socket, service, kind), or {} for an unknown preset."""
    return dict(PRESETS.get(preset, {}))


class FilterModule(object):
    def filters(self):
        return {
            "nvidia_runtime_input_problems": nvidia_runtime_input_problems,
            "nvidia_runtime_preset": nvidia_runtime_preset,
            "nvidia_runtime_preset_info": nvidia_runtime_preset_info,
        }
