#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_reset
short_description: Reset NVIDIA GPUs of a host with nvidia-smi, persistence mode off for the reset
version_added: "0.4.0"
description:
  - Resets the GPUs named by O(gpus) (all of the host's GPUs when empty) with one C(nvidia-smi --gpu-reset)
    call. A reset clears a GPU's hardware and software state - pending page retirements and row remappings
    take effect, the volatile ECC counters start again - without a reboot.
  - nvidia-smi refuses to reset a GPU that anything holds, and persistence mode counts as a holder; so
    persistence mode is turned off on those GPUs first and turned back on afterwards, whether the reset
    worked or not.
  - Nothing may use the GPUs - drain the node first (playbooks/remediate.yml does). When nvidia-smi refuses
    (C(In use by another client)), the module fails with nvidia-smi's words in RV(message) and RV(refused).
  - Used by playbooks/remediate.yml on self-managed GPU hosts (role gpu_remediation).
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes.no_diff
options:
  gpus:
    description:
      - The GPUs to reset, each as the nvidia-smi index, the UUID or the PCI bus id; empty resets every GPU
        of the host. A GPU the host does not have fails the task before anything is done.
    type: list
    elements: str
    default: []
  nvidia_smi_path:
    description: Path or name of the C(nvidia-smi) binary; a bare name is looked up in C(PATH) and C(/usr/bin).
    type: str
    default: nvidia-smi
notes:
  - Requires root. In check mode the GPUs are read and nothing is reset (the task reports changed when a reset would run).
"""

EXAMPLES = r"""
- name: Reset the GPU with the pending row remapping
  gpufleet.k8s.gpu_reset:
    gpus: ["00000000:18:00.0"]
  become: true
  register: reset

- name: Reset every GPU of the host
  gpufleet.k8s.gpu_reset:
  become: true
"""

RETURN = r"""
reset:
  description: PCI bus ids of the GPUs nvidia-smi reset.
  returned: always
  type: list
  elements: str
  sample: ["00000000:18:00.0"]
targets:
  description: PCI bus ids of the GPUs the module was asked to reset.
  returned: always
  type: list
  elements: str
refused:
  description: PCI bus id -> nvidia-smi's reason, for GPUs it would not reset.
  returned: always
  type: dict
  sample: {"00000000:18:00.0": "In use by another client"}
message:
  description: What happened, in nvidia-smi's words where it refused.
  returned: always
  type: str
persistence_restored:
  description: PCI bus ids whose persistence mode was turned off for the reset and on again after.
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.node import gpu_reset as logic


def argspec():
    return dict(
        gpus=dict(type="list", elements="str", default=[]),
        nvidia_smi_path=dict(type="str", default="nvidia-smi"),
    )


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    path = module.params["nvidia_smi_path"]
    if os.sep not in path:
        path = module.get_bin_path(path, required=False, opt_dirs=["/usr/bin"])
    if not path or not os.access(path, os.X_OK):
        module.fail_json(msg="gpu_reset: nvidia-smi (%s) not found on the host; nothing was reset"
                         % module.params["nvidia_smi_path"])

    def smi(args):
        return module.run_command([path] + args, environ_update={"LC_ALL": "C"})

    rc, out, err = smi(logic.QUERY_ARGS)
    if rc != 0:
        module.fail_json(msg="gpu_reset: nvidia-smi could not list the GPUs (rc %d): %s; nothing was reset"
                         % (rc, (out + err).strip()[:400]))
    try:
        targets = logic.select(logic.parse_query(out), module.params["gpus"])
    except GpufleetError as exc:
        module.fail_json(msg="gpu_reset: %s; nothing was reset" % exc.msg)
    names = [g["bus_id"] for g in targets]
    result = dict(targets=names, reset=[], refused={}, persistence_restored=[])
    if not targets:
        module.exit_json(changed=False, message="the host has no GPU", **result)
    if module.check_mode:
        module.exit_json(changed=True, message="would reset %s" % ", ".join(names), **result)
    before, reset_args, after = logic.plan_calls(targets)
    if before:
        rc, out, err = smi(before)
        if rc != 0:
            module.fail_json(msg="gpu_reset: turning persistence mode off failed (rc %d): %s; nothing was reset"
                             % (rc, (out + err).strip()[:400]), **result)
    rc, out, err = smi(reset_args)
    outcome = logic.parse_reset(rc, out + err, targets)
    result.update(reset=outcome["reset"], refused=outcome["refused"])
    problems = []
    if after:
        prc, pout, perr = smi(after)
        if prc != 0:
            problems.append("turning persistence mode on again failed (rc %d): %s" % (prc, (pout + perr).strip()[:300]))
        else:
            result["persistence_restored"] = [g["bus_id"] for g in targets if g["persistence"]]
    if not outcome["ok"]:
        module.fail_json(msg="gpu_reset: " + "; ".join([outcome["message"]] + problems),
                         message=outcome["message"], changed=bool(outcome["reset"]), **result)
    if problems:
        module.fail_json(msg="gpu_reset: %s; %s" % (outcome["message"], "; ".join(problems)),
                         message=outcome["message"], changed=True, **result)
    module.exit_json(changed=True, message=outcome["message"], **result)


if __name__ == "__main__":
    main()
