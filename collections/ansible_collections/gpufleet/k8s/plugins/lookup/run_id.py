# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: run_id
short_description: An identifier of this ansible-playbook run that no variable can know in advance
version_added: "0.5.0"
description:
  - Returns the same text in the controller process of one C(ansible-playbook) run and in every worker it forks, and a
    different text in every other run. It is a digest of the machine's boot id, the controller process's id and its
    start time; nothing is stored.
  - The gpufleet role records it beside the plan it publishes (C(__gpufleet_plan_run)); the stages reuse the plan only
    when the recorded identifier is this run's. A C(gpufleet_plan) from anywhere else (group_vars, host_vars, a fact
    cache, C(-e)) cannot carry it, so it never stands for the plan and never skips preflight.
author:
  - gpufleet maintainers (@gpufleet)
options: {}
"""

EXAMPLES = r"""
- name: Is the published plan this run's?
  ansible.builtin.debug:
    msg: "{{ (__gpufleet_plan_run | default('')) == lookup('gpufleet.k8s.run_id') }}"
"""

RETURN = r"""
_raw:
  description:
    - One text (a hexadecimal digest).
  type: list
  elements: str
"""

import hashlib
import multiprocessing
import os

from ansible.plugins.lookup import LookupBase


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return ""


def controller_pid():
    """The pid of the ansible-playbook process: this process, or the process that created this worker (Ansible's
    workers are multiprocessing processes created by the controller, whatever the start method)."""
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None else os.getpid()


def run_id(pid=None):
    pid = controller_pid() if pid is None else pid
    stat = _read("/proc/%d/stat" % pid)
    # field 22 (starttime), counted after the command name, which may hold spaces and parentheses
    started = stat.rsplit(")", 1)[-1].split()[19] if ")" in stat else ""
    text = "%s:%d:%s" % (_read("/proc/sys/kernel/random/boot_id"), pid, started)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        return [run_id()]
