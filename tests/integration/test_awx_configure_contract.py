"""Every awx.awx task of awx/configure.yml passes only options its module documents (the installed awx.awx
collection, read with ansible-doc), and the fleet tasks give each job template and workflow what AWX needs.
No AWX can run here: this is the contract the tasks are written against."""
import json
import os
import re

import yaml

from ansible_run import ROOT, ansible

MODULE_KEY = re.compile(r"^awx\.awx\.(\w+)$")
TASK_KEYWORDS = {"name", "vars", "loop", "loop_control", "register", "when", "no_log", "check_mode", "tags"}


def tasks():
    with open(os.path.join(ROOT, "awx", "configure.yml")) as handle:
        plays = yaml.safe_load(handle)
    return [t for play in plays for t in play["tasks"]]


def awx_tasks():
    out = []
    for task in tasks():
        for key, args in task.items():
            match = MODULE_KEY.match(key)
            if match:
                out.append((task["name"], match.group(1), args))
    return out


def test_every_awx_task_passes_only_documented_options():
    used = awx_tasks()
    modules = sorted({m for _, m, _ in used})
    assert {"job_template", "workflow_job_template"} <= set(modules)
    proc = ansible("ansible-doc", "--json", "-t", "module", *["awx.awx." + m for m in modules], timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    docs = json.loads(proc.stdout)
    for name, module, args in used:
        options = set(docs["awx.awx." + module]["doc"]["options"])
        unknown = sorted(set(args) - options)
        assert not unknown, "%s (awx.awx.%s): undocumented options %s" % (name, module, unknown)


def test_the_fleet_tasks_come_from_the_checked_fleet_plan_before_any_change():
    names = [t["name"] for t in tasks()]
    fleet = names.index("Build the fleet workflows from the fleet inventories")
    first_change = min(i for i, t in enumerate(tasks()) if any(MODULE_KEY.match(k) for k in t))
    assert fleet < first_change
    by_name = dict((t["name"], t) for t in tasks())
    templates = by_name["Create one job template per fleet cluster and stage, on that cluster's inventory"]
    assert "__gpufleet_awx_fleets.fleets | map(attribute='job_templates') | flatten" in templates["loop"]
    args = templates["awx.awx.job_template"]
    assert args["inventory"] == "{{ item.inventory }}" and args["extra_vars"] == "{{ item.extra_vars }}"
    workflow = by_name["Create one workflow per fleet - each cluster's stages in order, the clusters side by side"]
    assert workflow["awx.awx.workflow_job_template"]["workflow_nodes"] == "{{ item.workflow_nodes }}"
    # the fleet workflows come after the per-cluster templates they name
    assert names.index(templates["name"]) < names.index(workflow["name"])
