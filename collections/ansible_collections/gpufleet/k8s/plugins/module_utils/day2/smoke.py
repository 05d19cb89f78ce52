# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Smoke Jobs for the validate stage: one CUDA job per pool, and one metrics probe."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import addons as _a
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import gpu_operator as _op
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_exporter import NAME
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.expected import POOL_LABEL
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.placement import (
    DO_NOT_DISRUPT, RESTRICTED_CONTAINER, RESTRICTED_POD, placement as pool_placement)

SMOKE_LABEL = "gpufleet.io/validate"
METRICS_JOB = "gpufleet-metrics-check"

# The validation namespace enforces Pod Security "restricted" (RESTRICTED_POD, RESTRICTED_CONTAINER from
# placement, which the example Jobs use too): non-root, a non-zero UID, the runtime's default seccomp
# profile, no privilege escalation, every capability dropped.


def smoke_job(pool, platform, image, namespace, timeout, placement=None, runtime_class=None):
    """A Job running the CUDA vectorAdd sample on one GPU (or one shared/MIG slice) of the pool,
    placed like the pool's workloads (``gpufleet.k8s.gpu_pod_placement``) unless ``placement``
    gives another fragment. On EKS its pod carries ``karpenter.sh/do-not-disrupt: "true"``: Karpenter does not
    consolidate or drift the node away while the check runs (a validation that fails because the node under it
    was removed says nothing about the pool)."""
    fragment = pool_placement(pool, platform, gpus=1, runtime_class=runtime_class)
    if placement is not None:
        fragment = dict(placement, resources=fragment["resources"],
                        **({"resourceClaims": fragment["resourceClaims"]} if "resourceClaims" in fragment else {}))
    pod_spec = {
        "restartPolicy": "Never",
        "securityContext": dict(RESTRICTED_POD),
        "containers": [{
            "name": "cuda-vectoradd",
            "image": image,
            "resources": fragment["resources"],
            "securityContext": dict(RESTRICTED_CONTAINER),
        }],
    }
    if runtime_class:
        fragment.setdefault("runtimeClassName", runtime_class)
    for key in ("nodeSelector", "affinity", "tolerations", "runtimeClassName", "resourceClaims"):
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
            "template": {"metadata": _smoke_pod_metadata(platform), "spec": pod_spec},
        },
    }


def _smoke_pod_metadata(platform):
    meta = {"labels": {SMOKE_LABEL: "smoke"}}
    if platform == "eks":
        meta["annotations"] = {DO_NOT_DISRUPT: "true"}
    return meta


def metrics_job(image, namespace, exporter_namespace, exporter_service, timeout):
    """A Job that fetches the exporter's /metrics and requires DCGM_FI_DEV_GPU_UTIL in it."""
    url = "http://%s.%s.svc:9400/metrics" % (exporter_service, exporter_namespace)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": METRICS_JOB, "namespace": namespace, "labels": {SMOKE_LABEL: "metrics"}},
        "spec": {
            "backoffLimit": 2,
            "activeDeadlineSeconds": int(timeout),
            "ttlSecondsAfterFinished": 3600,
            "template": {"metadata": {"labels": {SMOKE_LABEL: "metrics"}}, "spec": {
                "restartPolicy": "Never",
                "securityContext": dict(RESTRICTED_POD),
                "containers": [{
                    "name": "probe", "image": image,
                    "command": ["sh", "-c", "curl -fsS --max-time 20 %s | grep -q '^DCGM_FI_DEV_GPU_UTIL'" % url],
                    "securityContext": dict(RESTRICTED_CONTAINER),
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


def exporter_target(plan, extra):
    """(namespace, Service) of the dcgm-exporter the add-on settings deploy, or None when gpufleet
    deploys none (GKE's managed metrics, gpufleet_addons_mode none, dcgm_exporter_enabled false).

    ``extra``: the gpufleet_*, dcgm_exporter_* and gpu_operator_* values. An explicit
    gpu_validate_exporter_namespace / _service (not ``auto``) wins."""
    ns, svc = extra.get("gpu_validate_exporter_namespace", "auto"), extra.get("gpu_validate_exporter_service", "auto")
    target = None
    mode = plan.get("addons_mode")
    if mode == "standalone":
        s = _a.settings(plan, extra)
        if s["dcgm_exporter_enabled"]:
            target = (s["dcgm_exporter_namespace"], NAME)
    elif mode == "operator" and plan.get("platform") != "gke-autopilot":
        s = _a.settings(plan, extra)
        # the GPU Operator names its exporter Service nvidia-dcgm-exporter, in the operator namespace
        target = (_op.namespace_name(plan, s), "nvidia-dcgm-exporter")
    if not _a.is_auto(ns) or not _a.is_auto(svc):
        base = target or ("", "")
        target = (base[0] if _a.is_auto(ns) else ns, base[1] if _a.is_auto(svc) else svc)
        if not target[0] or not target[1]:
            return None
    return target


# --- verdicts while the Jobs run -----------------------------------------------------------------

# Container waiting reasons that will not resolve by waiting.
STUCK_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
                 "CreateContainerConfigError", "CreateContainerError", "RunContainerError")


def _owner_job(obj):
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") == "Job":
            return ref.get("name")
    return ((obj.get("metadata") or {}).get("labels") or {}).get("job-name")


def _pod_problem(pod):
    """Why a pod is not running: (final?, text) or None."""
    status = pod.get("status") or {}
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in STUCK_REASONS:
            return True, "container %s %s: %s" % (cs.get("name"), waiting["reason"], waiting.get("message") or "")
        term = (cs.get("state") or {}).get("terminated") or {}
        if term and term.get("exitCode", 0) != 0:
            return False, "container %s exited %s (%s)%s" % (
                cs.get("name"), term.get("exitCode"), term.get("reason") or "",
                ": " + term["message"] if term.get("message") else "")
    if status.get("phase") == "Pending":
        for cond in status.get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                text = "Pending, %s: %s" % (cond.get("reason") or "not scheduled", cond.get("message") or "")
                claims = _unallocatable_claims(pod, cond.get("message") or "")
                if claims:
                    text = ("Pending, ResourceClaim %s cannot be allocated: no node publishes a device that matches "
                            "it (its device class, count and selectors, e.g. the pool's dra.product_name or "
                            "dra.min_memory_gb against the memory the driver publishes); the scheduler says %s"
                            % (", ".join(claims), text[len("Pending, "):]))
                return False, text
        return False, "Pending"
    return None


# The scheduler's DRA plugin (k8s.io/kubernetes pkg/scheduler/framework/plugins/dynamicresources) when no node
# has devices for every claim of the pod.
UNALLOCATABLE = "cannot allocate all claims"


def _unallocatable_claims(pod, message):
    """The ResourceClaims of a pod the scheduler could not allocate (its message says so): the generated claims
    (status.resourceClaimStatuses) or the ones it names (spec.resourceClaims), else []."""
    if UNALLOCATABLE not in message:
        return []
    spec_claims = (pod.get("spec") or {}).get("resourceClaims") or []
    generated = {c.get("name"): c.get("resourceClaimName")
                 for c in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    out = []
    for claim in spec_claims:
        name = claim.get("resourceClaimName") or generated.get(claim.get("name"))
        template = claim.get("resourceClaimTemplateName")
        out.append(name + (" (from template %s)" % template if template else "") if name else
                   "from template %s" % template)
    return out or ["of the pod"]


def job_verdicts(jobs, pods, events, expected=()):
    """{Job name: "passed" | "failed: <cause>" | "running: <what it waits for>"} from the Jobs, Pods
    and Events of the validation namespace (as the API returns them).

    A Job ends the wait at once when it is Complete or Failed, when the API server refused its pods
    (Job event FailedCreate: PodSecurity admission, quota, ...) or when a pod cannot start (image
    pull, container config). ``expected``: Job names that must exist (a missing one fails)."""
    by_job_pods, by_job_events = {}, {}
    for pod in pods or []:
        by_job_pods.setdefault(_owner_job(pod), []).append(pod)
    for ev in events or []:
        inv = ev.get("involvedObject") or {}
        if inv.get("kind") == "Job":
            by_job_events.setdefault(inv.get("name"), []).append(ev)
    out = {}
    names = {(j.get("metadata") or {}).get("name"): j for j in jobs or []}
    for name in expected:
        if name not in names:
            out[name] = "failed: Job not found (it was not created)"
    for name, job in sorted(names.items()):
        pod_problems = [p for p in (_pod_problem(pod) for pod in by_job_pods.get(name, [])) if p]
        result = job_result(job)
        if result == "passed":
            out[name] = result
            continue
        if result != "failed: did not finish":
            detail = "; ".join(text for _final, text in pod_problems)
            out[name] = result + (" (%s)" % detail if detail else "")
            continue
        refused = [ev for ev in by_job_events.get(name, []) if ev.get("reason") == "FailedCreate"]
        if refused and not by_job_pods.get(name):
            out[name] = "failed: the API server refused the pod: %s" % refused[-1].get("message", "")
            continue
        final = [text for is_final, text in pod_problems if is_final]
        if final:
            out[name] = "failed: " + "; ".join(final)
            continue
        out[name] = "running: " + ("; ".join(text for _f, text in pod_problems) or "pod not finished")
    return out


def verdicts_done(verdicts):
    return all(not v.startswith("running") for v in verdicts.values())


def with_last_wait(verdicts, previous):
    """``verdicts`` where a Job that ran out of its activeDeadlineSeconds (Failed, DeadlineExceeded: the Job
    controller deletes its pods, so nothing is left to say why) says what it waited for at the read before
    (``previous``, the verdicts of that read), e.g. a claim the scheduler could not allocate."""
    out = dict(verdicts)
    for name, verdict in verdicts.items():
        before = (previous or {}).get(name) or ""
        if verdict == "failed: DeadlineExceeded" and before.startswith("running: ") and \
                before != "running: pod not finished":
            out[name] = "failed: DeadlineExceeded, while %s" % before[len("running: "):]
    return out


def final_verdicts(verdicts):
    """After the deadline: what still runs is a failure that says what it was waiting for."""
    return {k: ("failed: did not finish in time, " + v[len("running: "):]) if v.startswith("running") else v
            for k, v in verdicts.items()}


def split_verdicts(verdicts):
    """(smoke {pool: result}, metrics result) from Job verdicts keyed by Job name."""
    smoke = {k[len("gpufleet-smoke-"):]: v for k, v in verdicts.items() if k.startswith("gpufleet-smoke-")}
    return smoke, verdicts.get(METRICS_JOB, "not run")
