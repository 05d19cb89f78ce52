"""The node stage on hosts without systemd as PID 1, and the container/VM verdict (issue 15).

Real parts: a Debian 12 podman container whose PID 1 is `sleep infinity` (systemd is installed in
the image but not running: systemctl answers "System has not been booted with systemd"), reached
with the podman connection; Debian's real apt; the real probe script of the nvidia_driver role,
run on this machine and inside the container.

This machine is itself a Firecracker VM with its own kernel whose root file system came from a
container image: /.dockerenv exists and systemd-detect-virt says "docker", like the H200 VM of
issue 15. No GPU here: the GPU side of that VM is covered by the recorded nvidia-smi XML
(tests/fixtures/nvidia-smi/h200-580-recorded.xml).
"""
import json
import os
import subprocess

import pytest

from ansible_collections.gpufleet.k8s.plugins.filter.nvidia_driver import nvidia_driver_container
from ansible_run import CHECKOUT_PATHS, ROOT, ansible, flat, recap
from systemd_node import (per_worker, DEBIAN12_DRIVER, apt_install, node_stage_inventory, podman, remove, shell_of, start,
                         standin_toolkit_repo)

NODE = per_worker("gpufleet-i15-nosystemd")
PROBE = os.path.join(ROOT, "roles", "nvidia_driver", "files", "probe.sh")
# Everything the stage could change: files under /etc and /var/lib/gpufleet, and the package database.
SNAPSHOT = ("find /etc /var/lib/gpufleet -xdev \\( -type f -o -type l \\) 2>/dev/null | sort | xargs -r sha256sum 2>/dev/null;"
            " dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'")


sh = shell_of(NODE)   # a shell command in the node container


def probe_kv(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("marker="))


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    work = tmp_path_factory.mktemp("nosystemd")
    repo = standin_toolkit_repo(work / "repo")
    start(NODE, "--hostname", NODE)
    # A node that already has package lists and its container runtime, as real nodes do.
    sh(apt_install("containerd"))
    podman("cp", repo, NODE + ":/srv/repo")
    inv = node_stage_inventory(work / "hosts.yml", NODE, "nosystemd", ansible_connection="containers.podman.podman")
    yield {"inventory": inv}
    remove(NODE)


def test_the_container_really_has_no_systemd_as_pid1(node):
    assert sh("cat /proc/1/comm").stdout.strip() == "sleep"
    assert sh("test -d /run/systemd/system", check=False).returncode != 0
    out = sh("systemctl show -p Id containerd.service 2>&1", check=False).stdout
    assert "not been booted with systemd" in out


def test_node_stamp_answers_no_service_manager(node):
    """Issue 15 item 1: state=present then state=check on the real host, no module failure."""
    args = {"path": "/tmp/stamp.json", "inputs": "sha256:x",
            "watch": {"paths": ["/etc/apt"], "packages": ["containerd*"],
                      "services": ["containerd.service", "nvidia-persistenced.service"]}}
    for state in ("present", "check"):
        proc = ansible("ansible", NODE, "-i", node["inventory"], "-m", "gpufleet.k8s.node_stamp",
                       "-a", json.dumps(dict(args, state=state)), timeout=120,
                       ANSIBLE_CALLBACK_RESULT_FORMAT="json", **CHECKOUT_PATHS)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert (result["converged"], result["reasons"]) == (True, [])
    stamp = json.loads(sh("cat /tmp/stamp.json").stdout)
    assert stamp["state"]["services"] == {"containerd.service": "unknown (no service manager)",
                                          "nvidia-persistenced.service": "unknown (no service manager)"}
    assert "containerd" in stamp["state"]["packages"]


def test_probe_tells_a_vm_built_from_an_image_from_a_container(node):
    """Issue 15 item 2: the same probe on this VM (own kernel) and inside the podman container."""
    script = open(PROBE).read()
    host = probe_kv(subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout)
    inside = probe_kv(sh(script).stdout)
    here = nvidia_driver_container(host)
    assert here["in_container"] is False, (host, here)
    if host.get("container", "none") != "none":     # this machine: /.dockerenv, systemd-detect-virt "docker"
        assert "kernel's own threads are visible" in here["evidence"]
    there = nvidia_driver_container(inside)
    assert (there["in_container"], there["container"]) == (True, "podman"), (inside, there)


def test_nodes_yml_runs_to_the_end_in_check_mode_and_changes_nothing(node):
    """Acceptance of issue 15: nodes.yml --check --diff to the end on a Debian host without systemd as PID 1."""
    before = sh(SNAPSHOT).stdout
    proc = ansible("ansible-playbook", os.path.join(ROOT, "playbooks", "nodes.yml"), "-i", node["inventory"],
                   "--check", "--diff", timeout=900, **CHECKOUT_PATHS)
    out = flat(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    counts = recap(out, NODE)
    assert (counts["unreachable"], counts["failed"]) == (0, 0), out[-3000:]
    # the last task (the stamp) ran: the play was not cut short
    assert "TASK [Record the converged state of this host (none while a reboot is pending)]" in proc.stdout
    assert "containerd: not restarted, this host has no running service manager (PID 1 is sleep" in out
    assert '"in_container": true' in out and '"pinned_to": "%s-*"' % DEBIAN12_DRIVER in out
    assert sh(SNAPSHOT).stdout == before, "check mode changed the host"
