# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""gpufleet's one file-writing path: plan (only what differs), diff, write atomically.

Standard library only, so modules that run on the nodes (node_stamp) use it as well as the
controller-side renderers (render.py re-exports it).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile


def read_text(path):
    """The file's text, or None when it does not exist."""
    if not os.path.isfile(path):
        return None
    with open(path, "r") as handle:
        return handle.read()


def plan_files(dest, wanted, modes=None):
    """{filename: (current text or None, wanted text)} for the files of ``wanted`` whose content
    (or, with ``modes`` {filename: mode}, permission bits; default 0644) differs."""
    writes = {}
    for name, text in wanted.items():
        path = os.path.join(dest, name)
        current = read_text(path)
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
