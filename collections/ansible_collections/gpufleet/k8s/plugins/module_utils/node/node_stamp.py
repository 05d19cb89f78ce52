# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The node stage's converged stamp: one read-only call that tells whether a re-run can change anything.

A full node-stage run ends by recording a stamp on the host: a digest of its inputs (every
``gpufleet_*``/role variable of the host plus the code of the roles and of this collection) and a
fingerprint of everything the stage manages (files and directories, packages with their version and
dpkg selection, services, kernel release, loaded modules, GPUs). The next run reads the stamp and
re-takes the fingerprint in one module call; when inputs and fingerprint are both unchanged, no task
of the stage could change anything, so the host skips it. Any difference -- a changed variable, a
new gpufleet version, an edited pin file, an unheld package, a stopped containerd, a new kernel --
sends the host through the full stage, which ends by recording a new stamp.

The watch list is deliberately broad (whole directories such as /etc/apt and /etc/containerd): a
false "changed" only costs a full run, a false "converged" would hide drift.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import hashlib
import json
import os
import stat

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError

STAMP_FORMAT = 1
WATCH_KEYS = ("paths", "packages", "services")
# Files bigger than this are fingerprinted by size and mtime, not content (none of ours are).
MAX_HASHED_BYTES = 4 * 1024 * 1024
SKIP_DIRS = ("__pycache__", ".git")


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def normalize_watch(watch):
    """Validate and normalize a watch spec: {paths: [abs paths], packages: [globs], services: [units]}."""
    if not isinstance(watch, dict):
        raise GpufleetError("watch: must be a mapping with keys %s" % ", ".join(WATCH_KEYS))
    unknown = sorted(set(watch) - set(WATCH_KEYS))
    if unknown:
        raise GpufleetError("watch: unknown key(s) %s; allowed: %s" % (", ".join(unknown), ", ".join(WATCH_KEYS)))
    result = {}
    for key in WATCH_KEYS:
        items = watch.get(key) or []
        if not isinstance(items, list) or not all(isinstance(i, str) and i for i in items):
            raise GpufleetError("watch.%s: must be a list of non-empty strings" % key)
        if key == "paths":
            bad = [p for p in items if not os.path.isabs(p) or os.path.normpath(p) != p.rstrip("/") or p == "/"]
            if bad:
                raise GpufleetError("watch.paths: %s: each path must be absolute, normalized and not /" % ", ".join(bad))
        result[key] = sorted(set(items))
    if not result["paths"]:
        raise GpufleetError("watch.paths: at least one path is needed")
    return result


def covered(path, watch):
    """Whether ``path`` (a file the stage writes) lies under one of the watched paths."""
    path = os.path.normpath(path)
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in watch["paths"])


def package_watched(name, watch):
    """Whether a package name (``name`` or ``name=version``) matches one of the watched globs."""
    base = name.split("=", 1)[0]
    return any(fnmatch.fnmatchcase(base, pattern) for pattern in watch["packages"])


def _describe(path, st):
    mode = stat.S_IMODE(st.st_mode)
    owner = "%d:%d %04o" % (st.st_uid, st.st_gid, mode)
    if stat.S_ISLNK(st.st_mode):
        return "link -> %s" % os.readlink(path)
    if stat.S_ISDIR(st.st_mode):
        return "dir %s" % owner
    if not stat.S_ISREG(st.st_mode):
        return "special %s" % owner
    if st.st_size > MAX_HASHED_BYTES:
        return "file %s size=%d mtime=%d" % (owner, st.st_size, int(st.st_mtime))
    with open(path, "rb") as handle:
        return "file %s sha256=%s" % (owner, _sha256(handle.read()))


def fingerprint_paths(paths):
    """{path: description} for every watched path and everything under the watched directories."""
    state = {}
    for top in paths:
        try:
            st = os.lstat(top)
        except OSError:
            state[top] = "absent"
            continue
        state[top] = _describe(top, st)
        if not stat.S_ISDIR(st.st_mode):
            continue
        for root, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(dirs) + sorted(files):
                path = os.path.join(root, name)
                try:
                    state[path] = _describe(path, os.lstat(path))
                except OSError as exc:  # vanished while walking, or unreadable
                    state[path] = "unreadable (%s)" % exc.strerror
    return state


def parse_dpkg(output):
    """``dpkg-query -W -f '${binary:Package}\\t${Version}\\t${db:Status-Abbrev}\\n'`` -> {package: 'version status'}."""
    packages = {}
    for line in output.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[0]:
            packages[fields[0]] = "%s %s" % (fields[1], fields[2].strip())
    return packages


def parse_rpm(output, patterns):
    """``rpm -qa --qf '%{NAME}\\t%{EVR}\\n'`` -> {package: 'version'} for the names matching the globs."""
    packages = {}
    for line in output.splitlines():
        fields = line.split("\t")
        if len(fields) == 2 and any(fnmatch.fnmatchcase(fields[0], p) for p in patterns):
            packages[fields[0]] = fields[1].strip()
    return packages


def parse_systemctl_show(output):
    """``systemctl show -p Id -p UnitFileState -p ActiveState UNIT...`` -> {unit: 'UnitFileState ActiveState'}."""
    services = {}
    for block in output.strip().split("\n\n"):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if props.get("Id"):
            services[props["Id"]] = "%s %s" % (props.get("UnitFileState") or "-", props.get("ActiveState") or "-")
    return services


NO_SERVICE_MANAGER = "unknown (no service manager)"
# What systemctl prints when systemd is installed but is not the running init (PID 1).
_NOT_BOOTED = ("not been booted with systemd", "failed to connect to bus", "systemd as init system")


def service_manager_running(sys_root="/"):
    """Whether systemd is the running service manager: sd_booted()'s test, /run/systemd/system exists."""
    return os.path.isdir(os.path.join(sys_root, "run", "systemd", "system"))


def services_state(services, run, sys_root="/"):
    """{unit: 'UnitFileState ActiveState'}; every unit is NO_SERVICE_MANAGER on a host where systemd
    does not run (no systemctl, or systemd installed but not PID 1): an answer, not a failure.
    A systemctl that fails while systemd does run is an error (it would hide drift)."""
    no_manager = dict((unit, NO_SERVICE_MANAGER) for unit in services)
    if not service_manager_running(sys_root):
        return no_manager
    rc, out, err = run(["systemctl", "show", "-p", "Id", "-p", "UnitFileState", "-p", "ActiveState"] + list(services))
    if rc == 127 or (rc != 0 and any(text in (err or out).lower() for text in _NOT_BOOTED)):
        return no_manager
    if rc != 0:
        raise GpufleetError("systemctl show failed: %s" % (err or out).strip())
    return parse_systemctl_show(out)


def fingerprint(watch, run, sys_root="/"):
    """The host's current state for ``watch``. ``run(argv)`` returns (rc, stdout, stderr)."""
    state = {"paths": fingerprint_paths(watch["paths"]), "packages": {}, "services": {}}
    if watch["packages"]:
        rc, out, err = run(["dpkg-query", "-W", "-f", "${binary:Package}\\t${Version}\\t${db:Status-Abbrev}\\n"]
                           + watch["packages"])
        if rc in (0, 1) and (out or "no packages found" in err):  # rc 1: some pattern matched nothing
            state["packages"] = parse_dpkg(out)
        else:
            rc, out, err = run(["rpm", "-qa", "--qf", "%{NAME}\\t%{EVR}\\n"])
            if rc != 0:
                raise GpufleetError("neither dpkg-query nor rpm could list the watched packages: %s" % (err or out).strip())
            state["packages"] = parse_rpm(out, watch["packages"])
    if watch["services"]:
        state["services"] = services_state(watch["services"], run, sys_root)
    state["kernel"] = os.uname()[2]
    module_dir = os.path.join(sys_root, "sys", "module")
    modules = {}
    for name in ("nvidia", "nouveau"):
        version_file = os.path.join(module_dir, name, "version")
        if os.path.isfile(version_file):
            with open(version_file) as handle:
                modules[name] = handle.read().strip()
        elif os.path.isdir(os.path.join(module_dir, name)):
            modules[name] = "loaded"
    state["modules"] = modules
    gpus_dir = os.path.join(sys_root, "proc", "driver", "nvidia", "gpus")
    state["gpus"] = sorted(os.listdir(gpus_dir)) if os.path.isdir(gpus_dir) else []
    return state


def differences(recorded, current, limit=10):
    """Human-readable differences between two fingerprints, each naming the item."""
    found = []
    for section in ("paths", "packages", "services"):
        old, new = recorded.get(section, {}), current.get(section, {})
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                found.append("%s %s: %s -> %s" % (section[:-1] if section != "packages" else "package", key,
                                                  old.get(key, "absent"), new.get(key, "absent")))
    for key in ("kernel", "modules", "gpus"):
        if recorded.get(key) != current.get(key):
            found.append("%s: %s -> %s" % (key, json.dumps(recorded.get(key)), json.dumps(current.get(key))))
    if len(found) > limit:
        found = found[:limit] + ["... and %d more" % (len(found) - limit)]
    return found


def make_stamp(inputs, watch, state):
    return {"format": STAMP_FORMAT, "inputs": inputs, "watch": watch, "state": state}


def dump(stamp):
    return json.dumps(stamp, sort_keys=True, indent=1) + "\n"


def load(text):
    """Parse a stamp file's text (None: no file); None when it is not a stamp of this format."""
    if text is None:
        return None
    try:
        stamp = json.loads(text)
    except ValueError:
        return None
    if not isinstance(stamp, dict) or stamp.get("format") != STAMP_FORMAT or not isinstance(stamp.get("state"), dict):
        return None
    return stamp


def compare(stamp, inputs, watch, current):
    """(converged, reasons): converged only when the stamp matches inputs, watch list and state."""
    if stamp is None:
        return False, ["no converged stamp recorded on this host yet (or from another gpufleet format)"]
    if stamp.get("inputs") != inputs:
        return False, ["inputs changed since the last converge (a variable, the playbook or gpufleet itself)"]
    if stamp.get("watch") != watch:
        return False, ["the watch list changed since the last converge"]
    reasons = differences(stamp["state"], current)
    return not reasons, reasons


def _jsonable(value):
    """Variables as plain JSON (Ansible's lazy/unsafe types included), dict keys sorted."""
    if isinstance(value, dict):
        return dict((str(k), _jsonable(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return value
    return str(value)


def code_digest(paths):
    """sha256 over the relative names and contents of all files under ``paths`` (files or directories)."""
    digest = hashlib.sha256()
    for top in paths:
        top = os.path.normpath(top)
        if not os.path.exists(top):
            raise GpufleetError("code path %s does not exist" % top)
        files = [top] if os.path.isfile(top) else []
        for root, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            files.extend(os.path.join(root, n) for n in sorted(names) if not n.endswith((".pyc", ".pyo")))
        for path in files:
            digest.update(os.path.relpath(path, os.path.dirname(top)).encode("utf-8") + b"\0")
            with open(path, "rb") as handle:
                digest.update(_sha256(handle.read()).encode("ascii") + b"\n")
    return digest.hexdigest()


def inputs_digest(variables, prefixes, code_paths):
    """Digest of the host's variables whose names start with one of ``prefixes`` plus the code.

    ``gpufleet_node_fast_path`` itself does not count: a run with the fast path off records the
    same stamp, and the next run with it on can use it.
    """
    chosen = {}
    for name in sorted(variables):
        if name.startswith(tuple(prefixes)) and name != FAST_PATH_VAR:
            chosen[name] = _jsonable(variables[name])
    payload = json.dumps({"vars": chosen, "code": code_digest(code_paths)}, sort_keys=True)
    return "sha256:" + _sha256(payload.encode("utf-8"))


FAST_PATH_VAR = "gpufleet_node_fast_path"
# What Ansible's bool filter reads as a boolean (so that -e gpufleet_node_fast_path=false works).
BOOL_STRINGS = ("true", "false", "yes", "no", "on", "off", "1", "0")


def check_inputs(params, plan, problems):
    """Preflight: ``gpufleet_node_fast_path`` is a boolean (true, the default, or false)."""
    value = (params.get("extra") or {}).get(FAST_PATH_VAR, True)
    if isinstance(value, bool) or (isinstance(value, str) and value.strip().lower() in BOOL_STRINGS):
        return
    problems.error(FAST_PATH_VAR, "%r is not a boolean; use one of: true (skip converged hosts after one "
                                  "read-only call, the default), false (always run every task)" % (value,))
