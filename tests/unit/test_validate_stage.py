"""Validate stage: pods the restricted namespace admits, the exporter it probes derived from the
add-on settings, and verdicts that end the wait at the first real cause.

The Job/Pod/Event objects are in the shape the API returns them (tests/fixtures/k8s/validate_jobs.json);
the Pod Security check is tests/helpers/pod_security.py (the documented "restricted" rules; no API server here)."""
import json
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.filter.day2 import gpu_smoke_jobs, gpu_validate_exporter
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.smoke import (
    final_verdicts, job_verdicts, metrics_job, split_verdicts, verdicts_done, with_last_wait)
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from k8s_schema import assert_valid
from pod_security import restricted_violations

CASES = json.load(open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "k8s",
                                    "validate_jobs.json")))["cases"]
POOLS = normalize_pools([{"name": "train", "gpu_type": "a100-80gb", "gpus_per_node": 8},
                         {"name": "infer", "gpu_type": "l4", "sharing": {"mode": "time-slicing", "replicas": 4}}])
IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"


@pytest.mark.parametrize("platform", ["kubeadm", "eks", "gke"])
def test_validation_pods_pass_pod_security_restricted(platform):
    jobs = gpu_smoke_jobs(POOLS, platform, IMAGE, "gpufleet-validate", 300)
    jobs.append(metrics_job("docker.io/curlimages/curl:8.11.1", "gpufleet-validate", "nvidia-dcgm-exporter",
                            "dcgm-exporter", 300))
    for job in jobs:
        assert_valid(job)
        assert restricted_violations(job["spec"]["template"]["spec"]) == [], job["metadata"]["name"]


def test_the_checker_refuses_what_the_old_smoke_job_had():
    old = {"restartPolicy": "Never", "containers": [{"name": "cuda-vectoradd", "image": IMAGE, "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}]}
    got = restricted_violations(old)
    assert "runAsNonRoot != true (container cuda-vectoradd)" in got
    assert any(v.startswith("seccompProfile") for v in got)


@pytest.mark.parametrize("plan,values,expect", [
    ({"platform": "kubeadm", "addons_mode": "standalone"}, {}, ["nvidia-dcgm-exporter", "dcgm-exporter"]),
    ({"platform": "kubeadm", "addons_mode": "standalone"}, {"dcgm_exporter_namespace": "monitoring"},
     ["monitoring", "dcgm-exporter"]),
    ({"platform": "rke2", "addons_mode": "operator"}, {}, ["gpu-operator", "nvidia-dcgm-exporter"]),
    ({"platform": "openshift", "addons_mode": "operator"}, {}, ["nvidia-gpu-operator", "nvidia-dcgm-exporter"]),
    ({"platform": "kubeadm", "addons_mode": "operator"}, {"gpu_operator_namespace": "gpu-ops"},
     ["gpu-ops", "nvidia-dcgm-exporter"]),
    ({"platform": "gke", "addons_mode": "standalone"}, {}, None),
    ({"platform": "kubeadm", "addons_mode": "none"}, {}, None),
    ({"platform": "kubeadm", "addons_mode": "standalone"}, {"dcgm_exporter_enabled": False}, None),
    ({"platform": "kubeadm", "addons_mode": "none"},
     {"gpu_validate_exporter_namespace": "mon", "gpu_validate_exporter_service": "dcgm"}, ["mon", "dcgm"]),
    ({"platform": "kubeadm", "addons_mode": "standalone"}, {"gpu_validate_exporter_namespace": "auto"},
     ["nvidia-dcgm-exporter", "dcgm-exporter"]),
])
def test_exporter_target_follows_the_addon_settings(plan, values, expect):
    plan = dict(plan, pools=POOLS)
    assert gpu_validate_exporter(plan, values) == expect


@pytest.mark.parametrize("case,expect", [
    ("admission_refused", 'failed: the API server refused the pod: Error creating: pods "gpufleet-smoke-train-x7k2p" '
                          'is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true'),
    ("image_pull", "failed: container cuda-vectoradd ImagePullBackOff: Back-off pulling image"),
    ("failed_exit", "failed: BackoffLimitExceeded (container cuda-vectoradd exited 1 (Error))"),
    ("complete", "passed"),
])
def test_verdicts_end_the_wait_at_the_first_real_cause(case, expect):
    c = CASES[case]
    verdicts = job_verdicts(c["jobs"], c["pods"], c["events"], ["gpufleet-smoke-train"])
    assert verdicts["gpufleet-smoke-train"].startswith(expect), verdicts
    assert verdicts_done(verdicts)


def test_unschedulable_keeps_waiting_then_says_why():
    c = CASES["unschedulable"]
    verdicts = job_verdicts(c["jobs"], c["pods"], c["events"], ["gpufleet-smoke-train"])
    assert not verdicts_done(verdicts)  # an autoscaler may still add a node
    final = final_verdicts(verdicts)["gpufleet-smoke-train"]
    assert final.startswith("failed: did not finish in time, Pending, Unschedulable: 0/3 nodes are available")
    assert "2 Insufficient nvidia.com/gpu" in final


DRA_JOB = {"metadata": {"name": "gpufleet-smoke-d"}, "status": {"active": 1}}
DRA_POD = {"metadata": {"name": "gpufleet-smoke-d-x1", "labels": {"job-name": "gpufleet-smoke-d"}},
           "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "d-gpu"}]},
           "status": {"phase": "Pending",
                      "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "gpufleet-smoke-d-x1-gpu-8k2lq"}],
                      "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                      "message": "0/2 nodes are available: 2 cannot allocate all claims. preemption: "
                                                 "0/2 nodes are available: 2 Preemption is not helpful for "
                                                 "scheduling."}]}}


def test_a_dra_claim_no_node_can_satisfy_is_named_and_survives_the_jobs_deadline():
    """Issue 38, defect 6: a claim asking more memory than the driver publishes keeps the pod Pending until the
    Job's activeDeadlineSeconds; the Job controller then deletes the pod, and validate said only DeadlineExceeded."""
    running = job_verdicts([DRA_JOB], [DRA_POD], [], ["gpufleet-smoke-d"])
    text = running["gpufleet-smoke-d"]
    assert text.startswith("running: Pending, ResourceClaim gpufleet-smoke-d-x1-gpu-8k2lq (from template d-gpu) "
                           "cannot be allocated: no node publishes a device that matches it"), text
    assert "dra.min_memory_gb" in text and "2 cannot allocate all claims" in text
    # the next read: the Job failed on its deadline and its pod is gone
    failed = {"metadata": {"name": "gpufleet-smoke-d"},
              "status": {"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]}}
    after = with_last_wait(job_verdicts([failed], [], [], ["gpufleet-smoke-d"]), running)["gpufleet-smoke-d"]
    assert after.startswith("failed: DeadlineExceeded, while Pending, ResourceClaim gpufleet-smoke-d-x1-gpu-8k2lq"), \
        after
    # nothing known before: the Job's own reason stays as it is
    assert with_last_wait({"j": "failed: DeadlineExceeded"}, {"j": "running: pod not finished"}) == \
        {"j": "failed: DeadlineExceeded"}
    # a pod pending for another reason is not called unallocatable
    other = dict(DRA_POD, status=dict(DRA_POD["status"], conditions=[
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/2 nodes are available: 2 node(s) had untolerated taint {team: ml}."}]))
    assert "cannot be allocated" not in job_verdicts([DRA_JOB], [other], [])["gpufleet-smoke-d"]


def test_missing_job_and_split_by_pool():
    c = CASES["complete"]
    verdicts = job_verdicts(c["jobs"], c["pods"], c["events"],
                            ["gpufleet-smoke-train", "gpufleet-smoke-infer", "gpufleet-metrics-check"])
    smoke, metrics = split_verdicts(verdicts)
    assert smoke == {"train": "passed", "infer": "failed: Job not found (it was not created)"}
    assert metrics == "passed"


@pytest.mark.parametrize("node_metrics,probe,cell", [
    (None, "passed", "probe passed"),
    (None, "failed: no DCGM_FI_DEV_GPU_UTIL", "probe failed"),
    (None, "not run", "not checked"),
    (None, None, "not checked"),
    (True, "failed: x", "ok"),
    (False, "passed", "missing"),
])
def test_the_metrics_column_tells_what_was_checked(node_metrics, probe, cell):
    """Issue 39: the validate table said "metrics not checked" also when the metrics probe had run."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.expected import metrics_cell
    assert metrics_cell(node_metrics, probe) == cell
