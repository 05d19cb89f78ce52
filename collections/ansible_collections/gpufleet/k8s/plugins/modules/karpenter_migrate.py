#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: karpenter_migrate
short_description: Convert Karpenter v1alpha5 Provisioners into v1 NodePools and EC2NodeClasses
version_added: "0.1.0"
description:
  - Reads a YAML file with C(karpenter.sh/v1alpha5) Provisioners (and optionally the
    C(karpenter.k8s.aws/v1alpha1) AWSNodeTemplates they refer to) and returns the equivalent
    C(karpenter.sh/v1) NodePools and C(karpenter.k8s.aws/v1) EC2NodeClasses.
  - Also returns what changed (for example C(ttlSecondsAfterEmpty) -> C(consolidationPolicy WhenEmpty)
    + C(consolidateAfter), C(providerRef) -> C(nodeClassRef), C(kubeletConfiguration.maxPods) ->
    EC2NodeClass C(kubelet.maxPods), C(limits.resources.cpu) -> C(limits.cpu)) and what needs the
    user's input (IAM role, subnets, AMI pinning).
  - With I(dest), writes the objects as one YAML file each plus C(MIGRATION.md) into I(dest),
    deterministically (a re-run reports no change). Nothing is applied to a cluster.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes
options:
  src:
    description: Path of the v1alpha5 YAML file.
    type: path
    required: true
  dest:
    description: Directory to write the v1 objects and C(MIGRATION.md) into; omitted writes nothing.
    type: path
  kubernetes_version:
    description: Kubernetes minor version used in the NVIDIA AMI's SSM parameter name for GPU pools.
    type: str
    default: "1.33"
  cluster_name:
    description: Cluster name for the C(karpenter.sh/discovery) selector terms and the guessed node role.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Convert the old Provisioners and write the v1 objects next to them
  gpufleet.k8s.karpenter_migrate:
    src: karpenter/provisioners-v1alpha5.yaml
    dest: build/karpenter-v1
    kubernetes_version: "1.33"
    cluster_name: ml-prod
  register: migration

- name: Show what needs a decision
  ansible.builtin.debug:
    var: migration.needs_input
"""

RETURN = r"""
objects:
  description: EC2NodeClasses then NodePools (karpenter v1).
  returned: always
  type: list
  elements: dict
changes:
  description: Every field that moved or changed meaning, one line each.
  returned: always
  type: list
  elements: str
  sample: ["Provisioner gpu: ttlSecondsAfterEmpty: 30 -> disruption {consolidationPolicy: WhenEmpty, consolidateAfter: 30s}"]
needs_input:
  description: What the migration could not decide alone.
  returned: always
  type: list
  elements: str
written:
  description: Files written (or that would be written in check mode) under I(dest).
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import file_diffs, plan_files, write_planned
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.karpenter_v1alpha5 import load_v1alpha5, migrate, migration_notes
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import comment, plan_render
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import require_yaml


def argspec():
    return dict(
        src=dict(type="path", required=True),
        dest=dict(type="path"),
        kubernetes_version=dict(type="str", default="1.33"),
        cluster_name=dict(type="str", default=""),
    )


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action
    plugin when the task runs on the controller); ends with ``exit_json``/``fail_json``."""
    require_yaml(module)
    params = module.params
    try:
        objects, changes, needs_input = migrate(load_v1alpha5(params["src"]), params["kubernetes_version"],
                                                params["cluster_name"])
    except GpufleetError as exc:
        module.fail_json(msg="%s: %s" % (params["src"], exc.msg))
    result = dict(changed=False, objects=objects, changes=changes, needs_input=needs_input, written=[])
    # what needs a person's decision reaches the console of site.yml too, not only MIGRATION.md (issue 39)
    for note in needs_input:
        module.warn("%s: needs your input: %s" % (os.path.basename(params["src"]), note))
    dest = params["dest"]
    if dest:
        try:
            header = comment("Migrated by gpufleet from %s; review MIGRATION.md." % os.path.basename(params["src"]))
            _wanted, writes, removes = plan_render(dest, objects, header)
            notes = migration_notes(os.path.basename(params["src"]), changes, needs_input)
            writes.update(plan_files(dest, {"MIGRATION.md": notes}))
            if not module.check_mode:
                write_planned(dest, writes, removes)
        except GpufleetError as exc:
            module.fail_json(msg="writing into %s refused: %s" % (dest, exc.msg))
        except (IOError, OSError) as exc:
            module.fail_json(msg="writing into %s failed: %s" % (dest, exc))
        result["changed"] = bool(writes or removes)
        result["written"] = [os.path.join(dest, name) for name in sorted(writes)]
        if module._diff:
            result["diff"] = file_diffs(dest, writes, removes)
    module.exit_json(**result)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
