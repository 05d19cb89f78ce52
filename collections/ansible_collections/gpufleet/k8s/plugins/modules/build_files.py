#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: build_files
short_description: Write, remove and list files of a gpufleet build directory in one step
version_added: "0.2.0"
description:
  - Writes each file of I(files) under I(dest) (only those whose content or mode differ, atomically),
    then removes each name of I(absent) (a file, or a directory with everything in it), then, with
    I(list), returns every file left under I(dest) with its size and SHA-1 (hidden files and
    directories, such as gpufleet's C(.gpufleet-build) mark, are not listed).
  - Names are relative to I(dest) and must stay inside it; an absolute name or one with C(..) is refused
    before anything is written.
  - One task instead of C(file) + C(copy) + C(find) tasks; when the task runs on the controller
    (gpufleet's render and report steps) the action plugin runs it in the worker process, without
    starting a module interpreter.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes
options:
  dest:
    description: The directory; created (mode 0755) when missing and anything is to be written.
    type: path
    required: true
  files:
    description: File name (relative to I(dest), may contain sub-directories) to its text.
    type: dict
    default: {}
  mode:
    description: Permission bits of the files written.
    type: str
    default: "0644"
  absent:
    description: Names (relative to I(dest)) to remove; a directory is removed with its content.
    type: list
    elements: str
    default: []
  list:
    description: Return C(listing), every file under I(dest) after the change.
    type: bool
    default: false
  list_suffixes:
    description: With I(list), list only files whose name ends with one of these (all files when empty).
    type: list
    elements: str
    default: []
  list_skip:
    description: With I(list), leave out these names relative to I(dest) (a directory with everything in it).
    type: list
    elements: str
    default: []
  artifacts_max_bytes:
    description:
      - With I(list), also return C(artifacts), the listing in the shape of gpufleet's job artifacts
        (names relative to I(dest)), with the files' text while all files together take at most this
        many bytes.
      - A negative value (the default) returns no C(artifacts).
    type: int
    default: -1
attributes:
  check_mode:
    details: The listing then describes the directory as it is, not as it would be.
"""

EXAMPLES = r"""
- name: Write the scrape job, drop what this mode no longer renders
  gpufleet.k8s.build_files:
    dest: "{{ gpufleet_plan.build_dir }}/cluster"
    files:
      dcgm-exporter/prometheus-scrape-job.yaml: "{{ scrape_job_text }}"
    absent: [gpu-operator, gpu-operator-policy]

- name: List the build directory
  gpufleet.k8s.build_files:
    dest: "{{ gpufleet_plan.build_dir }}"
    list: true
  register: build
"""

RETURN = r"""
written:
  description: Files written (or that would be written in check mode).
  returned: always
  type: list
  elements: str
removed:
  description: Paths removed (or that would be removed in check mode).
  returned: always
  type: list
  elements: str
listing:
  description: Every file under I(dest), sorted by path.
  returned: when I(list) is true
  type: list
  elements: dict
  contains:
    path:
      description: Absolute path.
      type: str
    size:
      description: Size in bytes.
      type: int
    checksum:
      description: SHA-1 of the content (hex).
      type: str
names:
  description: The listed files' paths relative to I(dest), in the order of C(listing).
  returned: when I(list) is true
  type: list
  elements: str
artifacts:
  description: The listing as job artifacts (set_stats data), names relative to I(dest).
  returned: when I(list) is true and I(artifacts_max_bytes) is 0 or more
  type: dict
  contains:
    sizes:
      description: Name -> size in bytes.
      type: dict
    sha1:
      description: Name -> SHA-1 of the content (hex).
      type: dict
    contents:
      description: Name -> text of the file; empty when the files together exceed I(artifacts_max_bytes).
      type: dict
    contents_left_out:
      description: Whether the files together exceed I(artifacts_max_bytes) (then C(contents) is empty).
      type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import listing_artifacts, select_listing, sync_tree


def argspec():
    return dict(
        dest=dict(type="path", required=True),
        files=dict(type="dict", default={}),
        mode=dict(type="str", default="0644"),
        absent=dict(type="list", elements="str", default=[]),
        list=dict(type="bool", default=False),
        list_suffixes=dict(type="list", elements="str", default=[]),
        list_skip=dict(type="list", elements="str", default=[]),
        artifacts_max_bytes=dict(type="int", default=-1),
    )


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action
    plugin when the task runs on the controller); ends with ``exit_json``/``fail_json``."""
    p = module.params
    try:
        mode = int(p["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode: %r is not an octal permission such as 0644" % p["mode"])
    try:
        result = sync_tree(p["dest"], p["files"], p["absent"], mode=mode, check_mode=module.check_mode,
                           diff=module._diff, listing=p["list"])
        if p["list"]:
            result["listing"], result["names"] = select_listing(p["dest"], result["listing"], p["list_suffixes"],
                                                                p["list_skip"])
            if p["artifacts_max_bytes"] >= 0:
                result["artifacts"] = listing_artifacts(result["listing"], result["names"], p["artifacts_max_bytes"])
    except GpufleetError as exc:
        module.fail_json(msg=exc.msg)
    except OSError as exc:
        module.fail_json(msg="writing into %s failed: %s" % (p["dest"], exc))
    module.exit_json(**result)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
