"""The gpu_mig role's reboot path (issue 28 section 2): a MIG mode change that stays pending after the GPU
reset is refused (a pass-through GPU in a VM) is finished by a reboot, allowed with gpu_mig_allow_reboot; the
node is cordoned and drained before, the layout is in place after, the node uncordoned; a re-run changes
nothing and does not reboot.

Real: the test control plane (tests/helpers/controlplane.py; KWOK stands in for the Node's kubelet), the
Eviction API, the role over the podman connection in a Debian 12 systemd container, ansible.builtin.reboot
(shutdown -r in the container; podman's restart policy boots it again, systemd runs gpufleet-mig.service at
boot). STAND-INS: tests/standin/nvidia-smi-mig.py as nvidia-smi (two H200 GPUs whose MIG mode waits for a
reboot and whose reset is "not supported"; a reboot applies the pending mode and loses the GPU instances);
and a boot id per container start (systemd_node.boot_rebootable: a container shares the host kernel's boot id,
by which ansible.builtin.reboot and the stand-in tell that the host rebooted).
"""
import json

import pytest

from systemd_node import boot_id as node_boot_id, boot_rebootable, converge, install_standin, per_worker, remove, shell_of

NODE = per_worker("gpufleet-i28-migboot")
NS = "ml"
STATE = "/var/lib/nvidia-smi-standin/state.json"

sh = shell_of(NODE)

PLAYBOOK = """- name: MIG layout of the GPU nodes
  hosts: mig_nodes
  gather_facts: false
  tasks:
    - name: Partition the GPUs
      ansible.builtin.include_role:
        name: gpu_mig
"""


VM_GPUS = ("import json; p='%s'; s=json.load(open(p)); "
           "[g.update(needs_reset=True, reset_supported=False) for g in s['gpus']]; json.dump(s, open(p, 'w'))" % STATE)


@pytest.fixture(scope="module")
def setup(control_plane, tmp_path_factory):
    cp = control_plane
    work = tmp_path_factory.mktemp("migreboot")
    boot_rebootable(NODE, work)
    install_standin(NODE, "nvidia-smi-mig.py")
    sh("nvidia-smi --query-gpu=index --format=csv,noheader >/dev/null"
       " && python3 -c \"%s\"" % VM_GPUS)
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
    yield {"cp": cp, "inventory": str(work / "hosts.yml"), "playbook": str(work / "mig.yml")}
    remove(NODE)


def trainer(cp):
    """The name of the running trainer pod on the node (waits for one)."""
    def running():
        pods = cp.items("/api/v1/namespaces/%s/pods?labelSelector=app%%3Dtrainer" % NS)
        return [p for p in pods if p["spec"].get("nodeName") == NODE and p["status"].get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]
    return cp.wait(running, 60, "the trainer pod running on " + NODE)[0]["metadata"]["name"]


def layout():
    return [(g["mig"], g["mig_pending"], sorted(i["profile"] for i in g["gis"] if i["ci"]))
            for g in json.loads(sh("cat " + STATE).stdout)["gpus"]]


def boot_id():
    return node_boot_id(NODE)


ALL_1G = {"gpu_mig_profiles": {"1g.18gb": "all"}, "gpu_mig_allow_reboot": True}


def test_a_mode_change_pending_after_a_refused_reset_is_finished_by_a_reboot(setup):
    cp = setup["cp"]
    first, booted = trainer(cp), boot_id()

    changed, out = converge(setup["inventory"], setup["playbook"], NODE, "-e", json.dumps(ALL_1G))
    assert changed >= 5, out[-3000:]
    # drained before the GPUs changed; rebooted after the reset was refused; layout checked after the reboot
    order = [out.index(task) for task in (
        "TASK [gpu_mig : Drain the node (evictions respect PodDisruptionBudgets)]",
        "TASK [gpu_mig : Apply the MIG layout]",
        "TASK [gpu_mig : Reboot the host for the pending MIG mode change]",
        "TASK [gpu_mig : Apply the MIG layout after the reboot]",
        "TASK [gpu_mig : Uncordon the node that this role cordoned]")]
    assert order == sorted(order), out[-4000:]
    assert boot_id() != booted   # the container booted again
    assert sh("systemctl is-system-running", check=False).stdout.strip() in ("running", "degraded")

    # the reboot made MIG mode effective; gpufleet-mig.service created the instances at boot
    assert layout() == [(True, True, ["1g.18gb"] * 7)] * 2
    log = sh("cat %s.log" % STATE).stdout.splitlines()
    rebooted = [i for i, line in enumerate(log) if line.startswith("# reboot")][-1]
    # before the reboot: MIG mode requested, the reset tried (and refused), no instance created
    assert [line for line in log[:rebooted] if not line.startswith("#")] == [
        "nvidia-smi -i 0 -mig 1", "nvidia-smi -i 0 -r", "nvidia-smi -i 1 -mig 1", "nvidia-smi -i 1 -r"]
    assert [line for line in log[rebooted:] if "-cgi" in line] == [
        "nvidia-smi mig -i %d -cgi %s -C" % (i, ",".join("1g.18gb:%d" % s for s in range(7))) for i in (0, 1)]
    journal = sh("journalctl -b -u gpufleet-mig.service").stdout
    assert "gpufleet-mig: ran nvidia-smi mig -i 1 -cgi 1g.18gb:0," in journal
    assert "; GPU 1 (NVIDIA H200): MIG enabled, 7x 1g.18gb" in journal

    # the trainer was evicted before the reboot and came back once the node was uncordoned
    assert trainer(cp) != first and not cp.node(NODE)["spec"].get("unschedulable")

    # a re-run: nothing to change, no drain, no reboot
    booted = boot_id()
    changed, out = converge(setup["inventory"], setup["playbook"], NODE, "-e", json.dumps(ALL_1G))
    assert changed == 0, out[-3000:]
    assert "TASK [gpu_mig : Reboot the host" not in out and "TASK [gpu_mig : Drain the node" not in out
    assert boot_id() == booted
