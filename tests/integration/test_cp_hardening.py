"""Issue 30 item 8 (hardening) on a real control plane (tests/helpers/controlplane.py, KWOK kubelets).

The hardened node agents (seccomp RuntimeDefault, capabilities dropped before SYS_ADMIN is added,
read-only config-manager sidecars with their own resources, dcgm-exporter at system-node-critical with
its optional NetworkPolicy and web config Secret) and the Pod Security restricted example Jobs are
applied server-side as rendered; the API server must accept every object, the controllers must create
the pods (no FailedCreate from Pod Security admission), and the NetworkPolicy must exist only when asked.
A pod shaped like the old example Job is refused in the example namespace, so the restricted check can fail.
"""
import pytest

from controlplane import ApiError
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_exporter import dcgm_exporter_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import device_plugin_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.nfd import nfd_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.placement import example_jobs
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from ansible_collections.gpufleet.k8s.plugins.filter.placement import gpu_pool_examples

POOLS = normalize_pools([
    {"name": "mig-a100", "gpu_type": "a100-80gb", "gpus_per_node": 8,
     "sharing": {"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.10gb"}},
    {"name": "share-l4", "gpu_type": "l4", "gpus_per_node": 1, "sharing": {"mode": "mps", "replicas": 4}},
])
NODES = {"hard-a100-01": "mig-a100", "hard-l4-01": "share-l4"}
PLAN = {"platform": "kubeadm", "addons_mode": "standalone", "cluster_name": "c1", "apply": True, "pools": POOLS}
EXPORTER = {"dcgm_exporter_network_policy_namespaces": ["monitoring"],
            "dcgm_exporter_web_config_secret": "dcgm-exporter-web"}
EXAMPLE_NS = "gpufleet-examples"


def apply_all(cp, objs):
    for obj in objs:
        cp.apply(cp.object_path(obj), obj)


@pytest.fixture(scope="module")
def applied(control_plane):
    cp = control_plane
    for name, pool in NODES.items():
        cp.add_node(name, gpu=8, labels={"gpufleet.io/pool": pool})
    apply_all(cp, nfd_objects(PLAN, {"nvidia_device_plugin_nfd_enabled": True}))
    apply_all(cp, device_plugin_objects(PLAN, {}))
    exporter = dcgm_exporter_objects(PLAN, EXPORTER)
    apply_all(cp, exporter[:1])
    # the web config Secret is the user's (gpufleet only mounts it): a stand-in with a basic-auth user
    cp.apply("/api/v1/namespaces/nvidia-dcgm-exporter/secrets/dcgm-exporter-web",
             {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "dcgm-exporter-web",
                                                                 "namespace": "nvidia-dcgm-exporter"},
              "stringData": {"web-config.yml": "basic_auth_users:\n  prometheus: $2y$10$notarealhashnotarealhash\n"}})
    apply_all(cp, exporter[1:])
    apply_all(cp, gpu_pool_examples(POOLS, "kubeadm", "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
                                    EXAMPLE_NS))
    return cp


def owned_pods(cp, namespace, kind, name):
    return [p for p in cp.items("/api/v1/namespaces/%s/pods" % namespace)
            if any(r["kind"] == kind and r["name"] == name for r in p["metadata"].get("ownerReferences") or [])]


@pytest.mark.parametrize("namespace,name,count", [
    ("nvidia-device-plugin", "nvidia-device-plugin", 2),
    ("nvidia-device-plugin", "gpu-feature-discovery", 2),
    ("nvidia-device-plugin", "nvidia-device-plugin-mps-control-daemon", 1),
    ("nvidia-dcgm-exporter", "dcgm-exporter", 2),
    ("node-feature-discovery", "nfd-worker", 2),
])
def test_hardened_node_agents_are_accepted_and_get_pods(applied, namespace, name, count):
    cp = applied
    ds = cp.get("/apis/apps/v1/namespaces/%s/daemonsets/%s" % (namespace, name))
    pod = ds["spec"]["template"]["spec"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for ctr in pod["containers"] + pod.get("initContainers", []):
        sc = ctr["securityContext"]
        if not sc.get("privileged"):
            assert sc["capabilities"]["drop"] == ["ALL"], (name, ctr["name"])
            assert sc["allowPrivilegeEscalation"] is False, (name, ctr["name"])
        assert ctr["resources"]["requests"] and ctr["resources"]["limits"]["memory"], (name, ctr["name"])
    cp.wait(lambda: len(owned_pods(cp, namespace, "DaemonSet", name)) == count, 90,
            "%d pods of DaemonSet %s" % (count, name))


def test_mig_agents_add_sys_admin_after_dropping_all(applied):
    pod = applied.get("/apis/apps/v1/namespaces/nvidia-device-plugin/daemonsets/nvidia-device-plugin")
    plugin = pod["spec"]["template"]["spec"]["containers"][0]
    assert plugin["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_ADMIN"]}
    for ctr in pod["spec"]["template"]["spec"]["initContainers"]:
        assert ctr["securityContext"]["readOnlyRootFilesystem"] is True


def test_dcgm_exporter_priority_network_policy_and_web_config(applied):
    cp = applied
    pod = cp.get("/apis/apps/v1/namespaces/nvidia-dcgm-exporter/daemonsets/dcgm-exporter")["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-node-critical"
    assert {"name": "web-config", "secret": {"secretName": "dcgm-exporter-web", "defaultMode": 0o400}} in pod["volumes"]
    pods = owned_pods(cp, "nvidia-dcgm-exporter", "DaemonSet", "dcgm-exporter")
    assert pods and all(p["spec"]["priority"] == 2000001000 for p in pods)  # the priority class was resolved
    pol = cp.get("/apis/networking.k8s.io/v1/namespaces/nvidia-dcgm-exporter/networkpolicies/dcgm-exporter")
    assert pol["spec"]["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 9400}]
    assert pol["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchExpressions"][0]["values"] == ["monitoring"]


def test_no_network_policy_by_default(control_plane):
    objs = dcgm_exporter_objects(PLAN, {"dcgm_exporter_namespace": "dcgm-default-test"})
    assert "NetworkPolicy" not in [o["kind"] for o in objs]
    apply_all(control_plane, objs)
    assert control_plane.items("/apis/networking.k8s.io/v1/namespaces/dcgm-default-test/networkpolicies") == []


def test_example_jobs_pass_pod_security_restricted(applied):
    cp = applied
    ns = cp.get("/api/v1/namespaces/" + EXAMPLE_NS)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    names = sorted("gpu-example-" + p["name"] for p in POOLS)
    cp.wait(lambda: all(owned_pods(cp, EXAMPLE_NS, "Job", n) for n in names), 90,
            "the example Jobs' pods created under Pod Security restricted")


def test_the_old_example_shape_is_refused(applied):
    """The check can fail: the example pod as rendered before (root allowed, no seccomp profile) is
    refused by Pod Security admission in the restricted example namespace."""
    job = example_jobs(POOLS[1:], "kubeadm", "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0", EXAMPLE_NS)[0]
    spec = dict(job["spec"]["template"]["spec"])
    spec.pop("securityContext")
    spec["containers"] = [dict(spec["containers"][0], securityContext={
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}})]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "old-example", "namespace": EXAMPLE_NS},
           "spec": spec}
    with pytest.raises(ApiError) as exc:
        applied.request("POST", "/api/v1/namespaces/%s/pods?dryRun=All" % EXAMPLE_NS, pod)
    assert exc.value.code == 403 and "violates PodSecurity" in str(exc.value)
