# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Preflight of the remediation policy (issue 39): a policy that cannot hold (``reboot`` on EKS,
``max_percent: 150``) was refused only by gpu_remediate, after the cluster had been reached. The same
rules (remediation.validate_policy, with the inventory's platform) now run in preflight, before any
stage reads or changes anything."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.remediation import POLICY_DEFAULTS, PREFIX, \
    validate_policy


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def _float(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


# the casts roles/gpu_remediation/vars/main.yml applies (Jinja's bool, int and float filters) before
# gpu_remediate sees the policy: `-e gpu_remediation_dry_run=false` arrives as text and is a boolean there
CASTS = {"dry_run": lambda v: boolean(v, strict=False), "restore": lambda v: boolean(v, strict=False),
         "drain_force": lambda v: boolean(v, strict=False),
         "delete_emptydir_data": lambda v: boolean(v, strict=False),
         "max_nodes": _int, "hosts_at_once": _int, "drain_timeout": _int, "max_percent": _float}


def check(params, plan, problems):
    """Preflight: the gpu_remediation_* policy inputs that are set, checked against the platform."""
    extra = params.get("extra") or {}
    # the Prometheus URL has its own check with the access settings (remediation_metrics.check)
    raw = dict((key[len(PREFIX):], value) for key, value in extra.items()
               if key.startswith(PREFIX) and key[len(PREFIX):] in POLICY_DEFAULTS
               and key[len(PREFIX):] != "prometheus_url")
    if not raw:
        return
    raw = dict((key, CASTS[key](value) if key in CASTS else value) for key, value in raw.items())
    try:
        validate_policy(raw, plan.get("platform"))
    except GpufleetError as exc:
        for message in exc.details.get("errors") or [exc.msg]:
            name, _sep, text = message.partition(": ")
            problems.error(name, text)
