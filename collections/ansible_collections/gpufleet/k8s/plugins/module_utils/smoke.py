# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Smoke Jobs for the validate stage: one CUDA job per pool, and one metrics probe."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.expected import POOL_LABEL
from ansible_collections.gpufleet.k8s.plugins.module_utils.placement import placement as pool_placement

SMOKE_LABEL = "gpufleet.io/validate"


def smoke_job(pool, platform, image, namespace, timeout, placement=None, runtime_class=None):
    """A Job running the CUDA vectorAdd sample on one GPU (or one shared/MIG slice) of the pool,
    placed like the pool's workloads (``gpufleet.k8s.gpu_pod_placement``) unless ``placement``
    gives another fragment."""
    fragment = pool_placement(pool, platform, gpus=1, runtime_class=runtime_class)
    if placement is not None:
        fragment = dict(placement, resources=fragment["resources"])
    pod_spec = {
        "restartPolicy": "Never",
        "containers": [{
            "name": "cuda-vectoradd",
            "image": image,
            "resources": fragment["resources"],
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }],
    }
    if runtime_class:
        fragment.setdefault("runtimeClassName", runtime_class)
    for key in ("nodeSelector", "affinity", "tolerations", "runtimeClassName"):
        if fragment.get(key):
            pod_spec[key] = fragment[key]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "gpufleet-smoke-" + pool["name"], "namespace": namespace,
                     "labels": {SMOKE_LABEL: "smoke", POOL_LABEL: pool["name"]}},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": int(timeout),
            "ttlSecondsAfterFinished": 3600,
            "template": {"metadata": {"labels": {SMOKE_LABEL: "smoke"}}, "spec": pod_spec},
        },
    }


def metrics_job(image, namespace, exporter_namespace, exporter_service, timeout):
    """A Job that fetches the exporter's /metrics and requires DCGM_FI_DEV_GPU_UTIL in it."""
    url = "http://%s.%s.svc:9400/metrics" % (exporter_service, exporter_namespace)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "gpufleet-metrics-check", "namespace": namespace, "labels": {SMOKE_LABEL: "metrics"}},
        "spec": {
            "backoffLimit": 2,
            "activeDeadlineSeconds": int(timeout),
            "ttlSecondsAfterFinished": 3600,
            "template": {"metadata": {"labels": {SMOKE_LABEL: "metrics"}}, "spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "probe", "image": image,
                    "command": ["sh", "-c", "curl -fsS --max-time 20 %s | grep -q '^DCGM_FI_DEV_GPU_UTIL'" % url],
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                        "runAsNonRoot": True, "runAsUser": 65534},
                }],
            }},
        },
    }


def job_result(job):
    """'passed', 'failed: <reason>' or 'failed: did not finish' from a Job object (k8s_info)."""
    for cond in ((job or {}).get("status") or {}).get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") == "Complete":
            return "passed"
        if cond.get("status") == "True" and cond.get("type") == "Failed":
            return "failed: %s" % (cond.get("reason") or cond.get("message") or "Failed")
    return "failed: did not finish"


def smoke_results(jobs):
    """{pool name: result} from the smoke Jobs (k8s_info resources)."""
    out = {}
    for job in jobs or []:
        labels = (job.get("metadata") or {}).get("labels") or {}
        if labels.get(SMOKE_LABEL) == "smoke" and POOL_LABEL in labels:
            out[labels[POOL_LABEL]] = job_result(job)
    return out


def rollout_failures(results):
    """Messages for DaemonSets (k8s_info loop results) that are missing or not fully rolled out."""
    failures = []
    for result in results or []:
        item = result.get("item") or {}
        name = "%s/%s" % (item.get("namespace"), item.get("name"))
        resources = result.get("resources") or []
        if not resources:
            failures.append("DaemonSet %s not found" % name)
            continue
        status = resources[0].get("status") or {}
        desired = status.get("desiredNumberScheduled", 0)
        ready = status.get("numberReady", 0)
        updated = status.get("updatedNumberScheduled", 0)
        if desired == 0 or ready != desired or updated != desired:
            failures.append("DaemonSet %s not rolled out (desired %d, ready %d, updated %d)" % (name, desired, ready, updated))
    return failures
