#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleet_overview
short_description: Write the fleet-wide GPU report from every cluster's report (HTML, Markdown, JSON, history)
version_added: "0.1.0"
description:
  - Reads each cluster's report (C(build/<inventory>/report/fleet.json), written by M(gpufleet.k8s.fleet_report))
    and sums capacity (physical GPUs), allocation, pending GPU pods, idle GPU-hours and idle cost per region,
    cloud, cluster, pool and GPU type, with fleet totals.
  - Right-sizing across the fleet, a pool with GPU pods pending is named beside a pool of the same GPU type in
    another cluster whose GPUs sit unallocated.
  - Clusters whose run failed, and clusters without a readable report, are listed with their message and not
    summed; a skipped cluster (not selected this run) is summed from its earlier report when it has one.
  - Writes C(index.html) (one self-contained page, inline SVG charts, no script), C(report.md) and
    C(report.json) into O(dest), and keeps each run's JSON as C(history/<UTC timestamp>.json) (the newest
    O(history) runs; older files of that name pattern are removed, nothing else in that folder is touched). The
    page draws the kept runs' totals as trend charts once there are two.
  - A run that finds the fleet as the newest history entry describes it keeps that entry's timestamp and
    changes nothing. A symbolic link on the way to O(dest), to a written file or to a cluster's report is
    refused (the report is then listed as unreadable), never followed.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes
options:
  dest:
    description: Directory for the report files and the C(history) folder.
    type: path
    required: true
  clusters:
    description:
      - The fleet's clusters and how their run ended, one dict each (role C(fleet_overview) passes
        C(fleet_overview_clusters); errors name that variable), with the keys below.
      - C(name) (required), the cluster's name in the fleet, a DNS label, unique.
      - C(cloud) (required), C(aws), C(gcp) or C(onprem).
      - C(region) (required), the cloud region, or an on-premises location label.
      - C(tags), a list of strings (default none).
      - C(report_json), the path of the cluster's C(fleet.json); missing or unreadable means the cluster is listed
        as without a report.
      - C(status), C(ok) (default), C(failed) or C(skipped). C(ok) clusters are summed from their report;
        C(skipped) ones (not selected this time) from their earlier report when there is one; C(failed) ones are
        listed, never summed.
      - C(message), what happened (shown for failed and skipped clusters).
      - Any other key is refused. (The entries are checked by the module rather than by an option spec, as
        Ansible reserves the name C(message) in module options.)
    type: list
    elements: dict
    required: true
  generated_at:
    description: The run's UTC timestamp (C(2026-12-03T04:05:06Z)); it names the history file.
    type: str
    required: true
  history:
    description: How many runs to keep under C(history/) (this one included), drawn as trends.
    type: int
    default: 12
  title:
    description: Heading of the report.
    type: str
    default: GPU fleet
"""

EXAMPLES = r"""
- name: Write the fleet-wide report
  gpufleet.k8s.fleet_overview:
    dest: "{{ playbook_dir }}/../build/fleet/report"
    generated_at: "{{ now(utc=true, fmt='%Y-%m-%dT%H:%M:%SZ') }}"
    clusters:
      - name: eks-use1
        cloud: aws
        region: us-east-1
        report_json: "{{ playbook_dir }}/../build/eks/report/fleet.json"
      - name: onprem-fra
        cloud: onprem
        region: fra1
        status: failed
        message: the apply stage failed
"""

RETURN = r"""
overview:
  description: The fleet view (also written as report.json), its C(trend) included.
  returned: always
  type: dict
files:
  description: Paths of the three report files and this run's history file (written only where their content changed).
  returned: always
  type: list
  elements: str
removed:
  description: History files removed (or that would be removed) beyond O(history).
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import sync_files
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import fleet_overview as overview_data
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_overview_render import render_files


def argspec():
    return dict(
        dest=dict(type="path", required=True),
        clusters=dict(type="list", elements="dict", required=True),
        generated_at=dict(type="str", required=True),
        history=dict(type="int", default=12),
        title=dict(type="str", default="GPU fleet"),
    )


def plan(params):
    """(files {name: text}, removes [names], overview) for the module's parameters; reads only."""
    clusters = overview_data.check_clusters(params["clusters"])
    overview_data.check_timestamp(params["generated_at"])
    overview = overview_data.build_overview(clusters, overview_data.read_reports(clusters),
                                            params["generated_at"], params["title"])
    history, removes, overview = overview_data.with_history(overview, params["dest"], params["history"])
    files = render_files(overview)
    files.update(history)
    return files, removes, overview


def run(module):
    """The module's work (an AnsibleModule, or the action plugin's in-process stand-in on the controller)."""
    p = module.params
    try:
        files, removes, overview = plan(p)
        synced = sync_files(p["dest"], files, removes, check_mode=module.check_mode, diff=module._diff)
    except GpufleetError as exc:
        module.fail_json(msg="fleet_overview: %s" % exc.msg)
    except (IOError, OSError) as exc:
        module.fail_json(msg="fleet_overview: cannot write the report into %s: %s" % (p["dest"], exc))
    result = dict(changed=synced["changed"], overview=overview,
                  files=[os.path.join(p["dest"], n) for n in sorted(files)], removed=synced["removed"])
    if "diff" in synced:
        result["diff"] = synced["diff"]
    module.exit_json(**result)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
