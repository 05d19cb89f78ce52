"""The rolling driver upgrade (playbooks/upgrade_driver.yml) on a real control plane (tests/helpers/controlplane.py).

gpufleet's own add-ons run on the GPU nodes as they do in a cluster (provision + cluster stages: the device
plugin and GFD pods mount an emptyDir), a user's Deployment runs there under a PodDisruptionBudget, and the
drain goes through the real Eviction API, with the real disruption controller computing the budget. KWOK
stands in for the kubelets. The GPU host itself is an SSH address where nothing listens (127.0.0.1, a
closed port): the driver install meets an unreachable host, as when a node does not come back.
"""
import threading
import time

import pytest

from ansible_run import flat, recap, run_site
from cp_nodes import unreachable_pool

POOL = ("gpufleet_platform: kubeadm\ngpufleet_cluster_name: upgrade\ngpufleet_addons_mode: standalone\n"
        "gpufleet_gpu_pools:\n  - {name: plain, gpu_type: l4, gpus_per_node: 1, node_group: gpu_pool_plain}\n"
        "dcgm_exporter_service_monitor: false\n")


@pytest.fixture(scope="module")
def fleet(control_plane, tmp_path_factory):
    cp = control_plane
    tmp = tmp_path_factory.mktemp("upgrade")
    inv = unreachable_pool(cp, tmp / "inv", POOL, "gpu_pool_plain", ("h1", "h2", "h3"), gpu=1)
    extra = ["-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig]
    for playbook in ("playbooks/provision.yml", "playbooks/cluster.yml"):
        rc, out = run_site(tmp / "build", *extra, playbook=playbook, inventory=str(inv))
        assert rc == 0, out[-4000:]

    def addons_ready():
        pods = [p for p in cp.items("/api/v1/pods") if any(
            r["kind"] == "DaemonSet" for r in p["metadata"].get("ownerReferences") or [])]
        ready = [p for p in pods if p["status"].get("phase") == "Running"
                 and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])]
        return len(pods) >= 6 and len(ready) == len(pods)
    cp.wait(addons_ready, 90, "the add-on DaemonSet pods Ready on the GPU nodes")
    return cp, tmp, inv, extra


def daemonset_pods_with_emptydir(cp, node):
    return sorted(p["metadata"]["name"] for p in cp.items("/api/v1/pods?fieldSelector=spec.nodeName%3D" + node)
                  if any(r["kind"] == "DaemonSet" for r in p["metadata"].get("ownerReferences") or [])
                  and any("emptyDir" in v for v in p["spec"].get("volumes") or []))


def run_user_workload(cp, name, node, namespace="ml"):
    """A Deployment with one replica on ``node`` and a budget that needs it (minAvailable 1)."""
    if not cp.exists("/api/v1/namespaces/" + namespace):
        cp.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    labels = {"app": name}
    cp.create("/apis/apps/v1/namespaces/%s/deployments" % namespace, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                     "containers": [{"name": "app", "image": "registry.example/app:1",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}})
    cp.create("/apis/policy/v1/namespaces/%s/poddisruptionbudgets" % namespace, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name + "-pdb", "namespace": namespace},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}})

    def running():
        pods = cp.items("/api/v1/namespaces/%s/pods?labelSelector=app%%3D%s" % (namespace, name))
        return [p for p in pods if p["spec"].get("nodeName") == node and p["status"].get("phase") == "Running"]
    pod = cp.wait(running, 60, "%s running on %s" % (name, node))[0]
    # the disruption controller has counted it: the budget allows no disruption
    cp.wait(lambda: (cp.get("/apis/policy/v1/namespaces/%s/poddisruptionbudgets/%s-pdb" % (namespace, name))
                     .get("status") or {}).get("currentHealthy") == 1, 30, "the budget's status")
    return pod["metadata"]["name"]


def upgrade(fleet, host, *extra):
    cp, tmp, inv, conn = fleet
    return run_site(tmp / "build", *conn, "-e", "nvidia_driver_version=580.95.05", "--limit", "localhost,%s" % host,
                    *extra, playbook="playbooks/upgrade_driver.yml", inventory=inv)


def test_budget_that_never_frees_stops_the_drain_at_the_timeout_naming_it(fleet):
    cp = fleet[0]
    pod = run_user_workload(cp, "trainer", "gpu-h1")
    assert daemonset_pods_with_emptydir(cp, "gpu-h1")  # the device plugin / GFD pods with an emptyDir are there
    started = time.monotonic()
    rc, out = upgrade(fleet, "h1", "-e", "gpufleet_upgrade_drain_timeout=20")
    took = time.monotonic() - started
    text = flat(out)
    assert rc == 2, out[-4000:]
    # retried until the timeout (kubectl retries a 429), not failed at the first refusal
    assert took >= 20, took
    assert "drain of node gpu-h1 timed out after 20s: evicting ml/%s is refused" % pod in text, text[-3000:]
    assert "PodDisruptionBudget ml/trainer-pdb (allows 0 disruption(s): 1 of 1 pods healthy, 1 needed) " \
           "protects ml/%s" % pod in text
    assert "local storage" not in text  # gpufleet's own add-ons never block the drain
    node = cp.node("gpu-h1")
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["annotations"]["gpufleet.io/upgrade-failed"].startswith("Drain the node")
    # nothing was evicted: the pod still runs there
    assert cp.get("/api/v1/namespaces/ml/pods/" + pod)["status"]["phase"] == "Running"


def test_budget_that_frees_lets_the_drain_finish_then_the_unreachable_host_is_named(fleet):
    cp = fleet[0]
    pod = run_user_workload(cp, "server", "gpu-h2")
    ds_pods = daemonset_pods_with_emptydir(cp, "gpu-h2")
    assert ds_pods

    def free_the_budget():
        # 6 s into the run, a second replica comes up on another node (a rollout elsewhere)
        time.sleep(6)
        cp.create("/apis/apps/v1/namespaces/ml/deployments", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "server-extra", "namespace": "ml"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "server", "extra": "yes"}}, "template": {
                "metadata": {"labels": {"app": "server", "extra": "yes"}},
                "spec": {"nodeSelector": {"kubernetes.io/hostname": "gpu-h3"},
                         "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                         "containers": [{"name": "app", "image": "registry.example/app:1"}]}}}})
    helper = threading.Thread(target=free_the_budget)
    helper.start()
    try:
        rc, out = upgrade(fleet, "h2", "-e", "gpufleet_upgrade_drain_timeout=120")
    finally:
        helper.join()
    text = flat(out)
    assert rc == 2, out[-4000:]
    drain = text.split("Drain the node (evictions respect PodDisruptionBudgets)] ")[1].split("TASK [")[0]
    assert drain.startswith("*") and "changed: [h2 -> localhost]" in drain, text[-6000:]  # finished once freed
    assert not cp.exists("/api/v1/namespaces/ml/pods/" + pod)  # evicted
    # the DaemonSet pods (emptyDir) were left alone, as kubectl drain --ignore-daemonsets does
    assert daemonset_pods_with_emptydir(cp, "gpu-h2") == ds_pods
    # then the host did not answer: said as such, nothing of Ansible's internals
    assert "The rollout stopped at node gpu-h2 during 'Install the pins on the host': host h2 did not answer " \
           "over SSH, unreachable (" in text, text[-3000:]
    assert "Finalization of task args" not in text and "object of type" not in text
    assert "Host h2 became unreachable: check it is up and reachable over SSH" in text
    assert "resume with ansible-playbook playbooks/upgrade_driver.yml --limit localhost,h2" in text
    assert "To give up on this node: kubectl uncordon gpu-h2" in text
    node = cp.node("gpu-h2")
    ann = node["metadata"]["annotations"]
    assert node["spec"]["unschedulable"] is True
    assert ann["gpufleet.io/upgrade-in-progress"].startswith("driver 580.95.05 from host h2, started ")
    assert ann["gpufleet.io/upgrade-failed"].startswith("Install the pins on the host: host h2 did not answer over SSH")

    # the next run (check mode) names the Node left cordoned and why
    rc, out = upgrade(fleet, "h2", "--check")
    assert rc == 0, out[-3000:]
    assert "Node gpu-h2 (cordoned): an earlier upgrade failed at Install the pins on the host" in flat(out)
    assert recap(out)["changed"] == 0
