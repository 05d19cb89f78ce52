#!/usr/bin/env python3
"""Converge benchmark: N Debian 12 systemd containers, the node stage, interleaved runs.

    bench/run.sh [--hosts 20] [--runs 3]
    bench/run.sh --clone --hosts 50 --runs 3 --full-runs 1

For each run: fresh containers (untimed prepare), then (a) `ansible -m ping` (the floor),
(b) the node stage as shipped (playbooks/nodes.yml: gpu_node_prep, nvidia_driver with Debian's
package, nvidia_container_toolkit from the stand-in repository, containerd runtime config) first
converge, (c) the same again (no-op: the fast path), (d) again with gpufleet_node_fast_path=false
(every task of the three roles runs and changes nothing), and (e) the floor of (b): on another set of fresh
containers with the apt sources (b) configured, one bare `apt-get update && apt-get install` per host, in
parallel, of exactly the package versions (b) installed (read from dpkg on the first host before and after
(b)); (b)/(e) says what gpufleet costs on top of the package installs themselves. (b)-(d) roll out in the
node stage's batches as shipped (a one-host canary, then 25 % of the hosts at a time) unless --serial
(e.g. --serial 100% for all hosts at once, the same parallelism as (e)).

--clone (the golden-image case of a real fleet, for no-op runs at sizes where N first converges take
too long here): converge ONE fresh host with the node stage as shipped (timed, reported as the golden
first converge), `podman commit` it to a local image, start the N hosts from that image (each with
its own hostname, sshd port and authorized key, as above), and run (a), (c) and (d) on the N clones;
no (b) or (e) on the clones. The clones are started once and serve all runs ((a), (c) and (d) change
nothing; the fast-path check below proves it for (c)). Every (c) must end every clone after one task
(the stamp check said converged) with nothing changed; the bench fails otherwise and names the hosts.
The committed image is removed at the end unless --keep.

Over SSH (default) every container runs sshd on its own
port of 127.0.0.1 and Ansible pipelines; each phase opens its own connections. Prints median wall times,
the (c)/(a) ratio, tasks executed per host and the controller's peak memory (RSS of
ansible-playbook and its forks as measured by GNU time's %M for the largest process).
"""
import argparse
import json
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
BASE_IMAGE = "localhost/gpufleet-debian:12"
# The base image + openssh-server + containerd (like any Kubernetes node), built once and cached.
IMAGE = "localhost/gpufleet-bench-node:12"
# --clone: the one converged host, committed (removed at the end unless --keep).
GOLDEN_IMAGE = "localhost/gpufleet-bench-golden:12"
PREFIX = "gpufleet-bench-"
PORT0 = 22100
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M)


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def containers_down():
    names = sh(["podman", "ps", "-a", "--format", "{{.Names}}"]).stdout.split()
    doomed = [n for n in names if n.startswith(PREFIX)]
    if doomed:
        subprocess.run(["podman", "rm", "-f", "-t", "0"] + doomed, capture_output=True)


def wait_booted(name, deadline):
    while time.time() < deadline:
        state = subprocess.run(["podman", "exec", name, "systemctl", "is-system-running"],
                               capture_output=True, text=True).stdout.strip()
        if state in ("running", "degraded"):
            return
        time.sleep(0.5)
    raise SystemExit("bench: %s did not boot" % name)


def build_image():
    """The bench node image: base + openssh-server (off at boot: every host gets its own port)."""
    if subprocess.run(["podman", "image", "exists", IMAGE]).returncode == 0:
        return
    name = PREFIX + "build"
    subprocess.run(["podman", "rm", "-f", "-t", "0", name], capture_output=True)
    sh(["podman", "run", "-d", "--name", name, "--network", "host", "--systemd=always", BASE_IMAGE, "/sbin/init"])
    try:
        wait_booted(name, time.time() + 120)
        sh(["podman", "exec", name, "sh", "-c",
            "echo 'Acquire::http::Proxy \"http://127.0.0.1:3142\";' > /etc/apt/apt.conf.d/01proxy"
            " && apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends"
            " openssh-server containerd && rm /etc/apt/apt.conf.d/01proxy && systemctl disable ssh.service"
            " && systemctl stop ssh.service containerd.service"
            " && printf 'PermitRootLogin prohibit-password\\nPasswordAuthentication no\\nUseDNS no\\n'"
            " > /etc/ssh/sshd_config.d/gpufleet-bench.conf"])
        sh(["podman", "commit", "--change", 'CMD ["/sbin/init"]', "--change", "STOPSIGNAL SIGRTMIN+3", name, IMAGE])
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", name], capture_output=True)


def containers_up(n, pubkey, image=IMAGE):
    containers_down()
    for i in range(n):
        name = "%s%02d" % (PREFIX, i)
        # host network: apt reaches the caching proxy on 127.0.0.1, each sshd listens on its own port
        sh(["podman", "run", "-d", "--name", name, "--hostname", name, "--network", "host",
            "--systemd=always", image, "/sbin/init"])
    deadline = time.time() + 120 + 4 * n
    for i in range(n):
        name = "%s%02d" % (PREFIX, i)
        wait_booted(name, deadline)
        subprocess.run(["podman", "exec", "-i", name, "sh", "-c",
                        "mkdir -p -m 700 /root/.ssh && cat > /root/.ssh/authorized_keys"
                        " && printf 'Port %d\\nListenAddress 127.0.0.1\\n' > /etc/ssh/sshd_config.d/port.conf"
                        " && systemctl start ssh.service" % (PORT0 + i)],
                       input=pubkey, text=True, check=True, capture_output=True)


def write_inventory(path, n, connection, key):
    if connection == "ssh":
        conn = ["    ansible_connection: ssh", "    ansible_host: 127.0.0.1", "    ansible_user: root",
                "    ansible_ssh_private_key_file: " + key,
                "    ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"]
    else:
        conn = ["    ansible_connection: containers.podman.podman"]
    lines = ["all:", "  vars:"] + conn + [
             "    ansible_python_interpreter: /usr/bin/python3",
             "    nvidia_driver_version: \"535.261.03\"", "    nvidia_driver_source: distribution",
             "    nvidia_driver_flavour: proprietary", "    gpufleet_allow_eol_driver: true",
             "    nvidia_container_toolkit_repo_url: file:/srv/repo", "    nvidia_container_toolkit_repo_suite: ./",
             "    nvidia_container_toolkit_repo_trusted: true", "    gpufleet_allow_unsigned_repos: true",
             "    nvidia_container_toolkit_repo_key_url: \"\"",
             # playbooks/nodes.yml as shipped: a self-managed cluster in apply mode, one GPU pool
             "    gpufleet_platform: kubeadm", "    gpufleet_cluster_name: bench", "    gpufleet_apply: true",
             "    gpufleet_gpu_pools: [{name: bench, gpu_type: t4, node_group: gpu_nodes}]",
             "  children:", "    gpu_nodes:", "      hosts:"]
    for i in range(n):
        lines.append("        %s%02d:" % (PREFIX, i))
        if connection == "ssh":
            lines.append("          ansible_port: %d" % (PORT0 + i))
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


def installed(name):
    """``package=version`` of every package dpkg has installed on container ``name``."""
    out = sh(["podman", "exec", name, "dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Package}=${Version}\\n"]).stdout
    return [line.split()[1] for line in out.splitlines() if line.startswith("ii ")]


def tasks_per_host(output):
    rows = [r for r in RECAP.findall(output) if r[0].startswith(PREFIX)]
    per_host = [int(ok) + int(changed) for _h, ok, changed, _u, _f, _s in rows]
    changed = sum(int(c) for _h, _o, c, _u, _f, _s in rows)
    return (max(per_host) if per_host else 0), changed


def off_fast_path(output, n):
    """Hosts of a no-op run that did more than the one stamp check or changed something (or are missing)."""
    rows = dict((r[0], r) for r in RECAP.findall(output) if r[0].startswith(PREFIX))
    bad = []
    for i in range(n):
        name = "%s%02d" % (PREFIX, i)
        row = rows.get(name)
        if row is None:
            bad.append("%s: not in the recap" % name)
        elif int(row[1]) + int(row[2]) != 1 or int(row[2]) or int(row[3]) or int(row[4]):
            bad.append("%s: ok=%s changed=%s unreachable=%s failed=%s" % row[:5])
    return bad


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--forks", type=int, default=20)
    parser.add_argument("--connection", choices=("ssh", "podman"), default="ssh",
                        help="ssh (default; sshd in every container, pipelining on, like a real fleet) or"
                             " containers.podman.podman (cannot pipeline)")
    parser.add_argument("--serial", help="gpufleet_nodes_serial for (b)-(d), e.g. 100%% (default: as shipped, a"
                                         " one-host canary then batches of 25%%)")
    parser.add_argument("--no-floor", action="store_true", help="skip (e), the bare apt-get floor of the first converge")
    parser.add_argument("--clone", action="store_true",
                        help="converge one host, commit it to an image, run (a), (c) and (d) on N clones of it"
                             " (the golden-image case; no (b)/(e) on the clones; see above)")
    parser.add_argument("--full-runs", type=int, help="run (d) in the last FULL_RUNS runs only (default: every run)")
    parser.add_argument("--keep", action="store_true",
                        help="leave the containers (and with --clone the committed image) at the end")
    parser.add_argument("--log-dir", help="write each phase's output to LOG_DIR/run<N>-<phase>.log (with"
                                          " ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks: time per task)")
    args = parser.parse_args()
    if not 1 <= args.hosts <= 100:
        raise SystemExit("bench: --hosts must be 1..100")
    work = tempfile.mkdtemp(prefix="gpufleet-bench-")
    repo = os.path.join(work, "repo")
    sh([os.path.join(ROOT, "molecule", "nvidia_container_toolkit", "files", "build-standin-repo.sh"), repo])
    key = os.path.join(work, "id_ed25519")
    sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key])
    with open(key + ".pub") as handle:
        pubkey = handle.read()
    build_image()
    inventory = os.path.join(work, "hosts.yml")
    write_inventory(inventory, args.hosts, args.connection, key)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORKS=str(args.forks),
               ANSIBLE_ROLES_PATH=os.path.join(ROOT, "roles"), ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"),
               ANSIBLE_NOCOLOR="1", PATH=BIN + os.pathsep + os.environ["PATH"])
    playbook = [os.path.join(BIN, "ansible-playbook"), "-i", inventory]
    stage = playbook + ([os.path.join(ROOT, "playbooks", "nodes.yml")]
                        + (["-e", json.dumps({"gpufleet_nodes_serial": [args.serial]})] if args.serial else []))
    results = {"ping": [], "golden": [], "first": [], "noop": [], "full": [], "floor": []}
    rss = dict((k, 0.0) for k in results)
    tasks = {}

    def prepare():
        containers_up(args.hosts, pubkey)
        prep = subprocess.run(playbook + [os.path.join(ROOT, "bench", "prepare.yml"), "-e", "bench_repo=" + repo],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        if prep.returncode != 0:
            sys.stderr.write(prep.stdout[-4000:] + prep.stderr[-2000:])
            raise SystemExit("bench: preparing the hosts failed")

    def record(phase, run, wall, peak, out):
        if args.log_dir:
            os.makedirs(args.log_dir, exist_ok=True)
            with open(os.path.join(args.log_dir, "run%d-%s.log" % (run + 1, phase)), "w") as handle:
                handle.write(out)
        results[phase].append(wall)
        rss[phase] = max(rss[phase], peak)
        print("run %d/%d %-5s %7.1f s  peak %6.1f MiB" % (run + 1, args.runs, phase, wall, peak), flush=True)

    full_runs = args.runs if args.full_runs is None else args.full_runs

    def phase_env():
        # Every phase opens its own SSH connections (like a separate cron run): no
        # ControlPersist master survives from the phase before.
        return dict(env, ANSIBLE_SSH_CONTROL_PATH_DIR=tempfile.mkdtemp(dir=work, prefix="cp-"))

    def clone_runs():
        # The golden host: one fresh host, prepared and converged with the node stage as shipped.
        one = os.path.join(work, "golden.yml")
        write_inventory(one, 1, args.connection, key)
        containers_up(1, pubkey)
        prep = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", one, os.path.join(ROOT, "bench", "prepare.yml"),
                               "-e", "bench_repo=" + repo], cwd=ROOT, env=env, capture_output=True, text=True)
        if prep.returncode != 0:
            sys.stderr.write(prep.stdout[-4000:] + prep.stderr[-2000:])
            raise SystemExit("bench: preparing the golden host failed")
        wall, peak, out = timed([os.path.join(BIN, "ansible-playbook"), "-i", one] + stage[3:], phase_env())
        tasks["golden"] = tasks_per_host(out)
        record("golden", 0, wall, peak, out)
        # The image: the converged host as it is (stamp in /var/lib/gpufleet included); every clone
        # gets its own hostname, sshd port and authorized key when it starts.
        sh(["podman", "commit", "--change", 'CMD ["/sbin/init"]', "--change", "STOPSIGNAL SIGRTMIN+3",
            PREFIX + "00", GOLDEN_IMAGE])
        start = time.monotonic()
        containers_up(args.hosts, pubkey, GOLDEN_IMAGE)
        print("%d clones up in %.0f s (untimed)" % (args.hosts, time.monotonic() - start), flush=True)
        for run in range(args.runs):
            phases = [("ping", [os.path.join(BIN, "ansible"), "gpu_nodes", "-i", inventory, "-m", "ansible.builtin.ping"]),
                      ("noop", stage)]
            if run >= args.runs - full_runs:
                phases.append(("full", stage + ["-e", "gpufleet_node_fast_path=false"]))
            for phase, cmd in phases:
                wall, peak, out = timed(cmd, phase_env())
                record(phase, run, wall, peak, out)
                if phase == "ping":
                    continue
                tasks[phase] = tasks_per_host(out)
                if phase == "noop":
                    bad = off_fast_path(out, args.hosts)
                    if bad:
                        raise SystemExit("bench: %d of %d clones left the fast path:\n  %s"
                                         % (len(bad), args.hosts, "\n  ".join(bad)))
                    print("run %d/%d noop: all %d clones ended after the stamp check (1 task, changed 0)"
                          % (run + 1, args.runs, args.hosts), flush=True)

    try:
        if args.clone:
            clone_runs()
        for run in range(0 if args.clone else args.runs):
            prepare()
            before = installed(PREFIX + "00")
            for phase, cmd in (("ping", [os.path.join(BIN, "ansible"), "gpu_nodes", "-i", inventory, "-m", "ansible.builtin.ping"]),
                               ("first", stage),
                               ("noop", stage),
                               ("full", stage + ["-e", "gpufleet_node_fast_path=false"])):
                if phase == "full" and run < args.runs - full_runs:
                    continue
                wall, peak, out = timed(cmd, phase_env())
                if phase != "ping":
                    tasks[phase] = tasks_per_host(out)
                if phase == "first":
                    packages = sorted(set(installed(PREFIX + "00")) - set(before))
                    apt_state = subprocess.run(["podman", "exec", PREFIX + "00", "tar", "-C", "/", "-czf", "-", "etc/apt",
                                                "usr/share/keyrings"], check=True, capture_output=True).stdout
                record(phase, run, wall, peak, out)
            if args.no_floor:
                continue
            # (e) the floor: fresh hosts, the apt sources and keys (b) left (untimed), then the same
            # package versions with one bare apt-get per host, all hosts in parallel
            prepare()
            for i in range(args.hosts):
                subprocess.run(["podman", "exec", "-i", "%s%02d" % (PREFIX, i), "tar", "-C", "/", "-xzf", "-"],
                               input=apt_state, check=True, capture_output=True)
            floor = [os.path.join(BIN, "ansible"), "gpu_nodes", "-i", inventory, "-m", "ansible.builtin.shell", "-a",
                     "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "
                     + " ".join(packages)]
            wall, peak, out = timed(floor, phase_env())
            tasks["floor"] = (1, len(packages))
            record("floor", run, wall, peak, out)
    finally:
        if not args.keep:
            containers_down()
            if args.clone:
                subprocess.run(["podman", "rmi", "-f", GOLDEN_IMAGE], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in results.items() if v}
    print()
    print("hosts=%d forks=%d runs=%d connection=%s serial=%s%s" % (args.hosts, args.forks, args.runs, args.connection,
                                                                 args.serial or "as shipped (1, 25%)",
                                                                 " clone (golden image)" if args.clone else ""))
    print("| phase | median wall s | runs (s) | tasks/host | changed | peak controller RSS MiB |")
    print("|---|---|---|---|---|---|")
    for phase, label in (("ping", "(a) ansible -m ping (floor)"),
                         ("golden", "(b) first converge of the one golden host (1 host)"),
                         ("first", "(b) node stage, first converge"),
                         ("noop", "(c) node stage, no-op re-run"),
                         ("full", "(d) no-op re-run, fast path off (every task runs)"),
                         ("floor", "(e) floor of (b): bare apt-get install of its packages (changed: packages)")):
        if phase not in med:
            continue
        done, changed = tasks.get(phase, (1, 0))
        print("| %s | %.1f | %s | %d | %d | %.0f |" % (label, med[phase], ", ".join("%.1f" % v for v in results[phase]),
                                                       done, changed, rss[phase]))
    print()
    print("no-op / ping ratio: %.2f" % (med["noop"] / med["ping"])
          + (" (fast path off: %.2f)" % (med["full"] / med["ping"]) if "full" in med else ""))
    if "floor" in med:
        print("first converge / apt floor ratio: %.2f" % (med["first"] / med["floor"]))


if __name__ == "__main__":
    main()
