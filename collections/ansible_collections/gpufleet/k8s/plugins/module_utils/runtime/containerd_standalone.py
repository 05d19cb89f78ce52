# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The nvidia runtime in a drop-in that the distribution merges by itself (k0s ``containerd.d``, CRI-O
``crio.conf.d``): gpufleet writes the whole drop-in and never touches the distribution's own config."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor import tomlkit
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime.containerd_presets import (
    DEFAULT_RUNTIME_TYPE, NVIDIA_RUNTIME_BINARY, as_int)
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime.containerd_toml import (
    _ensure, _set, apply_runtime, cri_path, detect_version, parse, plain)


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
        version = as_int(config_version) or 2
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
