# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Role argument specs (meta/argument_specs.yml) read at run time: the options of the roles a stage
playbook includes, so that the AWX surveys (module_utils/awx_survey.py) ask only about documented
options. The role README generator is a developer tool: scripts/argspec_docs.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.yaml_support import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.errors import GpufleetError

INCLUDE_ROLE = re.compile(r"^\s*name:\s*([a-z0-9_]+)\s*$")


def load_role_spec(roles_dir, role, entry="main"):
    path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
    if not os.path.isfile(path):
        raise GpufleetError("role %s has no meta/argument_specs.yml" % role)
    with open(path) as handle:
        data = yaml.safe_load(handle) or {}
    try:
        return data["argument_specs"][entry]
    except (KeyError, TypeError):
        raise GpufleetError("%s: no argument_specs.%s entry" % (path, entry))


def roles_of_playbook(path):
    """Role names a stage playbook includes (``include_role``/``import_role`` name: lines)."""
    roles = []
    with open(path) as handle:
        lines = handle.read().splitlines()
    for index, line in enumerate(lines):
        if re.match(r"^\s*ansible\.builtin\.(include|import)_role:\s*$", line):
            for follow in lines[index + 1:index + 4]:
                match = INCLUDE_ROLE.match(follow)
                if match:
                    if match.group(1) not in roles:
                        roles.append(match.group(1))
                    break
    return roles


def stage_options(project_dir, playbook):
    """{variable: option} for every role a stage playbook uses."""
    options = {}
    for role in roles_of_playbook(os.path.join(project_dir, playbook)):
        spec = load_role_spec(os.path.join(project_dir, "roles"), role)
        for var, option in (spec.get("options") or {}).items():
            options.setdefault(var, option)
    return options
