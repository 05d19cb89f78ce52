#!/usr/bin/env python3
"""Render-mode scale benchmark: ansible-playbook site.yml on generated inventories of N pools.

For each platform and pool count it writes an inventory (self-managed platforms get one inventory
group with one host per pool), renders into a fresh build directory (first render), renders again
(re-render: byte-identical, changed=0) and records wall time, CPU time of ansible-playbook and its
workers, and the wall time of every stage (play) from the callback in bench/render_scale/.
Also times a re-render of inventories/example.

    .venv/bin/python bench/render_scale.py [--pools 50 100 200] [--platforms eks gke kubeadm]
                                            [--runs 1] [--json out.json]

Nothing is contacted: render mode (gpufleet_apply false) never reaches a host or a cluster.
The machine is shared: compare CPU seconds as well as wall seconds.
"""
import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
STAGES = ("Preflight", "Provision", "Nodes", "Cluster", "Validate", "Report", "Publish")
ZONES = {"eks": ["us-east-1a", "us-east-1b"], "gke": ["us-central1-a", "us-central1-b"]}
TYPES = {"eks": ["l4", "a10g", "t4"], "gke": ["l4", "t4"]}


def inventory(path, platform, count):
    os.makedirs(os.path.join(path, "group_vars", "all"))
    pools, groups = [], {}
    for i in range(count):
        kinds = TYPES.get(platform, ["l4", "t4", "a100-80gb"])
        pool = {"name": "pool-%03d" % i, "gpu_type": kinds[i % len(kinds)], "gpus_per_node": 1, "max_nodes": 4,
                "labels": {"example.com/team": "team-%d" % (i % 7)},
                "sharing": {"mode": "time-slicing", "replicas": 4} if i % 3 == 0 else {"mode": "none"}}
        if platform in ZONES:
            pool["zones"] = ZONES[platform]
        else:
            pool["node_group"] = "gpu_pool_%03d" % i
            groups[pool["node_group"]] = {"hosts": {"gpu-%03d" % i: {"ansible_connection": "local"}}}
        pools.append(pool)
    hosts = {"all": {"children": {"gpufleet_controller": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}}}
    if groups:
        hosts["all"]["children"]["gpu_nodes"] = {"children": groups}
    with open(os.path.join(path, "hosts.yml"), "w") as handle:
        yaml.safe_dump(hosts, handle)
    with open(os.path.join(path, "group_vars", "all", "gpufleet.yml"), "w") as handle:
        yaml.safe_dump({"gpufleet_platform": platform, "gpufleet_cluster_name": "bench", "gpufleet_apply": False,
                        "gpufleet_addons_mode": "standalone", "gpufleet_gpu_pools": pools}, handle)


def site(inv, build, times):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_PLUGINS=os.path.join(ROOT, "bench", "render_scale"),
               # the environment replaces ansible.cfg's callbacks_enabled: keep the project's preload callback
               ANSIBLE_CALLBACKS_ENABLED="gpufleet.k8s.preload_filters,stage_times", GPUFLEET_STAGE_TIMES=times,
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "site.yml", "-i", inv,
                           "-e", "gpufleet_build_dir=%s" % build], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit("site.yml failed on %s:\n%s" % (inv, (proc.stdout + proc.stderr)[-3000:]))
    recap = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+).*?skipped=(\d+)", proc.stdout)
    changed = int(recap.group(2))
    with open(times) as handle:
        plays = json.load(handle)["plays"]
    stages = dict.fromkeys(STAGES, 0.0)
    for play in plays:
        for stage in STAGES:
            if play["name"].startswith(stage):
                stages[stage] += play["seconds"]
    files = sum(len(f) for _d, _s, f in os.walk(build))
    return {"wall": round(wall, 2), "cpu": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
            "changed": changed, "files": files, "tasks": int(recap.group(1)) + int(recap.group(3)), "stages": {k: round(v, 2) for k, v in stages.items()}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pools", type=int, nargs="+", default=[50, 100, 200])
    parser.add_argument("--platforms", nargs="+", default=["eks", "gke", "kubeadm"])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="gpufleet-render-scale-")
    results = []
    try:
        for platform in args.platforms:
            for count in args.pools:
                inv = os.path.join(work, "%s-%d" % (platform, count), "inv")
                inventory(inv, platform, count)
                for run in range(args.runs):
                    build = os.path.join(work, "%s-%d" % (platform, count), "out-%d" % run)
                    first = site(inv, build, os.path.join(work, "times.json"))
                    again = site(inv, build, os.path.join(work, "times.json"))
                    results.append({"platform": platform, "pools": count, "run": run, "first": first, "again": again})
                    print("%-8s %4d pools: first %6.1f s wall %6.1f s CPU (%s), re-render %6.1f s wall, changed=%d, "
                          "%d files, %d task results" % (platform, count, first["wall"], first["cpu"],
                                        " ".join("%s %.1f" % (k, v) for k, v in first["stages"].items() if v >= 0.05),
                                        again["wall"], again["changed"], first["files"], first["tasks"]), flush=True)
        example = os.path.join(work, "example")
        site(os.path.join(ROOT, "inventories", "example"), example, os.path.join(work, "times.json"))
        for run in range(max(args.runs, 3)):
            again = site(os.path.join(ROOT, "inventories", "example"), example, os.path.join(work, "times.json"))
            results.append({"platform": "example", "pools": 2, "run": run, "again": again})
            print("example re-render: %.1f s wall, %.1f s CPU, changed=%d, %d task results" % (
                again["wall"], again["cpu"], again["changed"], again["tasks"]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
