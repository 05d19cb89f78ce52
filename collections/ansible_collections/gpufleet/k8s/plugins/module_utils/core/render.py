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

import json
import os
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import HAS_YAML, yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
# The file-writing path lives in files.py (no PyYAML there); re-exported for the renderers
# (apply_render: the old name of write_planned, for callers on branches in flight).
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import (  # noqa: F401 pylint: disable=unused-import
    apply_render, file_diffs, plan_files, refuse_links, write_planned)
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.input_text import text_error

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


def comment(text):
    """``text`` as one YAML comment line (``# text`` and a line feed). Every comment of a rendered
    file goes through here: a line break in ``text`` would end the comment and make the rest of it
    YAML (issue 30 item 2), so text that is not one line of printable characters is refused."""
    if not isinstance(text, str):
        text = str(text)
    reason = text_error(text)
    if reason:
        start = text[:next(i for i, c in enumerate(text) if text_error(c))]
        raise GpufleetError("a comment line of a rendered file (%r...) %s" % (start[-60:], reason))
    return "# %s\n" % text if text else "#\n"


def comments(*lines):
    """Several ``comment`` lines, in order."""
    return "".join(comment(line) for line in lines)


def check_header(header):
    """``header`` (text put before a rendered object) when it is comment lines only, each ``# ...``
    ending in a line feed with no other line break; else GpufleetError."""
    if not header:
        return header
    if not header.endswith("\n"):
        raise GpufleetError("header %r does not end with a line feed; use comment lines ('# ...\\n')" % (header,))
    for line in header[:-1].split("\n"):
        if not line.startswith("#") or text_error(line):
            raise GpufleetError("header line %r is not one comment line; use lines that start with '#' and hold no "
                                "other line break or control character" % (line,))
    return header


def object_filename(index, obj):
    try:
        kind = obj["kind"].lower()
        name = obj["metadata"]["name"]
    except (KeyError, TypeError, AttributeError):
        raise GpufleetError("object %d has no kind or metadata.name: %r" % (index, obj))
    safe = re.sub(r"[^a-z0-9.-]", "-", str(name).lower())
    return "%02d-%s-%s.yaml" % (index, kind, safe)


def plan_render(dest, objects, header=None):
    """Return (wanted, writes, removes): every file, those to (re)write, stale ones to delete.
    ``header``: comment lines (``check_header``). A symbolic link on the way to ``dest`` or in it is
    refused (files.refuse_links) before anything is read."""
    header = check_header(header)
    refuse_links(dest, tree=True)
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


def objects_from_json(value):
    """The list of objects ``objects_json`` holds; GpufleetError (what is wrong) otherwise.

    ansible-core 2.18 turns a templated text that reads as a Python literal (JSON without true, false or
    null) into the list itself before the module sees it: a list is taken as it is."""
    if isinstance(value, (list, tuple)):
        objects = list(value)
    else:
        try:
            objects = json.loads(value)
        except (TypeError, ValueError) as exc:
            raise GpufleetError("objects_json is not JSON: %s" % exc)
    if not isinstance(objects, list) or not all(isinstance(item, dict) for item in objects):
        raise GpufleetError("objects_json must hold a list of objects (mappings), got %s" % type(objects).__name__)
    return objects
