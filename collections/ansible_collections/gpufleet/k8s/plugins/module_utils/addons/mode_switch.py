# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Switching gpufleet_addons_mode on a live cluster.

Standalone (gpufleet's device plugin, GFD, dcgm-exporter, NFD) and operator (the GPU Operator's own
copies of them) must never run side by side: two device plugins would advertise the same GPUs.
Before the cluster stage applies one mode, it looks for what the other mode left running and
refuses, naming it and giving the command that removes it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

MANAGED_BY_SELECTOR = "app.kubernetes.io/managed-by=gpufleet"
NFD_NAMESPACE = "node-feature-discovery"


def _name(obj):
    meta = obj.get("metadata") or {}
    return "%s/%s" % (meta.get("namespace"), meta.get("name")) if meta.get("namespace") else meta.get("name")


def switch_problem(mode, gpufleet_daemonsets, cluster_policies, inventory="inventories/<name>"):
    """The message when the other mode's add-ons still run, else "".

    ``gpufleet_daemonsets``: DaemonSets labelled managed-by gpufleet (standalone add-ons);
    ``cluster_policies``: ClusterPolicy objects (nvidia.com/v1) - the GPU Operator runs."""
    base = "ansible-playbook playbooks/cluster.yml -i %s -e gpufleet_apply=true" % inventory
    if mode == "operator" and gpufleet_daemonsets:
        names = sorted(_name(d) for d in gpufleet_daemonsets)
        nfd = any((d.get("metadata") or {}).get("namespace") == NFD_NAMESPACE for d in gpufleet_daemonsets)
        cmd = "%s -e gpufleet_addons_mode=standalone -e nvidia_device_plugin_state=absent -e dcgm_exporter_state=absent%s" % (
            base, " -e nvidia_device_plugin_nfd_enabled=true" if nfd else "")
        return ("gpufleet_addons_mode is operator, but the standalone add-ons gpufleet deployed still run (DaemonSet %s): "
                "the GPU Operator's device plugin would run beside them and both would advertise the same GPUs. "
                "This step applied nothing (what earlier steps of this run applied stays as it is). Remove them first with: %s - then run this stage again."
                % (", ".join(names), cmd))
    if mode == "standalone" and cluster_policies:
        names = sorted(_name(c) for c in cluster_policies)
        return ("gpufleet_addons_mode is standalone, but the GPU Operator runs (ClusterPolicy %s): gpufleet's device "
                "plugin would run beside the operator's. This step applied nothing (what earlier steps of this run "
                "applied stays as it is). Remove the operator first with: "
                "%s -e gpufleet_addons_mode=operator -e gpu_operator_state=absent - then run this stage again."
                % (", ".join(names), base))
    return ""
