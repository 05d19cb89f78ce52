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
import tempfile

import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.errors import GpufleetError

MANAGED_NAME = re.compile(r"^[0-9]{2,}-[a-z0-9.-]+\.ya?ml$")


class _Dumper(yaml.SafeDumper):
    """Block style, multi-line strings as literal blocks (ConfigMap data stays readable)."""


def _str_presenter(dumper, data):
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


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


def plan_files(dest, wanted, modes=None):
    """{filename: (current text or None, wanted text)} for the files of ``wanted`` whose content
    (or, with ``modes`` {filename: mode}, permission bits; default 0644) differs."""
    writes = {}
    for name, text in wanted.items():
        path = os.path.join(dest, name)
        current = None
        if os.path.isfile(path):
            with open(path, "r") as handle:
                current = handle.read()
        mode = (modes or {}).get(name, 0o644)
        if current != text or (current is not None and (os.stat(path).st_mode & 0o777) != mode):
            writes[name] = (current, text)
    return writes


def file_diffs(dest, writes, removes=()):
    """Ansible ``diff`` entries for planned writes and removals."""
    out = [dict(before=old or "", after=new, before_header=os.path.join(dest, name), after_header=os.path.join(dest, name))
           for name, (old, new) in sorted(writes.items())]
    out += [dict(before="(file)", after="", before_header=os.path.join(dest, name), after_header="(removed)")
            for name in removes]
    return out


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


def apply_render(dest, writes, removes, modes=None):
    """Write each planned file atomically (mode from ``modes``, default 0644), then remove ``removes``."""
    if not os.path.isdir(dest):
        os.makedirs(dest)
    for name, (_old, text) in sorted(writes.items()):
        fd, tmp = tempfile.mkstemp(dir=dest, prefix=".tmp-")
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, (modes or {}).get(name, 0o644))
        os.rename(tmp, os.path.join(dest, name))
    for name in removes:
        os.unlink(os.path.join(dest, name))
