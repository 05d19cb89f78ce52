# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Filters of role fleet_report: the cluster's Nodes and cut-down Pods from the stage's read, or the read's
error (module_utils/fleet/fleet_report.py); the Prometheus access settings that cannot be used
(module_utils/fleet/remediation_metrics.py, shared with gpu_remediation); the utilisation query
(module_utils/fleet/fleet_report.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import cluster_reads, utilisation_query
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import plain
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.remediation_metrics import credentials_problems


def fleet_report_cluster(results):
    try:
        return cluster_reads(plain(results))
    except GpufleetError as exc:
        raise AnsibleFilterError(exc.msg)


def prometheus_access_problems(url, prefix, username="", password="", bearer_token=""):
    return credentials_problems(str(prefix), str(url or ""), str(username or ""), str(password or ""),
                                str(bearer_token or ""))


def fleet_report_utilisation_query(window):
    return utilisation_query(str(window))


class FilterModule(object):
    def filters(self):
        return {"fleet_report_cluster": fleet_report_cluster, "prometheus_access_problems": prometheus_access_problems,
                "fleet_report_utilisation_query": fleet_report_utilisation_query}
