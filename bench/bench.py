#!/usr/bin/env python3
"""Converge benchmark: N Debian 12 systemd containers, the node stage, interleaved runs.

    bench/run.sh [--hosts 20] [--runs 3]

For each run: fresh containers (untimed prepare), then (a) `ansible -m ping` (the floor),
(b) the node stage's first converge, (c) the same again (no-op). Prints median wall times,
the (c)/(a) ratio, tasks executed per host in (c) and the controller's peak memory (RSS of
ansible-playbook and its forks as measured by GNU time's %M for the largest process).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
IMAGE = "localhost/gpufleet-debian:12"
PREFIX = "gpufleet-bench-"
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M)


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def containers_down():
    names = sh(["podman", "ps", "-a", "--format", "{{.Names}}"]).stdout.split()
    doomed = [n for n in names if n.startswith(PREFIX)]
    if doomed:
        subprocess.run(["podman", "rm", "-f", "-t", "0"] + doomed, capture_output=True)


def containers_up(n):
    containers_down()
    for i in range(n):
        name = "%s%02d" % (PREFIX, i)
        # host network: apt reaches the caching proxy on 127.0.0.1 without any other address
        sh(["podman", "run", "-d", "--name", name, "--hostname", name, "--network", "host",
            "--systemd=always", IMAGE, "/sbin/init"])
    deadline = time.time() + 120
    for i in range(n):
        name = "%s%02d" % (PREFIX, i)
        while time.time() < deadline:
            state = subprocess.run(["podman", "exec", name, "systemctl", "is-system-running"],
                                   capture_output=True, text=True).stdout.strip()
            if state in ("running", "degraded"):
                break
            time.sleep(0.5)


def write_inventory(path, n, forks):
    lines = ["all:", "  vars:", "    ansible_connection: containers.podman.podman",
             "    ansible_python_interpreter: /usr/bin/python3",
             "    nvidia_driver_version: \"535.261.03\"", "    nvidia_driver_source: distribution",
             "    nvidia_driver_flavour: proprietary", "    gpufleet_allow_eol_driver: true",
             "    nvidia_container_toolkit_repo_url: file:/srv/repo", "    nvidia_container_toolkit_repo_suite: ./",
             "    nvidia_container_toolkit_repo_trusted: true", "    nvidia_container_toolkit_repo_key_url: \"\"",
             "  children:", "    gpu_nodes:", "      hosts:"]
    lines += ["        %s%02d:" % (PREFIX, i) for i in range(n)]
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")


def timed(cmd, env):
    """Run under GNU time; return (seconds, peak RSS MiB, stdout)."""
    start = time.monotonic()
    proc = subprocess.run(["/usr/bin/time", "-f", "GPUFLEET_MAXRSS_KB=%M"] + cmd, cwd=ROOT, env=env,
                          capture_output=True, text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-2000:])
        raise SystemExit("bench: command failed: %s" % " ".join(cmd))
    rss = int(re.search(r"GPUFLEET_MAXRSS_KB=(\d+)", proc.stderr).group(1)) / 1024.0
    return wall, rss, proc.stdout


def tasks_per_host(output):
    per_host = [int(ok) + int(changed) for _h, ok, changed, _u, _f, _s in RECAP.findall(output)]
    changed = sum(int(c) for _h, _o, c, _u, _f, _s in RECAP.findall(output))
    return (max(per_host) if per_host else 0), changed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--forks", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="leave the containers running at the end")
    args = parser.parse_args()
    if not 1 <= args.hosts <= 100:
        raise SystemExit("bench: --hosts must be 1..100")
    work = tempfile.mkdtemp(prefix="gpufleet-bench-")
    repo = os.path.join(work, "repo")
    sh([os.path.join(ROOT, "molecule", "nvidia_container_toolkit", "files", "build-standin-repo.sh"), repo])
    inventory = os.path.join(work, "hosts.yml")
    write_inventory(inventory, args.hosts, args.forks)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORKS=str(args.forks),
               ANSIBLE_ROLES_PATH=os.path.join(ROOT, "roles"), ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"),
               ANSIBLE_NOCOLOR="1", PATH=BIN + os.pathsep + os.environ["PATH"])
    playbook = [os.path.join(BIN, "ansible-playbook"), "-i", inventory]
    results = {"ping": [], "first": [], "noop": []}
    rss = {"ping": 0.0, "first": 0.0, "noop": 0.0}
    noop_tasks = noop_changed = 0
    try:
        for run in range(args.runs):
            containers_up(args.hosts)
            prep = subprocess.run(playbook + [os.path.join(ROOT, "bench", "prepare.yml"), "-e", "bench_repo=" + repo],
                                  cwd=ROOT, env=env, capture_output=True, text=True)
            if prep.returncode != 0:
                sys.stderr.write(prep.stdout[-4000:] + prep.stderr[-2000:])
                raise SystemExit("bench: preparing the hosts failed")
            for phase, cmd in (("ping", [os.path.join(BIN, "ansible"), "gpu_nodes", "-i", inventory, "-m", "ansible.builtin.ping"]),
                               ("first", playbook + [os.path.join(ROOT, "bench", "node_stage.yml")]),
                               ("noop", playbook + [os.path.join(ROOT, "bench", "node_stage.yml")])):
                wall, peak, out = timed(cmd, env)
                results[phase].append(wall)
                rss[phase] = max(rss[phase], peak)
                if phase == "noop":
                    noop_tasks, noop_changed = tasks_per_host(out)
                print("run %d/%d %-5s %7.1f s  peak %6.1f MiB" % (run + 1, args.runs, phase, wall, peak), flush=True)
    finally:
        if not args.keep:
            containers_down()
        shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in results.items()}
    print()
    print("hosts=%d forks=%d runs=%d" % (args.hosts, args.forks, args.runs))
    print("| phase | median wall s | runs (s) | peak controller RSS MiB |")
    print("|---|---|---|---|")
    for phase, label in (("ping", "(a) ansible -m ping (floor)"), ("first", "(b) node stage, first converge"),
                         ("noop", "(c) node stage, no-op re-run")):
        print("| %s | %.1f | %s | %.0f |" % (label, med[phase], ", ".join("%.1f" % v for v in results[phase]), rss[phase]))
    print()
    print("no-op / ping ratio: %.2f" % (med["noop"] / med["ping"]))
    print("tasks executed per host in (c): %d (changed in (c): %d)" % (noop_tasks, noop_changed))


if __name__ == "__main__":
    main()
