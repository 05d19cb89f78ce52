"""kubernetes.core tasks never log their arguments (issue 30, item 3).

kubernetes.core's action plugins copy the task's arguments unmasked into the result of a module that crashed
(``_ensure_invocation``), and the stages hand the bearer token to every such task through module_defaults: an API
server that stops answering mid-stage put the token in the -vvv output and the job events. Every kubernetes.core task
in the roles and playbooks therefore runs with ``no_log`` and registers its result; unless it keeps going on a
failure by design (``failed_when: false``, handled by its own next task), the next task fails with
gpufleet.k8s.k8s_task_problem's message. The filter's messages are checked here on recorded result shapes."""
import glob
import os

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.cluster_access import task_problem

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKEN = "sentinel-token-0a1b2c3d"
# the shape of a crashed k8s_info (ansible-core 2.19): no invocation left by the module, the action plugin's copy
CRASHED = {"failed": True, "changed": False,
           "msg": "Task failed: Module failed: HTTPSConnectionPool(host='127.0.0.1', port=6443): Max retries exceeded "
                  "with url: /version (Caused by NewConnectionError(... [Errno 111] Connection refused))",
           "invocation": {"module_args": {"api_key": TOKEN, "kind": "Node"}}}


@pytest.mark.parametrize("result,expected", [
    ({"changed": False, "resources": []}, ""),
    ({"skipped": True, "changed": False}, ""),
    (None, ""),
    (CRASHED, "Reading the nodes failed: Task failed: Module failed: HTTPSConnectionPool(host='127.0.0.1', port=6443)"),
    ({"failed": True, "msg": "One or more items failed", "results": [
        {"failed": False, "item": {"name": "a"}, "_ansible_item_label": "ns/a"},
        dict(CRASHED, item={"name": "b"}, _ansible_item_label="ns/b")]},
     "Reading the nodes failed: ns/b: Task failed: Module failed: HTTPSConnectionPool"),
    ({"failed": True, "results": [dict(CRASHED, item={"apiVersion": "batch/v1", "kind": "Job",
                                                      "metadata": {"name": "smoke", "namespace": "v"}, "spec": {}})]},
     "Reading the nodes failed: Job/smoke: Task failed: Module failed"),
    ({"failed": True, "results": [dict(CRASHED, item="clusterpolicies.nvidia.com")]},
     "Reading the nodes failed: clusterpolicies.nvidia.com: Task failed"),
    ({"failed": True, "msg": "refused: Authorization: Bearer %s" % TOKEN},
     "Reading the nodes failed: refused: Authorization: Bearer ********"),
    ({"failed": True}, "Reading the nodes failed: failed without a message"),
])
def test_message_names_the_step_and_the_error_never_the_token(result, expected):
    text = task_problem(result, "Reading the nodes", {"host": "https://127.0.0.1:6443", "api_key": TOKEN})
    assert text.startswith(expected) if expected else text == ""
    assert TOKEN not in text and "invocation" not in text


def _task_lists():
    paths = glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")) + glob.glob(os.path.join(ROOT, "playbooks", "*.yml"))
    for path in sorted(paths):
        with open(path) as f:
            data = yaml.safe_load(f) or []
        yield from _lists(os.path.relpath(path, ROOT), data)


def _lists(where, node, rescued=False):
    """Every list of tasks (play task sections, blocks) as (where, list, whether a rescue handles a failure)."""
    if isinstance(node, list):
        if any(isinstance(t, dict) for t in node):
            yield where, node, rescued
        for item in node:
            yield from _lists(where, item)
    elif isinstance(node, dict):
        for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            if key in node:
                yield from _lists(where, node[key], key == "block" and bool(node.get("rescue")))


def _kubernetes_core_tasks():
    for where, tasks, rescued in _task_lists():
        for i, task in enumerate(tasks):
            if isinstance(task, dict) and any(k.startswith("kubernetes.core.") for k in task):
                yield where, task, tasks[i + 1] if i + 1 < len(tasks) else None, rescued


def test_the_scan_finds_the_kubernetes_core_tasks():
    names = {t["name"] for _w, t, _n, _r in _kubernetes_core_tasks()}
    assert {"Read the nodes", "Install the GPU Operator chart with the rendered values",
            "Read Nodes and Pods from the cluster"} <= names, names


def _read(where):
    with open(os.path.join(ROOT, where)) as f:
        return f.read()


@pytest.mark.parametrize("where,task,after,rescued", list(_kubernetes_core_tasks()),
                         ids=[t["name"] for _w, t, _n, _r in _kubernetes_core_tasks()])
def test_every_kubernetes_core_task_runs_without_a_log_and_says_its_error(where, task, after, rescued):
    assert task.get("no_log") is True, "%s: %r needs no_log: true" % (where, task["name"])
    register = task.get("register")
    if rescued and not task.get("ignore_errors"):
        # a failure goes to the block's rescue, which says ansible_failed_result.msg (the raw result: the
        # message, never the invocation)
        assert "ansible_failed_result.msg" in _read(where), (where, task["name"])
        return
    assert register, "%s: %r must register its result for the next task to say its error" % (where, task["name"])
    if task.get("failed_when") is False:
        # keeps going by design; its next task reads the result (gpu_mig's drain)
        assert after and register in str(after), (where, task["name"])
        return
    assert task.get("ignore_errors") is True, (where, task["name"])
    if "%s | gpufleet.k8s.fleet_report_cluster" % register in _read(where):
        return  # the report's reads: the filter raises the error where the results are used
    msg = str(after.get("ansible.builtin.fail", {}).get("msg")) if after else ""
    assert "%s | gpufleet.k8s.k8s_task_problem" % register in msg, (
        "%s: the task after %r must fail with k8s_task_problem" % (where, task["name"]))
    assert after.get("when") == "%s is failed" % register or "if %s is failed" % register in msg, (where, task["name"])
