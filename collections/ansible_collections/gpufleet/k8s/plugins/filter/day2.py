# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Day-2 filters: validation expectations and verdicts, rolling-upgrade plans."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.expected import (
    expected_resources, format_table, validate_nodes)
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.smoke import (
    exporter_target, job_result, metrics_job, rollout_failures, smoke_job, smoke_results)
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.upgrade_plan import failure_note, leftover_nodes, plan_upgrade


def gpu_validation(nodes, pools, smoke=None, metrics=None, slices=None, probe=None):
    rows, failures = validate_nodes(pools, nodes, smoke, metrics, slices, probe)
    return {"rows": rows, "failures": failures, "table": format_table(rows)}


def upgrade_failure_note(node, step, reason, host=None, cordoned=True):
    value, instructions = failure_note(node, step, reason, host, cordoned)
    return {"annotation": value, "instructions": instructions}


def gpu_validate_exporter(plan, values):
    """[namespace, Service] of the dcgm-exporter to probe, or None (no exporter deployed by gpufleet)."""
    target = exporter_target(plan, values or {})
    return list(target) if target else None


def gpu_smoke_jobs(pools, platform, image, namespace, timeout, placements=None, runtime_class=None):
    placements = placements or {}
    return [smoke_job(pool, platform, image, namespace, timeout, placements.get(pool["name"]), runtime_class)
            for pool in pools]


class FilterModule(object):
    def filters(self):
        return {
            "gpu_expected_resources": expected_resources,
            "gpu_validation": gpu_validation,
            "gpu_upgrade_plan": plan_upgrade,
            "gpu_upgrade_failure_note": upgrade_failure_note,
            "gpu_upgrade_leftovers": leftover_nodes,
            "gpu_smoke_jobs": gpu_smoke_jobs,
            "gpu_metrics_job": metrics_job,
            "gpu_job_result": job_result,
            "gpu_smoke_results": smoke_results,
            "gpu_rollout_failures": rollout_failures,
            "gpu_validate_exporter": gpu_validate_exporter,
        }
