# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Load this collection's filter plugins once, in the controller process, before any task runs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: preload_filters
type: aggregate
short_description: Load the collection's filters, action plugins and the roles' argument specs once per run
version_added: 0.1.0
description:
  - Ansible runs every task in a forked worker process, and a worker that resolves any filter of a
    collection loads every filter file of that collection (and the module_utils they import) from
    source, compiling it anew. A run of site.yml has about 90 tasks, so the same files were compiled
    about 90 times.
  - This callback loads the gpufleet.k8s filter plugins and action plugins (with the modules they run
    in-process) and reads the roles' argument specs in the controller process when the playbook
    starts. Workers are forked from it and find the loaded modules in C(sys.modules), so each file is
    compiled once per run.
  - In apply mode, when the task C(gpufleet.k8s.cluster_access) starts (stages include it in apply mode
    only), it also imports the kubernetes Python client (about half a second) in the controller, so that
    the Kubernetes tasks that run in their worker (C(gpufleet.k8s.cluster_access),
    C(gpufleet.k8s.k8s_apply_tree)) find it loaded; render mode never pays for it.
  - It prints nothing and changes no result. A filter file that fails to load is left to the task
    that uses it, which reports the error as it would without this callback.
requirements:
  - enabled in C(callbacks_enabled) (gpufleet's ansible.cfg enables it)
"""

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import filter_loader

COLLECTION = "gpufleet.k8s"


def preload(collection=COLLECTION):
    """Import every filter file of ``collection`` through Ansible's filter loader (the same module names
    and caches the workers use). Returns the names of the filters found; an empty list when loading
    failed (the tasks then load and report as usual)."""
    try:
        found = filter_loader.get_with_context(collection + "._gpufleet_preload_")
    except Exception:  # pylint: disable=broad-except  # a task reports the real error later
        return []
    del found
    return sorted(name for name in _loaded_filters(collection))


def _loaded_filters(collection):
    import sys  # pylint: disable=import-outside-toplevel

    prefix = "ansible_collections.%s.plugins.filter." % collection
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith(prefix) and hasattr(module, "FilterModule"):
            try:
                yield from module.FilterModule().filters()
            except Exception:  # pylint: disable=broad-except
                continue


def warm_controller_side(collection=COLLECTION):
    """Import the collection's action plugins (and the modules they run in-process) and read the roles'
    argument specs once, in the controller process, so that forked workers find them loaded. Returns
    what was warmed; anything that fails is left to the task that needs it."""
    import importlib  # pylint: disable=import-outside-toplevel
    import pkgutil  # pylint: disable=import-outside-toplevel

    warmed = []
    base = "ansible_collections.%s.plugins" % collection
    try:
        actions = importlib.import_module(base + ".action")
        for info in pkgutil.iter_modules(actions.__path__):
            importlib.import_module("%s.action.%s" % (base, info.name))
            warmed.append("action/" + info.name)
        role_specs = importlib.import_module(base + ".module_utils.core.role_specs")
        warmed.extend("argument_specs/" + role for role in sorted(role_specs.roles()))
    except Exception:  # pylint: disable=broad-except  # the task that needs it reports the real error
        pass
    return warmed


# What a worker running gpufleet's in-process Kubernetes modules imports (modules/k8s_apply_tree.py).
CLIENT_MODULES = ("kubernetes.client", "ansible_collections.kubernetes.core.plugins.module_utils.k8s.client")


def warm_cluster_client(modules=CLIENT_MODULES):
    """Import the Kubernetes client in the controller process; the names imported ([] when it fails)."""
    import importlib  # pylint: disable=import-outside-toplevel

    try:
        return [importlib.import_module(name).__name__ for name in modules]
    except Exception:  # pylint: disable=broad-except  # the task that needs it reports the real error
        return []


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpufleet.k8s.preload_filters"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self.filters = []
        self.warmed = []

    def v2_playbook_on_start(self, playbook):
        self.filters = preload()
        self.warmed = warm_controller_side()

    def v2_playbook_on_task_start(self, task, is_conditional):
        # sent before the task's workers are forked: they, and every later worker, inherit the client
        if getattr(task, "action", None) in ("gpufleet.k8s.cluster_access", "cluster_access") \
                and "client" not in self.warmed and warm_cluster_client():
            self.warmed.append("client")
