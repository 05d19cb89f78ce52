# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Preflight of the remediation policy (issue 39): a policy that cannot hold (``reboot`` on EKS,
``max_percent: 150``) was refused only by gpu_remediate, after the cluster had been reached. The same
rules (remediation.validate_policy, with the inventory's platform) now run in preflight, before any
stage reads or changes anything."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.remediation import POLICY_DEFAULTS, PREFIX, \
    validate_policy


def check(params, plan, problems):
    """Preflight: the gpu_remediation_* policy inputs that are set, checked against the platform."""
    extra = params.get("extra") or {}
    # the Prometheus URL has its own check with the access settings (remediation_metrics.check)
    raw = dict((key[len(PREFIX):], value) for key, value in extra.items()
               if key.startswith(PREFIX) and key[len(PREFIX):] in POLICY_DEFAULTS
               and key[len(PREFIX):] != "prometheus_url")
    if not raw:
        return
    try:
        validate_policy(raw, plan.get("platform"))
    except GpufleetError as exc:
        for message in exc.details.get("errors") or [exc.msg]:
            name, _sep, text = message.partition(": ")
            problems.error(name, text)
