"""Validation Jobs: schema-valid, placed on the pool, judged from Job conditions."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.filter.day2 import gpu_smoke_jobs
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.smoke import (
    job_result, metrics_job, rollout_failures, smoke_results)
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from k8s_schema import assert_valid

POOLS = normalize_pools([
    {"name": "train", "gpu_type": "a100-80gb", "gpus_per_node": 8,
     "sharing": {"mode": "mig", "mig_strategy": "mixed", "mig_profile": "1g.10gb"}},
    {"name": "infer", "gpu_type": "l4", "sharing": {"mode": "time-slicing", "replicas": 4, "rename_by_default": True}},
    {"name": "plain", "gpu_type": "t4", "taints": []},
])
IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"


@pytest.mark.parametrize("platform,key,values", [
    ("kubeadm", "gpufleet.io/pool", ["train"]), ("k3s", "gpufleet.io/pool", ["train"]),
    ("eks", "karpenter.k8s.aws/instance-family", ["p4de"]), ("gke", "cloud.google.com/gke-accelerator", ["nvidia-a100-80gb"]),
])
def test_smoke_jobs_are_valid_and_placed_on_their_pool(platform, key, values):
    jobs = gpu_smoke_jobs(POOLS, platform, IMAGE, "gpufleet-validate", 300)
    for job in jobs:
        assert_valid(job)
    train, infer, plain = jobs
    terms = train["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert {"key": key, "operator": "In", "values": values} in terms["nodeSelectorTerms"][0]["matchExpressions"]
    # GKE's own device plugin advertises every MIG partition and shared GPU as nvidia.com/gpu.
    gke = platform == "gke"
    assert train["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == (
        {"nvidia.com/gpu": 1} if gke else {"nvidia.com/mig-1g.10gb": 1})
    assert infer["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == (
        {"nvidia.com/gpu": 1} if gke else {"nvidia.com/gpu.shared": 1})
    assert train["spec"]["template"]["spec"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert "tolerations" not in plain["spec"]["template"]["spec"]
    assert train["spec"]["backoffLimit"] == 0 and train["spec"]["activeDeadlineSeconds"] == 300


def test_explicit_placement_wins():
    placement = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-l4"]}]}]}}},
        "tolerations": [{"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]}
    job = gpu_smoke_jobs(POOLS[1:2], "gke", IMAGE, "ns", 60, {"infer": placement})[0]
    spec = job["spec"]["template"]["spec"]
    assert "nodeSelector" not in spec and spec["affinity"] == placement["affinity"]
    assert spec["tolerations"] == placement["tolerations"]
    assert_valid(job)


def test_metrics_job_is_valid_and_targets_the_exporter_service():
    job = metrics_job("docker.io/curlimages/curl:8.11.1", "gpufleet-validate", "gpu-monitoring", "dcgm-exporter", 120)
    assert_valid(job)
    command = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert "http://dcgm-exporter.gpu-monitoring.svc:9400/metrics" in command and "DCGM_FI_DEV_GPU_UTIL" in command


def cond(kind, reason=None):
    return {"status": {"conditions": [{"type": kind, "status": "True", "reason": reason}]}}


def test_job_results():
    assert job_result(cond("Complete")) == "passed"
    assert job_result(cond("Failed", "DeadlineExceeded")) == "failed: DeadlineExceeded"
    assert job_result({}) == "failed: did not finish"
    jobs = [dict(cond("Complete"), metadata={"name": "gpufleet-smoke-a", "labels": {"gpufleet.io/validate": "smoke", "gpufleet.io/pool": "a"}}),
            dict(cond("Failed", "BackoffLimitExceeded"), metadata={"name": "gpufleet-smoke-b", "labels": {"gpufleet.io/validate": "smoke", "gpufleet.io/pool": "b"}}),
            dict(cond("Complete"), metadata={"name": "gpufleet-metrics-check", "labels": {"gpufleet.io/validate": "metrics"}})]
    assert smoke_results(jobs) == {"a": "passed", "b": "failed: BackoffLimitExceeded"}


def test_rollout_failures():
    ok = {"item": {"namespace": "n", "name": "dp"}, "resources": [{"status": {"desiredNumberScheduled": 3, "numberReady": 3, "updatedNumberScheduled": 3}}]}
    lagging = {"item": {"namespace": "n", "name": "ex"}, "resources": [{"status": {"desiredNumberScheduled": 3, "numberReady": 2, "updatedNumberScheduled": 3}}]}
    missing = {"item": {"namespace": "n", "name": "gfd"}, "resources": []}
    assert rollout_failures([ok, lagging, missing]) == [
        "DaemonSet n/ex not rolled out (desired 3, ready 2, updated 3)", "DaemonSet n/gfd not found"]


@pytest.mark.parametrize("platform,annotations", [
    ("eks", {"karpenter.sh/do-not-disrupt": "true"}), ("gke", None), ("kubeadm", None)])
def test_smoke_pods_on_eks_are_not_disrupted_by_karpenter(platform, annotations):
    for job in gpu_smoke_jobs(POOLS, platform, IMAGE, "gpufleet-validate", 300):
        meta = job["spec"]["template"]["metadata"]
        assert meta.get("annotations") == annotations and meta["labels"] == {"gpufleet.io/validate": "smoke"}
