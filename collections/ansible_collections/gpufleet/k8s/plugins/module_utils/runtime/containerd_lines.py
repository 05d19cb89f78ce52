# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The line-by-line safety net of every containerd config gpufleet writes: no line of the user's file is lost
or moved, except the keys gpufleet manages."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError


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
