# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""MIG partitioning of a host's GPUs by gpufleet (standalone mode): read, plan, apply.

Read: ONE ``nvidia-smi --query-gpu`` (CSV) for the GPUs and their MIG mode (current/pending), then
``nvidia-smi mig -lgipp`` (where each profile's GPU instances may start), ``-lgip`` (profiles a MIG-enabled
GPU offers), ``-lgi`` and ``-lci`` (what exists).
Plan: per GPU, the GPU instances the wanted layout asks for (``{profile: count}``, the shape of
NVIDIA mig-parted's ``mig-devices``), and the commands that get there: MIG mode on/off, destroy the
compute and GPU instances, create the wanted ones with one full-size compute instance each (``-C``).
A profile the GPU does not offer, or a mix whose GPU instances cannot be placed side by side in the GPU's
memory slices, is refused before any command runs; instances are created at the placements found.
Apply: runs the plan through a ``run(argv) -> (rc, stdout, stderr)`` callable, resets a GPU whose MIG
mode change stays pending (when allowed), and reports ``reboot_required`` when it still does.

Standard library only: the gpu_mig role copies this file to the host, where its ``main()`` re-applies
the layout at boot (systemd unit ``gpufleet-mig.service``) from the mig-parted style config file the
role writes (``config_document``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import subprocess
import sys

try:
    from ansible_collections.gpufleet.k8s.plugins.module_utils.node.mig_catalog import catalog_placements, \
        catalog_profiles, counted, place
except ImportError:   # the boot-time copy on the host: the gpu_mig role installs mig_catalog.py beside this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from mig_catalog import catalog_placements, catalog_profiles, counted, place  # pylint: disable=import-error

GPU_QUERY = ["--query-gpu=index,uuid,name,mig.mode.current,mig.mode.pending", "--format=csv,noheader"]
CONFIG_NAME = "gpufleet"

_NONE_FOUND = ("No GPU instances found", "No compute instances found", "No MIG-supported devices found",
               "No MIG-enabled devices found")


class MigError(Exception):
    """Something the layout cannot be planned or applied over; the message says what to change."""


def _enabled(value):
    value = (value or "").strip()
    if value in ("Enabled", "Disabled"):
        return value == "Enabled"
    return None   # [N/A]: the GPU has no MIG


def parse_gpus(text):
    """Rows of ``nvidia-smi --query-gpu=index,uuid,name,mig.mode.current,mig.mode.pending --format=csv,noheader``."""
    gpus = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 5 or not fields[0].isdigit():
            raise MigError("unexpected nvidia-smi --query-gpu line %r (want index, uuid, name, mig.mode.current, "
                           "mig.mode.pending)" % line)
        gpus.append({"index": int(fields[0]), "uuid": fields[1], "name": fields[2],
                     "mig_capable": _enabled(fields[3]) is not None,
                     "mig": bool(_enabled(fields[3])), "mig_pending": bool(_enabled(fields[4]))})
    return gpus


_LGIP = re.compile(r"^\|\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)/(\d+)\s")
_LGI = re.compile(r"^\|\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|")
_LGIPP = re.compile(r"^GPU\s+(\d+)\s+Profile ID\s+(\d+)\s+Placements?\s*:\s*\{([\d,\s]*)\}:(\d+)")
_LCI = re.compile(r"^\|\s*(\d+)\s+(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|")


def parse_profiles(text):
    """``nvidia-smi mig -lgip``: {gpu index: {profile: {"id", "free", "total"}}}."""
    out = {}
    for line in (text or "").splitlines():
        match = _LGIP.match(line)
        if match:
            gpu, name, pid, free, total = match.groups()
            out.setdefault(int(gpu), {})[name] = {"id": int(pid), "free": int(free), "total": int(total)}
    return out


def parse_placements(text):
    """``nvidia-smi mig -lgipp``: {gpu index: {profile id: (memory slices, (start, ...))}}."""
    out = {}
    for line in (text or "").splitlines():
        match = _LGIPP.match(line.strip())
        if match:
            gpu, pid, starts, size = match.groups()
            out.setdefault(int(gpu), {})[int(pid)] = (
                int(size), tuple(int(x) for x in starts.replace(" ", "").split(",") if x))
    return out


def parse_gpu_instances(text):
    """``nvidia-smi mig -lgi``: [{"gpu", "profile", "profile_id", "gi", "placement"}]."""
    out = []
    for line in (text or "").splitlines():
        match = _LGI.match(line)
        if match:
            gpu, name, pid, gi, start, size = match.groups()
            out.append({"gpu": int(gpu), "profile": name, "profile_id": int(pid), "gi": int(gi),
                        "placement": "%s:%s" % (start, size)})
    return out


def parse_compute_instances(text):
    """``nvidia-smi mig -lci``: [{"gpu", "gi", "profile", "profile_id", "ci"}]."""
    out = []
    for line in (text or "").splitlines():
        match = _LCI.match(line)
        if match:
            gpu, gi, name, pid, ci = match.groups()[:5]
            out.append({"gpu": int(gpu), "gi": int(gi), "profile": name, "profile_id": int(pid), "ci": int(ci)})
    return out


def read_state(run):
    """The host's GPUs and MIG layout through ``run``: one --query-gpu, then -lgip, -lgi, -lci."""
    rc, out, err = run(["nvidia-smi"] + GPU_QUERY)
    if rc != 0:
        raise MigError("nvidia-smi cannot list the GPUs (exit %d): %s" % (rc, (err or out).strip()))
    gpus = parse_gpus(out)
    state = {"gpus": gpus, "profiles": {}, "placements": {}, "gpu_instances": [], "compute_instances": []}
    if not any(g["mig"] for g in gpus):
        return state
    # the placements the GPU itself reports (-lgipp); a driver that cannot list them leaves the catalog's
    rc, out, _err = run(["nvidia-smi", "mig", "-lgipp"])
    state["placements"] = parse_placements(out) if rc == 0 else {}
    for key, flag, parse in (("profiles", "-lgip", parse_profiles), ("gpu_instances", "-lgi", parse_gpu_instances),
                             ("compute_instances", "-lci", parse_compute_instances)):
        rc, out, err = run(["nvidia-smi", "mig", flag])
        if rc != 0 and not any(text in (out + err) for text in _NONE_FOUND):
            raise MigError("nvidia-smi mig %s failed (exit %d): %s" % (flag, rc, (err or out).strip()))
        state[key] = parse(out) if rc == 0 else parse("")
    return state


def _slices(profile):
    match = re.match(r"(\d+)g\.", profile)
    return int(match.group(1)) if match else 0


def _offered(gpu, state):
    """{profile: most instances} the GPU offers: its -lgip totals when MIG is on, else the catalog."""
    listed = state["profiles"].get(gpu["index"])
    if listed:
        return dict((name, p["total"]) for name, p in listed.items())
    return catalog_profiles(gpu["name"])


def _placements(gpu, state):
    """{profile: (memory slices, starts)} for the GPU: its -lgipp (by the -lgip profile ids) when MIG is on,
    else the catalog's; None when neither knows it (then only the counts and compute slices are checked)."""
    by_id = state.get("placements", {}).get(gpu["index"])
    listed = state["profiles"].get(gpu["index"])
    if by_id and listed:
        known = dict((name, by_id[p["id"]]) for name, p in listed.items() if p["id"] in by_id)
        if len(known) == len(listed):
            return known
    return catalog_placements(gpu["name"])


def placed_instances(gpu, state, want, profiles_var):
    """The -cgi arguments for ``want``: ``profile:start`` each when the GPU's placements are known; refuses a
    mix the GPU cannot place, naming ``profiles_var``, the profiles and where each may start."""
    table = _placements(gpu, state)
    if not table or any(p not in table for p in want):
        return list(want)
    spots = place(want, table)
    if spots is None:
        total = max(start + size for size, starts in table.values() for start in starts)
        where = "; ".join("%s takes %d of %d memory slices, starting at %s" % (p, table[p][0], total, ", ".join(
            str(x) for x in table[p][1])) for p in sorted(set(want)))
        raise MigError("%s: %s cannot be placed together on GPU %d (%s): the GPU instances would overlap in its memory "
                       "slices (%s); choose a combination NVIDIA's MIG user guide lists as valid for this GPU"
                       % (profiles_var, counted(want), gpu["index"], gpu["name"], where))
    return ["%s:%d" % spot for spot in spots]


def selected(gpus, devices):
    if devices in (None, "all"):
        return list(gpus)
    wanted = set(devices)
    unknown = sorted(wanted - set(g["index"] for g in gpus))
    if unknown:
        raise MigError("gpu_mig_devices: GPU index(es) %s do not exist on this host; use %s or all"
                       % (", ".join(str(i) for i in unknown), ", ".join(str(g["index"]) for g in gpus)))
    return [g for g in gpus if g["index"] in wanted]


def wanted_instances(gpu, offered, profiles, profiles_var):
    """The sorted GPU-instance profiles ``profiles`` ({profile: count or 'all'}) gives ``gpu``; refuses
    what the GPU does not offer, naming ``profiles_var`` and the allowed profiles."""
    label = "GPU %d (%s)" % (gpu["index"], gpu["name"])
    if offered is None:
        raise MigError("%s: cannot tell which MIG profiles it offers while MIG is disabled (not in gpufleet's "
                       "catalog); enable MIG on it once by hand (nvidia-smi -i %d -mig 1) or set %s for a known GPU"
                       % (label, gpu["index"], profiles_var))
    allowed = ", ".join(sorted(offered))
    out = []
    for profile in sorted(profiles):
        count = profiles[profile]
        if profile not in offered:
            raise MigError("%s: %r is not a MIG profile %s offers; use one of: %s"
                           % (profiles_var, profile, label, allowed))
        if count == "all":
            count = offered[profile]
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise MigError("%s[%r]: %r is not a count; use an integer >= 1 or all" % (profiles_var, profile, count))
        if count > offered[profile]:
            raise MigError("%s[%r]: %d instances do not fit %s, which holds at most %d"
                           % (profiles_var, profile, count, label, offered[profile]))
        out.extend([profile] * count)
    if sum(_slices(p) for p in out) > 7:
        raise MigError("%s: %s needs %d compute slices, %s has 7; use fewer or smaller instances"
                       % (profiles_var, ", ".join(out), sum(_slices(p) for p in out), label))
    return sorted(out)


def gpu_layout(gpu, state):
    """What the GPU has now: MIG mode and its sorted GPU-instance profiles, and whether every GPU
    instance holds exactly one compute instance of its full size."""
    gis = [gi for gi in state["gpu_instances"] if gi["gpu"] == gpu["index"]]
    cis = [ci for ci in state["compute_instances"] if ci["gpu"] == gpu["index"]]
    complete = all([ci["profile"] for ci in cis if ci["gi"] == gi["gi"]] == [gi["profile"]] for gi in gis) \
        and len(cis) == len(gis)
    return {"mig": gpu["mig"], "mig_pending": gpu["mig_pending"], "instances": sorted(gi["profile"] for gi in gis),
            "compute_instances": len(cis), "complete": complete}


def plan(state, wanted_state, profiles=None, devices="all", profiles_var="gpu_mig_profiles"):
    """Per GPU: before, after and the commands; ``changed``. Raises MigError before anything runs."""
    if wanted_state not in ("present", "absent"):
        raise MigError("gpu_mig_state: %r is not allowed; use one of: present, absent" % (wanted_state,))
    gpus = selected(state["gpus"], devices)
    if not gpus:
        raise MigError("no NVIDIA GPU on this host (nvidia-smi lists none)")
    if wanted_state == "present" and not profiles:
        raise MigError("%s: is empty; name the MIG profile(s) for every GPU, e.g. {1g.18gb: all}" % profiles_var)
    out = []
    for gpu in gpus:
        if not gpu["mig_capable"]:
            if wanted_state == "absent":
                continue
            raise MigError("%s: GPU %d (%s) has no MIG (mig.mode.current is [N/A]); MIG-capable are A30, A100, "
                           "H100, H200, B200 class GPUs" % (profiles_var, gpu["index"], gpu["name"]))
        before = gpu_layout(gpu, state)
        idx = str(gpu["index"])
        steps = []
        if wanted_state == "present":
            want = wanted_instances(gpu, _offered(gpu, state), profiles, profiles_var)
            after = {"mig": True, "mig_pending": True, "instances": want, "compute_instances": len(want),
                     "complete": True}
            if not (gpu["mig"] and gpu["mig_pending"]):
                steps.append(["nvidia-smi", "-i", idx, "-mig", "1"])
            if before["instances"] != want or not before["complete"]:
                # placed before anything is destroyed: a mix the GPU cannot hold is refused here
                create = placed_instances(gpu, state, want, profiles_var)
                if before["compute_instances"]:
                    steps.append(["nvidia-smi", "mig", "-i", idx, "-dci"])
                if before["instances"]:
                    steps.append(["nvidia-smi", "mig", "-i", idx, "-dgi"])
                steps.append(["nvidia-smi", "mig", "-i", idx, "-cgi", ",".join(create), "-C"])
        else:
            after = {"mig": False, "mig_pending": False, "instances": [], "compute_instances": 0, "complete": True}
            if before["compute_instances"]:
                steps.append(["nvidia-smi", "mig", "-i", idx, "-dci"])
            if before["instances"]:
                steps.append(["nvidia-smi", "mig", "-i", idx, "-dgi"])
            if gpu["mig"] or gpu["mig_pending"]:
                steps.append(["nvidia-smi", "-i", idx, "-mig", "0"])
        out.append({"index": gpu["index"], "uuid": gpu["uuid"], "name": gpu["name"], "before": before,
                    "after": after, "steps": steps})
    return {"state": wanted_state, "gpus": out, "changed": any(g["steps"] for g in out)}


def describe(layout):
    if not layout["mig"] and not layout["mig_pending"]:
        return "MIG disabled"
    mode = "MIG enabled" if layout["mig"] else "MIG disabled (enable pending: GPU reset or reboot)"
    if layout["mig"] and not layout["mig_pending"]:
        mode = "MIG enabled (disable pending: GPU reset or reboot)"
    counts = {}
    for profile in layout["instances"]:
        counts[profile] = counts.get(profile, 0) + 1
    parts = ["%dx %s" % (counts[p], p) for p in sorted(counts)]
    return "%s, %s" % (mode, ", ".join(parts) if parts else "no instances")


def diff(the_plan):
    """{before, after} texts for Ansible's diff: one line per GPU."""
    def text(key):
        return "".join("GPU %d (%s): %s\n" % (g["index"], g["name"], describe(g[key])) for g in the_plan["gpus"])
    return {"before": text("before"), "after": text("after")}


def _must(run, argv):
    rc, out, err = run(argv)
    if rc != 0:
        raise MigError("%s failed (exit %d): %s" % (" ".join(argv), rc, (err or out).strip()))
    return out


def apply(run, the_plan, allow_reset=True):
    """Run the plan. A MIG mode change that stays pending gets ``nvidia-smi -i N -r`` when allowed; a GPU
    whose change is still pending (or whose reset is refused: "not supported" for a pass-through GPU in a
    VM) gets no instances and is named in ``reboot_required``. Returns
    {"commands": [...], "reboot_required": [gpu index, ...]}."""
    done, reboot = [], []

    def call(argv):
        done.append(" ".join(argv))
        return _must(run, argv)

    for gpu in the_plan["gpus"]:
        want_mig = the_plan["state"] == "present"
        for argv in gpu["steps"]:
            is_mode = argv[-2:] in (["-mig", "1"], ["-mig", "0"])
            call(argv)
            if not is_mode:
                continue
            now = _gpu(run, gpu["index"])
            if now["mig"] != want_mig and allow_reset:
                reset = ["nvidia-smi", "-i", str(gpu["index"]), "-r"]
                rc, out, err = run(reset)
                done.append(" ".join(reset) if rc == 0 else "%s (refused, exit %d: %s)"
                            % (" ".join(reset), rc, (err or out).strip()))
                now = _gpu(run, gpu["index"])
            if now["mig"] != want_mig:
                reboot.append(gpu["index"])
                break
    return {"commands": done, "reboot_required": reboot}


def _gpu(run, index):
    rc, out, err = run(["nvidia-smi"] + GPU_QUERY)
    if rc != 0:
        raise MigError("nvidia-smi cannot list the GPUs (exit %d): %s" % (rc, (err or out).strip()))
    for gpu in parse_gpus(out):
        if gpu["index"] == index:
            return gpu
    raise MigError("GPU %d disappeared from nvidia-smi" % index)


def check_readback(the_plan, state, skip=()):
    """MigError unless the read-back ``state`` equals the plan's after (GPUs in ``skip`` wait for a reboot)."""
    for gpu in the_plan["gpus"]:
        if gpu["index"] in skip:
            continue
        now = [g for g in state["gpus"] if g["index"] == gpu["index"]]
        got = gpu_layout(now[0], state) if now else None
        if got != gpu["after"]:
            raise MigError("GPU %d: read back %s after applying, planned %s"
                           % (gpu["index"], describe(got) if got else "nothing", describe(gpu["after"])))


def config_document(wanted_state, profiles, devices="all"):
    """The layout as an NVIDIA mig-parted config (version v1, one config named gpufleet)."""
    entry = {"devices": "all" if devices in (None, "all") else list(devices),
             "mig-enabled": wanted_state == "present"}
    if wanted_state == "present":
        entry["mig-devices"] = dict(profiles)
    return {"version": "v1", "mig-configs": {CONFIG_NAME: [entry]}}


def from_config_document(doc):
    """(state, profiles, devices) from a document config_document wrote."""
    try:
        entry = doc["mig-configs"][CONFIG_NAME][0]
        return ("present" if entry["mig-enabled"] else "absent", entry.get("mig-devices") or {},
                entry.get("devices", "all"))
    except (KeyError, IndexError, TypeError):
        raise MigError("not a gpufleet MIG config (want version v1, mig-configs.%s[0] with devices, mig-enabled, "
                       "mig-devices)" % CONFIG_NAME)


def converge(run, wanted_state, profiles, devices="all", profiles_var="gpu_mig_profiles", allow_reset=True,
             check=False):
    """Read, plan, apply (unless ``check``), read back. Returns the plan with ``commands``,
    ``reboot_required`` and ``diff``."""
    the_plan = plan(read_state(run), wanted_state, profiles, devices, profiles_var)
    result = dict(the_plan, commands=[], reboot_required=[], diff=diff(the_plan))
    if check or not the_plan["changed"]:
        return result
    result.update(apply(run, the_plan, allow_reset))
    check_readback(the_plan, read_state(run), result["reboot_required"])
    return result


def _subprocess_run(argv):
    # the unit names the program the role was given (gpu_mig_nvidia_smi); default nvidia-smi from PATH
    argv = [os.environ.get("GPUFLEET_NVIDIA_SMI") or argv[0]] + argv[1:] if argv[0] == "nvidia-smi" else argv
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def main(argv):
    """``mig_layout.py apply CONFIG``: re-apply the layout at boot (the gpufleet-mig systemd unit)."""
    if len(argv) != 2 or argv[0] != "apply":
        sys.stderr.write("usage: mig_layout.py apply CONFIG.json\n")
        return 2
    try:
        with open(argv[1]) as handle:
            wanted_state, profiles, devices = from_config_document(json.load(handle))
        result = converge(_subprocess_run, wanted_state, profiles, devices, profiles_var=argv[1])
    except (MigError, OSError, ValueError) as exc:
        sys.stderr.write("gpufleet-mig: %s\n" % exc)
        return 1
    # the journal of gpufleet-mig.service (stdout and stderr; this runs outside Ansible, at boot)
    for command in result["commands"]:
        sys.stdout.write("gpufleet-mig: ran %s\n" % command)
    sys.stdout.write("gpufleet-mig: %s\n" % "; ".join(line for line in result["diff"]["after"].splitlines()))
    if result["reboot_required"]:
        sys.stderr.write("gpufleet-mig: GPU(s) %s wait for a reboot to change MIG mode\n"
                         % ", ".join(str(i) for i in result["reboot_required"]))
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
