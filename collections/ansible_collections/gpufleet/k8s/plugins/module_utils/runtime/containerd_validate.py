# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Validation of a candidate containerd config with the real containerd binary (``config dump``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import glob
import os
import re
import shutil
import subprocess
import tempfile

from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor import tomlkit
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime.containerd_presets import CRI_PATHS, NVIDIA_RUNTIME_BINARY
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime.containerd_toml import get_in, parse, plain
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError


def containerd_version(binary, run=subprocess.run):
    """(major, minor) of the containerd binary, or None."""
    try:
        out = run([binary, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r" v?(\d+)\.(\d+)\.\d+", out or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def containerd_default(binary, run=subprocess.run):
    """``containerd config default`` output, or None."""
    try:
        proc = run([binary, "config", "default"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 and proc.stdout.strip() else None


def dump_warnings(dump_text, enable_cdi):
    """Warnings about wanted settings that the binary's effective config does not show."""
    warnings = []
    if enable_cdi:
        data = plain(parse(dump_text, "containerd config dump"))
        found = any("enable_cdi" in (get_in(data, keys) or {}) for keys in (CRI_PATHS[2], CRI_PATHS[3], CRI_PATHS[1]))
        if not found:
            warnings.append("enable_cdi is written but this containerd ignores it (CDI needs containerd >= 1.7)")
    return warnings


def find_cri_runtimes(dump_doc):
    """The runtimes table of a ``config dump`` (any version), or None."""
    for keys in (CRI_PATHS[2], CRI_PATHS[3], CRI_PATHS[1]):
        runtimes = get_in(dump_doc, keys + ("containerd", "runtimes"))
        if runtimes is not None:
            return plain(runtimes)
    return None


def dump_candidate(binary, doc, tmp, refused, run=subprocess.run):
    """Write ``doc`` (a root config whose imports already point into ``tmp``) as ``tmp``/config.toml
    and return ``containerd --config it config dump``; GpufleetError(``refused``: containerd's
    message) when containerd does not accept it."""
    candidate = os.path.join(tmp, "config.toml")
    with open(candidate, "w") as handle:
        handle.write(tomlkit.dumps(doc))
    proc = run([binary, "--config", candidate, "config", "dump"], capture_output=True, text=True, timeout=60,
               check=False)
    if proc.returncode != 0:
        raise GpufleetError("%s: %s" % (refused, proc.stderr.strip() or proc.stdout.strip()))
    return proc.stdout


def validate_candidate(binary, root_path, files, runtime_name="nvidia", binary_name=NVIDIA_RUNTIME_BINARY,
                       run=subprocess.run):
    """Run ``containerd --config CANDIDATE config dump`` on the candidate files in a temp dir.

    ``files`` maps live paths to new texts (root and/or drop-in). The root candidate's imports
    are rewritten to point at copies of the imported files (candidates where given). Raises
    GpufleetError when containerd refuses the candidate or its effective config lacks the
    nvidia runtime or the default runtime. Returns the dump text.
    """
    tmp = tempfile.mkdtemp(prefix="gpufleet-containerd-")
    try:
        if root_path in files:
            root_text = files[root_path]
        else:
            with open(root_path) as handle:
                root_text = handle.read()
        doc = parse(root_text, root_path)
        root_dir = os.path.dirname(root_path)
        imports = [str(v) for v in plain(doc.get("imports") or [])]
        new_imports = []
        for index, entry in enumerate(imports):
            live_glob = entry if os.path.isabs(entry) else os.path.join(root_dir, entry)
            matches = set(glob.glob(live_glob))
            matches.update(p for p in files if p != root_path and fnmatch.fnmatch(p, live_glob))
            sub = os.path.join(tmp, "import-%d" % index)
            os.makedirs(sub)
            for match in sorted(matches):
                dest = os.path.join(sub, os.path.basename(match))
                if match in files:
                    with open(dest, "w") as handle:
                        handle.write(files[match])
                else:
                    shutil.copyfile(match, dest)
            new_imports.append(os.path.join(sub, os.path.basename(live_glob)))
        if imports:
            doc["imports"] = new_imports
        dump = dump_candidate(binary, doc, tmp, "containerd refused the candidate config (live file left untouched)",
                              run=run)
        runtimes = find_cri_runtimes(parse(dump, "containerd config dump"))
        if not runtimes or runtime_name not in runtimes:
            raise GpufleetError("the candidate config loads but its effective config has no %s runtime "
                                "(live file left untouched)" % runtime_name)
        options = runtimes[runtime_name].get("options") or {}
        if options.get("BinaryName") != binary_name:
            raise GpufleetError("the candidate's effective %s runtime has BinaryName %r, not %r (live file left untouched)"
                                % (runtime_name, options.get("BinaryName"), binary_name))
        if "runc" not in runtimes:
            raise GpufleetError("the candidate's effective config has no runc runtime: the CRI plugin would fail "
                                "to load (live file left untouched)")
        return dump
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
