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

Everything here is pure (text in, text out): presets and input checks are in
``containerd_presets``, validation with the real binary in ``containerd_validate``, reading the
live files and the one entry point in ``containerd_plan``; files.py writes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor import tomlkit
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor.tomlkit.exceptions import TOMLKitError
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime.containerd_presets import (
    CONFIG_VERSIONS, CRI_PATHS, DEFAULT_RUNTIME_TYPE, MODES, NVIDIA_RUNTIME_BINARY, as_int, builtin_default)
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime.containerd_lines import check_preserved


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
    version = as_int(plain(doc["version"]))
    if version not in CONFIG_VERSIONS:
        raise GpufleetError("version: %r is not a containerd config version gpufleet knows; use %s"
                            % (plain(doc["version"]), one_of(CONFIG_VERSIONS)))
    return version


def cri_path(version):
    return CRI_PATHS[version]


def get_in(container, keys):
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
    effective = base if base is not None else plain(get_in(doc, cri_keys) or {})
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
    # Every other setting of the source runtime is inherited too, as nvidia-ctk does: base_runtime_spec,
    # privileged_without_host_devices, annotations, snapshotter, ... (with nvidia as the default runtime, a
    # setting left behind would be lost for every pod).
    inherited = [(key, value) for key, value in source.items() if key not in ("runtime_type", "options")]
    if runtime_name not in runtimes:
        table = tomlkit.table()
        table["runtime_type"] = source.get("runtime_type") or DEFAULT_RUNTIME_TYPE
        for key, value in inherited:
            table[key] = copy.deepcopy(value)
        options = tomlkit.table()
        for key in sorted(wanted_options):
            options[key] = wanted_options[key]
        table["options"] = options
        runtimes[runtime_name] = table
        actions.append("added runtime %s" % runtime_name)
    else:
        table = runtimes[runtime_name]
        changed = _set(table, "runtime_type", source.get("runtime_type") or DEFAULT_RUNTIME_TYPE)
        for key, value in inherited:
            if key not in table:  # a key the nvidia runtime already has is the user's
                table[key] = copy.deepcopy(value)
                changed = True
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
            root_new_base = builtin_default(as_int(config_version) or 2)
            created_from = "built-in default (version %d)" % (as_int(config_version) or 2)
    else:
        root_new_base = root_text
    root_doc = parse(root_new_base, root_path, strict=root_text is not None and mode == "in-place")
    version = detect_version(root_doc)
    cri_keys = cri_path(version)
    files = {}
    actions = []

    if mode == "in-place":
        before_default = (plain(get_in(root_doc, cri_keys + ("containerd",)) or {})).get("default_runtime_name")
        actions = apply_runtime(root_doc, version, runtime_name, binary, set_as_default, enable_cdi)
        check_imports_keep_edit(root_doc, version, root_path, other_dropins, runtime_name,
                                set_as_default or before_default == runtime_name, enable_cdi, carry_cri_table)
        new_root = tomlkit.dumps(root_doc)
        if new_root != root_text:
            check_preserved(root_text, new_root, root_path, runtime_name)
            files[root_path] = (root_text, new_root)
        return dict(files=files, version=version, cri_path=list(cri_keys), actions=actions,
                    created_from=created_from)

    # Drop-in mode: the effective CRI table is the root's, replaced by any other imported file
    # that defines it (containerd < 2.1 replaces whole plugin tables on import).
    effective = plain(get_in(root_doc, cri_keys) or {})
    for path, text in other_dropins or []:
        other = parse(text, path)
        if detect_version(other) != version:
            raise GpufleetError("%s has config version %d but %s has %d: containerd refuses to start with "
                                "mixed versions; align them first" % (path, detect_version(other), root_path, version))
        table = get_in(other, cri_keys)
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


def _deep_merge(dst, src):
    for key, value in src.items():
        if isinstance(value, dict) and isinstance(dst.get(key), dict):
            _deep_merge(dst[key], value)
        else:
            dst[key] = value


def check_imports_keep_edit(doc, version, root_path, other_dropins, runtime_name="nvidia", check_default=False,
                            enable_cdi=False, replace_tables=True):
    """Mode in-place: refuse when a file the root imports takes back what the edit wrote into ``doc``.

    containerd applies imported files after the root file: before 2.1 (``replace_tables``, also when the
    version is unknown) an imported file that has the CRI plugin table replaces it whole, from 2.1 its keys
    win one by one. The nvidia runtime's runtime_type and BinaryName, default_runtime_name (``check_default``)
    and enable_cdi (``enable_cdi``) must survive the imports, else the change would be reported but not take
    effect (without a containerd binary nothing else would notice)."""
    cri_keys = cri_path(version)
    runtime = ("containerd", "runtimes", runtime_name)
    checked = [runtime + ("runtime_type",), runtime + ("options", "BinaryName")]
    if check_default:
        checked.append(("containerd", "default_runtime_name"))
    if enable_cdi:
        checked.append(("enable_cdi",))
    implied = {("containerd", "default_runtime_name"): "runc", ("enable_cdi",): version >= 3}

    def value(table, keys):
        found = get_in(table, keys)
        return implied.get(keys) if found is None else found

    effective = plain(get_in(doc, cri_keys) or {})
    for path, text in other_dropins or []:
        table = get_in(plain(parse(text, path)), cri_keys)
        if table is None:
            continue
        after = copy.deepcopy(table) if replace_tables else copy.deepcopy(effective)
        if not replace_tables:
            _deep_merge(after, table)
        for keys in checked:
            if value(after, keys) != value(effective, keys):
                found = value(after, keys)
                if replace_tables:
                    how = "has its own [%s] table, which replaces the whole table of %s before containerd 2.1, so %s" % (
                        ".".join(cri_keys), root_path, ".".join(keys))
                    how += " is not set there" if found is None else " is %r there" % (found,)
                else:
                    how = "sets %s = %r, which wins over the %r written into %s" % (
                        ".".join(keys), found, value(effective, keys), root_path)
                raise GpufleetError("mode in-place cannot take effect: %s, imported by %s, %s; use mode drop-in "
                                    "(gpufleet's drop-in is imported last) or change %s" % (path, root_path, how, path))
        effective = after


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
