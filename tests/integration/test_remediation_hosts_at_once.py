"""gpu_remediation_hosts_at_once: the host steps of GPU health remediation (roles/gpu_remediation tasks/host.yml, as
playbooks/remediate.yml runs them) take the hosts one after the other by default, and that many at a time when
set. Three inventory hosts on the local connection run the role's real host tasks (the real gpu_reset module)
with a LABELLED STAND-IN nvidia-smi first on PATH: stateless, two GPUs without persistence mode, and a reset that
takes a second and writes when it started and ended. No reboot runs here (test_cp_remediation_host reboots a
container)."""
import os
import stat

import yaml

from ansible_run import recap, run_playbook

STANDIN = """#!/bin/sh
# STAND-IN for nvidia-smi (gpufleet tests; not NVIDIA's program): the two calls gpu_reset makes here.
case "$1" in
  --query-gpu=*) printf '0, 00000000:19:00.0, GPU-aaaa, Disabled\\n1, 00000000:3B:00.0, GPU-bbbb, Disabled\\n' ;;
  --gpu-reset)
    echo "start $PPID $(date +%s.%N)" >> "$STANDIN_LOG"
    sleep 1
    echo "end $PPID $(date +%s.%N)" >> "$STANDIN_LOG"
    echo "GPU 00000000:19:00.0 was successfully reset."
    echo "All done." ;;
  *) echo "stand-in: unexpected call: $*" >&2; exit 2 ;;
esac
"""

PLAYBOOK = [{
    "name": "Host steps of remediation",
    "hosts": "gpu_nodes",
    "gather_facts": False,
    "tasks": [{"name": "Do the host step", "ansible.builtin.include_role": {"name": "gpu_remediation",
                                                                              "tasks_from": "host"},
               "vars": {"__gpu_remediation_step": {"step": "reset", "gpus": ["0"], "fallback": "none"}}},
              {"name": "Show the result", "ansible.builtin.debug": {"var": "__gpu_remediation_host_result"}}],
}]


def intervals(log):
    starts, ends = {}, {}
    with open(log) as handle:
        for line in handle:
            kind, pid, when = line.split()
            (starts if kind == "start" else ends)[pid] = float(when)
    return sorted((starts[p], ends[p]) for p in starts)


def run(tmp_path, at_once):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    smi = bindir / "nvidia-smi"
    smi.write_text(STANDIN)
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / ("resets-%d.log" % at_once)
    hosts = {"gpu-%d" % i: {"ansible_connection": "local",
                            "ansible_python_interpreter": "{{ ansible_playbook_python }}"} for i in range(3)}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": hosts}}}}))
    playbook = tmp_path / "host-steps.yml"
    playbook.write_text(yaml.safe_dump(PLAYBOOK, sort_keys=False))
    env = {"PATH": "%s:%s" % (bindir, os.environ["PATH"]), "STANDIN_LOG": str(log)}
    rc, out = run_playbook(str(playbook), "-i", str(inventory), "-f", "5", "-e",
                           "gpu_remediation_hosts_at_once=%d" % at_once, **env)
    assert rc == 0, out[-3000:]
    for host in hosts:
        assert recap(out, host)["failed"] == 0
    # each host's record says the reset of its GPU 0 worked
    assert out.count("message: reset 00000000:19:00.0") == 3, out[-3000:]
    spans = intervals(str(log))
    assert len(spans) == 3, spans
    return spans


def overlapping(spans):
    return sum(1 for (s1, e1), (s2, _e2) in zip(spans, spans[1:]) if s2 < e1)


def test_one_host_at_a_time_by_default_and_more_when_allowed(tmp_path):
    assert overlapping(run(tmp_path, 1)) == 0        # each reset starts after the previous host's ended
    assert overlapping(run(tmp_path, 3)) >= 1        # three at once: they run side by side
