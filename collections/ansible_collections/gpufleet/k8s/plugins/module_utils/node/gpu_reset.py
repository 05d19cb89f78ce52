# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""GPU reset on a host (GPU health remediation, self-managed clusters): which GPUs, the nvidia-smi calls, and
what nvidia-smi's answer means.

A reset (``nvidia-smi --gpu-reset``) clears a GPU's hardware and software state: pending page retirements and
row remappings take effect, the volatile ECC counters start again. nvidia-smi refuses it while anything holds
the GPU, and persistence mode counts as a holder ("In use by another client"); so persistence mode is turned
off on the GPUs to reset first and turned back on afterwards, whether the reset worked or not. The node is
drained before (no GPU pod left); node agents that keep the GPU open (dcgm-exporter, a monitoring
nvidia-smi) make nvidia-smi refuse the reset, which is then reported with nvidia-smi's own words.

Three nvidia-smi calls at most, each for all the GPUs at once: the query, persistence off (only where it
is on), the reset; plus persistence back on.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError

QUERY_ARGS = ["--query-gpu=index,pci.bus_id,uuid,persistence_mode", "--format=csv,noheader"]

_RESET_OK = re.compile(r"GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s+was successfully reset")
# "The following GPUs could not be reset:\n  GPU 00000000:1A:00.0: In use by another client"
_RESET_REFUSED = re.compile(r"^\s*GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]):\s*(.+?)\s*$", re.M)
# older drivers: "GPU 00000000:C1:00.0 is currently in use by another process."
_RESET_IN_USE = re.compile(r"GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s+is currently in use by "
                           r"another (process|client)")


def bus_key(bus_id):
    """A PCI bus id compared the way nvidia-smi prints it in its different outputs (domain of 4 or 8 hex
    digits, any case): the last 12 characters, upper case."""
    return str(bus_id or "").strip().upper()[-12:]


def parse_query(text):
    """[{"index", "bus_id", "uuid", "persistence"}] from ``nvidia-smi`` with QUERY_ARGS."""
    gpus = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4 or not parts[0].isdigit():
            raise GpufleetError("nvidia-smi %s printed an unexpected line: %r" % (" ".join(QUERY_ARGS), line[:200]))
        gpus.append({"index": int(parts[0]), "bus_id": parts[1], "uuid": parts[2],
                     "persistence": parts[3].lower() == "enabled"})
    return gpus


def select(gpus, wanted):
    """The GPUs of ``gpus`` that ``wanted`` names (each an index, a UUID or a PCI bus id); all of them when
    ``wanted`` is empty. Raises GpufleetError naming what the host does not have."""
    if not wanted:
        return list(gpus)
    chosen, missing = [], []
    for item in wanted:
        key = str(item).strip()
        match = [g for g in gpus if key == str(g["index"]) or key == g["uuid"]
                 or (":" in key and bus_key(key) == bus_key(g["bus_id"]))]
        if not match:
            missing.append(key)
        for gpu in match:
            if gpu not in chosen:
                chosen.append(gpu)
    if missing:
        raise GpufleetError("gpus: %s not on this host; it has %s" % (
            ", ".join(missing), ", ".join("%d (%s)" % (g["index"], g["bus_id"]) for g in gpus) or "no GPU"))
    return sorted(chosen, key=lambda g: g["index"])


def id_list(gpus):
    """The ``-i`` argument for several GPUs: their PCI bus ids, comma-separated."""
    return ",".join(g["bus_id"] for g in gpus)


def plan_calls(targets):
    """The nvidia-smi argument lists, in order: persistence off where it is on, the reset, persistence back on.
    Returns (before, reset, after); ``before``/``after`` are None when no target has persistence mode on."""
    held = [g for g in targets if g["persistence"]]
    before = ["-pm", "0", "-i", id_list(held)] if held else None
    after = ["-pm", "1", "-i", id_list(held)] if held else None
    return before, ["--gpu-reset", "-i", id_list(targets)], after


def parse_reset(rc, text, targets):
    """What the reset did: {"ok", "reset": [bus ids], "refused": {bus id: reason}, "message"}. ``ok`` only
    when nvidia-smi exited 0 and said every target was reset."""
    text = text or ""
    done = set(bus_key(b) for b in _RESET_OK.findall(text))
    refused = {}
    for bus, reason in _RESET_REFUSED.findall(text):
        refused[bus_key(bus)] = reason
    for bus, _kind in _RESET_IN_USE.findall(text):
        refused.setdefault(bus_key(bus), "In use by another client")
    reset = [g["bus_id"] for g in targets if bus_key(g["bus_id"]) in done]
    named = dict((bus_key(g["bus_id"]), g["bus_id"]) for g in targets)
    refused = dict((named.get(k, k), v) for k, v in refused.items())
    ok = rc == 0 and len(reset) == len(targets)
    first = " ".join(line.strip() for line in text.strip().splitlines()[:6] if line.strip())
    if ok:
        message = "reset %s" % ", ".join(reset)
    elif rc == 0:
        message = "nvidia-smi --gpu-reset exited 0 but did not say it reset %s: %s" % (
            ", ".join(g["bus_id"] for g in targets if g["bus_id"] not in reset), first[:400] or "no output")
    elif refused:
        message = "nvidia-smi refused the reset (rc %s): %s" % (
            rc, "; ".join("%s: %s" % (b, r) for b, r in sorted(refused.items())))
    else:
        message = "nvidia-smi --gpu-reset failed (rc %s): %s" % (rc, first[:400] or "no output")
    return {"ok": ok, "reset": reset, "refused": refused, "message": message}
