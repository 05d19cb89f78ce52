#!/usr/bin/env python3
"""Node labels and taints at fleet size: gpufleet.k8s.node_labels on 1,000 KWOK-simulated Nodes of a real
control plane (tests/helpers/controlplane.py: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and KWOK
standing in for the kubelets).

Per round, on one fresh control plane with N Nodes (created and Ready before anything is timed):
  stage-first   playbooks/provision.yml in apply mode, an inventory of N self-managed hosts (one pool),
                from Nodes that carry nothing of gpufleet's (label and taint every Node)
  stage-no-op   the same again (changed=0 expected)
  stage-absent  gpu_pools_state=absent (everything gpufleet set removed again; untimed target)
  task-first    a one-task playbook: gpufleet.k8s.node_labels with the same N Nodes, from empty again
  task-no-op    the same again (changed=0 expected)
  kubectl       the floor: `kubectl label nodes --all` then `kubectl taint nodes --all` (one label, one taint, other
                keys than gpufleet's), from empty, then the same again (kubectl-no-op)
The issue's targets: from empty <= 20 s, re-run changed=0 <= 5 s. "stage" times include ansible-playbook's
start, the inventory of N hosts, preflight and the Karpenter/ComputeClass-free provision stage; "task" times
are ansible-playbook with the one task (start + the module).

    .venv/bin/python bench/node_labels.py [--nodes 1000] [--rounds 2] [--workers 8] [--json out.json]
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
sys.path.insert(0, os.path.join(ROOT, "tests", "helpers"))

from controlplane import ControlPlane, binary  # noqa: E402  (tests/helpers/ on the path first)

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TASK_PLAYBOOK = """---
- name: Bench - label and taint the Nodes
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Set the labels and taints gpufleet owns on the existing Nodes
      gpufleet.k8s.node_labels:
        nodes: "{{ bench_nodes }}"
        workers: "{{ bench_workers | int }}"
        kubeconfig: "{{ bench_kubeconfig }}"
"""


def inventory(path, names):
    """The example's group_vars, every host in the train-a100 pool (its labels and nvidia.com/gpu taint)."""
    os.makedirs(os.path.join(path, "group_vars", "all"))
    shutil.copy(os.path.join(ROOT, "inventories", "example", "group_vars", "all", "gpufleet.yml"),
                os.path.join(path, "group_vars", "all", "gpufleet.yml"))
    lines = ["all:", "  children:", "    gpufleet_controller:", "      hosts:", "        localhost:",
             "          ansible_connection: local",
             "          ansible_python_interpreter: \"{{ ansible_playbook_python }}\"",
             "    gpu_nodes:", "      children:", "        gpu_pool_train_a100:", "          hosts:"]
    lines += ["            %s.example.internal: {gpufleet_node_name: %s}" % (n, n) for n in names]
    lines += ["        gpu_pool_infer_l4:", "          hosts: {}"]
    with open(os.path.join(path, "hosts.yml"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def ansible(cmd):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    wall = time.monotonic() - t0
    if proc.returncode:
        raise SystemExit("ansible-playbook failed:\n" + (proc.stdout + proc.stderr)[-4000:])
    changed = int(re.search(r"localhost\s+: ok=\d+\s+changed=(\d+)", proc.stdout).group(1))
    return wall, changed


def stage(cp, inv, build, *extra):
    return ansible([os.path.join(BIN, "ansible-playbook"), "playbooks/provision.yml", "-i", inv,
                    "-e", "gpufleet_build_dir=%s" % build, "-e", "gpufleet_apply=true",
                    "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig, "-e", '{"gpu_pools_examples": false}'] + list(extra))


def task(cp, tmp, names, workers):
    varfile = os.path.join(tmp, "nodes.json")
    with open(varfile, "w") as handle:
        json.dump({"bench_nodes": [{"name": n, "host": n + ".example.internal",
                                    "labels": {"gpufleet.io/pool": "train-a100"}, "taints": [GPU_TAINT]}
                                   for n in names], "bench_workers": workers, "bench_kubeconfig": cp.kubeconfig},
                  handle)
    book = os.path.join(tmp, "node_labels.yml")
    with open(book, "w") as handle:
        handle.write(TASK_PLAYBOOK)
    return ansible([os.path.join(BIN, "ansible-playbook"), book, "-i", "localhost,", "-c", "local",
                    "-e", "@" + varfile])


def kubectl(cp):
    """Wall seconds of kubectl labelling and tainting every Node (two commands, as a user would)."""
    t0 = time.monotonic()
    for args in (["label", "nodes", "--all", "--overwrite", "bench.gpufleet.io/kubectl=train"],
                 ["taint", "nodes", "--all", "--overwrite", "bench.gpufleet.io/kubectl=train:NoSchedule"]):
        proc = subprocess.run([binary("kube", "kubectl"), "--kubeconfig", cp.kubeconfig] + args, capture_output=True,
                              text=True, timeout=1200)
        if proc.returncode:
            raise SystemExit("kubectl failed:\n" + proc.stderr[-3000:])
    return time.monotonic() - t0


def check(cp, names, labelled):
    """Every Node carries gpufleet's pool label and taint (``labelled``) or nothing of gpufleet's."""
    bad = []
    for node in cp.items("/api/v1/nodes"):
        name = node["metadata"]["name"]
        if name not in names:
            continue
        has = node["metadata"].get("labels", {}).get("gpufleet.io/pool") == "train-a100" and \
            GPU_TAINT in (node["spec"].get("taints") or [])
        if has != labelled:
            bad.append(name)
    if bad:
        raise SystemExit("%d Nodes not as expected (labelled=%s), e.g. %s" % (len(bad), labelled, bad[:5]))


def one_round(count, workers):
    tmp = tempfile.mkdtemp(prefix="gpufleet-bench-nodes-")
    cp = ControlPlane(os.path.join(tmp, "cp"))
    names = ["gpu-%04d" % i for i in range(count)]
    try:
        cp.start()
        t0 = time.monotonic()
        cp.add_nodes(names, gpu=8, ready_timeout=600)
        row = {"nodes": count, "setup": time.monotonic() - t0}
        inv = inventory(os.path.join(tmp, "inv"), names)
        build = os.path.join(tmp, "build")
        row["stage_first"], row["stage_first_changed"] = stage(cp, inv, build)
        check(cp, names, True)
        row["stage_noop"], row["stage_noop_changed"] = stage(cp, inv, build)
        row["stage_absent"], _ = stage(cp, inv, build, "-e", "gpu_pools_state=absent")
        check(cp, names, False)
        row["task_first"], row["task_first_changed"] = task(cp, tmp, names, workers)
        check(cp, names, True)
        row["task_noop"], row["task_noop_changed"] = task(cp, tmp, names, workers)
        row["kubectl_first"] = kubectl(cp)
        row["kubectl_noop"] = kubectl(cp)
        return row
    finally:
        cp.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = []
    for i in range(args.rounds):
        row = one_round(args.nodes, args.workers)
        rows.append(row)
        print("round %d (load %s): %s" % (i + 1, " ".join("%.1f" % v for v in os.getloadavg()),
                                          ", ".join("%s %s" % (k, round(v, 2) if isinstance(v, float) else v)
                                                    for k, v in row.items())), flush=True)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print("\n| %d Nodes | from empty | re-run (changed) |\n|---|---|---|" % args.nodes)
    print("| provision stage | %.1f s | %.1f s (%d) |" % (med["stage_first"], med["stage_noop"], med["stage_noop_changed"]))
    print("| node_labels task | %.1f s | %.1f s (%d) |" % (med["task_first"], med["task_noop"], med["task_noop_changed"]))
    print("| kubectl label + taint --all | %.1f s | %.1f s |" % (med["kubectl_first"], med["kubectl_noop"]))
    print("(medians of %d rounds)" % len(rows))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
