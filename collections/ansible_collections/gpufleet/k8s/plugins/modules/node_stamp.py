#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_stamp
short_description: Record or check that the node stage converged on a host (the no-op fast path)
version_added: "0.1.0"
description:
  - With O(state=present), takes a fingerprint of everything the node stage manages (the files and
    directories in O(watch.paths), the packages matching O(watch.packages) with version and dpkg
    selection, the O(watch.services) enabled/active states, the kernel release, the loaded
    C(nvidia)/C(nouveau) modules and the GPUs the driver sees) and writes it with O(inputs) to
    O(path).
  - With O(state=check), reads O(path), takes the fingerprint again and returns RV(converged) true
    only when O(inputs), O(watch) and the fingerprint all equal what was recorded. Changes nothing.
    RV(reasons) names each difference (file, package, service, kernel ...).
  - One call per host either way; the node stage uses it to skip all its tasks on a host where a
    re-run could not change anything.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes
options:
  state:
    description: C(check) reads and compares, C(present) records, C(absent) removes the stamp.
    type: str
    choices: [check, present, absent]
    default: check
  path:
    description: The stamp file.
    type: path
    default: /var/lib/gpufleet/node-stage.json
  inputs:
    description:
      - Digest of the stage's inputs (variables and code), from the C(gpufleet.k8s.node_stage_inputs)
        filter. Required unless O(state=absent).
    type: str
  watch:
    description: What the fingerprint covers. Required unless O(state=absent).
    type: dict
    suboptions:
      paths:
        description: Absolute files or directories (directories are walked; content, mode and owner count).
        type: list
        elements: str
        required: true
      packages:
        description: Package name globs (C(dpkg-query -W) patterns; on RPM hosts matched against C(rpm -qa)).
        type: list
        elements: str
        default: []
      services:
        description:
          - systemd units whose enabled and active states count.
          - On a host where systemd is not the running init (no C(/run/systemd/system), no C(systemctl),
            or systemd installed but not PID 1) each unit is C(unknown (no service manager)), which is an answer
            and not a failure.
        type: list
        elements: str
        default: []
notes:
  - "The watch list should be broad: a false difference only costs a full run of the stage."
"""

EXAMPLES = r"""
- name: Check whether the node stage converged here
  gpufleet.k8s.node_stamp:
    inputs: "{{ hostvars[inventory_hostname] | gpufleet.k8s.node_stage_inputs(['nvidia_driver_'], [playbook_dir]) }}"
    watch: {paths: [/etc/apt, /etc/containerd], packages: ['*nvidia*', containerd], services: [containerd.service]}
  register: stage

- name: Skip the stage on this host
  ansible.builtin.meta: end_host
  when: stage.converged
"""

RETURN = r"""
converged:
  description: State=check only; whether the inputs, watch list and fingerprint equal the recorded ones.
  returned: always
  type: bool
reasons:
  description: Why the host is not converged (each difference, naming the item); empty when converged.
  returned: always
  type: list
  elements: str
  sample: ["path /etc/apt/preferences.d/gpufleet-nvidia-driver.pref: file 0:0 0644 sha256=1f.. -> absent"]
path:
  description: The stamp file.
  returned: always
  type: str
inputs:
  description: O(inputs) as given (a later O(state=present) records these, taken before the stage changed facts).
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpufleet.k8s.plugins.module_utils.node import node_stamp as ns
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import file_diffs, plan_files, read_text, write_planned


def argspec():
    return dict(
        state=dict(type="str", choices=["check", "present", "absent"], default="check"),
        path=dict(type="path", default="/var/lib/gpufleet/node-stage.json"),
        inputs=dict(type="str"),
        watch=dict(type="dict", options=dict(
            paths=dict(type="list", elements="str", required=True),
            packages=dict(type="list", elements="str", default=[]),
            services=dict(type="list", elements="str", default=[]),
        )),
    )


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True,
                           required_if=[("state", "check", ("inputs", "watch")), ("state", "present", ("inputs", "watch"))])
    params = module.params
    path = params["path"]
    directory, name = os.path.split(path)
    result = dict(changed=False, converged=False, reasons=[], path=path, inputs=params["inputs"])

    def run(argv):
        # A missing binary (dpkg-query on an RPM host) is an answer, not a module failure.
        binary = module.get_bin_path(argv[0])
        if binary is None:
            return 127, "", "%s: not found" % argv[0]
        return module.run_command([binary] + argv[1:], environ_update={"LC_ALL": "C"})

    try:
        old_text = read_text(path)
        if params["state"] == "check":
            watch = ns.normalize_watch(params["watch"])
            converged, reasons = ns.compare(ns.load(old_text), params["inputs"], watch, ns.fingerprint(watch, run))
            result.update(converged=converged, reasons=reasons)
            module.exit_json(**result)
        writes, removes = {}, []
        if params["state"] == "absent":
            removes = [name] if old_text is not None else []
        else:
            watch = ns.normalize_watch(params["watch"])
            text = ns.dump(ns.make_stamp(params["inputs"], watch, ns.fingerprint(watch, run)))
            writes = plan_files(directory, {name: text})
        result["changed"] = bool(writes or removes)
        if module._diff:
            result["diff"] = file_diffs(directory, writes, removes)
        if result["changed"] and not module.check_mode:
            write_planned(directory, writes, removes)
    except GpufleetError as exc:
        module.fail_json(msg="node_stamp: %s" % exc.msg, **result)
    except (IOError, OSError) as exc:
        module.fail_json(msg="node_stamp: %s" % to_native(exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
