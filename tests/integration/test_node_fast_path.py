"""The node stage's no-op fast path (playbooks/nodes.yml + gpufleet.k8s.node_stamp) on a real host.

One Debian 12 systemd container with Debian's containerd, reached over SSH with pipelining like a
real node; the stage installs Debian's real nvidia-driver, version systemd_node.DEBIAN12_DRIVER (no
GPU here: the driver role knows it runs in a container and builds no module) and the container toolkit from the local
stand-in repository (NVIDIA's repository is unreachable here; build-standin-repo.sh builds packages
with the real names and versions).

What is checked: everything the stage writes or installs lies under the stamp's watch list; a
re-run is one read-only call per host; with the fast path off the roles themselves change nothing
where the stamp said "converged"; every kind of drift is seen and names its item; drift sends the
host through the full stage, which repairs it; a changed input runs the stage.
"""
import json
import os
import re
import subprocess

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.node import node_stamp as ns
from ansible_run import ROOT, ansible, recap as recap_of
from controlplane import free_port
from systemd_node import (DEBIAN12_DRIVER, DEBIAN12_DRIVER_PACKAGE, TOOLKIT_PINNED, apt_install, boot, node_stage_inventory,
                         per_worker, podman, remove, shell_of, standin_toolkit_repo)

NODE = per_worker("gpufleet-fastpath-node")
STAMP = "/var/lib/gpufleet/node-stage.json"
PIN = "/etc/apt/preferences.d/gpufleet-nvidia-driver.pref"
UDEV = "/etc/udev/rules.d/71-nvidia-dev-char.rules"


sh = shell_of(NODE)   # a shell command in the node container


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    work = tmp_path_factory.mktemp("fastpath")
    repo = standin_toolkit_repo(work / "repo")
    key = work / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    port = free_port()
    # host network: sshd on its own loopback port (no other address is needed)
    boot(NODE, "--network", "host")
    sh(apt_install("containerd", "openssh-server") + " && systemctl enable --now containerd && systemctl stop ssh"
       " && printf 'Port %d\\nListenAddress 127.0.0.1\\nPermitRootLogin prohibit-password\\n'"
       " > /etc/ssh/sshd_config.d/test.conf && mkdir -p -m 700 /root/.ssh && systemctl start ssh" % port)
    podman("cp", str(key) + ".pub", NODE + ":/root/.ssh/authorized_keys")
    podman("cp", repo, NODE + ":/srv/repo")
    inv = node_stage_inventory(
        work / "hosts.yml", NODE, "fastpath", ansible_host="127.0.0.1", ansible_port=port, ansible_user="root",
        ansible_ssh_private_key_file=str(key),
        ansible_ssh_common_args="-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR")
    yield {"inventory": inv, "dir": work}
    remove(NODE)


def env(work, **extra):
    """The SSH connection's control sockets under the test's folder (shared by the runs of one node)."""
    return dict(extra, ANSIBLE_SSH_CONTROL_PATH_DIR=str(work["dir"] / "cp"))


def stage(work, *extra, json_out=False, check=False):
    cmd = [os.path.join(ROOT, "playbooks", "nodes.yml"), "-i", work["inventory"]]
    for item in extra:
        cmd += ["-e", item]
    if check:
        cmd += ["--check", "--diff"]
    proc = ansible("ansible-playbook", *cmd, timeout=900,
                   **env(work, **({"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"} if json_out else {})))
    if json_out:
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        return json.loads(proc.stdout[proc.stdout.index("{"):])
    return proc.returncode, re.sub(r"\s+", " ", proc.stdout + proc.stderr)


def recap(out):
    """(ok, changed, failed) of the node; it must have been reachable."""
    counts = recap_of(out, NODE)
    assert counts["unreachable"] == 0, out[-3000:]
    return counts["ok"], counts["changed"], counts["failed"]


def stamp():
    return json.loads(sh("cat " + STAMP).stdout)


def check_now(work, recorded):
    """The module alone, with the recorded inputs and watch: differences in state only."""
    args = json.dumps({"state": "check", "inputs": recorded["inputs"], "watch": recorded["watch"]})
    proc = ansible("ansible", NODE, "-i", work["inventory"], "-m", "gpufleet.k8s.node_stamp", "-a", args, timeout=120,
                   **env(work, ANSIBLE_CALLBACK_RESULT_FORMAT="json"))
    assert proc.returncode == 0, proc.stdout[-3000:]
    result = json.loads(proc.stdout[proc.stdout.index("{"):])
    return result["converged"], result["reasons"]


def written_by(result):
    """Files and packages named by one task's result (loop items included)."""
    items = result.get("results") if isinstance(result.get("results"), list) else [result]
    paths, packages = set(), set()
    for item in items:
        if not isinstance(item, dict):
            continue
        for key in ("dest", "path", "config_path", "dropin_path"):
            if isinstance(item.get(key), str) and item[key].startswith("/"):
                paths.add(item[key])
        args = (item.get("invocation") or {}).get("module_args") or {}
        if "update_cache" in args or "install_recommends" in args:  # ansible.builtin.apt
            names = args.get("name") or []
            packages.update([names] if isinstance(names, str) else names)
    return paths, packages


def test_first_converge_writes_and_installs_only_watched_things(work):
    report = stage(work, json_out=True)
    assert report["stats"][NODE]["failures"] == 0 and report["stats"][NODE]["changed"] > 0
    recorded = stamp()
    watch = ns.normalize_watch(recorded["watch"])
    paths, packages, tasks = set(), set(), 0
    for play in report["plays"]:
        for task in play["tasks"]:
            result = task["hosts"].get(NODE)
            if result is None:
                continue
            tasks += 1
            more_paths, more_packages = written_by(result)
            paths |= more_paths
            packages |= more_packages
    assert tasks > 30
    # the run did write and install things (else this check would pass on nothing)
    assert {PIN, UDEV, "/etc/ansible/facts.d/gpufleet_nvidia_driver.fact"} <= paths, sorted(paths)
    assert {"nvidia-driver=%s-*" % DEBIAN12_DRIVER, "nvidia-container-toolkit=" + TOOLKIT_PINNED} <= packages, sorted(packages)
    # the stamp and gpufleet's state directory it lives in (also home of the CDI generation record, which is watched)
    assert [p for p in paths - {STAMP, os.path.dirname(STAMP)} if not ns.covered(p, watch)] == []
    assert [p for p in packages if not ns.package_watched(p, watch)] == []
    assert recorded["state"]["packages"]["nvidia-driver"].endswith(" hi")  # held, and the stamp saw it


def test_noop_rerun_is_one_read_only_call(work):
    rc, out = stage(work)
    assert rc == 0 and recap(out) == (1, 0, 0), out[-2000:]
    rc, out = stage(work, check=True)
    assert rc == 0 and recap(out) == (1, 0, 0), out[-2000:]


def test_with_the_fast_path_off_the_roles_themselves_change_nothing(work):
    """Where the stamp says converged, every task of the stage agrees (changed=0)."""
    before = sh("cat " + STAMP).stdout
    rc, out = stage(work, "gpufleet_node_fast_path=false")
    ok, changed, failed = recap(out)
    assert rc == 0 and ok > 30 and changed == 0, out[-3000:]
    assert sh("cat " + STAMP).stdout == before


DRIFT = [
    # (what, inject, undo, reason fragment)
    ("pin file edited", "cp -a %s /root/pin.bak && echo '# local edit' >> %s" % (PIN, PIN),
     "cp -a /root/pin.bak %s" % PIN, "path %s: file 0:0 0644 sha256=" % PIN),
    ("pin file mode", "chmod 0600 " + PIN, "chmod 0644 " + PIN, "path %s: file 0:0 0644" % PIN),
    ("driver unheld", "apt-mark unhold nvidia-driver >/dev/null", "apt-mark hold nvidia-driver >/dev/null",
     "package nvidia-driver: %s hi -> %s ii" % (DEBIAN12_DRIVER_PACKAGE, DEBIAN12_DRIVER_PACKAGE)),
    ("toolkit removed", "dpkg -r --force-depends nvidia-container-toolkit >/dev/null 2>&1",
     "DEBIAN_FRONTEND=noninteractive apt-get install -qq -y --allow-change-held-packages nvidia-container-toolkit=%s >/dev/null 2>&1" % TOOLKIT_PINNED,
     "package nvidia-container-toolkit: %s ii -> " % TOOLKIT_PINNED),
    ("containerd config moved away", "mv /etc/containerd /root/containerd.bak", "mv /root/containerd.bak /etc/containerd",
     "path /etc/containerd: dir 0:0 0755 -> absent"),
    ("udev rule deleted", "cp -a %s /root/udev.bak && rm %s" % (UDEV, UDEV), "cp -a /root/udev.bak " + UDEV,
     "path %s: file 0:0 0644 sha256=" % UDEV),
    ("containerd stopped", "systemctl stop containerd", "systemctl start containerd",
     "service containerd.service: enabled active -> enabled inactive"),
    ("modprobe option added", "echo 'options nvidia NVreg_EnableGpuFirmware=0' > /etc/modprobe.d/local.conf",
     "rm /etc/modprobe.d/local.conf", "path /etc/modprobe.d/local.conf: absent -> file"),
]


@pytest.mark.parametrize("what, inject, undo, reason", DRIFT, ids=[d[0] for d in DRIFT])
def test_each_kind_of_drift_is_seen_and_named(work, what, inject, undo, reason):
    recorded = stamp()
    assert check_now(work, recorded) == (True, [])
    sh(inject)
    try:
        converged, reasons = check_now(work, recorded)
    finally:
        sh(undo)
    assert not converged and any(reason in r for r in reasons), reasons
    assert check_now(work, recorded) == (True, []), what  # the undo restored the recorded state


def test_drift_sends_the_host_through_the_full_stage_which_repairs_it(work):
    pin = sh("cat " + PIN).stdout
    sh("echo '# local edit' >> %s && apt-mark unhold nvidia-driver >/dev/null && rm %s" % (PIN, UDEV))
    rc, out = stage(work)
    ok, changed, _failed = recap(out)
    assert rc == 0 and ok > 30 and changed >= 3, out[-3000:]
    assert sh("cat " + PIN).stdout == pin
    assert "nvidia-driver" in sh("apt-mark showhold").stdout.split()
    assert sh("test -f " + UDEV, check=False).returncode == 0
    rc, out = stage(work)
    assert rc == 0 and recap(out) == (1, 0, 0), out[-2000:]


def test_a_changed_input_runs_the_stage_once(work):
    rc, out = stage(work, "nvidia_container_toolkit_dev_char_symlinks=false")
    ok, changed, _failed = recap(out)
    assert rc == 0 and ok > 30 and changed >= 1, out[-3000:]
    assert sh("test -e " + UDEV, check=False).returncode != 0
    rc, out = stage(work, "nvidia_container_toolkit_dev_char_symlinks=false")
    assert rc == 0 and recap(out) == (1, 0, 0), out[-2000:]
    rc, out = stage(work)  # back to the inventory's value: the stage runs and puts the rule back
    assert rc == 0 and recap(out)[1] >= 1 and sh("test -f " + UDEV, check=False).returncode == 0


def test_a_pending_reboot_keeps_the_host_out_of_the_fast_path(work):
    """No reboot can be needed in a container, so the driver role's published state says it is
    (extra vars win over set_fact): the stage then drops the stamp, and the next run goes through
    the whole stage again (where the role reports the pending reboot) instead of skipping."""
    rc, out = stage(work, '{"nvidia_driver_state": {"reboot_required": true}}')
    assert rc == 0 and recap(out)[0] > 30, out[-3000:]
    assert sh("test -e " + STAMP, check=False).returncode != 0
    rc, out = stage(work)
    assert rc == 0 and recap(out)[0] > 30, out[-3000:]
    rc, out = stage(work)
    assert rc == 0 and recap(out) == (1, 0, 0), out[-2000:]
