#!/usr/bin/env python3
"""The fleet-wide report at fleet size (issue 29: 100 clusters render in under 10 s).

Untimed first: N clusters' reports written as build/<cluster>/report/fleet.json by tests/helpers/fleet_gen.py
(fleet_report's own build_report on generated Nodes, Pods and Prometheus answers: the real per-cluster
format), one failed cluster and one without a report among them, and --history earlier runs kept.

Timed, per round, on a fresh output folder holding those history runs:
  module       gpufleet.k8s.fleet_overview in process (the controller action's path): read the N reports,
               sum, right-size, read the history, render HTML/Markdown/JSON, write the files
  module-noop  the same again with a later timestamp and the same fleet (nothing written: changed=false)
  build        build_overview alone (reports already read), then render_files alone
  playbook     ansible-playbook playbooks/fleet_overview.yml -e @vars (the role: start, argument spec check,
               the module, the summary), what a user waits for after the fleet run

    .venv/bin/python bench/fleet_overview.py [--clusters 100] [--rounds 3] [--history 11] [--json out.json]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))
sys.path.insert(0, os.path.join(ROOT, "tests", "helpers"))

from fleet_gen import write_fleet  # noqa: E402  (tests/helpers/ on the path first)
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import fleet_overview as fo  # noqa: E402
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_overview_render import render_files  # noqa: E402
from ansible_collections.gpufleet.k8s.plugins.modules import fleet_overview as module  # noqa: E402
from ansible_collections.gpufleet.k8s.plugins.plugin_utils.controller_module import run_in_process  # noqa: E402


def timed(func):
    start = time.perf_counter()
    value = func()
    return time.perf_counter() - start, value


def seed_history(dest, clusters, count):
    """``count`` earlier runs in dest/history (the same fleet a day apart, one cluster fewer each day)."""
    for day in range(count):
        stamp = "2026-11-%02dT03:00:00Z" % (1 + day)
        run_in_process(module, dict(dest=dest, clusters=clusters[:len(clusters) - count + day], generated_at=stamp,
                                    history=count + 1), name="bench")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--history", type=int, default=11, help="earlier runs kept (the role keeps 12 with this one)")
    parser.add_argument("--json")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="gpufleet-bench-overview-")
    try:
        gen_s, clusters = timed(lambda: write_fleet(work, args.clusters, failed=(5,), missing=(7,)))
        rows = {"module": [], "module-noop": [], "build": [], "render": [], "playbook": []}
        sizes = {}
        for rnd in range(args.rounds):
            dest = os.path.join(work, "out-%d" % rnd)
            seed_history(dest, clusters, args.history)
            params = dict(dest=dest, clusters=clusters, generated_at="2026-12-03T03:00:00Z", history=args.history + 1)
            secs, result = timed(lambda: run_in_process(module, params, name="bench"))
            assert result.get("changed") and "failed" not in result, result.get("msg")
            assert len(result["overview"]["trend"]) == args.history + 1
            rows["module"].append(secs)
            params2 = dict(params, generated_at="2026-12-04T03:00:00Z")
            secs, again = timed(lambda: run_in_process(module, params2, name="bench"))
            assert again["changed"] is False, "the no-op run changed something"
            rows["module-noop"].append(secs)
            checked = fo.check_clusters(clusters)
            reports = fo.read_reports(checked)
            secs, overview = timed(lambda: fo.build_overview(checked, reports, "2026-12-03T03:00:00Z"))
            rows["build"].append(secs)
            overview["trend"] = result["overview"]["trend"]
            secs, files = timed(lambda: render_files(overview))
            rows["render"].append(secs)
            sizes = dict((name, len(text)) for name, text in files.items())
            pdest = os.path.join(work, "play-%d" % rnd)
            seed_history(pdest, clusters, args.history)
            vars_file = os.path.join(work, "vars-%d.json" % rnd)
            with open(vars_file, "w") as handle:
                json.dump({"fleet_overview_clusters": clusters, "fleet_overview_dir": pdest,
                           "fleet_overview_history": args.history + 1, "fleet_overview_print": False}, handle)
            env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
            cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "playbooks/fleet_overview.yml",
                   "-e", "@" + vars_file]
            secs, proc = timed(lambda: subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True))
            assert proc.returncode == 0 and "changed=1" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]
            rows["playbook"].append(secs)
        pools = result["overview"]["totals"]["pools"]
        print("fleet: %d clusters (%d pools, %d GPUs), generated in %.2f s (untimed); %d earlier runs kept"
              % (args.clusters, pools, result["overview"]["totals"]["gpus"], gen_s, args.history))
        print("files: %s" % ", ".join("%s %d KiB" % (n, s // 1024) for n, s in sorted(sizes.items())))
        print("| step | " + " | ".join("round %d" % (i + 1) for i in range(args.rounds)) + " | median |")
        print("|---|" + "---|" * (args.rounds + 1))
        for name, values in rows.items():
            print("| %s | %s | %.3f s |" % (name, " | ".join("%.3f s" % v for v in values), statistics.median(values)))
        print("load average: %s" % " ".join("%.2f" % v for v in os.getloadavg()))
        if args.json:
            with open(args.json, "w") as handle:
                json.dump({"clusters": args.clusters, "pools": pools, "rounds": rows, "sizes": sizes}, handle, indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
