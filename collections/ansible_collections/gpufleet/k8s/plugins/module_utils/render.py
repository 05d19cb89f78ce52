# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Deterministic rendering of Kubernetes objects into a directory (GitOps output).

One file per object, named ``NN-<kind>-<name>.yaml`` in list order; files this directory held
from an earlier render that are no longer wanted are removed. Writing is atomic per file and
only happens when the content differs, so a re-render reports no change.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.yaml_support import HAS_YAML, yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.errors import GpufleetError
# The file-writing path lives in files.py (no PyYAML there); re-exported for the renderers
# (apply_render: the old name of write_planned, for callers on branches in flight).
from ansible_collections.gpufleet.k8s.plugins.module_utils.files import (  # noqa: F401 pylint: disable=unused-import
    apply_render, file_diffs, plan_files, write_planned)

MANAGED_NAME = re.compile(r"^[0-9]{2,}-[a-z0-9.-]+\.ya?ml$")


def _str_presenter(dumper, data):
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


if HAS_YAML:  # else the module fails first (yaml_support.require_yaml)
    # libyaml's emitter when PyYAML has it: the same text (checked on every rendered file of the
    # example and 200-pool inventories, and by the golden tests), about five times faster.
    class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
        """Block style, multi-line strings as literal blocks (ConfigMap data stays readable)."""

    _Dumper.add_representer(str, _str_presenter)


def dump_yaml(obj):
    return yaml.dump(obj, Dumper=_Dumper, default_flow_style=False, sort_keys=True, allow_unicode=True,
                     width=120)


def object_filename(index, obj):
    try:
        kind = obj["kind"].lower()
        name = obj["metadata"]["name"]
    except (KeyError, TypeError, AttributeError):
        raise GpufleetError("object %d has no kind or metadata.name: %r" % (index, obj))
    safe = re.sub(r"[^a-z0-9.-]", "-", str(name).lower())
    return "%02d-%s-%s.yaml" % (index, kind, safe)


def plan_render(dest, objects, header=None):
    """Return (wanted, writes, removes): every file, those to (re)write, stale ones to delete."""
    wanted = {}
    for index, obj in enumerate(objects):
        text = dump_yaml(obj)
        if header:
            text = header + text
        wanted[object_filename(index, obj)] = text
    writes = plan_files(dest, wanted)
    removes = []
    if os.path.isdir(dest):
        for name in sorted(os.listdir(dest)):
            if MANAGED_NAME.match(name) and name not in wanted:
                removes.append(name)
    return wanted, writes, removes
