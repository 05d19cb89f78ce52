# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The ``nvidia`` runtime in a container runtime's configuration, without losing user config.

The containerd part edits TOML with tomlkit, which keeps comments, ordering and formatting, and
touches only the keys gpufleet owns:

* ``<cri>.containerd.runtimes.nvidia`` (``runtime_type`` copied from the default runtime,
  runc's options such as ``SystemdCgroup`` inherited, ``options.BinaryName`` set);
* ``<cri>.containerd.runtimes.<default>`` only when the default runtime (normally ``runc``) is
  missing: a config that defines ``runtimes.nvidia`` but no ``runtimes.runc`` starts, yet the
  CRI plugin then fails to load;
* optionally ``<cri>.containerd.default_runtime_name`` and ``<cri>.enable_cdi``;
* in drop-in mode, the drop-in file and one glob in the root file's top-level ``imports``.

``<cri>`` depends on the config version: no ``version`` key = 1 -> ``plugins.cri``; 2 ->
``plugins."io.containerd.grpc.v1.cri"``; 3 and 4 -> ``plugins."io.containerd.cri.v1.runtime"``.

Everything here is pure (text in, text out) except ``read_state``, ``validate_candidate`` and
``write_files``, so that the logic is unit-testable without a host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import fnmatch
import glob
import os
import re
import shutil
import subprocess
import tempfile

# The collection carries its own tomlkit (module_utils/_vendor, see its README): distribution
# packages on managed nodes are too old to round-trip every file byte-for-byte.
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor import tomlkit
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.exceptions import TOMLKitError

from ansible_collections.gpufleet.k8s.plugins.module_utils.errors import GpufleetError, one_of

NVIDIA_RUNTIME_BINARY = "/usr/bin/nvidia-container-runtime"
DEFAULT_RUNTIME_TYPE = "io.containerd.runc.v2"
BACKUP_SUFFIX = ".gpufleet-backup"
MODES = ("drop-in", "in-place")
CONFIG_VERSIONS = (1, 2, 3, 4)

CRI_PATHS = {
    1: ("plugins", "cri"),
    2: ("plugins", "io.containerd.grpc.v1.cri"),
    3: ("plugins", "io.containerd.cri.v1.runtime"),
    4: ("plugins", "io.containerd.cri.v1.runtime"),
}

# Distribution presets: which file gpufleet writes, how, and where the runtime's socket is.
#   kind      containerd | crio
#   style     root       root config + optional drop-in (mode decides)
#             template   a distribution template that must stay valid TOML; edited in place
#             dropin     a standalone drop-in the distribution merges itself (no root file)
PRESETS = {
    "containerd": {
        "kind": "containerd", "style": "root", "config": "/etc/containerd/config.toml",
        "dropin": "/etc/containerd/conf.d/99-nvidia.toml",
        "socket": "/run/containerd/containerd.sock", "service": "containerd",
        "description": "plain containerd: kubeadm, EKS self-managed nodes, Kubespray",
    },
    "k3s": {
        "kind": "containerd", "style": "template",
        "config": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl",
        "dropin": None, "socket": "/run/k3s/containerd/containerd.sock", "service": "k3s",
        "services": ("k3s", "k3s-agent"),
        "distro_config": "/etc/rancher/k3s/config.yaml.d/90-gpufleet-nvidia.yaml",
        "description": "k3s (server or agent)",
    },
    "rke2": {
        "kind": "containerd", "style": "template",
        "config": "/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl",
        "dropin": None, "socket": "/run/k3s/containerd/containerd.sock", "service": "rke2-server",
        "services": ("rke2-server", "rke2-agent"),
        "distro_config": "/etc/rancher/rke2/config.yaml.d/90-gpufleet-nvidia.yaml",
        "description": "RKE2 (server or agent)",
    },
    "k0s": {
        "kind": "containerd", "style": "dropin", "config": None,
        "dropin": "/etc/k0s/containerd.d/nvidia.toml",
        "socket": "/run/k0s/containerd.sock", "service": "k0sworker",
        "services": ("k0sworker", "k0scontroller"),
        "description": "k0s (k0s merges /etc/k0s/containerd.d/*.toml into its containerd config)",
    },
    "microk8s": {
        "kind": "containerd", "style": "template",
        "config": "/var/snap/microk8s/current/args/containerd-template.toml",
        "dropin": None, "socket": "/var/snap/microk8s/common/run/containerd.sock",
        "service": "snap.microk8s.daemon-containerd",
        "description": "MicroK8s (snap)",
    },
    "crio": {
        "kind": "crio", "style": "dropin", "config": None,
        "dropin": "/etc/crio/crio.conf.d/99-nvidia.toml",
        "socket": "/var/run/crio/crio.sock", "service": "crio",
        "description": "CRI-O (OpenShift-style nodes)",
    },
}

# gpufleet_platform -> preset (cloud platforms with self-managed nodes use plain containerd).
PLATFORM_PRESETS = {
    "kubeadm": "containerd", "eks": "containerd", "gke": "containerd", "gke-autopilot": "containerd",
    "k3s": "k3s", "rke2": "rke2", "k0s": "k0s", "microk8s": "microk8s", "openshift": "crio",
}

# Minimal defaults for a missing config when no containerd binary can print its own
# (``containerd config default``): enough for the CRI plugin to load with runc.
_BUILTIN_DEFAULTS = {
    1: (
        "# Created by gpufleet from a built-in minimal default (config version 1).\n"
        "[plugins]\n"
        "  [plugins.cri]\n"
        "    [plugins.cri.containerd]\n"
        "      default_runtime_name = \"runc\"\n"
        "      [plugins.cri.containerd.runtimes]\n"
        "        [plugins.cri.containerd.runtimes.runc]\n"
        "          runtime_type = \"io.containerd.runc.v2\"\n"
    ),
    2: (
        "# Created by gpufleet from a built-in minimal default (config version 2).\n"
        "version = 2\n\n"
        "[plugins]\n"
        "  [plugins.\"io.containerd.grpc.v1.cri\"]\n"
        "    [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
        "      default_runtime_name = \"runc\"\n"
        "      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes]\n"
        "        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
        "          runtime_type = \"io.containerd.runc.v2\"\n"
    ),
}
for _v in (3, 4):
    _BUILTIN_DEFAULTS[_v] = (
        "# Created by gpufleet from a built-in minimal default (config version %d).\n"
        "version = %d\n\n"
        "[plugins]\n"
        "  [plugins.\"io.containerd.cri.v1.runtime\"]\n"
        "    [plugins.\"io.containerd.cri.v1.runtime\".containerd]\n"
        "      default_runtime_name = \"runc\"\n"
        "      [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes]\n"
        "        [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\n"
        "          runtime_type = \"io.containerd.runc.v2\"\n"
    ) % (_v, _v)


def builtin_default(version):
    return _BUILTIN_DEFAULTS[version]


# ---------------------------------------------------------------------------------------------
# Input checks (also used by preflight with the role's variable names)
# ---------------------------------------------------------------------------------------------

def resolve_preset(name, var="preset"):
    if name not in PRESETS:
        raise GpufleetError("%s: %r is not a known runtime preset; use %s" % (var, name, one_of(sorted(PRESETS))))
    return PRESETS[name]


def check_inputs(preset, mode, config_version=None, var_prefix=""):
    """Return a list of problems (``"<var>: <problem>; use one of: ..."``) for the inputs."""
    problems = []
    if preset not in PRESETS:
        problems.append("%spreset: %r is not a known runtime preset; use %s"
                        % (var_prefix, preset, one_of(sorted(PRESETS))))
    if mode not in MODES:
        problems.append("%smode: %r is not a supported mode; use %s" % (var_prefix, mode, one_of(MODES)))
    if config_version not in (None, "", 0) and _as_int(config_version) not in CONFIG_VERSIONS:
        problems.append("%sconfig_version: %r is not a containerd config version; use %s"
                        % (var_prefix, config_version, one_of(CONFIG_VERSIONS) + " (0: detect)"))
    return problems


def _as_int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def check(params, plan, problems):
    """Preflight check for the nvidia_container_toolkit role's inventory variables."""
    extra = params.get("extra") or {}
    prefix = "nvidia_container_toolkit_runtime_"
    preset = extra.get(prefix + "preset") or PLATFORM_PRESETS.get(plan.get("platform") or "", "containerd")
    mode = extra.get(prefix + "mode", "drop-in")
    for problem in check_inputs(preset, mode, extra.get(prefix + "config_version"), var_prefix=prefix):
        var, _sep, msg = problem.partition(": ")
        problems.error(var, msg)


# ---------------------------------------------------------------------------------------------
# TOML helpers
# ---------------------------------------------------------------------------------------------

def parse(text, path="config", strict=False):
    """Parse TOML; with ``strict`` also require that writing it back is byte-identical."""
    try:
        doc = tomlkit.parse(text)
    except (TOMLKitError, ValueError) as exc:
        raise GpufleetError("%s is not valid TOML, left untouched: %s" % (path, exc))
    if strict and tomlkit.dumps(doc) != text:
        raise GpufleetError("%s: tomlkit %s cannot write this file back byte-for-byte, so mode in-place "
                            "would reformat it; left untouched (mode drop-in edits only one line of it)"
                            % (path, tomlkit.__version__))
    return doc


def check_preserved(old, new, path, runtime_name="nvidia",
                    managed_keys=("default_runtime_name", "enable_cdi", "imports")):
    """Safety net: every line of ``old`` must still be in ``new``, in order.

    Only lines that assign a key gpufleet manages (and the lines inside the runtime's own
    tables) may change. Raises GpufleetError otherwise, so that a library quirk can never cost
    the user a line of their config.
    """
    if old is None:
        return
    own_header = re.compile(r'^\s*\[.*\.runtimes\.("?)%s\1(\.options)?\]' % re.escape(runtime_name))
    remaining = iter(new.splitlines())
    inside_own = False
    for line in old.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            inside_own = bool(own_header.match(line))
        if inside_own and not stripped.startswith("["):
            continue
        if any(stripped.startswith(key) and stripped[len(key):].lstrip().startswith("=") for key in managed_keys):
            continue
        if not any(candidate == line for candidate in remaining):
            raise GpufleetError("%s: refusing to write a version that would change or move the line %r; "
                                "left untouched" % (path, line))


def plain(value):
    """tomlkit items -> plain Python values (for comparisons)."""
    if hasattr(value, "unwrap"):
        return value.unwrap()
    if isinstance(value, dict):
        return dict((k, plain(v)) for k, v in value.items())
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def detect_version(doc):
    """Config version of a parsed config: no ``version`` key means 1."""
    if "version" not in doc:
        return 1
    version = _as_int(plain(doc["version"]))
    if version not in CONFIG_VERSIONS:
        raise GpufleetError("version: %r is not a containerd config version gpufleet knows; use %s"
                            % (plain(doc["version"]), one_of(CONFIG_VERSIONS)))
    return version


def cri_path(version):
    return CRI_PATHS[version]


def _get(container, keys):
    node = container
    for key in keys:
        if not hasattr(node, "get") or key not in node:
            return None
        node = node[key]
    return node


def _ensure(container, keys):
    """Walk ``keys`` below ``container`` creating missing tables; return the last table."""
    node = container
    for key in keys:
        if key not in node:
            node[key] = tomlkit.table(is_super_table=False)
        node = node[key]
    return node


def _set(table, key, value):
    """Set ``table[key] = value`` only if the plain value differs (keeps formatting otherwise)."""
    if key in table and plain(table[key]) == value:
        return False
    table[key] = value
    return True


# ---------------------------------------------------------------------------------------------
# The edit
# ---------------------------------------------------------------------------------------------

def _source_runtime(runtimes, default_name, runtime_name):
    """The runtime the nvidia one copies its type and options from."""
    for name in (default_name, "runc"):
        if name and name != runtime_name and runtimes is not None and name in runtimes:
            return plain(runtimes[name])
    return {}


def apply_runtime(doc, version, runtime_name="nvidia", binary=NVIDIA_RUNTIME_BINARY,
                  set_as_default=False, enable_cdi=False, base=None):
    """Add or update the nvidia runtime in the parsed ``doc`` (mutated). Returns what was done.

    ``base`` is the effective CRI table (plain dict) to read the default runtime from when
    ``doc`` is a drop-in; by default ``doc`` itself.
    """
    cri_keys = cri_path(version)
    effective = base if base is not None else plain(_get(doc, cri_keys) or {})
    containerd_section = effective.get("containerd") or {}
    eff_runtimes = containerd_section.get("runtimes") or {}
    current_default = containerd_section.get("default_runtime_name") or "runc"
    if current_default == runtime_name:
        # Already the default: it inherited from the former default when it was added, which
        # is no longer known; keep its settings (only BinaryName is enforced) and keep runc.
        source_default = "runc"
        source = eff_runtimes.get(runtime_name) or _source_runtime(eff_runtimes, "runc", runtime_name)
    else:
        source_default = current_default
        source = _source_runtime(eff_runtimes, source_default, runtime_name)
    actions = []

    containerd_table = _ensure(doc, cri_keys + ("containerd",))
    runtimes = _ensure(containerd_table, ("runtimes",))

    # The default runtime must exist as a table once `runtimes` is defined at all.
    if source_default not in eff_runtimes and source_default != runtime_name:
        runc = tomlkit.table()
        runc["runtime_type"] = DEFAULT_RUNTIME_TYPE
        runtimes[source_default] = runc
        source = {"runtime_type": DEFAULT_RUNTIME_TYPE}
        actions.append("added missing default runtime %s" % source_default)

    wanted_options = dict(source.get("options") or {})
    wanted_options["BinaryName"] = binary
    if runtime_name not in runtimes:
        table = tomlkit.table()
        table["runtime_type"] = source.get("runtime_type") or DEFAULT_RUNTIME_TYPE
        options = tomlkit.table()
        for key in sorted(wanted_options):
            options[key] = wanted_options[key]
        table["options"] = options
        runtimes[runtime_name] = table
        actions.append("added runtime %s" % runtime_name)
    else:
        table = runtimes[runtime_name]
        changed = _set(table, "runtime_type", source.get("runtime_type") or DEFAULT_RUNTIME_TYPE)
        if "options" not in table:
            table["options"] = tomlkit.table()
        for key in sorted(wanted_options):
            changed = _set(table["options"], key, wanted_options[key]) or changed
        if changed:
            actions.append("updated runtime %s" % runtime_name)

    if set_as_default:
        if _set(containerd_table, "default_runtime_name", runtime_name):
            actions.append("default_runtime_name = %s" % runtime_name)
    elif current_default == runtime_name:
        # Not wanted as default any more: hand the default back to runc.
        if _set(containerd_table, "default_runtime_name", "runc"):
            actions.append("default_runtime_name = runc")
    if enable_cdi:
        cri_table = _ensure(doc, cri_keys)
        if _set(cri_table, "enable_cdi", True):
            actions.append("enable_cdi = true")
    return actions


_HEADER = re.compile(r"^\s*\[\[?\s*[^\]\s]")
_IMPORTS_ONE_LINE = re.compile(r"^(?P<lead>\s*imports\s*=\s*\[)(?P<inner>[^\]]*)(?P<close>\].*)$")


def add_import_text(text, path, entry):
    """Add ``entry`` to the top-level ``imports`` of ``text`` by editing only text.

    The root file is not re-serialized: one line is inserted (no ``imports`` yet) or one line is
    changed (a one-line ``imports`` array), so every other byte stays as the user wrote it. The
    result is parsed again and must equal the original plus the entry; anything else is refused.
    Returns the new text (unchanged when the entry is already there).
    """
    before = plain(parse(text, path))
    current = [str(v) for v in before.get("imports") or []]
    if entry in current:
        return text
    lines = text.splitlines(True)
    if "imports" not in before:
        first_header = next((i for i, line in enumerate(lines) if _HEADER.match(line)), len(lines))
        position = first_header
        while position > 0 and (not lines[position - 1].strip() or lines[position - 1].lstrip().startswith("#")):
            position -= 1
        if position > 0 and not lines[position - 1].endswith("\n"):
            lines[position - 1] += "\n"
        new_line = "imports = [%s]\n" % _toml_string(entry)
        if position == 0 and lines and lines[0].strip():
            new_line += "\n"
        lines.insert(position, new_line)
    else:
        index = next((i for i, line in enumerate(lines) if not _HEADER.match(line) and _IMPORTS_ONE_LINE.match(line)), None)
        if index is None:
            raise GpufleetError("%s: imports is not a one-line array; add %r to it by hand or use mode in-place"
                                % (path, entry))
        match = _IMPORTS_ONE_LINE.match(lines[index])
        inner = match.group("inner").rstrip()
        sep = "" if not inner.strip() else (" " if inner.endswith(",") else ", ")
        lines[index] = "%s%s%s%s%s" % (match.group("lead"), inner, sep, _toml_string(entry), match.group("close"))
        if not lines[index].endswith("\n"):
            lines[index] += "\n"
    new = "".join(lines)
    expected = dict(before)
    expected["imports"] = current + [entry]
    try:
        reparsed = plain(tomlkit.parse(new))
    except (TOMLKitError, ValueError):
        reparsed = None
    if reparsed != expected:
        raise GpufleetError("%s: could not add %r to imports without touching anything else; add it by hand"
                            % (path, entry))
    return new


def _toml_string(value):
    return tomlkit.dumps({"x": value}).split("=", 1)[1].strip()


def dropin_glob(dropin_path):
    return os.path.join(os.path.dirname(dropin_path), "*.toml")


def plan_containerd(root_text, root_path, mode, dropin_path=None, dropin_text=None,
                    other_dropins=None, runtime_name="nvidia", binary=NVIDIA_RUNTIME_BINARY,
                    set_as_default=False, enable_cdi=False, default_text=None,
                    config_version=None, carry_cri_table=True):
    """Compute the new files for a containerd root config (+ drop-in).

    ``root_text`` is None when the root file is missing; it is then created from
    ``default_text`` (``containerd config default``) or the built-in default of
    ``config_version`` (2 when not given). ``other_dropins`` are (path, text) of other files the
    root's imports pull in, in order. Returns ``{"files": {path: (old, new)}, ...}`` with only
    the files whose text changes.
    """
    if mode not in MODES:
        raise GpufleetError("mode: %r is not supported; use %s" % (mode, one_of(MODES)))
    created_from = None
    if root_text is None:
        if default_text:
            root_new_base = default_text
            created_from = "containerd config default"
        else:
            root_new_base = builtin_default(_as_int(config_version) or 2)
            created_from = "built-in default (version %d)" % (_as_int(config_version) or 2)
    else:
        root_new_base = root_text
    root_doc = parse(root_new_base, root_path, strict=root_text is not None and mode == "in-place")
    version = detect_version(root_doc)
    cri_keys = cri_path(version)
    files = {}
    actions = []

    if mode == "in-place":
        actions = apply_runtime(root_doc, version, runtime_name, binary, set_as_default, enable_cdi)
        new_root = tomlkit.dumps(root_doc)
        if new_root != root_text:
            check_preserved(root_text, new_root, root_path, runtime_name)
            files[root_path] = (root_text, new_root)
        return dict(files=files, version=version, cri_path=list(cri_keys), actions=actions,
                    created_from=created_from)

    # Drop-in mode: the effective CRI table is the root's, replaced by any other imported file
    # that defines it (containerd < 2.1 replaces whole plugin tables on import).
    effective = plain(_get(root_doc, cri_keys) or {})
    for path, text in other_dropins or []:
        other = parse(text, path)
        if detect_version(other) != version:
            raise GpufleetError("%s has config version %d but %s has %d: containerd refuses to start with "
                                "mixed versions; align them first" % (path, detect_version(other), root_path, version))
        table = _get(other, cri_keys)
        if table is not None:
            effective = plain(table)

    if dropin_text is not None:
        dropin_doc = parse(dropin_text, dropin_path)
        if detect_version(dropin_doc) != version:
            dropin_doc = None  # rewritten below in the root's version
    else:
        dropin_doc = None
    if dropin_doc is None:
        dropin_doc = tomlkit.document()
        dropin_doc.add(tomlkit.comment("Managed by gpufleet (containerd_nvidia_runtime): the nvidia runtime."))
        if carry_cri_table:
            dropin_doc.add(tomlkit.comment("Carries the whole CRI table: containerd < 2.1 replaces whole tables on import."))
        if version > 1:
            dropin_doc["version"] = version
    if carry_cri_table:
        # Sync the carried copy with the effective table (keys the user changed in the root file).
        target = _ensure(dropin_doc, cri_keys)
        own = plain(target)
        merged = copy.deepcopy(effective)
        _overlay_owned(merged, own, runtime_name)
        if merged != own:
            parent = _ensure(dropin_doc, cri_keys[:-1])
            parent[cri_keys[-1]] = _to_table(merged)
    actions = apply_runtime(dropin_doc, version, runtime_name, binary, set_as_default, enable_cdi, base=effective)
    new_dropin = tomlkit.dumps(dropin_doc)
    if new_dropin != dropin_text:
        files[dropin_path] = (dropin_text, new_dropin)

    pattern = dropin_glob(dropin_path)
    imported = [str(v) for v in plain(root_doc.get("imports") or [])]
    # The root file is edited as text (one line), never re-serialized: see add_import_text.
    new_root = root_new_base
    if pattern not in imported and dropin_path not in imported:
        new_root = add_import_text(root_new_base, root_path, pattern)
        actions.append("imports += %s" % pattern)
    if new_root != root_text:
        check_preserved(root_text, new_root, root_path, runtime_name)
        files[root_path] = (root_text, new_root)
    return dict(files=files, version=version, cri_path=list(cri_keys), actions=actions,
                created_from=created_from)


def _overlay_owned(merged, own, runtime_name):
    """Keep gpufleet's own keys of the existing drop-in copy on top of the effective table."""
    own_ctd = own.get("containerd") or {}
    own_runtimes = own_ctd.get("runtimes") or {}
    merged_ctd = merged.setdefault("containerd", {})
    default_name = merged_ctd.get("default_runtime_name") or "runc"
    for name in (runtime_name, default_name, "runc"):
        # ours, or the default runtime gpufleet had to add because the user's config lacked it
        if name in own_runtimes and (name == runtime_name or name not in (merged_ctd.get("runtimes") or {})):
            merged_ctd.setdefault("runtimes", {})[name] = own_runtimes[name]
    if own_ctd.get("default_runtime_name") == runtime_name:
        merged.setdefault("containerd", {})["default_runtime_name"] = runtime_name
    if own.get("enable_cdi") is True:
        merged["enable_cdi"] = True


def _to_table(value):
    table = tomlkit.table()
    scalars = [(k, v) for k, v in value.items() if not isinstance(v, dict)]
    tables = [(k, v) for k, v in value.items() if isinstance(v, dict)]
    for key, val in scalars:
        table[key] = val
    for key, val in tables:
        table[key] = _to_table(val)
    return table


def plan_standalone_dropin(kind, dropin_text, dropin_path, runtime_name="nvidia",
                           binary=NVIDIA_RUNTIME_BINARY, set_as_default=False, enable_cdi=False,
                           config_version=None):
    """A drop-in the distribution merges itself (k0s containerd.d, CRI-O crio.conf.d)."""
    doc = parse(dropin_text, dropin_path) if dropin_text is not None else None
    actions = []
    if kind == "crio":
        if doc is None:
            doc = tomlkit.document()
            doc.add(tomlkit.comment("Managed by gpufleet (containerd_nvidia_runtime): the nvidia runtime for CRI-O."))
        runtime = _ensure(doc, ("crio", "runtime", "runtimes", runtime_name))
        if _set(runtime, "runtime_path", binary) | _set(runtime, "runtime_type", "oci"):
            actions.append("runtime %s" % runtime_name)
        crio_runtime = doc["crio"]["runtime"]
        if set_as_default:
            if _set(crio_runtime, "default_runtime", runtime_name):
                actions.append("default_runtime = %s" % runtime_name)
        elif "default_runtime" in crio_runtime and plain(crio_runtime["default_runtime"]) == runtime_name:
            del crio_runtime["default_runtime"]
            actions.append("default_runtime removed")
        if enable_cdi:
            actions.append("CDI is always on in CRI-O >= 1.28: nothing to set")
        version = None
        cri = ["crio", "runtime"]
    else:
        version = _as_int(config_version) or 2
        if doc is None or detect_version(doc) != version:
            doc = tomlkit.document()
            doc.add(tomlkit.comment("Managed by gpufleet (containerd_nvidia_runtime): the nvidia runtime."))
            if version > 1:
                doc["version"] = version
        # The distribution's own config always has runc; the drop-in only adds nvidia.
        actions = apply_runtime(doc, version, runtime_name, binary, set_as_default, enable_cdi,
                                base={"containerd": {"default_runtime_name": "runc",
                                                     "runtimes": {"runc": {"runtime_type": DEFAULT_RUNTIME_TYPE}}}})
        cri = list(cri_path(version))
    new = tomlkit.dumps(doc)
    files = {dropin_path: (dropin_text, new)} if new != dropin_text else {}
    return dict(files=files, version=version, cri_path=cri, actions=actions, created_from=None)


# ---------------------------------------------------------------------------------------------
# Validation with the real binary
# ---------------------------------------------------------------------------------------------

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
        found = any("enable_cdi" in (_get(data, keys) or {}) for keys in (CRI_PATHS[2], CRI_PATHS[3], CRI_PATHS[1]))
        if not found:
            warnings.append("enable_cdi is written but this containerd ignores it (CDI needs containerd >= 1.7)")
    return warnings


def find_cri_runtimes(dump_doc):
    """The runtimes table of a ``config dump`` (any version), or None."""
    for keys in (CRI_PATHS[2], CRI_PATHS[3], CRI_PATHS[1]):
        runtimes = _get(dump_doc, keys + ("containerd", "runtimes"))
        if runtimes is not None:
            return plain(runtimes)
    return None


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
        candidate = os.path.join(tmp, "config.toml")
        with open(candidate, "w") as handle:
            handle.write(tomlkit.dumps(doc))
        proc = run([binary, "--config", candidate, "config", "dump"], capture_output=True, text=True, timeout=60,
                   check=False)
        if proc.returncode != 0:
            raise GpufleetError("containerd refused the candidate config (live file left untouched): %s"
                                % (proc.stderr.strip() or proc.stdout.strip()))
        runtimes = find_cri_runtimes(parse(proc.stdout, "containerd config dump"))
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
        return proc.stdout
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------

def read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        if getattr(exc, "errno", None) == 2:
            return None
        raise GpufleetError("cannot read %s: %s" % (path, exc))


def backup_path(path):
    return path + BACKUP_SUFFIX


def write_files(files, backup=True):
    """Write ``{path: (old, new)}`` atomically, after a backup of each existing file.

    Returns a list of ``{"path", "backup", "existed"}`` (a file that did not exist is removed
    by a rollback).
    """
    written = []
    for path in sorted(files):
        old, new = files[path]
        if new is None:
            if old is not None:
                saved = backup_path(path) if backup else None
                if saved:
                    shutil.copy2(path, saved)
                os.unlink(path)
                written.append({"path": path, "backup": saved, "existed": True})
            continue
        directory = os.path.dirname(path)
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        saved = None
        mode = 0o644
        if old is not None:
            mode = os.stat(path).st_mode & 0o7777
            if backup:
                saved = backup_path(path)
                shutil.copy2(path, saved)
        fd, tmp = tempfile.mkstemp(prefix=".gpufleet-", dir=directory)
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(new)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, mode)
            os.rename(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        written.append({"path": path, "backup": saved, "existed": old is not None})
    return written


# ---------------------------------------------------------------------------------------------
# One entry point for the module
# ---------------------------------------------------------------------------------------------

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
        carry = True
        if mode == "drop-in" and has_binary:
            found = containerd_version(containerd_binary, run=run)
            carry = found is None or found < (2, 1)
        other = []
        if mode == "drop-in" and root_text is not None:
            other = _other_imports(root_text, config_path, dropin_path, read)
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


UNIT_DIRS = ("/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system")


def resolve_service(preset_name, exists=os.path.exists):
    """The service that runs the preset's runtime on this host: k3s server ``k3s`` or agent
    ``k3s-agent``, RKE2 ``rke2-server`` or ``rke2-agent`` (the RKE2 installer ships both units,
    so an enabled one wins), k0s ``k0sworker`` or ``k0scontroller``. Falls back to the preset's."""
    preset = resolve_preset(preset_name)
    candidates = preset.get("services") or (preset["service"],)
    for name in candidates:
        if exists("/etc/systemd/system/multi-user.target.wants/%s.service" % name):
            return name
    for name in candidates:
        if any(exists("%s/%s.service" % (d, name)) for d in UNIT_DIRS):
            return name
    return preset["service"]


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


def table_markdown():
    """The distribution -> files -> socket table (used by the module docs and a unit test)."""
    rows = ["| preset | distribution | files written | socket |", "|---|---|---|---|"]
    for name in sorted(PRESETS):
        preset = PRESETS[name]
        files = [p for p in (preset["config"], preset["dropin"]) if p]
        if preset.get("distro_config"):
            files.append("(no template:) " + preset["distro_config"])
        rows.append("| %s | %s | %s | %s |" % (name, preset["description"], ", ".join(files), preset["socket"]))
    return "\n".join(rows)
