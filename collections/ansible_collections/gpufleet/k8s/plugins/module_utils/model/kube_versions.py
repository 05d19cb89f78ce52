# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The Kubernetes versions gpufleet supports, and the preflight check of every input that names one.

A version input is a minor version as the user writes it (``"1.34"``; a patch or a provider suffix such as
``1.35.1-gke.100`` is accepted where the input allows it). Each must lie in SUPPORTED (the range the
README's support table states and the test control planes cover: the oldest minor's kube-apiserver and
the newest one run in the test command). Before this check ``"1.99"``, ``"1.30"`` and ``"1.340"`` were
accepted anywhere a version was read.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs

SUPPORTED = ((1, 32), (1, 37))
# MAJOR.MINOR, an optional .PATCH, an optional provider suffix; a leading v is tolerated
VERSION = re.compile(r"^v?(1)\.(0|[1-9][0-9]?)(\.(0|[1-9][0-9]{0,2}))?([-+][0-9A-Za-z.-]+)?$")
# (variable, role whose defaults hold it, platforms it is read on: None for every platform)
INPUTS = (("gpufleet_kubernetes_version", "gpufleet", None),
          ("gpu_pools_eks_kubernetes_version", "gpu_pools", ("eks",)))


def text(version):
    return "%d.%d" % version


def parse(value):
    """(major, minor) of a version input, or None when it is not one (``1.340``, ``1.x``, 1.3 as a number)."""
    if not isinstance(value, str):
        return None
    match = VERSION.match(value.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def problem(value):
    """Why ``value`` is not a supported Kubernetes version, or ""."""
    parsed = parse(value)
    low, high = SUPPORTED
    allowed = "a quoted minor version from \"%s\" to \"%s\"" % (text(low), text(high))
    if parsed is None:
        return "%r is not a Kubernetes version; use %s (e.g. \"%s\")" % (value, allowed, text(high))
    if not low <= parsed <= high:
        return "%s is outside the versions gpufleet supports; use %s" % (text(parsed), allowed)
    return ""


def check(params, plan, problems):
    """Preflight: every Kubernetes version input, when set, is one gpufleet supports."""
    extra = params.get("extra") or {}
    platform = plan.get("platform")
    for var, role, platforms in INPUTS:
        if platforms is not None and platform not in platforms:
            continue
        value = extra.get(var, role_specs.defaults(role, prefix=var).get(var))
        if value in (None, ""):
            continue
        why = problem(value)
        if why:
            problems.error(var, why)
