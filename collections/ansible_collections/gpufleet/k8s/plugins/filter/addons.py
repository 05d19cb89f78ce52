# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Jinja2 filters of the add-on roles: each hands the plan and the role's inputs to module_utils.

``inputs`` is the dict of the role's variables (``<role>_*`` and ``gpufleet_*``), the same shape
preflight receives as ``extra``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import dcgm_exporter, gpu_operator
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.addons import settings
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.addons_preflight import addon_problems
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import device_plugin_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.nfd import nfd_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import plain


def _guard(func, *args):
    try:
        return func(*[plain(a) for a in args])
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("gpufleet add-on rendering failed (%s: %s); run preflight to see which input is wrong"
                                 % (type(exc).__name__, exc))


def addon_settings(plan, inputs):
    return _guard(settings, plan, inputs)


def addon_problems_filter(plan, inputs):
    return addon_problems(plain(plan), plain(inputs))


def device_plugin_objects_filter(plan, inputs):
    return _guard(device_plugin_objects, plan, inputs)


def nfd_objects_filter(plan, inputs):
    return _guard(nfd_objects, plan, inputs)


def dcgm_exporter_objects_filter(plan, inputs, service_monitor_api=False):
    return _guard(dcgm_exporter.dcgm_exporter_objects, plan, inputs, service_monitor_api)


def dcgm_scrape_job(plan, inputs):
    return _guard(dcgm_exporter.scrape_job, plan, inputs)


def gpu_operator_values_file(plan, inputs, service_monitor_api=False):
    return _guard(gpu_operator.values_file, plan, inputs, service_monitor_api)


def gpu_operator_values(plan, inputs, service_monitor_api=False):
    return _guard(gpu_operator.operator_values, plan, inputs, service_monitor_api)


def gpu_operator_objects(plan, inputs):
    return _guard(gpu_operator.operator_objects, plan, inputs)


def gpu_operator_policy_objects(plan, inputs):
    return _guard(gpu_operator.cluster_policy_objects, plan, inputs)


def gpu_operator_install(plan, inputs):
    """What the role needs to install: preset, namespace, chart and notes."""
    def build(plan_, inputs_):
        s = settings(plan_, inputs_)
        return {"preset": gpu_operator.preset(plan_, s), "namespace": gpu_operator.namespace_name(plan_, s),
                "chart": gpu_operator.chart(s), "notes": gpu_operator.notes(plan_, inputs_)}
    return _guard(build, plan, inputs)


class FilterModule(object):
    def filters(self):
        return {
            "addon_settings": addon_settings,
            "addon_problems": addon_problems_filter,
            "device_plugin_objects": device_plugin_objects_filter,
            "nfd_objects": nfd_objects_filter,
            "dcgm_exporter_objects": dcgm_exporter_objects_filter,
            "dcgm_scrape_job": dcgm_scrape_job,
            "gpu_operator_values_file": gpu_operator_values_file,
            "gpu_operator_values": gpu_operator_values,
            "gpu_operator_objects": gpu_operator_objects,
            "gpu_operator_policy_objects": gpu_operator_policy_objects,
            "gpu_operator_install": gpu_operator_install,
        }
