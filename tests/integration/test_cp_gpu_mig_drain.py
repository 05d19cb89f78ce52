"""The gpu_mig role cordons and drains the node through the Kubernetes API before its GPUs change
(issue 28 section 2), and only then; after the change it restarts the device plugin's pod there.

Real: the test control plane (tests/helpers/controlplane.py: kube-apiserver, scheduler, controller-manager; KWOK
stands in for the kubelet of the Node), the Eviction API, the role over the podman connection in a Debian 12
systemd container. STAND-IN (no GPU here): tests/standin/nvidia-smi-mig.py as the host's nvidia-smi (two H200
GPUs, MIG state in a JSON file, the documented output formats).
"""
import json

import pytest

from systemd_node import boot, converge, install_standin, per_worker, remove, shell_of

NODE = per_worker("gpufleet-i28-migdrain")
NS = "ml"

sh = shell_of(NODE)

PLAYBOOK = """- name: MIG layout of the GPU nodes
  hosts: mig_nodes
  gather_facts: false
  tasks:
    - name: Partition the GPUs
      ansible.builtin.include_role:
        name: gpu_mig
"""


@pytest.fixture(scope="module")
def setup(control_plane, tmp_path_factory):
    cp = control_plane
    work = tmp_path_factory.mktemp("migdrain")
    boot(NODE)
    install_standin(NODE, "nvidia-smi-mig.py")
    (work / "hosts.yml").write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        "      ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n"
        "      gpufleet_k8s_connection: {kubeconfig: %s}\n"
        "  children:\n    mig_nodes:\n      hosts:\n        %s:\n          ansible_connection: containers.podman.podman\n"
        "          ansible_python_interpreter: /usr/bin/python3\n" % (cp.kubeconfig, NODE))
    (work / "mig.yml").write_text(PLAYBOOK)
    cp.add_node(NODE, gpu=2)
    cp.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    labels = {"app": "trainer"}
    cp.create("/apis/apps/v1/namespaces/%s/deployments" % NS, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "trainer", "namespace": NS},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"nodeSelector": {"kubernetes.io/hostname": NODE},
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                     "containers": [{"name": "app", "image": "registry.example/app:1",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}})
    # a stand-in for the device plugin's DaemonSet (its pod label); KWOK "runs" its pod on the node
    plugin = {"app.kubernetes.io/name": "nvidia-device-plugin"}
    cp.create("/apis/apps/v1/namespaces/%s/daemonsets" % NS, {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "device-plugin", "namespace": NS},
        "spec": {"selector": {"matchLabels": plugin}, "template": {"metadata": {"labels": plugin}, "spec": {
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "plugin", "image": "registry.example/device-plugin:1"}]}}}})
    yield {"cp": cp, "inventory": str(work / "hosts.yml"), "playbook": str(work / "mig.yml")}
    remove(NODE)


def trainer(cp):
    """The name of the running trainer pod on the node (waits for one)."""
    def running():
        pods = cp.items("/api/v1/namespaces/%s/pods?labelSelector=app%%3Dtrainer" % NS)
        return [p for p in pods if p["spec"].get("nodeName") == NODE and p["status"].get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]
    return cp.wait(running, 60, "the trainer pod running on " + NODE)[0]["metadata"]["name"]


def plugin_pod(cp):
    """The running device plugin pod's name on the node (waits for one)."""
    def running():
        pods = cp.items("/api/v1/namespaces/%s/pods?labelSelector=app.kubernetes.io%%2Fname%%3Dnvidia-device-plugin" % NS)
        return [p for p in pods if p["spec"].get("nodeName") == NODE and p["status"].get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]
    return cp.wait(running, 60, "the device plugin pod running on " + NODE)[0]["metadata"]["name"]


def play(setup, extra, *args):
    """(changed count of the node, output with whitespace collapsed) of the MIG playbook with ``extra`` vars."""
    return converge(setup["inventory"], setup["playbook"], NODE, "-e", json.dumps(extra), *args)


def unschedulable(cp):
    return bool(cp.node(NODE)["spec"].get("unschedulable"))


def test_drained_only_when_the_layout_changes_and_uncordoned_after(setup):
    cp = setup["cp"]
    first, plugin = trainer(cp), plugin_pod(cp)

    # check mode plans a change but neither cordons nor evicts
    changed, out = play(setup, {"gpu_mig_profiles": {"1g.18gb": "all"}}, "--check")
    assert changed >= 1 and "Drain the node" not in out
    assert trainer(cp) == first and plugin_pod(cp) == plugin and not unschedulable(cp)

    # a change: the pod is evicted through the API, the GPUs are partitioned, the node is schedulable again
    changed, out = play(setup, {"gpu_mig_profiles": {"1g.18gb": "all"}})
    assert changed >= 5
    assert "TASK [gpu_mig : Drain the node (evictions respect PodDisruptionBudgets)]" in out
    second = trainer(cp)   # the Deployment's new pod, back on the node once it was uncordoned
    assert second != first and not unschedulable(cp)
    new_plugin = plugin_pod(cp)   # deleted after the layout changed; its DaemonSet started it again
    assert new_plugin != plugin
    assert sh("cat /var/lib/nvidia-smi-standin/state.json").stdout.count('"1g.18gb"') == 14

    # nothing to change: no cordon, no eviction
    assert play(setup, {"gpu_mig_profiles": {"1g.18gb": "all"}})[0] == 0
    assert trainer(cp) == second and plugin_pod(cp) == new_plugin and not unschedulable(cp)

    # a node someone else cordoned stays cordoned after the role's change
    cp.merge_patch("/api/v1/nodes/" + NODE, {"spec": {"unschedulable": True}})
    changed, _out = play(setup, {"gpu_mig_profiles": {"3g.71gb": "all"}})
    assert changed >= 1 and unschedulable(cp)
    assert sh("cat /var/lib/nvidia-smi-standin/state.json").stdout.count('"3g.71gb"') == 4
