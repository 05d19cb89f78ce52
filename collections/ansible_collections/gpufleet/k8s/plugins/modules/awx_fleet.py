#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: awx_fleet
short_description: Build the AWX fleet workflows from the project's fleet inventories
version_added: "0.1.0"
description:
  - Finds every fleet inventory of the project (a folder of C(inventories/) whose C(group_vars/all) sets
    C(fleet_run_clusters)), checks it as C(playbooks/fleet.yml) would (cluster names, clouds, regions, inventories,
    pool spread) and returns, per fleet, one AWX job template per (cluster, stage) on that cluster's inventory and
    the nodes of a workflow that runs each cluster's stages in order (each on the success of the one before),
    the clusters side by side.
  - A cluster's part of the fleet pools (C(gpufleet_fleet_pools)), who it is (C(gpufleet_fleet_cluster)) and its
    C(vars) from the fleet file become the job template's extra vars; credentials belong in AWX credentials.
  - Reads files only; changes nothing.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes.no_diff
options:
  project_dir:
    description: Root of the gpufleet project (holds C(inventories/) and C(playbooks/)).
    type: path
    required: true
  stages:
    description: Stages each cluster runs, in order (C(gpufleet_awx_stages)).
    type: list
    elements: str
    required: true
  organization:
    description: AWX organization of the job templates.
    type: str
    required: true
  prefix:
    description: Name prefix of the AWX objects (as the per-stage templates use).
    type: str
    default: "gpufleet "
  credentials:
    description:
      - The names of the AWX credentials gpufleet creates (C(gpufleet_awx_credentials)). Each cluster's job templates
        get only the credentials its fleet entry names (C(fleet_run_clusters[].credentials)); a name not in this list
        is refused. Left out, the names are not checked.
    type: list
    elements: str
    version_added: "0.5.0"
"""

EXAMPLES = r"""
- name: Build the fleet workflows
  gpufleet.k8s.awx_fleet:
    project_dir: "{{ playbook_dir }}/.."
    stages: [preflight, provision, nodes, cluster, validate, report]
    organization: gpufleet
  register: fleets
"""

RETURN = r"""
fleets:
  description:
    - One entry per fleet inventory - name, folder, workflow (the workflow template's name), inventory (the fleet
      inventory's AWX name), clusters, job_templates (name, stage, cluster, playbook, inventory, extra_vars,
      credentials, only those the cluster names) and
      workflow_nodes (for C(awx.awx.workflow_job_template) C(workflow_nodes)).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import require_yaml
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.awx_fleet import fleet_plans


def argspec():
    return dict(
        project_dir=dict(type="path", required=True),
        stages=dict(type="list", elements="str", required=True),
        organization=dict(type="str", required=True),
        prefix=dict(type="str", default="gpufleet "),
        credentials=dict(type="list", elements="str"),
    )


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action plugin when
    the task runs on the controller); ends with ``exit_json``/``fail_json``."""
    require_yaml(module)
    p = module.params
    try:
        plans = fleet_plans(p["project_dir"], p["stages"], p["organization"], p["prefix"], p["credentials"])
    except GpufleetError as exc:
        module.fail_json(msg="cannot build the fleet workflows: %s" % exc.msg)
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read the fleet inventories: %s" % exc)
    module.exit_json(changed=False, fleets=plans)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
