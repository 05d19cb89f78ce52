#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: mig_layout
short_description: Partition a host's NVIDIA GPUs into MIG instances (or turn MIG off)
version_added: "0.2.0"
description:
  - Reads the GPUs and their MIG mode with one C(nvidia-smi --query-gpu) call, and the current layout with
    C(nvidia-smi mig -lgipp) (where each profile's GPU instances may be placed), C(-lgip), C(-lgi) and C(-lci).
  - With O(state=present), gives every selected GPU the GPU instances O(profiles) names (each with one
    full-size compute instance) - enables MIG mode, destroys the compute and GPU instances of a GPU whose
    layout differs, creates the wanted ones. A GPU whose layout already equals the plan is not touched.
  - With O(state=absent), destroys the instances and disables MIG mode on the selected GPUs.
  - A profile a GPU does not offer (its C(-lgip) list; with MIG disabled, NVIDIA's documented profiles of
    its product), more instances than fit, a mix of profiles whose GPU instances cannot be placed side by side
    in the GPU's memory slices (the GPU's C(-lgipp) placements; with MIG disabled, the placements NVIDIA's MIG
    user guide documents for its product), or a GPU without MIG are refused before any command runs (in check
    mode too); the message names O(profiles_var) and the profiles.
  - GPU instances are created at explicit placements (C(-cgi profile:start,...)) found for the whole mix, so
    the driver's own first-fit choice cannot strand a later instance.
  - A MIG mode change that stays pending is followed by a GPU reset (C(nvidia-smi -i N -r)) when
    O(allow_reset); a GPU whose change is still pending gets no instances and is returned in
    RV(reboot_required).
  - Does not drain the node; the C(gpu_mig) role cordons and drains it first.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes
attributes:
  check_mode:
    details: Reads the GPUs and returns the planned layout and commands; runs no command that changes a GPU.
  diff_mode:
    details: One line per GPU, its MIG mode and instances before and after.
options:
  state:
    description: C(present) partitions, C(absent) disables MIG.
    type: str
    choices: [present, absent]
    default: present
  profiles:
    description:
      - "GPU instances per GPU, as NVIDIA mig-parted's C(mig-devices) - C({profile: count}); a count of
        C(all) means as many as one GPU holds (C({1g.18gb: all}) is mig-parted's C(all-1g.18gb))."
      - Required with O(state=present).
    type: dict
  devices:
    description: GPU indexes to partition, or C(all).
    type: raw
    default: all
  profiles_var:
    description: The variable O(profiles) came from, named in refusals.
    type: str
    default: profiles
  allow_reset:
    description: Reset a GPU whose MIG mode change stays pending (no process may use it).
    type: bool
    default: true
  nvidia_smi:
    description: The nvidia-smi program.
    type: str
    default: nvidia-smi
"""

EXAMPLES = r"""
- name: Partition every GPU into seven 1g.18gb instances
  gpufleet.k8s.mig_layout:
    profiles:
      1g.18gb: all

- name: One 3g and two 2g instances on GPU 0 only
  gpufleet.k8s.mig_layout:
    devices: [0]
    profiles:
      3g.71gb: 1
      2g.35gb: 2

- name: Turn MIG off
  gpufleet.k8s.mig_layout:
    state: absent
"""

RETURN = r"""
gpus:
  description: Per selected GPU, its layout before and after and the commands planned for it.
  returned: always
  type: list
  elements: dict
  sample:
    - index: 0
      name: NVIDIA H200
      before: {mig: false, mig_pending: false, instances: [], compute_instances: 0, complete: true}
      after: {mig: true, mig_pending: true, instances: [1g.18gb, 1g.18gb], compute_instances: 2, complete: true}
      steps: [[nvidia-smi, -i, "0", -mig, "1"], [nvidia-smi, mig, -i, "0", -cgi, "1g.18gb:0,1g.18gb:1", -C]]
layout:
  description: The planned layout, one line per GPU.
  returned: always
  type: list
  elements: str
  sample: ["GPU 0 (NVIDIA H200): MIG enabled, 7x 1g.18gb"]
commands:
  description: The commands run (none in check mode).
  returned: always
  type: list
  elements: str
reboot_required:
  description: Indexes of the GPUs whose MIG mode change waits for a reboot (they got no instances yet).
  returned: always
  type: list
  elements: int
config:
  description: The layout as an NVIDIA mig-parted config (version v1, config C(gpufleet)).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpufleet.k8s.plugins.module_utils.node import mig_layout as ml


def argspec():
    return dict(
        state=dict(type="str", choices=["present", "absent"], default="present"),
        profiles=dict(type="dict"),
        devices=dict(type="raw", default="all"),
        profiles_var=dict(type="str", default="profiles"),
        allow_reset=dict(type="bool", default=True),
        nvidia_smi=dict(type="str", default="nvidia-smi"),
    )


def _devices(value):
    if value in (None, "all"):
        return "all"
    if isinstance(value, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        return value
    raise ml.MigError("devices: %r is not allowed; use all or a list of GPU indexes" % (value,))


def _counts(profiles):
    # "all" stays; a count given as text by a template ("7") becomes an int
    out = {}
    for name, count in (profiles or {}).items():
        out[name] = int(count) if isinstance(count, str) and count.isdigit() else count
    return out


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True,
                           required_if=[("state", "present", ("profiles",))])
    params = module.params
    result = dict(changed=False, gpus=[], layout=[], commands=[], reboot_required=[], config={})

    def run(argv):
        binary = module.get_bin_path(params["nvidia_smi"], required=False) if argv[0] == "nvidia-smi" else None
        if binary is None:
            return 127, "", "%s: not found" % params["nvidia_smi"]
        return module.run_command([binary] + argv[1:], environ_update={"LC_ALL": "C"})

    try:
        devices = _devices(params["devices"])
        profiles = _counts(params["profiles"])
        result["config"] = ml.config_document(params["state"], profiles, devices)
        out = ml.converge(run, params["state"], profiles, devices, params["profiles_var"], params["allow_reset"],
                          check=module.check_mode)
        result.update(changed=out["changed"], gpus=out["gpus"], commands=out["commands"],
                      reboot_required=out["reboot_required"], layout=out["diff"]["after"].splitlines())
        if module._diff:
            result["diff"] = out["diff"]
    except ml.MigError as exc:
        module.fail_json(msg="mig_layout: %s" % exc, **result)
    except (IOError, OSError) as exc:
        module.fail_json(msg="mig_layout: %s" % to_native(exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
