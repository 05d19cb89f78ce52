#!/usr/bin/env python3
"""Apply-mode benchmark: the cluster stage against `kubectl apply --server-side`, side by side, on a real
control plane (tests/helpers/controlplane.py: etcd + kube-apiserver on loopback, nothing else running).

Per round, on two fresh control planes (A for gpufleet, B for kubectl):
  render    playbooks/cluster.yml, render mode (gpufleet_apply false), into a fresh build directory
  first     playbooks/cluster.yml, apply mode, on A (nothing applied yet)
  no-op     the same again on A (changed=0 expected)
  k-first   kubectl apply --server-side of the rendered manifests, on B (nothing applied yet)
  k-no-op   the same again on B
Ratios: first / (render + k-first) and no-op / (render + k-no-op); the issue's target is <= 2 for both.

    .venv/bin/python bench/apply_cluster.py [--inventory inventories/example] [--rounds 3] [--json out.json]
    .venv/bin/python bench/apply_cluster.py --stage provision --platform eks --pools 200   # generated inventory
    .venv/bin/python bench/apply_cluster.py --stage provision --platform gke --pools 200   # ComputeClasses, no NAP

The machine is shared: the script prints each round as it goes, then medians.
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


STAGE = {"stage": "cluster"}
CRDS = {"eks": ["karpenter.sh_nodepools.yaml", "karpenter.k8s.aws_ec2nodeclasses.yaml", "karpenter.sh_nodeclaims.yaml"],
        "gke": ["cloud.google.com_computeclasses.yaml"]}


def playbook(build, kubeconfig, inventory, apply):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    cmd = [os.path.join(BIN, "ansible-playbook"), "playbooks/%s.yml" % STAGE["stage"], "-i", inventory,
           "-e", "gpufleet_build_dir=%s" % build, "-e", "dcgm_exporter_service_monitor=false"]
    if apply:
        cmd += ["-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % kubeconfig]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - t0
    if proc.returncode:
        raise SystemExit("ansible-playbook failed:\n" + (proc.stdout + proc.stderr)[-4000:])
    changed = int(re.search(r"localhost\s+: ok=\d+\s+changed=(\d+)", proc.stdout).group(1))
    return wall, changed


def manifests(build):
    out = []
    for dirpath, _dirs, files in sorted(os.walk(os.path.join(build, STAGE["stage"]))):
        if os.path.basename(dirpath) in ("examples", "nodes"):  # never applied
            continue
        out += [os.path.join(dirpath, n) for n in sorted(files) if n[:2].isdigit() and n.endswith(".yaml")]
    return out


def kubectl_apply(cp, files):
    # the Namespaces first, as one kubectl run could not otherwise apply objects into them on a fresh cluster
    cmd = [binary("kube", "kubectl"), "--kubeconfig", cp.kubeconfig, "apply", "--server-side"]
    for name in files:
        cmd += ["-f", name]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    wall = time.monotonic() - t0
    if proc.returncode:
        raise SystemExit("kubectl failed:\n" + proc.stderr[-3000:])
    return wall, len(proc.stdout.splitlines())


def ordered(files):
    """Namespace manifests first (kubectl applies files in the order given)."""
    return sorted(files, key=lambda f: 0 if "namespace" in os.path.basename(f).lower() else 1)


def one_round(inventory, crds):
    tmp = tempfile.mkdtemp(prefix="gpufleet-bench-apply-")
    a = ControlPlane(os.path.join(tmp, "a"), full=False)
    b = ControlPlane(os.path.join(tmp, "b"), full=False)
    try:
        a.start()
        b.start()
        if crds:
            a.install_crds(crds)
            b.install_crds(crds)
        row = {}
        row["render"], _ = playbook(os.path.join(tmp, "render"), None, inventory, apply=False)
        files = ordered(manifests(os.path.join(tmp, "render")))
        row["objects"] = len(files)
        row["first"], row["first_changed"] = playbook(os.path.join(tmp, "build"), a.kubeconfig, inventory, True)
        row["noop"], row["noop_changed"] = playbook(os.path.join(tmp, "build"), a.kubeconfig, inventory, True)
        row["k_first"], _ = kubectl_apply(b, files)
        row["k_noop"], _ = kubectl_apply(b, files)
        row["first_ratio"] = row["first"] / (row["render"] + row["k_first"])
        row["noop_ratio"] = row["noop"] / (row["render"] + row["k_noop"])
        return row
    finally:
        a.stop()
        b.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", default="inventories/example")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--stage", choices=["cluster", "provision"], default="cluster")
    parser.add_argument("--platform", choices=sorted(CRDS), help="generate an inventory of --pools pools")
    parser.add_argument("--pools", type=int, default=200)
    args = parser.parse_args()
    STAGE["stage"] = args.stage
    crds = []
    if args.platform:
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        from render_scale import inventory as generated  # pylint: disable=import-outside-toplevel
        args.inventory = os.path.join(tempfile.mkdtemp(prefix="gpufleet-bench-inv-"), "inv")
        generated(args.inventory, args.platform, args.pools)
        crds = CRDS[args.platform]
        if args.platform == "gke":
            # a ComputeClass per pool (what the cluster applies), and no node auto-provisioning: that is a gcloud
            # call to Google's API, which nothing here can reach
            import yaml  # pylint: disable=import-outside-toplevel
            path = os.path.join(args.inventory, "group_vars", "all", "gpufleet.yml")
            with open(path) as handle:
                values = yaml.safe_load(handle)
            for pool in values["gpufleet_gpu_pools"]:
                pool["compute_class"] = True
            values["gpu_pools_gke_nap"] = "disabled"
            with open(path, "w") as handle:
                yaml.safe_dump(values, handle)
    rows = []
    for i in range(args.rounds):
        row = one_round(args.inventory, crds)
        rows.append(row)
        print("round %d: %s" % (i + 1, ", ".join("%s %s" % (k, round(v, 2) if isinstance(v, float) else v)
                                                 for k, v in row.items())), flush=True)
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print("\n| work | gpufleet | kubectl (+ render) | ratio |\n|---|---|---|---|")
    print("| first apply, %d manifests | %.1f s | %.2f s + %.1f s render | %.2f |" % (
        med["objects"], med["first"], med["k_first"], med["render"], med["first_ratio"]))
    print("| no-op re-apply (changed=%d) | %.1f s | %.2f s + %.1f s render | %.2f |" % (
        med["noop_changed"], med["noop"], med["k_noop"], med["render"], med["noop_ratio"]))
    print("(medians of %d rounds; rows: %s)" % (len(rows), json.dumps([{k: round(v, 2) if isinstance(v, float) else v
                                                                        for k, v in r.items()} for r in rows])))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
