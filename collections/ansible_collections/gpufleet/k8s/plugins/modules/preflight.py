#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: preflight
short_description: Validate a gpufleet inventory before anything changes
version_added: "0.1.0"
description:
  - Checks the platform, the GPU pools, the add-on mode and the other gpufleet inputs.
  - Reports every problem at once; each message names the variable (with its list index) and
    the allowed values.
  - Returns the normalized plan (pools with defaults filled in) that later stages render from.
  - Changes nothing, anywhere.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes.no_diff
options:
  platform:
    description:
      - Kubernetes platform of the cluster (C(gpufleet_platform)).
      - Left out, preflight refuses the run, listing the platforms.
    type: str
  cluster_name:
    description: Name of the cluster (C(gpufleet_cluster_name)).
    type: str
    required: true
  addons_mode:
    description: Who manages the GPU add-ons (C(gpufleet_addons_mode)).
    type: str
    default: standalone
  pools:
    description:
      - The GPU pools (C(gpufleet_gpu_pools)), a list of mappings; see docs/gpu-pools.md for the format.
      - Taken as given (not converted to a list), so that a mapping or a text is refused by name.
    type: raw
    required: true
  apply:
    description: Whether the run applies changes (C(gpufleet_apply)) or only renders them.
    type: bool
    default: false
  extra:
    description: Further inventory values the checks of other stages read (driver, add-ons, providers).
    type: dict
    default: {}
  inventory:
    description:
      - The inventory's C(groups) (to check that each self-managed pool's C(node_group) exists),
        C(node_names), the Node name of each GPU host (empty for the inventory name), C(name) (the
        inventory name) and C(repo_root) (to confine C(gpufleet_build_dir)).
    type: dict
    default: {}
  secrets_set:
    description:
      - The names of the secret inputs (declared C(no_log) in the role argument specs, such as
        C(gpu_remediation_prometheus_password)) that are set to a non-empty value; never their values, which stay
        out of I(extra).
      - For the checks that depend on which credentials are given (a bearer token and basic authentication
        together are refused).
    type: list
    elements: str
    default: []
    version_added: "0.4.0"
  today:
    description:
      - The date (YYYY-MM-DD) that driver branch end-of-life dates are compared with; empty means
        the controller's clock. Tests set it to run against a fixed date.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Validate the inventory
  gpufleet.k8s.preflight:
    platform: "{{ gpufleet_platform }}"
    cluster_name: "{{ gpufleet_cluster_name }}"
    pools: "{{ gpufleet_gpu_pools }}"
  register: gpufleet_preflight
"""

RETURN = r"""
errors:
  description: Problems that stop the run, each starting with the variable it concerns.
  returned: always
  type: list
  elements: str
  sample: ["gpufleet_gpu_pools[1].gpu_type: is required; use one of: a100-40gb, ..."]
warnings_found:
  description: Problems that do not stop the run.
  returned: always
  type: list
  elements: str
plan:
  description: The normalized plan (platform, pools with defaults filled in).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight, secret_values
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import require_yaml


def argspec():
    return dict(
        platform=dict(type="str"),
        cluster_name=dict(type="str", required=True),
        addons_mode=dict(type="str", default="standalone"),
        pools=dict(type="raw", required=True),
        apply=dict(type="bool", default=False),
        extra=dict(type="dict", default={}),
        inventory=dict(type="dict", default={}),
        today=dict(type="str", default=""),
        # names only, never a value
        secrets_set=dict(type="list", elements="str", default=[], no_log=False),
    )


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action
    plugin when the task runs on the controller); ends with ``exit_json``/``fail_json``."""
    require_yaml(module)
    # masked wherever the result shows them (the arguments are printed with it at -vvv); refused below
    module.no_log_values.update(secret_values(module.params))
    errors, warnings, plan = run_preflight(module.params)
    for warning in warnings:
        module.warn(warning)
    if errors:
        module.fail_json(msg="gpufleet preflight found %d problem(s):\n- %s" % (len(errors), "\n- ".join(errors)),
                         errors=errors, warnings_found=warnings, plan=plan)
    module.exit_json(changed=False, errors=[], warnings_found=warnings, plan=plan)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
