"""Pod placement per pool and platform (table-driven); pods built from it validated with
kubernetes-validate against the real Kubernetes schemas."""
import pytest

from k8s_schema import assert_valid
from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.k8s.plugins.filter.placement import gpu_pod_placement, gpu_pool_examples
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.placement import example_job, placement, resource_name
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pool

GPU_TOL = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
SPOT_TOL = {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def expr(key, *values):
    return {"key": key, "operator": "In", "values": list(values)}


def required(fragment):
    return fragment["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"]


def test_the_issue_example_gke_spot_a100_two_gpus():
    pool = {"name": "train-a100", "gpu_type": "a100-40gb", "gpus_per_node": 2, "capacity_types": ["spot"],
            "zones": ["us-central1-a"], "max_nodes": 8}
    assert gpu_pod_placement(pool, "gke") == {
        "resources": {"limits": {"nvidia.com/gpu": 2}},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [
                expr("cloud.google.com/machine-family", "a2"),
                expr("cloud.google.com/gke-accelerator", "nvidia-tesla-a100"),
                expr("cloud.google.com/gke-spot", "true"),
            ]}]}}},
        "tolerations": [GPU_TOL, SPOT_TOL],
    }


PLACEMENT = [
    # (pool, platform, expected matchExpressions or nodeSelector, expected tolerations)
    ({"name": "p", "gpu_type": "l4", "capacity_types": ["on-demand"]}, "gke",
     [expr("cloud.google.com/machine-family", "g2"), expr("cloud.google.com/gke-accelerator", "nvidia-l4")],
     [GPU_TOL]),
    ({"name": "p", "gpu_type": "l4", "capacity_types": ["spot", "on-demand"]}, "gke",
     [expr("cloud.google.com/machine-family", "g2"), expr("cloud.google.com/gke-accelerator", "nvidia-l4")],
     [GPU_TOL, SPOT_TOL]),
    ({"name": "p", "gpu_type": "h100-80gb", "gpus_per_node": 8}, "eks",
     [expr("karpenter.k8s.aws/instance-family", "p5"), expr("karpenter.k8s.aws/instance-gpu-name", "h100"),
      expr("karpenter.sh/capacity-type", "on-demand")], [GPU_TOL]),
    ({"name": "p", "gpu_type": "h200-141gb", "gpus_per_node": 8, "capacity_types": ["spot", "on-demand"]}, "eks",
     [expr("karpenter.k8s.aws/instance-family", "p5e", "p5en"), expr("karpenter.k8s.aws/instance-gpu-name", "h200"),
      expr("karpenter.sh/capacity-type", "spot", "on-demand")], [GPU_TOL]),
    ({"name": "edge-t4", "gpu_type": "t4"}, "k3s", [expr("gpufleet.io/pool", "edge-t4")], [GPU_TOL]),
    ({"name": "p", "gpu_type": "t4", "taints": []}, "kubeadm", [expr("gpufleet.io/pool", "p")], None),
    ({"name": "p", "gpu_type": "t4", "taints": [{"key": "dedicated", "value": "ml", "effect": "NoExecute"},
                                                 {"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}, "rke2",
     [expr("gpufleet.io/pool", "p")],
     [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, GPU_TOL]),
    ({"name": "p", "gpu_type": "l4", "capacity_types": ["spot"]}, "gke-autopilot",
     {"cloud.google.com/gke-accelerator": "nvidia-l4", "cloud.google.com/gke-spot": "true"}, [GPU_TOL, SPOT_TOL]),
    ({"name": "p", "gpu_type": "l4"}, "gke-autopilot", {"cloud.google.com/gke-accelerator": "nvidia-l4"}, [GPU_TOL]),
    ({"name": "cc", "gpu_type": "l4", "compute_class": True}, "gke",
     {"cloud.google.com/compute-class": "cc"},
     [GPU_TOL, {"key": "cloud.google.com/compute-class", "operator": "Equal", "value": "cc", "effect": "NoSchedule"}]),
]


@pytest.mark.parametrize("pool,platform,where,tolerations", PLACEMENT,
                         ids=["%s-%s-%d" % (p[1], p[0]["gpu_type"], i) for i, p in enumerate(PLACEMENT)])
def test_placement_per_platform(pool, platform, where, tolerations):
    frag = gpu_pod_placement(pool, platform)
    if isinstance(where, dict):
        assert frag["nodeSelector"] == where and "affinity" not in frag
    else:
        assert required(frag) == where and "nodeSelector" not in frag
    assert frag.get("tolerations") == tolerations
    assert_valid(pod(frag))


SHARING = [
    ({"mode": "none"}, 4, "nvidia.com/gpu", 4),
    ({"mode": "time-slicing", "replicas": 4}, 4, "nvidia.com/gpu", 1),
    ({"mode": "time-slicing", "replicas": 4, "rename_by_default": True}, 1, "nvidia.com/gpu.shared", 1),
    ({"mode": "mps", "replicas": 2, "rename_by_default": True}, 1, "nvidia.com/gpu.shared", 1),
    ({"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.10gb"}, 8, "nvidia.com/gpu", 1),
    ({"mode": "mig", "mig_strategy": "mixed", "mig_profile": "3g.40gb"}, 8, "nvidia.com/mig-3g.40gb", 1),
]


@pytest.mark.parametrize("sharing,gpn,resource,count", SHARING, ids=[s[2] + "-" + s[0]["mode"] for s in SHARING])
def test_resource_name_and_default_count_per_sharing_mode(sharing, gpn, resource, count):
    pool = {"name": "p", "gpu_type": "a100-80gb", "gpus_per_node": gpn, "sharing": sharing}
    frag = gpu_pod_placement(pool, "kubeadm")
    assert frag["resources"] == {"limits": {resource: count}}
    assert_valid(pod(frag))


def test_gpus_argument_overrides_the_count():
    assert gpu_pod_placement({"name": "p", "gpu_type": "l4", "gpus_per_node": 8}, "eks", 3)["resources"] == {
        "limits": {"nvidia.com/gpu": 3}}


@pytest.mark.parametrize("pool,gpus,fragment", [
    ({"name": "p", "gpu_type": "a100-80gb", "sharing": {"mode": "mig", "mig_strategy": "mixed"}}, None, "mig_profile"),
    ({"name": "p", "gpu_type": "l4"}, 0, "integer >= 1"),
    ({"name": "p", "gpu_type": "rtx9090"}, None, "unknown gpu_type"),
])
def test_placement_refuses_what_cannot_be_placed(pool, gpus, fragment):
    with pytest.raises(AnsibleFilterError) as err:
        gpu_pod_placement(pool, "kubeadm", gpus)
    assert fragment in str(err.value)
    with pytest.raises(GpufleetError):
        placement(normalize_pool(pool), "kubeadm", gpus)


def test_resource_name_default_pool_is_whole_gpu():
    assert resource_name(normalize_pool({"name": "p", "gpu_type": "t4"})) == "nvidia.com/gpu"


@pytest.mark.parametrize("platform", ["eks", "gke", "gke-autopilot", "kubeadm", "k3s", "openshift"])
def test_example_jobs_are_schema_valid(platform):
    pools = [{"name": "a", "gpu_type": "l4", "capacity_types": ["spot"] if platform.startswith("gke") else ["on-demand"]},
             {"name": "b", "gpu_type": "h100-80gb", "gpus_per_node": 8, "compute_class": platform.startswith("gke")}]
    objs = gpu_pool_examples(pools, platform, "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0", "ex")
    assert [o["kind"] for o in objs] == ["Namespace", "Job", "Job"]
    for obj in objs:
        assert_valid(obj)
    job = objs[2]
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": 8, "cpu": "1", "memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}}
    assert job["metadata"]["namespace"] == "ex"
    assert objs[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_example_job_is_pod_security_restricted():
    """Issue 30 item 8: the examples run like the validation Jobs (restricted), with no token and a
    read-only root filesystem."""
    job = example_job(normalize_pool({"name": "p", "gpu_type": "l4"}), "kubeadm", "img:1", "ns")
    spec = job["spec"]["template"]["spec"]
    assert spec["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                                       "seccompProfile": {"type": "RuntimeDefault"}}
    assert spec["automountServiceAccountToken"] is False
    assert spec["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"}, "readOnlyRootFilesystem": True}


def test_example_job_uses_the_fragment():
    pool = normalize_pool({"name": "p", "gpu_type": "l4", "capacity_types": ["spot"]})
    job = example_job(pool, "gke", "img:1", "ns")
    frag = placement(pool, "gke")
    spec = job["spec"]["template"]["spec"]
    assert spec["affinity"] == frag["affinity"] and spec["tolerations"] == frag["tolerations"]
    assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == frag["resources"]["limits"]["nvidia.com/gpu"]


def pod(fragment):
    spec = {"containers": [{"name": "c", "image": "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
                            "resources": fragment["resources"]}]}
    for key in ("affinity", "nodeSelector", "tolerations"):
        if key in fragment:
            spec[key] = fragment[key]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


# gb200 (Grace Blackwell: arm64 hosts). GKE taints Arm nodes kubernetes.io/arch=arm64:NoSchedule by default (GKE API
# TaintConfig.ArchitectureTaintBehavior, default ARM): the pods select arm64 and tolerate that taint.
ARM_TOL = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}
GB200 = {"name": "nvl-gb200", "gpu_type": "gb200", "gpus_per_node": 4, "zones": ["us-central1-a"]}


def test_gke_gb200_selects_a4x_and_arm64_and_tolerates_the_arm_taint():
    frag = gpu_pod_placement(GB200, "gke")
    assert required(frag) == [expr("cloud.google.com/machine-family", "a4x"),
                              expr("cloud.google.com/gke-accelerator", "nvidia-gb200"),
                              expr("kubernetes.io/arch", "arm64")]
    assert ARM_TOL in frag["tolerations"]
    assert frag["resources"] == {"limits": {"nvidia.com/gpu": 4}}
    assert_valid(pod(frag))


def test_autopilot_and_compute_class_gb200_select_arm64():
    auto = gpu_pod_placement(GB200, "gke-autopilot")
    assert auto["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-gb200", "kubernetes.io/arch": "arm64"}
    assert ARM_TOL in auto["tolerations"]
    klass = gpu_pod_placement(dict(GB200, compute_class=True), "gke")
    assert klass["nodeSelector"] == {"cloud.google.com/compute-class": "nvl-gb200", "kubernetes.io/arch": "arm64"}
    for frag in (auto, klass):
        assert_valid(pod(frag))


def test_self_managed_gb200_selects_its_pool_and_arm64_without_a_gke_toleration():
    frag = gpu_pod_placement(GB200, "kubeadm")
    assert required(frag) == [expr("gpufleet.io/pool", "nvl-gb200"), expr("kubernetes.io/arch", "arm64")]
    assert ARM_TOL not in frag.get("tolerations", [])


@pytest.mark.parametrize("platform", ["gke", "gke-autopilot", "kubeadm"])
def test_amd64_pools_render_no_arch_selector_or_toleration(platform):
    """The amd64 default renders exactly as before this field existed (the goldens hold that too)."""
    frag = gpu_pod_placement({"name": "p", "gpu_type": "b200", "gpus_per_node": 8, "zones": ["us-central1-a"]},
                             platform)
    assert "kubernetes.io/arch" not in str(frag)


def test_gb200_example_job_and_smoke_job_land_on_arm64():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.smoke import smoke_job
    pool = normalize_pool(GB200)
    for job in (example_job(pool, "gke", "img:1", "ns"), smoke_job(pool, "gke", "img:1", "ns", 300)):
        spec = job["spec"]["template"]["spec"]
        assert expr("kubernetes.io/arch", "arm64") in required(spec) and ARM_TOL in spec["tolerations"]
        assert_valid(job)
