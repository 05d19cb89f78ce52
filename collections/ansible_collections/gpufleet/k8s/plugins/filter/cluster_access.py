# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Jinja2 filters for the one cluster connection: the kubernetes.core and helm connection options built
from gpufleet_k8s_*, the retired per-role connection variables, the helm/OLM availability checks and the message of a
failed kubernetes.core task whose output is hidden."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube import cluster_access


class FilterModule(object):
    def filters(self):
        return {
            "k8s_connection": cluster_access.connection,
            "helm_connection": cluster_access.helm_connection,
            "k8s_retired_vars": cluster_access.retired,
            "helm_problem": cluster_access.helm_problem,
            "olm_problem": cluster_access.olm_problem,
            "k8s_apply_problem": cluster_access.apply_problem,
            "k8s_task_problem": cluster_access.task_problem,
        }
