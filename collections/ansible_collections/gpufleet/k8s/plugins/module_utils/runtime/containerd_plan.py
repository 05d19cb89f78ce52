# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The containerd_nvidia_runtime module's one entry point: read the live files of a preset and plan
the new ones (nothing is written here; files.py writes them, with a backup of each)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import subprocess

from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime.containerd_presets import (
    BACKUP_SUFFIX, NVIDIA_RUNTIME_BINARY, check_inputs, resolve_preset)
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime.containerd_toml import parse, plain, plan_containerd
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime.containerd_standalone import plan_standalone_dropin
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime.containerd_validate import (
    containerd_default, containerd_version)
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import read_text as _read_file, write_changes


def read_text(path):
    """The file's text, None when it does not exist; GpufleetError when it cannot be read."""
    try:
        return _read_file(path)
    except (IOError, OSError) as exc:
        raise GpufleetError("cannot read %s: %s" % (path, exc))


def backup_path(path):
    return path + BACKUP_SUFFIX


def write_files(files, backup=True):
    """Write ``{path: (old, new)}`` through files.py (atomically, each existing file backed up to
    ``<path>.gpufleet-backup`` when ``backup``); see files.write_changes for the result."""
    return write_changes(files, backup_suffix=BACKUP_SUFFIX if backup else None)


def plan(preset_name, mode="drop-in", config_path=None, dropin_path=None, runtime_name="nvidia",
         binary=NVIDIA_RUNTIME_BINARY, set_as_default=False, enable_cdi=False, config_version=None,
         containerd_binary=None, read=read_text, run=subprocess.run):
    """Read the live files of ``preset_name`` and compute the new ones (nothing is written).

    Returns a dict with ``files`` ({path: (old, new)} of changing files), ``preset``, ``version``,
    ``cri_path``, ``actions``, ``created_from``, ``validate`` (whether the candidate can be
    checked with ``containerd_binary``), ``socket``, ``service`` and ``notes``.
    """
    preset = resolve_preset(preset_name)
    problems = check_inputs(preset_name, mode, config_version)
    if problems:
        raise GpufleetError("; ".join(problems))
    config_path = config_path or preset["config"]
    dropin_path = dropin_path or preset["dropin"]
    has_binary = bool(containerd_binary) and os.path.exists(containerd_binary)
    notes = []
    common = dict(runtime_name=runtime_name, binary=binary, set_as_default=set_as_default, enable_cdi=enable_cdi)

    if preset["style"] == "dropin":
        result = plan_standalone_dropin(preset["kind"], read(dropin_path), dropin_path,
                                        config_version=config_version, **common)
        validate = False
    elif preset["style"] == "template":
        text = read(config_path)
        if text is None:
            if preset_name in ("k3s", "rke2"):
                result = plan_distro_default_runtime(preset, read, runtime_name, set_as_default)
                notes.append("%s is absent: %s generates its containerd config and adds the nvidia runtime itself "
                             "at start when %s exists; %s" % (
                                 config_path, preset_name, binary,
                                 "the default runtime is set in its config file %s" % preset["distro_config"]
                                 if set_as_default else "pods need runtimeClassName: nvidia"))
            else:
                raise GpufleetError("%s does not exist: is %s installed?" % (config_path, preset_name))
        else:
            if "{{" in text:
                raise GpufleetError("%s contains Go template directives: gpufleet edits only templates that are "
                                    "plain TOML; add the nvidia runtime to it by hand or remove the directives" % config_path)
            result = plan_containerd(text, config_path, "in-place", **common)
        validate = False
    else:
        root_text = read(config_path)
        default_text = None
        if root_text is None and has_binary:
            default_text = containerd_default(containerd_binary, run=run)
        other = []
        if root_text is not None:
            # in-place too: an imported file can take back what the edit writes (check_imports_keep_edit)
            other = _other_imports(root_text, config_path, dropin_path, read)
        carry = True  # before containerd 2.1 (or unknown) imports replace whole plugin tables
        if (mode == "drop-in" or other) and has_binary:
            found = containerd_version(containerd_binary, run=run)
            carry = found is None or found < (2, 1)
        result = plan_containerd(root_text, config_path, mode, dropin_path=dropin_path,
                                 dropin_text=read(dropin_path) if mode == "drop-in" else None,
                                 other_dropins=other, default_text=default_text,
                                 config_version=config_version, carry_cri_table=carry, **common)
        validate = has_binary
    result.update(preset=preset_name, validate=validate, socket=preset["socket"], service=preset["service"],
                  notes=notes, config_path=config_path, dropin_path=dropin_path if (mode == "drop-in" or preset["style"] == "dropin") else None)
    return result


DISTRO_CONFIG_TEXT = ("# Managed by gpufleet (containerd_nvidia_runtime): %s adds the nvidia runtime at start;\n"
                      "# this makes it containerd's default, so GPU pods need no runtimeClassName.\n"
                      "default-runtime: %s\n")


def plan_distro_default_runtime(preset, read, runtime_name="nvidia", set_as_default=True):
    """k3s / RKE2 without a containerd template: the default runtime is a setting of the
    distribution (``default-runtime`` in a config.yaml.d drop-in, k3s-io/k3s#9702), not of the
    containerd config it generates. Writing (or removing) the drop-in also makes the role restart
    the service, which is when k3s/RKE2 detect the nvidia runtime. ``new`` None = remove."""
    path = preset["distro_config"]
    old = read(path)
    name = "k3s" if "k3s" in path else "rke2"
    new = DISTRO_CONFIG_TEXT % (name, runtime_name) if set_as_default else None
    files = {} if new == old else {path: (old, new)}
    actions = []
    if files:
        actions.append("default-runtime: %s in %s" % (runtime_name, path) if new else "%s removed" % path)
    return dict(files=files, version=None, cri_path=[], actions=actions, created_from=None)


def _other_imports(root_text, root_path, dropin_path, read):
    """(path, text) of the files the root imports, other than gpufleet's drop-in, in order."""
    doc = parse(root_text, root_path)
    out = []
    for entry in [str(v) for v in plain(doc.get("imports") or [])]:
        pattern = entry if os.path.isabs(entry) else os.path.join(os.path.dirname(root_path), entry)
        for path in sorted(glob.glob(pattern)):
            if path != dropin_path:
                text = read(path)
                if text is not None:
                    out.append((path, text))
    return out
