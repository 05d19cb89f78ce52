# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Rolling driver upgrade decisions: batches, who manages the driver, what to do on failure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.errors import GpufleetError

FAILED_ANNOTATION = "gpufleet.io/upgrade-failed"
# the GPU Operator labels nodes whose driver it deploys
OPERATOR_DRIVER_LABEL = "nvidia.com/gpu.deploy.driver"


def batch_size(serial, total):
    """Nodes per batch for ``serial`` (an int >= 1 or a percentage like "25%")."""
    if total <= 0:
        return 0
    if isinstance(serial, bool):
        raise GpufleetError("gpufleet_upgrade_serial: %r is not allowed; use an integer >= 1 or a percentage like 25%%" % serial)
    if isinstance(serial, int):
        size = serial
    elif isinstance(serial, str) and re.match(r"^[0-9]+$", serial):
        size = int(serial)
    elif isinstance(serial, str) and re.match(r"^[0-9]+(\.[0-9]+)?%$", serial):
        percent = float(serial[:-1])
        if not 0 < percent <= 100:
            raise GpufleetError("gpufleet_upgrade_serial: %r is not allowed; a percentage must be above 0%% and at most 100%%" % serial)
        size = max(1, int(math.floor(total * percent / 100.0)))
    else:
        raise GpufleetError("gpufleet_upgrade_serial: %r is not allowed; use an integer >= 1 or a percentage like 25%%" % (serial,))
    if size < 1:
        raise GpufleetError("gpufleet_upgrade_serial: %r is not allowed; use an integer >= 1 or a percentage like 25%%" % (serial,))
    return min(size, total)


def plan_upgrade(hosts, serial, addons_mode="standalone", node_labels=None, target=None):
    """Return the rollout plan.

    ``hosts``: inventory hosts (node names) in rollout order. ``node_labels``: {node: labels}
    from the cluster when known. Operator-managed nodes are not upgraded by the host roles.
    """
    node_labels = node_labels or {}
    operator, host_managed = [], []
    for host in hosts:
        labels = node_labels.get(host) or {}
        if addons_mode == "operator" or labels.get(OPERATOR_DRIVER_LABEL) == "true":
            operator.append(host)
        else:
            host_managed.append(host)
    size = batch_size(serial, len(host_managed)) if host_managed else 0
    batches = [host_managed[i:i + size] for i in range(0, len(host_managed), size)] if size else []
    steps = ["cordon", "drain", "driver and toolkit roles (pin %s)" % (target or "unchanged"),
             "reboot if the loaded module differs and reboots are allowed", "wait until Ready",
             "wait until GPUs are allocatable", "node-local smoke check (nvidia-smi)", "uncordon"]
    lines = []
    for number, batch in enumerate(batches, 1):
        lines.append("batch %d/%d: %s -> %s" % (number, len(batches), ", ".join(batch), " -> ".join(steps)))
    if operator:
        lines.append("managed by the GPU Operator (not upgraded here; set gpu_operator driver.version and "
                     "driver.upgradePolicy instead): %s" % ", ".join(operator))
    return {"batches": batches, "batch_size": size, "operator_managed": operator, "summary": lines}


def failure_note(node, step, reason):
    """Annotation value and operator instructions for a node whose upgrade failed."""
    value = "%s: %s" % (step, reason)
    instructions = [
        "The rollout stopped at node %s during '%s': %s." % (node, step, reason),
        "The node stays cordoned with annotation %s." % FAILED_ANNOTATION,
        "Fix the node (journalctl -u containerd, dmesg | grep -i nvidia, nvidia-smi), then re-run "
        "playbooks/upgrade_driver.yml --limit %s; it uncordons the node after its checks pass." % node,
        "To give up on this node: kubectl uncordon %s && kubectl annotate node %s %s-" % (node, node, FAILED_ANNOTATION),
    ]
    return value[:250], instructions


def check(params, plan, problems):
    """Preflight: the rollout batch size, when given."""
    extra = params.get("extra") or {}
    if "gpufleet_upgrade_serial" in extra:
        try:
            batch_size(extra["gpufleet_upgrade_serial"], 100)
        except GpufleetError as exc:
            var, _sep, msg = exc.msg.partition(": ")
            problems.error(var, msg)
