#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: awx_surveys
short_description: Build AWX job-template surveys from the roles' argument specs
version_added: "0.1.0"
description:
  - For each stage playbook, finds the roles it includes and turns their
    C(meta/argument_specs.yml) options into an AWX / Automation Controller C(survey_spec),
    so that surveys cannot drift from the roles' real inputs.
  - Reads files only; changes nothing.
author:
  - gpufleet maintainers
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
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
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
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.argspec_docs import stage_options, survey_spec
from ansible_collections.gpufleet.k8s.plugins.module_utils.errors import GpufleetError


def argspec():
    return dict(
        project_dir=dict(type="path", required=True),
        playbooks=dict(type="list", elements="str", required=True),
    )


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    surveys = {}
    try:
        for playbook in module.params["playbooks"]:
            surveys[playbook] = survey_spec("gpufleet " + playbook, stage_options(module.params["project_dir"], playbook))
    except (GpufleetError, OSError) as exc:
        module.fail_json(msg="cannot build surveys: %s" % exc)
    module.exit_json(changed=False, surveys=surveys)


if __name__ == "__main__":
    main()
