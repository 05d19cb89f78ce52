#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: awx_surveys
short_description: Build the AWX job-template surveys of the stage playbooks
version_added: "0.1.0"
description:
  - For each stage playbook, returns an AWX / Automation Controller C(survey_spec) with the few
    questions a person answers when launching that stage (apply or render, reboot approval, batch
    sizes, pools to try). Everything else comes from the inventory.
  - No question has a default, because AWX sends every survey default as an extra var, which
    would override the inventory. Answers that need a type (booleans, YAML/JSON lists and dicts)
    are asked as C(gpufleet_survey_*) variables; role C(gpufleet_survey) parses the non-empty ones
    into the real variables before preflight.
  - A question may only ask about a variable that a role of the stage documents in its
    C(meta/argument_specs.yml), or a project-wide C(gpufleet_*) input wherever its one declaration
    lives (C(gpufleet_gpu_pools) in the C(gpu_pools) role); the question's description is that
    option's description.
  - Reads files only; changes nothing.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes.no_diff
options:
  project_dir:
    description: Root of the gpufleet project (holds C(roles/) and the playbooks).
    type: path
    required: true
  playbooks:
    description: Stage playbooks, relative to I(project_dir).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Build the surveys of every stage
  gpufleet.k8s.awx_surveys:
    project_dir: "{{ playbook_dir }}/.."
    playbooks: [playbooks/preflight.yml, playbooks/cluster.yml]
  register: surveys
"""

RETURN = r"""
surveys:
  description: Survey spec per playbook path.
  returned: always
  type: dict
workflow_survey:
  description: Survey spec of the workflow template (every stage question once).
  returned: always
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.awx_survey import (
    stage_survey_options, survey_spec, workflow_survey_spec)
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import require_yaml


def argspec():
    return dict(
        project_dir=dict(type="path", required=True),
        playbooks=dict(type="list", elements="str", required=True),
    )


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action
    plugin when the task runs on the controller); ends with ``exit_json``/``fail_json``."""
    require_yaml(module)
    surveys = {}
    try:
        for playbook in module.params["playbooks"]:
            stage = os.path.splitext(os.path.basename(playbook))[0]
            surveys[playbook] = survey_spec(stage, stage_survey_options(module.params["project_dir"], stage))
    except (GpufleetError, OSError) as exc:
        module.fail_json(msg="cannot build surveys: %s" % exc)
    workflow = workflow_survey_spec([surveys[p] for p in module.params["playbooks"]])
    module.exit_json(changed=False, surveys=surveys, workflow_survey=workflow)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
