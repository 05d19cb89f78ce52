# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Taking the nvidia runtime out of a container runtime's configuration again.

When gpufleet first changes a runtime config file it records the file's original bytes (or that
it did not exist) in ``/var/lib/gpufleet/runtime-config-originals.json``, together with the
sha256 of what it last wrote there:

    {"version": 1, "files": {"/etc/containerd/config.toml":
        {"original": "<base64 of the original bytes>" | null, "mode": 420, "written": "<sha256>"}}}

Removal, per recorded file:

* the file still holds exactly what gpufleet wrote: the original comes back byte for byte (or
  the file goes, when gpufleet created it);
* the file was edited since, and gpufleet created it (the drop-in, the k3s/RKE2 config.yaml.d
  file): it is gpufleet's file and goes (with a note that the edits go with it);
* the file was edited since and existed before: only gpufleet's keys come out (the nvidia
  runtime, ``default_runtime_name`` / ``enable_cdi`` where gpufleet set them, the drop-in glob in
  ``imports``, a default runtime gpufleet had to add); everything else stays.

Hosts converged before the record existed have no record: the preset's files are then cleaned by
the same key rules (a drop-in whose first line says "Managed by gpufleet" is removed).

Pure planning (bytes in, bytes out) plus ``read_bytes`` / ``validate_removal`` / ``write_bytes`` /
``record_writes``, so that the logic is unit-testable without a host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import glob
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor import tomlkit
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.exceptions import TOMLKitError
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_plan as cplan
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_presets as presets
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_toml as ctoml
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_validate as cvalidate
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import write_file
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError

RECORD_PATH = "/var/lib/gpufleet/runtime-config-originals.json"
# The node stage's install/uninstall switches (preflight refuses anything else).
STATE_VARS = ("gpufleet_node_state", "nvidia_container_toolkit_state", "nvidia_driver_package_state",
              "gpu_node_prep_state")
STATES = ("present", "absent")
MANAGED_MARK = b"Managed by gpufleet"


def check(params, plan, problems):
    """Preflight: the node stage's state switches are present or absent."""
    extra = params.get("extra") or {}
    for name in STATE_VARS:
        if name in extra and extra[name] not in STATES:
            problems.error(name, "%r is not a state; use one of: %s (absent removes what gpufleet installed on "
                                 "the GPU hosts)" % (extra[name], ", ".join(STATES)))


def sha256(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------
# The record
# ---------------------------------------------------------------------------------------------

def read_bytes(path):
    """The file's bytes, or None when it does not exist."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        if getattr(exc, "errno", None) == 2:
            return None
        raise GpufleetError("cannot read %s: %s" % (path, exc))


def load_record(path, read=read_bytes):
    data = read(path)
    if data is None:
        return {"version": 1, "files": {}}
    try:
        record = json.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise GpufleetError("%s is not valid JSON (%s): fix or remove it" % (path, exc))
    if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
        raise GpufleetError("%s has no 'files' mapping: fix or remove it" % path)
    return record


def entry_original(entry):
    """The original bytes of a record entry (None: the file did not exist)."""
    if entry.get("original") is None:
        return None
    return base64.b64decode(entry["original"])


def missing_dirs(path, exists=os.path.exists):
    """The parent directories of ``path`` that do not exist yet, deepest first (the write creates
    them; removal takes them away again when they are empty)."""
    out = []
    directory = os.path.dirname(path)
    while directory and directory != os.path.dirname(directory) and not exists(directory):
        out.append(directory)
        directory = os.path.dirname(directory)
    return out


def record_writes(record, files, read=read_bytes, stat=os.stat, exists=os.path.exists):
    """Add to ``record`` (mutated) the originals of ``files`` ({path: (old text, new text)}, as
    planned by containerd_config before anything is written) that it does not know yet.
    Returns the paths newly recorded. The originals are read as bytes, not from ``old``: text
    mode would lose carriage returns."""
    added = []
    for path in sorted(files):
        if path in record["files"]:
            continue
        original = read(path)
        entry = {"original": None if original is None else base64.b64encode(original).decode("ascii"),
                 "mode": None if original is None else stat(path).st_mode & 0o7777, "written": None}
        if original is None:
            entry["dirs"] = missing_dirs(path, exists)
        record["files"][path] = entry
        added.append(path)
    return added


def record_written(record, paths, read=read_bytes):
    """After writing: remember the sha256 of each file as it now is on disk."""
    for path in paths:
        if path in record["files"]:
            data = read(path)
            record["files"][path]["written"] = None if data is None else sha256(data)


def save_record(path, record):
    write_bytes(path, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode("utf-8"), 0o600)


# ---------------------------------------------------------------------------------------------
# Taking gpufleet's keys out of a TOML file
# ---------------------------------------------------------------------------------------------

def _plain_or_empty(text, path):
    if text is None:
        return {}
    try:
        return ctoml.plain(tomlkit.parse(text))
    except (TOMLKitError, ValueError):
        return {}


def _dig(data, keys):
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def strip_owned(text, original_text, path, runtime_name="nvidia", dropin_globs=(), may_drop_runc=True):
    """``text`` without gpufleet's keys; ``original_text`` (None: unknown or absent) says which
    keys were the user's before gpufleet. Returns (new text, actions)."""
    try:
        doc = tomlkit.parse(text)
    except (TOMLKitError, ValueError) as exc:
        raise GpufleetError("%s is not valid TOML (%s): gpufleet cannot take its keys out; fix it first" % (path, exc))
    orig = _plain_or_empty(original_text, path)
    actions = []
    version = ctoml.detect_version(doc)
    cri = ctoml.cri_path(version)
    orig_cri = _dig(orig, cri) or {}
    orig_ctd = orig_cri.get("containerd") or {}
    orig_runtimes = orig_ctd.get("runtimes") or {}
    cri_table = ctoml.get_in(doc, cri)
    if cri_table is not None:
        ctd = cri_table.get("containerd")
        runtimes = ctd.get("runtimes") if ctd is not None else None
        if runtimes is not None and runtime_name in runtimes and runtime_name not in orig_runtimes:
            del runtimes[runtime_name]
            actions.append("removed runtime %s" % runtime_name)
        if ctd is not None and ctoml.plain(ctd.get("default_runtime_name")) == runtime_name:
            if orig_ctd.get("default_runtime_name") not in (None, runtime_name):
                ctd["default_runtime_name"] = orig_ctd["default_runtime_name"]
                actions.append("default_runtime_name = %s (as before gpufleet)" % orig_ctd["default_runtime_name"])
            elif "default_runtime_name" not in orig_ctd:
                del ctd["default_runtime_name"]
                actions.append("removed default_runtime_name")
        if (may_drop_runc and original_text is not None and runtimes is not None and "runc" in runtimes
                and "runc" not in orig_runtimes):
            del runtimes["runc"]
            actions.append("removed default runtime runc that gpufleet had added")
        if runtimes is not None and len(runtimes) == 0 and "runtimes" not in orig_ctd and original_text is not None:
            del ctd["runtimes"]
        if "enable_cdi" in cri_table and ctoml.plain(cri_table["enable_cdi"]) is True and orig_cri.get("enable_cdi") is not True:
            if "enable_cdi" in orig_cri:
                cri_table["enable_cdi"] = orig_cri["enable_cdi"]
            else:
                del cri_table["enable_cdi"]
            actions.append("enable_cdi as before gpufleet")
    if "imports" in doc:
        current = [str(v) for v in ctoml.plain(doc["imports"])]
        orig_imports = [str(v) for v in orig.get("imports") or []]
        keep = [v for v in current if v in orig_imports or v not in dropin_globs]
        if keep != current:
            if keep or "imports" in orig:
                doc["imports"] = keep
            else:
                del doc["imports"]
            actions.append("imports -= %s" % ", ".join(v for v in current if v not in keep))
    new = tomlkit.dumps(doc)
    return new, actions


# ---------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------

def _is_toml(path):
    return path.endswith((".toml", ".tmpl"))


def _decode(data):
    return None if data is None else data.decode("utf-8")


def plan_recorded(record, read=read_bytes, runtime_name="nvidia", dropin_globs=()):
    """{path: (current bytes, new bytes or None)} for the recorded files, with actions and notes."""
    files, actions, notes = {}, [], []
    for path in sorted(record["files"]):
        entry = record["files"][path]
        current = read(path)
        original = entry_original(entry)
        if current is None:
            if original is not None:
                notes.append("%s no longer exists; its original is not restored (someone removed it)" % path)
            continue
        if current == original:
            continue
        if entry.get("written") and sha256(current) == entry["written"]:
            files[path] = (current, original)
            actions.append("%s: %s" % (path, "removed (gpufleet created it)" if original is None
                                       else "original restored byte for byte"))
            continue
        if original is None:
            files[path] = (current, None)
            actions.append("%s: removed (gpufleet created it)" % path)
            notes.append("%s was edited after gpufleet wrote it; gpufleet created it, so it is removed with "
                         "those edits" % path)
            continue
        if not _is_toml(path):
            notes.append("%s was edited after gpufleet wrote it and is not TOML: left as it is" % path)
            continue
        new, done = strip_owned(_decode(current), _decode(original), path, runtime_name, dropin_globs)
        new_bytes = new.encode("utf-8")
        if new_bytes != current:
            files[path] = (current, new_bytes)
            actions.extend("%s: %s" % (path, a) for a in done)
        notes.append("%s was edited after gpufleet wrote it: only gpufleet's keys were taken out" % path)
    return dict(files=files, actions=actions, notes=notes)


def plan_unrecorded(preset_name, read=read_bytes, runtime_name="nvidia", config_path=None, dropin_path=None):
    """No record (a host converged by an older gpufleet): clean the preset's files by key."""
    preset = presets.resolve_preset(preset_name)
    files, actions, notes = {}, [], []
    config_path = config_path or preset["config"]
    dropin_path = dropin_path or preset["dropin"]
    for path in [p for p in (dropin_path, preset.get("distro_config")) if p]:
        data = read(path)
        if data is not None and MANAGED_MARK in data.split(b"\n", 1)[0]:
            files[path] = (data, None)
            actions.append("%s: removed (gpufleet's file)" % path)
    if config_path and preset["kind"] == "containerd":
        data = read(config_path)
        if data is not None:
            globs = (ctoml.dropin_glob(dropin_path),) if dropin_path else ()
            new, done = strip_owned(_decode(data), None, config_path, runtime_name, globs, may_drop_runc=False)
            if new.encode("utf-8") != data:
                files[config_path] = (data, new.encode("utf-8"))
                actions.extend("%s: %s" % (config_path, a) for a in done)
                notes.append("%s: no record of its original (%s); gpufleet's keys were taken out instead"
                             % (config_path, RECORD_PATH))
    return dict(files=files, actions=actions, notes=notes)


def plan(preset_name, record_path=RECORD_PATH, runtime_name="nvidia", config_path=None, dropin_path=None,
         read=read_bytes):
    """Everything removal would change (nothing is written). Returns files, actions, notes,
    recorded (whether a record was found), root (the root config path, or None)."""
    preset = presets.resolve_preset(preset_name)
    record = load_record(record_path, read)
    dropin = dropin_path or preset["dropin"]
    globs = (ctoml.dropin_glob(dropin), dropin) if dropin else ()
    if record["files"]:
        result = plan_recorded(record, read, runtime_name, globs)
    else:
        result = plan_unrecorded(preset_name, read, runtime_name, config_path, dropin_path)
    root = (config_path or preset["config"]) if preset["style"] == "root" else None
    result.update(recorded=bool(record["files"]), root=root, record=record)
    return result


# ---------------------------------------------------------------------------------------------
# Validation, writing
# ---------------------------------------------------------------------------------------------

def validate_removal(binary, root_path, files, runtime_name="nvidia", read=read_bytes, run=subprocess.run):
    """``containerd --config CANDIDATE config dump`` on the root config as removal leaves it
    (imports pointed at copies of what they will match). Raises GpufleetError when containerd
    refuses it or its effective config still has ``runtime_name``. Returns False when there is
    no root config left to check (containerd then runs on its built-in defaults)."""
    root = files[root_path][1] if root_path in files else read(root_path)
    if root is None:
        return False
    tmp = tempfile.mkdtemp(prefix="gpufleet-removal-")
    try:
        doc = tomlkit.parse(_decode(root))
        root_dir = os.path.dirname(root_path)
        imports = [str(v) for v in ctoml.plain(doc.get("imports") or [])]
        new_imports = []
        for index, entry in enumerate(imports):
            live = entry if os.path.isabs(entry) else os.path.join(root_dir, entry)
            sub = os.path.join(tmp, "import-%d" % index)
            os.makedirs(sub)
            for match in sorted(glob.glob(live)):
                data = files[match][1] if match in files else read(match)
                if data is not None:
                    with open(os.path.join(sub, os.path.basename(match)), "wb") as handle:
                        handle.write(data)
            new_imports.append(os.path.join(sub, os.path.basename(live)))
        if imports:
            doc["imports"] = new_imports
        dump = cvalidate.dump_candidate(
            binary, doc, tmp, "containerd refused the config without the nvidia runtime (live files left untouched)",
            run=run)
        runtimes = cvalidate.find_cri_runtimes(ctoml.parse(dump, "containerd config dump")) or {}
        if runtime_name in runtimes:
            raise GpufleetError("the config without gpufleet's keys still defines the %s runtime (another file "
                                "adds it); live files left untouched" % runtime_name)
        return True
    except (TOMLKitError, ValueError) as exc:
        raise GpufleetError("%s: %s" % (root_path, exc))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_bytes(path, data, mode):
    """``data`` to ``path`` with permission bits ``mode``, atomically (gpufleet's one file writer)."""
    write_file(path, data, mode)


def backup_dir_for(record_path):
    """Where removal keeps its backups: beside the record, not beside the files, so that a
    directory gpufleet created can go once its last file went."""
    return os.path.join(os.path.dirname(record_path), "runtime-removal-backups")


def apply(files, record, backup_dir):
    """Write ``files`` ({path: (current, new or None)}), each existing file first copied to its
    backup in ``backup_dir``; a removed file's directories that gpufleet created go when empty.
    Returns the rollback list ({path, backup, existed}) like the apply path."""
    rollback = []
    for path in sorted(files):
        _current, new = files[path]
        if not os.path.isdir(backup_dir):
            os.makedirs(backup_dir, 0o700)
        backup = os.path.join(backup_dir, path.strip("/").replace("/", "__"))
        mode = os.stat(path).st_mode & 0o7777
        shutil.copy2(path, backup)
        if new is None:
            os.unlink(path)
            for directory in (record["files"].get(path) or {}).get("dirs") or []:
                if os.path.isdir(directory) and not os.listdir(directory):
                    os.rmdir(directory)
        else:
            entry = record["files"].get(path) or {}
            write_bytes(path, new, entry.get("mode") or mode if new == entry_original(entry) else mode)
        rollback.append({"path": path, "backup": backup, "existed": True})
    return rollback


def leftover_backups(record, preset_name, backup_dir, exists=os.path.exists, config_path=None, dropin_path=None):
    """The ``.gpufleet-backup`` copies the apply path left beside the runtime's files, and the
    removal's own backup directory (to remove once the runtime runs without the nvidia runtime)."""
    preset = presets.resolve_preset(preset_name)
    paths = set(record["files"]) | set(p for p in (config_path or preset["config"], dropin_path or preset["dropin"],
                                                   preset.get("distro_config")) if p)
    out = sorted(cplan.backup_path(p) for p in paths if exists(cplan.backup_path(p)))
    return out + ([backup_dir] if exists(backup_dir) else [])
