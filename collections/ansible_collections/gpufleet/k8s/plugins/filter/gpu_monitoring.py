# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Filters of role gpu_monitoring (module_utils/addons/gpu_monitoring.py): dashboard, alert rules."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import gpu_monitoring
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import plain as _plain


def gpu_monitoring_problems(plan, inputs):
    """Input errors of role gpu_monitoring (empty when valid)."""
    return gpu_monitoring.problems(_plain(plan), _plain(inputs))


def gpu_monitoring_objects(plan, inputs, monitoring_api=False):
    """Namespace, dashboard ConfigMap and (when wanted) the PrometheusRule."""
    try:
        return gpu_monitoring.monitoring_objects(_plain(plan), _plain(inputs), bool(monitoring_api))
    except GpufleetError as exc:
        raise AnsibleFilterError(exc.msg)


def gpu_monitoring_rules_file(plan, inputs):
    """The Prometheus rules file text."""
    try:
        return gpu_monitoring.rules_file(_plain(plan), _plain(inputs))
    except GpufleetError as exc:
        raise AnsibleFilterError(exc.msg)


class FilterModule(object):
    def filters(self):
        return {
            "gpu_monitoring_problems": gpu_monitoring_problems,
            "gpu_monitoring_objects": gpu_monitoring_objects,
            "gpu_monitoring_rules_file": gpu_monitoring_rules_file,
        }
