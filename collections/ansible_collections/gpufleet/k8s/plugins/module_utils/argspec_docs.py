# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Role argument specs (meta/argument_specs.yml) turned into other interfaces.

Consumers, so that none can drift from the roles' real inputs:
- the variables section of each role's README (``role_readme_section``);
- the AWX surveys (module_utils/awx_survey.py), which may only ask about documented options.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.errors import GpufleetError

README_BEGIN = "<!-- BEGIN generated from meta/argument_specs.yml -->"
README_END = "<!-- END generated from meta/argument_specs.yml -->"
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


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def role_readme_section(spec):
    """Markdown table of a role's variables from its argument spec."""
    lines = [README_BEGIN, "", "| variable | type | default | required | choices | description |",
             "|---|---|---|---|---|---|"]
    for var in sorted(spec.get("options") or {}):
        opt = spec["options"][var]
        desc = opt.get("description", "")
        if isinstance(desc, list):
            desc = " ".join(desc)
        default = "" if "default" not in opt else "`%s`" % json.dumps(opt["default"], sort_keys=True)
        choices = ", ".join("`%s`" % c for c in opt.get("choices") or [])
        typ = opt.get("type", "str") + (("[%s]" % opt["elements"]) if opt.get("elements") else "")
        lines.append("| `%s` | %s | %s | %s | %s | %s |" % (var, typ, _cell(default),
                                                          "yes" if opt.get("required") else "no",
                                                          _cell(choices), _cell(desc)))
    lines += ["", README_END]
    return "\n".join(lines)


def render_role_readme(current, role, spec):
    """Return README text with the generated section replaced (or a new README)."""
    section = role_readme_section(spec)
    if current and README_BEGIN in current and README_END in current:
        head, rest = current.split(README_BEGIN, 1)
        _old, tail = rest.split(README_END, 1)
        return head + section + tail
    short = spec.get("short_description", "")
    intro = current.rstrip() + "\n\n" if current else "# Role %s\n\n%s\n\n" % (role, short)
    return intro + "## Variables\n\n" + section + "\n"


def workflow_nodes(stages, organization, prefix="gpufleet "):
    """AWX workflow nodes running the stage job templates one after another (on success)."""
    nodes = []
    for index, stage in enumerate(stages):
        node = {
            "identifier": stage,
            "unified_job_template": {"name": prefix + stage, "type": "job_template",
                                     "organization": {"name": organization}},
        }
        if index + 1 < len(stages):
            node["related"] = {"success_nodes": [{"identifier": stages[index + 1]}]}
        nodes.append(node)
    return nodes
