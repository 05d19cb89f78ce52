# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""GPU health remediation on the hosts of self-managed clusters: which step a drained unhealthy node's host
gets (``host_step``: a GPU reset, a reboot, or nothing and why) and the record of the steps done
(``record_host_steps``, kept in the Node's ``gpufleet.io/gpu-remediation`` annotation).

A reset first (the GPUs the findings name, else every GPU); a reboot when a GPU is lost (nvidia-smi cannot
reach it, XID 79), when an earlier reset was refused or did not make the node healthy; after a reboot that
did not help, nothing more: the node stays out of service for a person.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import SELF_MANAGED_PLATFORMS

HOST_ACTIONS = ("reset", "reboot")
# host steps kept in a node's record (the last ones)
HOST_HISTORY = 6
# nvidia-smi failures that mean the host lost a GPU it had (the XID 79 symptom); the others (driver not
# loaded, not installed) are reported as watch: a host being set up says the same
LOST_GPU_FAILURES = ("device-handle-error",)


def _reachable(facts):
    if not isinstance(facts, dict) or not facts:
        return False
    return not (facts.get("unreachable") or facts.get("failed") or facts.get("skipped"))


def _target_gpus(entry, facts):
    """PCI bus ids of the GPUs the unhealthy findings name; [] (every GPU) when one finding names none that
    the host's nvidia-smi knows (an allocatable drop, a lost GPU, a metric without a GPU label)."""
    gpus = facts.get("gpus") or []
    out = []
    for finding in entry["findings"]:
        if finding["verdict"] != "unhealthy":
            continue
        key = str(finding.get("gpu"))
        match = [g.get("pci_bus_id") for g in gpus if key in (str(g.get("index")), str(g.get("uuid")))]
        if not match or not match[0]:
            return []
        if match[0] not in out:
            out.append(match[0])
    return out


def host_step(entry, policy, platform, gpu_facts):
    """The step on a self-managed node's host, or None (another platform, or no host action asked):
    ``{"step": "reset" | "reboot" | None, "gpus": [PCI bus ids, [] = all], "fallback": "reboot" | None,
    "text": what the report says}``. ``step`` None: nothing is done on the host and ``text`` says why.

    Escalation, from the record's ``host_steps``: a reset first; a reboot when a GPU is lost (nvidia-smi
    cannot reach it, XID 79), when an earlier reset was refused or did not make the node healthy; after a
    reboot that did not help, nothing more."""
    if platform not in SELF_MANAGED_PLATFORMS:
        return None
    wants = [a for a in policy["actions"] if a in HOST_ACTIONS]
    if not wants:
        return None
    name = entry["name"]

    def none(text):
        return {"step": None, "gpus": [], "fallback": None, "text": text}

    facts = (gpu_facts or {}).get(name)
    if not _reachable(facts):
        return none("%s not done: the host of Node %s did not answer in this run (inventory group gpu_nodes, "
                    "gpufleet_node_name); do it on the host" % (" or ".join(wants), name))
    history = (entry["record"] or {}).get("host_steps") or []
    if any(h.get("step") == "reboot" and h.get("ok") for h in history):
        return none("still unhealthy after the host was rebooted (%s): left out of service for a person "
                    "(replace the GPU); gpufleet does nothing more to it" % ", ".join(
                        "%s %s" % (h.get("step"), "done" if h.get("ok") else "failed") for h in history))
    unhealthy = [f for f in entry["findings"] if f["verdict"] == "unhealthy"]
    lost = any((f["source"] == "nvidia_smi" and f["value"] in LOST_GPU_FAILURES) or (f["source"] == "xid" and f["value"] == 79)
               for f in unhealthy)
    tried = [h for h in history if h.get("step") == "reset"]
    if lost or tried:
        why = ("a GPU is lost (nvidia-smi cannot reach it)" if lost else
               "still unhealthy after the GPU reset" if any(h.get("ok") for h in tried) else "the GPU reset was refused")
        if "reboot" in wants:
            return {"step": "reboot", "gpus": [], "fallback": None, "text": "reboot the host: %s" % why}
        return none("needs a reboot (%s), and reboot is not in gpu_remediation_actions: reboot the host by hand or add "
                    "reboot" % why)
    if "reset" in wants:
        gpus = _target_gpus(entry, facts)
        fallback = "reboot" if "reboot" in wants else None
        return {"step": "reset", "gpus": gpus, "fallback": fallback,
                "text": "reset %s (nvidia-smi --gpu-reset, persistence mode off for it)%s" % (
                    "GPU " + ", ".join(gpus) if gpus else "every GPU", "; reboot if the reset is refused" if fallback else "")}
    return {"step": "reboot", "gpus": [], "fallback": None, "text": "reboot the host (the GPU needs a reset or reboot)"}


def record_host_steps(record, results, now):
    """The record with ``results`` ([{"step", "ok", "message", "gpus"}], in the order they ran) appended to its
    ``host_steps`` (the last HOST_HISTORY kept)."""
    record = dict(record or {})
    steps = list(record.get("host_steps") or [])
    for result in results:
        steps.append({"step": result["step"], "ok": bool(result["ok"]), "at": now,
                      "message": str(result.get("message") or "")[:300]})
    record["host_steps"] = steps[-HOST_HISTORY:]
    return record
