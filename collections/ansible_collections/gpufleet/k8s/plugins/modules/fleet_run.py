#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleet_run
short_description: Run one gpufleet stage on every selected cluster of a fleet
version_added: "0.1.0"
description:
  - Checks the fleet file (O(clusters), O(select), O(pools), O(extra_args)) and, unless O(plan_only), runs
    C(playbooks/<stage>.yml) once per selected cluster as its own C(ansible-playbook -i <cluster inventory>)
    process, so that the variables of two clusters never mix. At most O(parallel) clusters run at a time.
  - Each cluster gets a private variables file (mode 0600) C(<run_dir>/<cluster>/fleet-vars.json) with its
    part of the fleet pools (C(gpufleet_fleet_pools)), who it is (C(gpufleet_fleet_cluster)), O(common_vars) and the
    cluster's own C(vars); nothing but that file's path goes on the command line. Its output goes to
    C(<run_dir>/<cluster>/<stage>.log).
  - A cluster that fails or runs past O(timeout) is recorded and the others go on; the module itself does not
    fail for it (the caller fails at the end, after the fleet report, naming the failed clusters).
  - Runs on the controller.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes
attributes:
  check_mode:
    details: Each cluster's run gets C(--check) (and C(--diff) in diff mode); its log and variables file are still written.
options:
  project_dir:
    description:
      - The project directory (C(playbook_dir | gpufleet.k8s.project_dir) - a clone's root, or the directory
        ansible-playbook runs in for the installed collection); the clusters' runs start there, and their default
        build folders and O(run_dir) are below it.
    type: path
    required: true
  playbooks_dir:
    description: The folder of the stage playbooks (the folder of C(fleet.yml)); defaults to C(<project_dir>/playbooks).
    type: path
  fleet_dir:
    description: The fleet inventory folder; relative cluster inventories are relative to it.
    type: path
    required: true
  stage:
    description: The stage playbook to run on each cluster.
    type: str
    required: true
    choices: [preflight, provision, nodes, cluster, validate, report, site, remediate, upgrade_driver]
  clusters:
    description:
      - The fleet's clusters (C(fleet_run_clusters)); each has C(name) (a DNS label, unique), C(inventory),
        C(cloud) (aws, gcp or onprem), C(region), optionally C(platform), C(tags) and C(vars).
      - Put no credentials into a cluster's C(vars) (they are shown like any other argument); use O(common_vars) or the
        cluster's own inventory (vault).
      - Each cluster's run gets the controller's environment without its credential variables (C(K8S_AUTH_*),
        C(KUBECONFIG), C(AWS_*), C(GOOGLE_*), C(CLOUDSDK_*), C(AZURE_*), and any name holding TOKEN, SECRET, PASSWORD,
        CREDENTIAL, API_KEY, ACCESS_KEY, PRIVATE_KEY or AUTH), except those named in the cluster's C(environment) (a
        list of variable names). C(credentials) (AWX credential names) is read by M(gpufleet.k8s.awx_fleet) only.
      - Two clusters whose inventories are one folder (C(../x) and C(../x/hosts.yml)) or whose runs would write one
        build folder are refused, naming both, before anything runs.
    type: list
    elements: dict
    required: true
  select:
    description: Selectors (C(fleet_run_select)) - a cluster name, C(region=<r>), C(cloud=<c>), C(tag=<t>); several
      select the union, none selects every cluster.
    type: list
    elements: str
    default: []
  pools:
    description: Pools spread across clusters (C(fleet_run_pools)); see C(docs/fleet-pools.md).
    type: list
    elements: dict
    default: []
  common_vars:
    description: Variables given to every cluster's run (in its private variables file); may hold credentials.
    type: dict
    default: {}
  parallel:
    description: How many clusters run at the same time.
    type: int
    default: 4
  timeout:
    description: Seconds one cluster's run may take before it is stopped and counted as failed.
    type: int
    default: 14400
  extra_args:
    description:
      - ansible-playbook options passed on to every cluster; only C(--tags), C(--skip-tags), C(--limit),
        C(--forks), C(--flush-cache) and C(-v) to C(-vvvv) (variables go into O(common_vars), never onto a command line).
    type: list
    elements: str
    default: []
  run_dir:
    description: Where the per-cluster folders go; defaults to C(<project_dir>/build/fleet/run).
    type: path
  tail_lines:
    description: How many last lines of a failed cluster's log the result carries.
    type: int
    default: 40
  ansible_playbook:
    description: The ansible-playbook program; defaults to the one beside the controller's Python, else C(PATH)'s.
    type: path
  plan_only:
    description: Check everything and return the plan (selected clusters, command lines, pool spread) without running.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Render every cluster of the fleet
  gpufleet.k8s.fleet_run:
    project_dir: "{{ playbook_dir }}/.."
    fleet_dir: "{{ inventory_dir }}"
    stage: site
    clusters: "{{ fleet_run_clusters }}"
    select: [region=us-east-1, tag=research]
  register: fleet
"""

RETURN = r"""
clusters:
  description:
    - One entry per cluster of the fleet, in fleet order - name, cloud, region, tags, inventory, status (ok, failed
      or skipped when not selected), rc, duration_s, changed, recap (PLAY RECAP totals), log, build_dir,
      report_json, message and, for a failed cluster, tail (the last lines of its log).
  returned: always
  type: list
  elements: dict
failed_clusters:
  description: Names of the clusters whose run failed.
  returned: always
  type: list
  elements: str
summary:
  description: One line - how many clusters ran, ok, failed (named, with why) and skipped.
  returned: always
  type: str
lines:
  description: One line per cluster - name, status, rc, duration, changed count, log (and why, when it failed).
  returned: always
  type: list
  elements: str
overview:
  description:
    - The clusters as role fleet_overview takes them (fleet_overview_clusters) - name, cloud, region, tags,
      report_json, status, message.
  returned: always
  type: list
  elements: dict
spread:
  description: The pool spread (one row per pool and cluster), for the plan.
  returned: always
  type: list
  elements: dict
"""

import os
import shutil
import sys

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import fleet_inventory as fleet
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import fleet_runner as runner
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.pool_spread import split_pools, spread_rows


def argspec():
    return dict(
        project_dir=dict(type="path", required=True),
        playbooks_dir=dict(type="path"),
        fleet_dir=dict(type="path", required=True),
        stage=dict(type="str", required=True, choices=list(fleet.STAGES)),
        clusters=dict(type="list", elements="dict", required=True),
        select=dict(type="list", elements="str", default=[]),
        pools=dict(type="list", elements="dict", default=[]),
        common_vars=dict(type="dict", default={}, no_log=True),
        parallel=dict(type="int", default=4),
        timeout=dict(type="int", default=14400),
        extra_args=dict(type="list", elements="str", default=[]),
        run_dir=dict(type="path"),
        tail_lines=dict(type="int", default=40),
        ansible_playbook=dict(type="path"),
        plan_only=dict(type="bool", default=False),
    )


def _program(given):
    if given:
        return given
    beside = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return beside if os.access(beside, os.X_OK) else (shutil.which("ansible-playbook") or "ansible-playbook")


def plan(p, check_mode=False, diff=False):
    """Everything checked, nothing run: {clusters, selected names, jobs, parts, spread, warnings}."""
    if p["parallel"] < 1:
        raise GpufleetError("fleet_run_parallel: %r; give 1 or more clusters at a time" % p["parallel"])
    if p["timeout"] < 1:
        raise GpufleetError("fleet_run_timeout: %r; give the seconds one cluster's run may take (1 or more)"
                            % p["timeout"])
    clusters = fleet.load(p["clusters"], p["fleet_dir"], p["common_vars"])
    # two clusters writing one build folder would overwrite each other: refused before anything runs
    fleet.check_build_dirs(clusters, p["project_dir"], p["common_vars"])
    selected = [c["name"] for c in fleet.select(clusters, p["select"])]
    extra = fleet.extra_args(p["extra_args"])
    playbooks_dir = p["playbooks_dir"] or os.path.join(p["project_dir"], "playbooks")
    playbook = fleet.stage_playbook(playbooks_dir, p["stage"])
    if not os.path.isfile(playbook):
        raise GpufleetError("fleet_run_stage: %s has no playbook %s" % (p["stage"], playbook))
    warnings = []
    parts = split_pools(p["pools"], clusters, selected=selected, warnings=warnings)
    spread = spread_rows(p["pools"], clusters, selected=selected) if p["pools"] else []
    run_dir = p["run_dir"] or os.path.join(p["project_dir"], "build", "fleet", "run")
    program = _program(p["ansible_playbook"])
    jobs = []
    for cluster in clusters:
        if cluster["name"] not in selected:
            continue
        folder = os.path.join(run_dir, cluster["name"])
        vars_file = os.path.join(folder, "fleet-vars.json")
        job_vars = fleet.cluster_vars(cluster, parts.get(cluster["name"], []), p["common_vars"])
        job_vars["gpufleet_fleet_build_dir_file"] = os.path.join(folder, fleet.BUILD_DIR_FILE)
        jobs.append({"name": cluster["name"], "folder": folder, "vars_file": vars_file, "cwd": p["project_dir"],
                     "log": os.path.join(folder, p["stage"] + ".log"), "vars": job_vars,
                     # the controller's environment without credential variables, but those the entry names
                     "env": runner.child_env(allow=cluster["environment"]),
                     "argv": fleet.command_line(program, playbooks_dir, cluster, p["stage"], vars_file,
                                                check_mode, diff, extra)})
    return {"clusters": clusters, "selected": selected, "jobs": jobs, "spread": spread, "warnings": warnings}


def _entry(p, cluster, outcome, folder=None):
    # what this run's cluster run said (only a cluster that ran now: an older file may be stale)
    build = fleet.build_dir(p["project_dir"], cluster, p["common_vars"], folder if outcome is not None else None)
    entry = {"name": cluster["name"], "cloud": cluster["cloud"], "region": cluster["region"],
             "tags": cluster["tags"], "platform": cluster["platform"], "inventory": cluster["inventory"],
             "build_dir": build, "report_json": os.path.join(build, "report", "fleet.json"),
             "status": "skipped", "rc": None, "duration_s": 0.0, "changed": 0, "recap": {}, "log": None,
             "message": "not selected (fleet_run_select)", "tail": []}
    if outcome is not None:
        entry.update((k, outcome[k]) for k in ("status", "rc", "duration_s", "recap", "message", "tail"))
        entry["changed"] = outcome["recap"].get("changed", 0)
        entry["log"] = outcome["log"]
    return entry


def execute(p, planned):
    """Run the planned jobs; the per-cluster entries of every fleet cluster (unselected ones skipped)."""
    for job in planned["jobs"]:  # every folder checked before any cluster runs
        said = job["vars"]["gpufleet_fleet_build_dir_file"]
        runner.private_dir(job["folder"], [os.path.basename(n) for n in (job["vars_file"], job["log"], said)])
    for job in planned["jobs"]:
        runner.write_vars(job["vars_file"], job["vars"])
        runner.remove_private(job["vars"]["gpufleet_fleet_build_dir_file"])
    results = runner.run_all(planned["jobs"], p["parallel"], p["timeout"], runner.child_env(), p["tail_lines"])
    outcomes, folders = {}, {}
    for job, outcome in zip(planned["jobs"], results):
        outcome["log"] = job["log"]
        outcomes[job["name"]] = outcome
        folders[job["name"]] = job["folder"]
    entries = [_entry(p, c, outcomes.get(c["name"]), folders.get(c["name"])) for c in planned["clusters"]]
    return _shared_build_dirs(entries)


def _shared_build_dirs(entries):
    """After the runs: two clusters whose runs said one build folder (a templated gpufleet_build_dir that could not
    be predicted) overwrote each other; both are marked failed, each naming the other, so the fleet report never
    shows one cluster's data under the other's name."""
    ran = [e for e in entries if e["log"] is not None]
    for entry in ran:
        others = [o["name"] for o in ran if o is not entry
                  and os.path.realpath(o["build_dir"]) == os.path.realpath(entry["build_dir"])]
        if others:
            entry.update(status="failed", message="its run wrote the build folder %s, as did %s; give each cluster "
                         "its own (gpufleet_build_dir / gpufleet_inventory_name)"
                         % (entry["build_dir"], ", ".join(others)))
    return entries


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action plugin when
    the task runs on the controller); ends with ``exit_json``/``fail_json``."""
    p = module.params
    try:
        planned = plan(p, module.check_mode, module._diff)
    except GpufleetError as exc:
        module.fail_json(msg=exc.msg)
    for warning in planned["warnings"]:
        module.warn(warning)
    commands = dict((job["name"], job["argv"]) for job in planned["jobs"])
    if p["plan_only"]:
        entries = [_entry(p, c, None) for c in planned["clusters"]]
        for entry in entries:
            if entry["name"] in planned["selected"]:
                entry.update(status="planned", message="")
        module.exit_json(changed=False, clusters=entries, selected=planned["selected"], commands=commands,
                         spread=planned["spread"], failed_clusters=[], lines=[runner.line(e) for e in entries],
                         overview=[runner.overview_entry(e) for e in entries],
                         summary="%d of %d cluster(s) selected: %s" % (
                             len(planned["selected"]), len(entries), ", ".join(planned["selected"])))
    try:
        entries = execute(p, planned)
    except GpufleetError as exc:
        module.fail_json(msg="cannot prepare the fleet run folders (no cluster ran): %s" % exc.msg)
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot prepare the fleet run folders: %s" % exc)
    failed = [e["name"] for e in entries if e["status"] == "failed"]
    module.exit_json(changed=any(e["changed"] for e in entries), clusters=entries, selected=planned["selected"],
                     commands=commands, spread=planned["spread"], failed_clusters=failed,
                     summary=runner.summary(entries), lines=[runner.line(e) for e in entries],
                     overview=[runner.overview_entry(e) for e in entries])


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
