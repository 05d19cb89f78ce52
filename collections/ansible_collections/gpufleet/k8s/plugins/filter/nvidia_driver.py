# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Filters for the nvidia_driver role: the per-host plan and the reboot decision."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_packages import (
    driver_plan)
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_host import (
    apt_kernel_plan, container_verdict, module_stream_switch, reboot_decision, stale_pinning_packages, stale_versionlocks)


def nvidia_driver_plan(inputs):
    """Everything the role does on one host (packages, pin, repo, errors); see driver_packages."""
    return driver_plan(dict(inputs))


def nvidia_driver_reboot(facts):
    """Reboot decision from what the host reports after the install."""
    return reboot_decision(bool(facts.get("in_container")), facts.get("loaded_version") or None,
                           facts.get("installed_version") or None, bool(facts.get("nouveau_loaded")),
                           bool(facts.get("allow_reboot")), bool(facts.get("is_controller")))


def nvidia_driver_container(probe):
    """Container or machine, from the probe's key=value dict (container, pid2_comm)."""
    probe = probe or {}
    return container_verdict(probe.get("container"), probe.get("pid2_comm"))


def nvidia_driver_apt_kernel(facts):
    """Headers and holds for the kernel metapackages of an apt host (see apt_kernel_plan)."""
    return apt_kernel_plan(facts.get("dpkg"), facts.get("kernel"), bool(facts.get("hold")))


def nvidia_driver_stream_switch(dnf_module_list, wanted):
    """Whether ``dnf module switch-to`` is needed (another nvidia-driver stream is enabled)."""
    return module_stream_switch(dnf_module_list, wanted)


def nvidia_driver_stale_pins(output, plan):
    """Pins of the driver the plan no longer wants: apt hosts, NVIDIA pinning packages
    (``output``: dpkg-query of ``nvidia-driver-pinning-*``); dnf hosts, versionlock entries
    (``output``: ``dnf versionlock list``)."""
    plan = plan or {}
    if plan.get("os_family") == "Debian":
        return stale_pinning_packages(output, plan.get("pinning_packages"))
    return stale_versionlocks(output, plan.get("versionlock"))


class FilterModule(object):
    def filters(self):
        return {
            "nvidia_driver_plan": nvidia_driver_plan,
            "nvidia_driver_reboot": nvidia_driver_reboot,
            "nvidia_driver_container": nvidia_driver_container,
            "nvidia_driver_apt_kernel": nvidia_driver_apt_kernel,
            "nvidia_driver_stream_switch": nvidia_driver_stream_switch,
            "nvidia_driver_stale_pins": nvidia_driver_stale_pins,
        }
