"""Every controller module has its action plugin, and only those do (issue 31 section 5).

A module gpufleet runs on the controller (a task on localhost or delegated there) pays about half a
second per task to start a module interpreter unless an action plugin of the same name runs it in the
worker process (plugin_utils/controller_module.py). The modules are classified here once; the test
fails when a module is unclassified, a controller module lacks its action plugin (or the plugin runs
another module), an action plugin has no module, or a host module's task is delegated to the
controller or a controller module's task runs in a play on the GPU hosts without delegation."""
import glob
import importlib
import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGINS = os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "k8s", "plugins")

# Run where the task runs, on a GPU host (they read or change the host).
HOST_MODULES = {"containerd_nvidia_runtime", "gpu_reset", "mig_layout", "node_stamp", "nvidia_gpu_info"}


def _names(folder):
    return sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(PLUGINS, folder, "*.py"))
                  if not os.path.basename(p).startswith("_"))


def controller_modules():
    return sorted(set(_names("modules")) - HOST_MODULES)


def test_every_module_is_classified_and_host_modules_exist():
    assert set(HOST_MODULES) <= set(_names("modules"))
    assert controller_modules(), "no controller module found: the scan is broken"


@pytest.mark.parametrize("name", controller_modules())
def test_controller_module_has_its_action_plugin(name):
    assert name in _names("action"), "plugins/action/%s.py is missing (controller module %s)" % (name, name)
    action = importlib.import_module("ansible_collections.gpufleet.k8s.plugins.action.%s" % name)
    module = importlib.import_module("ansible_collections.gpufleet.k8s.plugins.modules.%s" % name)
    assert action.ActionModule.MODULE is module
    assert action.ActionModule.NAME == "gpufleet.k8s.%s" % name
    # the in-process path calls run(module) with the module's own argument spec
    assert callable(getattr(module, "run", None)) and callable(getattr(module, "argspec", None))


def test_every_action_plugin_runs_a_controller_module():
    assert set(_names("action")) == set(controller_modules())


def _tasks(node):
    """Every task mapping of a play or task list, blocks included."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if any(key in node for key in ("block", "rescue", "always")):
            for key in ("block", "rescue", "always"):
                yield from _tasks(node.get(key) or [])
        else:
            yield node


def _module_of(task):
    for key in task:
        match = re.match(r"gpufleet\.k8s\.(\w+)$", str(key))
        if match and match.group(1) in _names("modules"):
            return match.group(1)
    return None


def test_host_modules_run_on_hosts_and_controller_modules_on_the_controller():
    wrong = []
    for path in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")):
        with open(path) as handle:
            plays = yaml.safe_load(handle) or []
        for play in plays:
            hosts = str(play.get("hosts", ""))
            on_hosts = "gpu_nodes" in hosts and "localhost" not in hosts
            for section in ("pre_tasks", "tasks", "post_tasks", "handlers"):
                for task in _tasks(play.get(section) or []):
                    name = _module_of(task)
                    delegated = task.get("delegate_to") == "localhost"
                    if name in HOST_MODULES and delegated:
                        wrong.append("%s: %s delegated to localhost" % (os.path.basename(path), name))
                    if name and name not in HOST_MODULES and on_hosts and not delegated:
                        wrong.append("%s: controller module %s runs on %s" % (os.path.basename(path), name, hosts))
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")):
        with open(path) as handle:
            for task in _tasks(yaml.safe_load(handle) or []):
                name = _module_of(task)
                if name in HOST_MODULES and task.get("delegate_to") == "localhost":
                    wrong.append("%s: %s delegated to localhost" % (os.path.relpath(path, ROOT), name))
    assert not wrong, wrong
