# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Preflight: every check of an inventory, run before anything on a host or cluster changes.

Each concern contributes a function ``check(params, plan, problems)``; ``run_preflight`` runs
them all so that a user sees every problem at once, each naming its variable.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2 import upgrade_plan
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools import pools_check
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools import gke
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_presets
from ansible_collections.gpufleet.k8s.plugins.module_utils.node import driver_compat
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import validate_inventory
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import addons_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import mirror_urls
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import repo_keys
from ansible_collections.gpufleet.k8s.plugins.module_utils.node import node_stamp
from ansible_collections.gpufleet.k8s.plugins.module_utils.node import node_prep
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import gpu_monitoring
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import awx_survey
from ansible_collections.gpufleet.k8s.plugins.module_utils.model import k8s_syntax
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import output_tree
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import runtime_removal
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import input_text
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import gitops
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import dra_driver
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import cluster_pools
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation_metrics
from ansible_collections.gpufleet.k8s.plugins.module_utils.model import kube_versions
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.kube import cluster_access

# Further checks (driver compatibility, add-on exclusivity, provider rules) append here.
CHECKS = []
CHECKS.append(upgrade_plan.check)
CHECKS.append(pools_check.check)
CHECKS.append(gke.check)
CHECKS.append(containerd_presets.check)
CHECKS.append(addons_preflight.check)
CHECKS.append(driver_compat.check)
CHECKS.append(mirror_urls.check)
CHECKS.append(repo_keys.check)
CHECKS.append(node_stamp.check_inputs)
CHECKS.append(node_prep.check)
CHECKS.append(gpu_monitoring.check)
CHECKS.append(awx_survey.check)
CHECKS.append(k8s_syntax.check)
CHECKS.append(output_tree.check)
CHECKS.append(runtime_removal.check)
CHECKS.append(input_text.check)
CHECKS.append(gitops.check)
CHECKS.append(dra_driver.check)
CHECKS.append(cluster_pools.check)
CHECKS.append(remediation_metrics.check)
CHECKS.append(kube_versions.check)
CHECKS.append(remediation_preflight.check)
CHECKS.append(cluster_access.check)


def secret_values(params):
    """Strings of the inputs that must not appear in preflight's result (its arguments are printed with it at
    -vvv): a Prometheus URL with credentials in it and an inline kubeconfig's secrets, which preflight refuses."""
    extra = params.get("extra") or {}
    return remediation_metrics.url_secrets(extra) | cluster_access.secret_values(extra)


def run_preflight(params):
    """Return ``(errors, warnings, plan)`` for the inventory ``params``.

    The cluster's part of the fleet pools (gpufleet_fleet_pools) is appended to its own pools first,
    so that every check below applies to them; messages name them by their own variable."""
    fleet_problems = Problems()
    params, own, index = cluster_pools.merge(params, fleet_problems)
    problems, plan = validate_inventory(params)
    problems.extend(fleet_problems)
    if not problems.errors:
        for check in CHECKS:
            check(params, plan, problems)
    if index:
        plan["fleet_pools"] = [pool.get("name") for pool in plan["pools"][own:] if isinstance(pool, dict)]
    errors = cluster_pools.rename(problems.errors, own, index)
    return errors, cluster_pools.rename(problems.warnings, own, index), plan
