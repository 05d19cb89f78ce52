"""One cluster connection for every Kubernetes task: each play that reaches the cluster (directly
or through the roles it includes) hands gpufleet_k8s_connection to every module group through
module_defaults, and no task sets its own kubeconfig/context any more (a value there used to reach
only some tasks: half-applied runs)."""
import glob
import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNTIME = yaml.safe_load(open(os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "k8s", "meta",
                                           "runtime.yml")))
K8S_MODULE = re.compile(r"^\s*-?\s*(kubernetes\.core\.(k8s\w*|helm\w*)|gpufleet\.k8s\.(\w+)):", re.M)


def walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def task_text(tasks, seen=None):
    """The tasks plus every role task file they include (include_role name/tasks_from, include_tasks)."""
    seen = set() if seen is None else seen
    text = yaml.safe_dump(tasks)
    for item in walk(tasks):
        inc = item.get("ansible.builtin.include_role")
        if isinstance(inc, dict):
            path = os.path.join(ROOT, "roles", inc["name"], "tasks", "%s.yml" % inc.get("tasks_from", "main"))
            if path not in seen:
                seen.add(path)
                role_tasks = yaml.safe_load(open(path)) or []
                text += "\n" + task_text(role_tasks, seen)
                for sub in walk(role_tasks):
                    if isinstance(sub.get("ansible.builtin.include_tasks"), str):
                        sub_path = os.path.join(os.path.dirname(path), sub["ansible.builtin.include_tasks"])
                        if "{{" not in sub_path and sub_path not in seen:
                            seen.add(sub_path)
                            text += "\n" + task_text(yaml.safe_load(open(sub_path)) or [], seen)
    return text


def modules_in(text):
    return {m.group(1) for m in K8S_MODULE.finditer(text)}


def test_gpufleets_cluster_modules_are_in_its_k8s_action_group():
    mods = glob.glob(os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "k8s", "plugins", "modules",
                                  "*.py"))
    using_client = sorted(os.path.basename(m)[:-3] for m in mods if "get_api_client" in open(m).read())
    assert using_client == ["cluster_access", "gpu_remediate", "k8s_apply_tree", "node_drain", "node_labels",
                            "validation_jobs"]
    assert sorted(RUNTIME["action_groups"]["k8s"]) == using_client
    # the one action group: a group no playbook sets module_defaults for means nothing
    assert list(RUNTIME["action_groups"]) == ["k8s"]


def test_every_play_that_reaches_the_cluster_gets_the_connection():
    checked = 0
    for path in sorted(glob.glob(os.path.join(ROOT, "playbooks", "*.yml"))):
        for play in yaml.safe_load(open(path)) or []:
            if "tasks" not in play:
                continue
            text = task_text(play["tasks"])
            used = {m for m in modules_in(text) if not m.startswith("gpufleet.k8s.") or
                    m.split(".")[-1] in RUNTIME["action_groups"]["k8s"]}
            if not used:
                continue
            checked += 1
            defaults = play.get("module_defaults") or {}
            where = "%s / %s" % (os.path.basename(path), play["name"])
            conn = "{{ hostvars['localhost'].gpufleet_k8s_connection | default({}) }}"
            assert defaults.get("group/kubernetes.core.k8s") == conn, where
            if any(m in used for m in ("kubernetes.core.k8s_cluster_info",)):
                assert defaults.get("kubernetes.core.k8s_cluster_info") == conn, where
            if any(m.startswith("gpufleet.k8s.") for m in used):
                assert defaults.get("group/gpufleet.k8s.k8s") == conn, where
            if any(m.startswith("kubernetes.core.helm") for m in used):
                assert defaults.get("group/kubernetes.core.helm") == \
                    "{{ hostvars['localhost'].gpufleet_helm_connection | default({}) }}", where
    assert checked >= 6


def test_no_task_sets_its_own_connection():
    offenders = []
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")) + glob.glob(
            os.path.join(ROOT, "playbooks", "*.yml")):
        for line in open(path):
            if re.match(r"^\s+(kubeconfig|context|host|api_key):", line) and "fleet_report" not in path:
                offenders.append("%s: %s" % (os.path.relpath(path, ROOT), line.strip()))
    assert offenders == []
