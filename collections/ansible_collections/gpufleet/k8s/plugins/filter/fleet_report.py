# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Filter of role fleet_report: the cluster's Nodes and cut-down Pods from the stage's read, or the read's
error (module_utils/fleet/fleet_report.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import cluster_reads
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import plain


def fleet_report_cluster(results):
    try:
        return cluster_reads(plain(results))
    except GpufleetError as exc:
        raise AnsibleFilterError(exc.msg)


class FilterModule(object):
    def filters(self):
        return {"fleet_report_cluster": fleet_report_cluster}
