# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The node stage's inputs digest (module_utils/node/node_stamp.py), taken on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.node_stamp import inputs_digest

# This collection's plugins (modules, module_utils, filters): a new gpufleet version is a new input.
PLUGINS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gpufleet_node_stage_inputs(variables, prefixes, code):
    """``hostvars[inventory_hostname] | node_stage_inputs(prefixes, code_paths)`` -> ``sha256:...``.

    ``variables``: the host's variables; those whose names start with one of ``prefixes`` count.
    ``code``: files/directories (roles, the playbook) whose content counts, besides this collection.
    """
    if isinstance(prefixes, str) or not prefixes:
        raise AnsibleFilterError("node_stage_inputs: prefixes must be a non-empty list of variable name prefixes")
    try:
        return inputs_digest(variables, list(prefixes), list(code) + [PLUGINS_DIR])
    except GpufleetError as exc:
        raise AnsibleFilterError("node_stage_inputs: %s" % exc.msg)


class FilterModule(object):
    def filters(self):
        return {"node_stage_inputs": gpufleet_node_stage_inputs}
