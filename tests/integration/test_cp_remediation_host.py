"""GPU health remediation on a self-managed host (issue 29 section 3): playbooks/remediate.yml with reset and
reboot in gpu_remediation_actions resets the unhealthy GPU of a drained node on its host, or reboots the host
when nvidia-smi refuses the reset, records what it did in the Node's record, restarts the device plugin after a
reset, and gives the node back on the next run once the host says it is healthy.

Real: the test control plane (tests/helpers/controlplane.py; a KWOK Node stands in for the kubelet), the
Eviction API, the DaemonSet controller and scheduler (the device plugin pod deleted after the reset comes back
on the tainted node because it tolerates the remediation taint), the playbook over the podman connection in a
Debian 12 systemd container, ansible.builtin.reboot (systemd_node.boot_rebootable). STAND-IN:
tests/standin/nvidia-smi-health.py as nvidia-smi (two H200s in the REAL recorded -q -x format; the reset
refused while persistence mode or another client holds the GPU, as nvidia-smi does; a reset or reboot clears
the volatile ECC count and applies a pending row remapping).

The tests run in order and share the node: dry run, reset, the way back, refused reset -> reboot, way back.
"""
import json
import os

import pytest

from ansible_run import ROOT, recap, run_site
from cp_nodes import cluster_inventory
from systemd_node import boot_id, boot_rebootable, install_standin, per_worker, podman, remove, shell_of

NODE = per_worker("gpufleet-i29-heal")
TAINT = "gpufleet.io/gpu-unhealthy"
RECORD = "gpufleet.io/gpu-remediation"
STATE = "/var/lib/nvidia-smi-standin/health.json"
BUS0, BUS1 = "00000000:18:00.0", "00000000:19:00.0"
PLUGIN = "app.kubernetes.io/name=nvidia-device-plugin"
SETTINGS = ("gpufleet_platform: kubeadm\ngpufleet_cluster_name: heal\ngpufleet_addons_mode: standalone\n"
            "gpufleet_gpu_pools:\n  - {name: train, gpu_type: h200-141gb, gpus_per_node: 2, node_group: gpu_pool_train, "
            "min_nodes: 0, max_nodes: 2}\n"
            "gpu_remediation_actions: [taint, cordon, drain, reset, reboot]\n"
            "gpu_remediation_reboot_timeout: 300\n")

sh = shell_of(NODE)


@pytest.fixture(scope="module")
def host(control_plane, tmp_path_factory):
    cp = control_plane
    work = tmp_path_factory.mktemp("heal")
    boot_rebootable(NODE, work)
    install_standin(NODE, "nvidia-smi-health.py")
    sh("mkdir -p /usr/share/nvidia-smi-standin")
    podman("cp", os.path.join(ROOT, "tests", "fixtures", "nvidia-smi", "h200-580-recorded.xml"),
           NODE + ":/usr/share/nvidia-smi-standin/h200.xml")
    sh("nvidia-smi -q -x >/dev/null")   # creates the stand-in's state: two healthy H200s
    inv = cluster_inventory(work / "inv", SETTINGS, {"gpu_pool_train": {NODE: {
        "gpufleet_node_name": NODE, "ansible_connection": "containers.podman.podman",
        "ansible_python_interpreter": "/usr/bin/python3"}}})
    cp.add_node(NODE, gpu=2, labels={"gpufleet.io/pool": "train"})
    for ns in ("ml", "nvidia-device-plugin"):
        cp.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    pin = {"nodeSelector": {"kubernetes.io/hostname": NODE}}
    gpu_toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    cp.create("/apis/apps/v1/namespaces/nvidia-device-plugin/daemonsets", {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "nvidia-device-plugin"},
        "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "nvidia-device-plugin"}}, "template": {
            "metadata": {"labels": {"app.kubernetes.io/name": "nvidia-device-plugin"}},
            # as gpufleet renders it (module_utils/addons/addons.py gpu_tolerations)
            "spec": dict(pin, tolerations=[gpu_toleration, {"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}],
                         containers=[{"name": "plugin", "image": "registry.example/device-plugin:1"}])}}})
    cp.create("/apis/apps/v1/namespaces/ml/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "trainer"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "trainer"}}, "template": {
            "metadata": {"labels": {"app": "trainer"}},
            "spec": dict(pin, tolerations=[gpu_toleration], containers=[{
                "name": "app", "image": "registry.example/train:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}])}}})
    yield {"cp": cp, "inv": inv, "build": work / "build"}
    remove(NODE)


def remediate(host, *extra):
    return run_site(host["build"], "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % host["cp"].kubeconfig,
                    *extra, playbook="playbooks/remediate.yml", inventory=host["inv"])


def running(cp, selector):
    """The names of the Running pods matching ``selector`` on the node (waits for one)."""
    def found():
        return [p["metadata"]["name"] for p in cp.items("/api/v1/pods?labelSelector=" + selector.replace("=", "%3D"))
                if p["spec"].get("nodeName") == NODE and p["status"].get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]
    return cp.wait(found, 60, "%s running on %s" % (selector, NODE))


def node_state(cp):
    node = cp.node(NODE)
    return {"tainted": any(t["key"] == TAINT for t in node["spec"].get("taints") or []),
            "cordoned": bool(node["spec"].get("unschedulable")),
            "record": json.loads((node["metadata"].get("annotations") or {}).get(RECORD, "null"))}


def standin(**gpu_changes):
    """Change the stand-in GPUs' state ({index: {field: value}}) and clear its command log."""
    state = json.loads(sh("cat " + STATE).stdout)
    for index, change in gpu_changes.get("gpus", {}).items():
        state["gpus"][index].update(change)
    state["clients"] = gpu_changes.get("clients", [])
    sh("cat > %s <<'EOF'\n%s\nEOF\n: > %s.log" % (STATE, json.dumps(state), STATE))


def smi_log():
    return [line for line in sh("cat %s.log" % STATE).stdout.splitlines() if line]


def report(host):
    with open(os.path.join(str(host["build"]), "remediation", "report.json")) as handle:
        return dict((n["name"], n) for n in json.load(handle)["nodes"])[NODE]


def test_dry_run_plans_the_reset_and_does_nothing(host):
    cp = host["cp"]
    running(cp, "app=trainer")
    standin(gpus={1: {"remap_pending": True}})
    rc, out = remediate(host)
    assert rc == 0, out[-4000:]
    rep = report(host)
    assert rep["decision"] == "act" and rep["findings"][0]["why"].startswith("GPU 1 (nvidia-smi): a row remapping waits")
    assert rep["done"][-1] == ("reset GPU %s (nvidia-smi --gpu-reset, persistence mode off for it); reboot if the reset "
                               "is refused" % BUS1)
    assert smi_log() == [] and node_state(cp) == {"tainted": False, "cordoned": False, "record": None}
    # --check with the dry run off: nothing on the cluster, nothing on the host
    rc, out = remediate(host, "-e", "gpu_remediation_dry_run=false", "--check")
    assert rc == 0, out[-4000:]
    assert smi_log() == [] and node_state(cp) == {"tainted": False, "cordoned": False, "record": None}


def test_the_unhealthy_gpu_is_reset_after_the_drain_and_the_plugin_restarted(host):
    cp = host["cp"]
    trainer, plugin, booted = running(cp, "app=trainer"), running(cp, PLUGIN), boot_id(NODE)
    rc, out = remediate(host, "-e", "gpu_remediation_dry_run=false")
    assert rc == 0, out[-4000:]
    order = [out.index(task) for task in ("TASK [gpu_remediation : Find unhealthy GPU nodes",
                                          "TASK [gpu_remediation : Reset the unhealthy GPUs",
                                          "TASK [gpu_remediation : Record the host steps")]
    assert order == sorted(order)
    # persistence mode off for the reset of GPU 1 only, and on again; no reboot
    assert smi_log() == ["nvidia-smi -pm 0 -i " + BUS1, "nvidia-smi --gpu-reset -i " + BUS1, "nvidia-smi -pm 1 -i " + BUS1]
    assert boot_id(NODE) == booted
    state = node_state(cp)
    assert state["tainted"] and state["cordoned"]
    assert [(s["step"], s["ok"], s["message"]) for s in state["record"]["host_steps"]] == [("reset", True, "reset " + BUS1)]
    # the trainer was evicted (its replacement cannot come back to the cordoned node)
    assert trainer[0] not in [p["metadata"]["name"] for p in cp.items("/api/v1/namespaces/ml/pods")]
    # the device plugin's pod was deleted and its DaemonSet started a new one on the tainted node
    assert running(cp, PLUGIN) != plugin
    rep = report(host)
    assert "reset: reset " + BUS1 in rep["done"] and any(d.startswith("device plugin restarted (pod nvidia-device-plugin/")
                                                        for d in rep["done"])


def test_healthy_after_the_reset_the_node_is_given_back(host):
    cp = host["cp"]
    standin()   # unchanged GPUs; the command log starts empty
    rc, out = remediate(host, "-e", "gpu_remediation_dry_run=false")
    assert rc == 0, out[-4000:]
    assert node_state(cp) == {"tainted": False, "cordoned": False, "record": None}
    assert report(host)["decision"] == "restore" and smi_log() == []
    # the runs after that change nothing on the cluster or the host (the first rewrites the report: restore -> none),
    # and the one after it nothing at all
    for _run in range(2):
        rc, out = remediate(host, "-e", "gpu_remediation_dry_run=false")
        assert rc == 0, out[-4000:]
        assert recap(out, NODE)["changed"] == 0 and smi_log() == [], out[-3000:]
        assert node_state(cp) == {"tainted": False, "cordoned": False, "record": None}
    assert recap(out)["changed"] == 0 and report(host)["decision"] == "none", out[-3000:]


def test_a_refused_reset_is_followed_by_a_reboot(host):
    cp = host["cp"]
    # double-bit ECC errors on GPU 0, which a monitoring client holds open: nvidia-smi refuses its reset
    standin(gpus={0: {"dbe": 2}}, clients=[BUS0])
    booted = boot_id(NODE)
    rc, out = remediate(host, "-e", "gpu_remediation_dry_run=false")
    assert rc == 0, out[-4000:]     # the reboot made good the refused reset
    assert boot_id(NODE) != booted
    assert smi_log() == ["nvidia-smi -pm 0 -i " + BUS0, "nvidia-smi --gpu-reset -i " + BUS0, "nvidia-smi -pm 1 -i " + BUS0]
    steps = node_state(cp)["record"]["host_steps"]
    assert [(s["step"], s["ok"]) for s in steps] == [("reset", False), ("reboot", True)]
    assert "%s: In use by another client" % BUS0 in steps[0]["message"]
    # the reboot cleared the errors (the stand-in sees it at its next call): the next run gives the node back
    rc, out = remediate(host, "-e", "gpu_remediation_dry_run=false")
    assert rc == 0, out[-4000:]
    assert node_state(cp) == {"tainted": False, "cordoned": False, "record": None}
    assert [line for line in smi_log()[3:] if not line.startswith("# reboot")] == []    # no reset, no reboot again
