#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleet_report
short_description: Write the GPU fleet report (Markdown, JSON, self-contained HTML)
version_added: "0.1.0"
description:
  - Builds the fleet report from the plan and whatever live data is given (GPU facts, Nodes,
    Pods, a Prometheus response) and writes C(fleet.md), C(fleet.json) and C(fleet.html) into
    I(dest). Without live data it reports from the inventory alone (render mode).
  - Flags right-sizing hints (GPUs allocated but under I(idle_percent) utilised, nodes whose
    GPUs are all idle, pools at their maximum).
  - Output is deterministic; files are only rewritten when their content changes.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes
options:
  dest:
    description: Directory for the three files.
    type: path
    required: true
  plan:
    description: The normalized plan (fact C(gpufleet_plan)).
    type: dict
    required: true
  groups:
    description: Inventory groups (to count the nodes of self-managed pools in render mode).
    type: dict
    default: {}
  gpu_facts:
    description: Per host, the result of C(gpufleet.k8s.nvidia_gpu_info).
    type: dict
    default: {}
  nodes:
    description: Node objects from the API server; omit in render mode.
    type: list
    elements: dict
  pods:
    description: Pod objects from the API server.
    type: list
    elements: dict
  slices:
    description:
      - ResourceSlice objects (C(resource.k8s.io/v1)); the capacity of the nodes of pools with C(allocation)
        C(dra) is the devices NVIDIA's DRA driver publishes there.
    type: list
    elements: dict
  claims:
    description:
      - ResourceClaim objects; the devices they have allocated on the nodes of pools with C(allocation) C(dra)
        are those nodes' requested units.
    type: list
    elements: dict
  utilisation:
    description:
      - Prometheus instant-query response for the average of DCGM_FI_PROF_GR_ENGINE_ACTIVE (0-1) per
        node, GPU and MIG instance over I(window) (the query of the C(gpufleet.k8s.fleet_report_utilisation_query)
        filter). The node is read from the labels C(kubernetes_node), C(hostname), C(Hostname), C(node),
        C(instance), the first one set.
    type: dict
  utilisation_scale:
    description: Factor from the query's values to percent (100 for the 0-1 ratio, 1 for a metric in percent).
    type: float
    default: 100.0
  idle_percent:
    description: Utilisation below which allocated GPUs are flagged.
    type: float
    default: 10.0
  window:
    description: The utilisation window (PromQL duration such as C(24h)), for idle GPU-hours.
    type: str
    default: 24h
  prices:
    description: "Price per GPU-hour by GPU type (C({a100-80gb: 3.67})), for the idle cost estimate."
    type: dict
    default: {}
  generated_at:
    description:
      - Timestamp written into the report (apply mode; render mode leaves it out so that a re-render is identical).
      - When the report already in O(dest) says the same apart from its timestamp, its timestamp is kept and
        nothing is written (a re-run reports no change); the timestamp is when the fleet was first seen so.
    type: str
"""

EXAMPLES = r"""
- name: Write the fleet report from the inventory alone
  gpufleet.k8s.fleet_report:
    dest: "{{ gpufleet_plan.build_dir }}/report"
    plan: "{{ gpufleet_plan }}"
    groups: "{{ groups }}"
"""

RETURN = r"""
report:
  description: The report data (also written as fleet.json).
  returned: always
  type: dict
files:
  description: Paths of the three files.
  returned: always
  type: list
  elements: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import build_report
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report_render import render_files
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import sync_files
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import require_yaml


def argspec():
    return dict(
        dest=dict(type="path", required=True),
        plan=dict(type="dict", required=True),
        groups=dict(type="dict", default={}),
        gpu_facts=dict(type="dict", default={}),
        nodes=dict(type="list", elements="dict"),
        pods=dict(type="list", elements="dict"),
        slices=dict(type="list", elements="dict"),
        claims=dict(type="list", elements="dict"),
        utilisation=dict(type="dict"),
        utilisation_scale=dict(type="float", default=100.0),
        idle_percent=dict(type="float", default=10.0),
        window=dict(type="str", default="24h"),
        prices=dict(type="dict", default={}),
        generated_at=dict(type="str"),
    )


def _unchanged_since(path, report):
    """The timestamp of the report at ``path`` when it says what ``report`` says, else ``report``'s."""
    try:
        with open(path) as handle:
            old = json.load(handle)
    except (IOError, OSError, ValueError):
        return report["generated_at"]
    if isinstance(old, dict) and old.get("generated_at") and \
            dict(old, generated_at=None) == json.loads(json.dumps(dict(report, generated_at=None))):
        return old["generated_at"]
    return report["generated_at"]


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action
    plugin when the task runs on the controller); ends with ``exit_json``/``fail_json``."""
    require_yaml(module)
    p = module.params
    try:
        report = build_report(p["plan"], p["groups"], p["gpu_facts"], p["nodes"], p["pods"], p["utilisation"],
                              p["idle_percent"], window=p["window"], prices=p["prices"], generated_at=p["generated_at"],
                              utilisation_scale=p["utilisation_scale"], slices=p["slices"], claims=p["claims"])
    except (KeyError, TypeError, ValueError) as exc:
        module.fail_json(msg="cannot build the fleet report: %s: %s" % (type(exc).__name__, exc))
    if report.get("generated_at"):
        report["generated_at"] = _unchanged_since(os.path.join(p["dest"], "fleet.json"), report)
    files = render_files(report)
    try:
        synced = sync_files(p["dest"], files, check_mode=module.check_mode, diff=module._diff)
    except GpufleetError as exc:
        module.fail_json(msg="cannot write the fleet report into %s: %s" % (p["dest"], exc.msg))
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot write the fleet report into %s: %s" % (p["dest"], exc))
    result = dict(changed=synced["changed"], report=report, files=[os.path.join(p["dest"], n) for n in sorted(files)])
    if "diff" in synced:
        result["diff"] = synced["diff"]
    module.exit_json(**result)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
