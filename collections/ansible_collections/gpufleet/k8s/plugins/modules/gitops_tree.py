#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gitops_tree
short_description: Write the GitOps tree of a gpufleet build directory
version_added: "0.1.0"
description:
  - Writes C(<build_dir>/gitops/) with only what a GitOps controller may apply, one kustomization
    per component (copies of its numbered manifests) and a root kustomization listing them.
  - "Left out: example Jobs and migrated Karpenter objects (never applied), partial Node objects
    (gpufleet applies them server-side as field manager gpufleet; a controller pruning them would
    delete Nodes) and every file that is not a manifest (scrape job, rules file, values, NAP file)."
  - Adds, outside the root kustomization, an Argo CD Application (C(argocd/application.yaml)) and a
    Flux Kustomization (C(flux/kustomization.yaml)) that apply the root; with I(chart), the GPU
    Operator chart with the rendered values as an Argo CD Helm source and a Flux HelmRelease.
  - Files are written only when their content differs; files the tree no longer holds are removed.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes
options:
  build_dir:
    description: The build directory (C(gpufleet_plan.build_dir)).
    type: path
    required: true
  cluster_name:
    description: Cluster name, for the file headers.
    type: str
    required: true
  inventory_name:
    description: Inventory name, for the default path in the repository and the application names.
    type: str
    required: true
  settings:
    description:
      - Keys C(repo_url), C(revision), C(path) (of the tree in the repository; default
        C(build/<inventory>/gitops)), C(argocd_namespace), C(argocd_project), C(flux_namespace),
        C(flux_source) (GitRepository name) and C(prune).
    type: dict
    default: {}
  chart:
    description: The GPU Operator chart (C(repo_url), C(name), C(version), C(namespace)) in operator mode.
    type: dict
"""

EXAMPLES = r"""
- name: Write the GitOps tree
  gpufleet.k8s.gitops_tree:
    build_dir: "{{ gpufleet_plan.build_dir }}"
    cluster_name: "{{ gpufleet_plan.cluster_name }}"
    inventory_name: "{{ gpufleet_plan.inventory_name }}"
    settings: {repo_url: "https://git.example.internal/fleet.git", revision: main}
"""

RETURN = r"""
files:
  description: Every file of the tree, relative to C(<build_dir>/gitops).
  returned: always
  type: list
  elements: str
components:
  description: Component folders of the root kustomization, in apply order.
  returned: always
  type: list
  elements: str
removed:
  description: Files removed because the tree no longer holds them.
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.gitops import (
    GITOPS_DIR, check_chart, component_name, components, plan_tree, write_tree)
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import require_yaml


def argspec():
    return dict(
        build_dir=dict(type="path", required=True),
        cluster_name=dict(type="str", required=True),
        inventory_name=dict(type="str", required=True),
        settings=dict(type="dict", default={}),
        chart=dict(type="dict"),
    )


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action
    plugin when the task runs on the controller); ends with ``exit_json``/``fail_json``."""
    require_yaml(module)
    p = module.params
    try:
        if p["chart"]:
            check_chart(p["chart"])
        wanted = plan_tree(p["build_dir"], p["cluster_name"], p["inventory_name"], p["settings"], p["chart"])
        changed, removed, diffs = write_tree(os.path.join(p["build_dir"], GITOPS_DIR), wanted, module.check_mode)
    except (GpufleetError, OSError) as exc:
        module.fail_json(msg="gitops tree: %s" % getattr(exc, "msg", exc))
    result = dict(changed=bool(changed or removed), files=sorted(wanted), removed=removed,
                  components=[component_name(rel) for rel, _m in components(p["build_dir"])])
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
