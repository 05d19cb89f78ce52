"""MIG partitioning by gpufleet on a self-managed node (issue 28 section 2): the gpu_mig role.

Real: the role over the podman connection in a Debian 12 systemd container, the systemd unit it installs
(enabled, ordered before containerd, run by systemd when the container boots again), the module and the
boot-time program (module_utils/node/mig_layout.py). STAND-IN (no GPU here): tests/standin/nvidia-smi-mig.py
as /usr/local/bin/nvidia-smi, two H200 GPUs whose MIG state lives in a JSON file and which print the
documented nvidia-smi formats; a containerd.service that only runs /bin/true, to check the ordering.
"""
import json
import time

import pytest

from ansible_run import CHECKOUT_PATHS, recap, run_playbook
from systemd_node import boot, install_standin, per_worker, podman, podman_inventory, remove, shell_of

NODE = per_worker("gpufleet-i28-mig")
STATE = "/var/lib/nvidia-smi-standin/state.json"

sh = shell_of(NODE)

PLAYBOOK = """- name: MIG layout of the node
  hosts: all
  gather_facts: false
  tasks:
    - name: Partition the GPUs
      ansible.builtin.include_role:
        name: gpu_mig
"""

CONTAINERD_STANDIN = """[Unit]
Description=STAND-IN for containerd (runs /bin/true): the MIG unit must be ordered before it
[Service]
Type=oneshot
RemainAfterExit=true
ExecStart=/bin/true
[Install]
WantedBy=multi-user.target
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    work = tmp_path_factory.mktemp("mig")
    boot(NODE)
    install_standin(NODE, "nvidia-smi-mig.py")
    (work / "containerd.service").write_text(CONTAINERD_STANDIN)
    podman("cp", str(work / "containerd.service"), NODE + ":/etc/systemd/system/containerd.service")
    sh("systemctl daemon-reload && systemctl enable containerd.service"
       " 2>/dev/null && nvidia-smi --query-gpu=index --format=csv,noheader >/dev/null")
    inv = podman_inventory(work / "hosts.yml", NODE)
    (work / "mig.yml").write_text(PLAYBOOK)
    yield {"inventory": inv, "playbook": str(work / "mig.yml")}
    remove(NODE)


def play(node, extra, *args):
    """(rc, changed count, output with whitespace collapsed) of the role with ``extra`` vars."""
    rc, out = run_playbook(node["playbook"], "-i", node["inventory"], "-e", json.dumps(extra), *args, collapse=True,
                           **CHECKOUT_PATHS)
    changed = recap(out, NODE)["changed"] if rc == 0 else None   # a failed run may end before the recap
    return rc, changed, out


def converged(node, extra, *args):
    rc, changed, out = play(node, extra, *args)
    assert rc == 0, out[-4000:]
    return changed, out


def gpus():
    return json.loads(sh("cat " + STATE).stdout)["gpus"]


def layout():
    """Per GPU: (MIG current, sorted profiles of the GPU instances that have their compute instance)."""
    return [(g["mig"], sorted(i["profile"] for i in g["gis"] if i["ci"])) for g in gpus()]


def snapshot():
    return sh("cat %s; cat %s.log 2>/dev/null; ls -l /etc/gpufleet /etc/systemd/system 2>&1; true" % (STATE, STATE)).stdout


ALL_1G = {"gpu_mig_profiles": {"1g.18gb": "all"}}
ALL_3G = {"gpu_mig_profiles": {"3g.71gb": "all"}}


def test_converge_rerun_check_refusal_change_boot_and_absent(node):
    # converge: MIG on, seven 1g.18gb instances with their compute instances on both GPUs
    changed, out = converged(node, ALL_1G)
    assert changed >= 5, out[-3000:]
    assert layout() == [(True, ["1g.18gb"] * 7)] * 2
    assert "GPU 1 (NVIDIA H200): MIG enabled, 7x 1g.18gb" in out
    assert sh("systemctl is-enabled gpufleet-mig.service").stdout.strip() == "enabled"
    assert "gpufleet-mig.service" in sh("systemctl show -p After --value containerd.service").stdout.split()
    config = json.loads(sh("cat /etc/gpufleet/mig-config.json").stdout)
    assert config == {"version": "v1", "mig-configs": {"gpufleet": [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.18gb": "all"}}]}}

    # re-run: the read-back equals the plan, nothing runs
    log_before = sh("cat %s.log" % STATE).stdout
    assert converged(node, ALL_1G)[0] == 0
    assert sh("cat %s.log" % STATE).stdout == log_before

    # check mode with another profile: the planned layout is shown, nothing changes
    before = snapshot()
    changed, out = converged(node, ALL_3G, "--check", "--diff")
    assert changed >= 1
    assert "+GPU 0 (NVIDIA H200): MIG enabled, 2x 3g.71gb" in out and "-GPU 0 (NVIDIA H200): MIG enabled, 7x 1g.18gb" in out
    assert snapshot() == before

    # a profile the H200 does not offer (an H100 profile): refused before anything changes
    rc, _changed, out = play(node, {"gpu_mig_profiles": {"1g.10gb": 7}})
    assert rc != 0
    assert "gpu_mig_profiles: '1g.10gb' is not a MIG profile GPU 0 (NVIDIA H200) offers; use one of: 1g.18gb, " \
           "1g.18gb+me, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb" in out
    assert snapshot() == before

    # change of profile
    changed, out = converged(node, ALL_3G)
    assert changed >= 2
    assert layout() == [(True, ["3g.71gb"] * 2)] * 2
    assert converged(node, ALL_3G)[0] == 0

    # a reboot loses the instances (MIG mode stays): the unit re-creates them before containerd starts
    sh("python3 -c \"import json; p='%s'; s=json.load(open(p)); [g.update(gis=[]) for g in s['gpus']]; "
       "json.dump(s, open(p, 'w'))\"" % STATE)
    podman("restart", "-t", "0", NODE)
    deadline = time.monotonic() + 60
    while sh("systemctl is-system-running", check=False).stdout.strip() not in ("running", "degraded"):
        assert time.monotonic() < deadline, "the node did not boot again"
        time.sleep(0.5)
    assert layout() == [(True, ["3g.71gb"] * 2)] * 2
    mig_done = int(sh("systemctl show -p ExecMainExitTimestampMonotonic --value gpufleet-mig.service").stdout)
    containerd_start = int(sh("systemctl show -p ExecMainStartTimestampMonotonic --value containerd.service").stdout)
    assert 0 < mig_done <= containerd_start
    assert "gpufleet-mig: GPU 0 (NVIDIA H200): MIG enabled, 2x 3g.71gb" in sh("journalctl -u gpufleet-mig.service").stdout
    assert converged(node, ALL_3G)[0] == 0

    # absent: instances destroyed, MIG off, unit and its files gone; then nothing left to do
    changed, out = converged(node, {"gpu_mig_state": "absent"})
    assert changed >= 2
    assert layout() == [(False, [])] * 2 and not any(g["mig_pending"] for g in gpus())
    assert sh("test -e /etc/systemd/system/gpufleet-mig.service || test -e /etc/gpufleet/mig-config.json",
              check=False).returncode == 1
    assert converged(node, {"gpu_mig_state": "absent"})[0] == 0
