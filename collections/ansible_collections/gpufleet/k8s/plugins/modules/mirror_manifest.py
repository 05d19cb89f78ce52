#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: mirror_manifest
short_description: Write the air-gap mirror manifest of a gpufleet inventory and its fetch scripts
version_added: "0.1.0"
description:
  - Computes everything the inventory downloads (OS packages per node OS with versions, their
    repositories and signing keys, container images with tags and digests, Helm charts, OLM
    packages) and writes C(manifest.json), C(manifest.md) and the scripts C(fetch-packages.sh),
    C(fetch-images.sh), C(fetch-charts.sh) into I(dest).
  - OS packages are listed for each node architecture the pools need (C(node_architectures), from each
    pool's C(gpu_type); amd64 when none says otherwise); arm64 nodes get their own repositories and
    packages, fetched without emulation.
  - The scripts are meant for a connected machine; nothing is downloaded by this module.
  - Output is deterministic; a second run with the same inputs reports no change.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes
options:
  dest:
    description: Directory to write into (created when missing), usually C(build/<inventory>/mirror).
    type: path
    required: true
  plan:
    description: The normalized plan published by the gpufleet role (C(gpufleet_plan)).
    type: dict
    required: true
  values:
    description: Inventory values (gpufleet_*, nvidia_*, gpu_*) merged over the node roles' defaults.
    type: dict
    default: {}
  node_hosts:
    description: Hosts of the C(gpu_nodes) group (OS packages are listed only when there are some).
    type: list
    elements: str
    default: []
  today:
    description:
      - Date (C(YYYY-MM-DD)) the driver branch's support status is judged on, so that a manifest can
        be reproduced for a given day.
      - When omitted, the current date on the controller.
    type: str
"""

EXAMPLES = r"""
- name: Write the mirror manifest
  gpufleet.k8s.mirror_manifest:
    dest: "{{ gpufleet_plan.build_dir }}/mirror"
    plan: "{{ gpufleet_plan }}"
    values: "{{ inventory_values }}"
    node_hosts: "{{ groups['gpu_nodes'] | default([]) }}"
"""

RETURN = r"""
manifest:
  description: The manifest (as written to manifest.json).
  returned: always
  type: dict
files:
  description: Paths of the files the module manages in I(dest).
  returned: always
  type: list
  elements: str
written:
  description: Files written (or that would be written in check mode).
  returned: always
  type: list
  elements: str
"""

import datetime
import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import sync_files
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.mirror_manifest import manifest
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.mirror_scripts import manifest_markdown, scripts
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.mirror_urls import problems_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import require_yaml


def argspec():
    return dict(
        dest=dict(type="path", required=True),
        plan=dict(type="dict", required=True),
        values=dict(type="dict", default={}),
        node_hosts=dict(type="list", elements="str", default=[]),
        today=dict(type="str"),
    )


def wanted_files(plan, values, node_hosts, today=None):
    errors = problems_of(plan, values)
    if today is not None:
        try:
            datetime.datetime.strptime(today, "%Y-%m-%d")
        except ValueError:
            errors.append("today: %r is not a date; use one of: YYYY-MM-DD (e.g. 2026-01-01), omitted (the "
                          "current date)" % (today,))
    if errors:
        raise GpufleetError("mirror inputs: " + "; ".join(errors), errors=errors)
    man = manifest(plan, values, node_hosts, today)
    files = {"manifest.json": (json.dumps(man, indent=2, sort_keys=True) + "\n", 0o644),
             "manifest.md": (manifest_markdown(man), 0o644)}
    for name, text in scripts(man).items():
        files[name] = (text, 0o755)
    return man, files


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action
    plugin when the task runs on the controller); ends with ``exit_json``/``fail_json``."""
    require_yaml(module)
    dest = module.params["dest"]
    try:
        man, files = wanted_files(module.params["plan"], module.params["values"], module.params["node_hosts"],
                                  module.params["today"])
    except GpufleetError as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    texts = {name: text for name, (text, _mode) in files.items()}
    modes = {name: mode for name, (_text, mode) in files.items()}
    try:
        synced = sync_files(dest, texts, modes=modes, check_mode=module.check_mode, diff=module._diff)
    except GpufleetError as exc:
        module.fail_json(msg="writing the mirror manifest into %s refused: %s" % (dest, exc.msg))
    except (IOError, OSError) as exc:
        module.fail_json(msg="writing the mirror manifest into %s failed: %s" % (dest, exc))
    result = dict(changed=synced["changed"], manifest=man, files=[os.path.join(dest, n) for n in sorted(files)],
                  written=synced["written"])
    if "diff" in synced:
        result["diff"] = synced["diff"]
    module.exit_json(**result)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
