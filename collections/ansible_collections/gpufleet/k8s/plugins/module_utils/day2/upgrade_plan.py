# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Rolling driver upgrade decisions: batches, who manages the driver, what to do on failure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError

FAILED_ANNOTATION = "gpufleet.io/upgrade-failed"
# set on the Node before it is cordoned, removed after it is uncordoned: a Node that keeps it was
# left cordoned by a run that stopped (host unreachable, run interrupted)
IN_PROGRESS_ANNOTATION = "gpufleet.io/upgrade-in-progress"
# drain options the upgrade exposes (k8s_drain's own error messages name its option names)
DRAIN_VARS = {
    "gpufleet_upgrade_drain_force": "bool",
    "gpufleet_upgrade_drain_grace_period": "int",
    "gpufleet_upgrade_drain_pod_selectors": "list",
    "gpufleet_upgrade_delete_emptydir_data": "bool",
    "gpufleet_upgrade_drain_timeout": "int",
}
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


def plan_upgrade(hosts, serial, addons_mode="standalone", node_labels=None, target=None, node_names=None):
    """Return the rollout plan.

    ``hosts``: inventory hosts in rollout order; ``node_names``: {host: Node name} (default the host).
    ``node_labels``: {Node name: labels} from the cluster when known. Operator-managed nodes are not
    upgraded by the host roles.
    """
    node_labels = node_labels or {}
    node_names = node_names or {}
    operator, host_managed = [], []
    for host in hosts:
        labels = node_labels.get(node_names.get(host, host)) or {}
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


def failure_note(node, step, reason, host=None, cordoned=True):
    """Annotation value and operator instructions for a node whose upgrade failed."""
    value = "%s: %s" % (step, reason)
    instructions = [
        "The rollout stopped at node %s during '%s': %s." % (node, step, reason),
        "The node stays cordoned with annotation %s." % FAILED_ANNOTATION if cordoned else
        "The node was not cordoned (gpufleet_upgrade_drain is false); nothing was recorded on it.",
    ]
    if "unreachable" in reason.lower():
        instructions.append("Host %s became unreachable: check it is up and reachable over SSH (ansible %s -m ping)."
                            % (host or node, host or node))
    if "use option force" in reason:
        instructions.append("Pods without a controller block the drain: delete or move them, or set "
                            "gpufleet_upgrade_drain_force=true to delete them (they are not recreated).")
    if "emptyDir" in reason or "delete_emptydir_data" in reason:
        instructions.append("Pods with emptyDir volumes block the drain: set gpufleet_upgrade_delete_emptydir_data=true "
                            "to evict them (their emptyDir data is lost).")
    instructions += [
        "Fix the node (journalctl -u containerd, dmesg | grep -i nvidia, nvidia-smi), then resume with "
        "ansible-playbook playbooks/upgrade_driver.yml --limit localhost,%s (same -e options); it uncordons the "
        "node after its checks pass and removes the annotations." % (host or node),
        "To give up on this node: kubectl uncordon %s && kubectl annotate node %s %s- %s-"
        % (node, node, FAILED_ANNOTATION, IN_PROGRESS_ANNOTATION),
    ]
    return value[:250], instructions


def leftover_nodes(nodes):
    """Lines naming the Nodes an earlier upgrade run left cordoned, and why (from their annotations)."""
    out = []
    for node in sorted(nodes or [], key=lambda n: (n.get("metadata") or {}).get("name") or ""):
        meta = node.get("metadata") or {}
        ann = meta.get("annotations") or {}
        cordoned = bool((node.get("spec") or {}).get("unschedulable"))
        state = "cordoned" if cordoned else "not cordoned"
        if FAILED_ANNOTATION in ann:
            out.append("Node %s (%s): an earlier upgrade failed at %s" % (meta.get("name"), state, ann[FAILED_ANNOTATION]))
        elif IN_PROGRESS_ANNOTATION in ann:
            out.append("Node %s (%s): an earlier upgrade run stopped while upgrading it (%s) - its host became "
                       "unreachable or the run was interrupted; this run resumes it"
                       % (meta.get("name"), state, ann[IN_PROGRESS_ANNOTATION]))
    return out


def drain_problems(extra):
    """Preflight messages for the drain options."""
    out = []
    for var, kind in sorted(DRAIN_VARS.items()):
        if var not in extra:
            continue
        value = extra[var]
        if kind == "bool" and not isinstance(value, bool) and str(value).lower() not in ("true", "false", "yes", "no"):
            out.append((var, "%r is not allowed; use true or false" % (value,)))
        elif kind == "int" and (isinstance(value, bool) or not re.match(r"^[0-9]+$", str(value))):
            out.append((var, "%r is not allowed; use an integer >= 0 (seconds)" % (value,)))
        elif kind == "list" and (not isinstance(value, list) or not all(isinstance(v, str) and "=" in v for v in value)):
            out.append((var, "%r is not allowed; use a list of label selectors like ['app=training']" % (value,)))
    return out


def check(params, plan, problems):
    """Preflight: the rollout batch size, when given."""
    extra = params.get("extra") or {}
    for var, msg in drain_problems(extra):
        problems.error(var, msg)
    if "gpufleet_upgrade_serial" in extra:
        try:
            batch_size(extra["gpufleet_upgrade_serial"], 100)
        except GpufleetError as exc:
            var, _sep, msg = exc.msg.partition(": ")
            problems.error(var, msg)
