#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvidia_gpu_info
short_description: Report a node's NVIDIA GPUs, driver and CUDA version
version_added: "0.1.0"
description:
  - Runs C(nvidia-smi -q -x) once (never once per GPU) and returns the driver and CUDA version
    and, per GPU, index, UUID, name, PCI bus ID, architecture, memory, MIG mode (current and
    pending) with the MIG devices, persistence mode, ECC mode, temperature and power.
  - Always reads the PCI bus from sysfs as well (vendor C(0x10de), display-controller class
    C(0x03xx)), which needs no driver, and maps each PCI device ID to a GPU architecture. On a
    machine without a working driver this is the only source, and it is what the driver role
    uses to choose the kernel-module flavour.
  - When C(nvidia-smi) is missing or fails (for example C(couldn't communicate with the NVIDIA
    driver)), the module does not fail; it says why in RV(nvidia_smi_error) and
    RV(nvidia_smi_failure).
  - Changes nothing.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes.no_diff
options:
  nvidia_smi_path:
    description:
      - Path or name of the C(nvidia-smi) binary; a bare name is looked up in C(PATH) and the
        usual driver locations (C(/usr/bin), GKE's C(/home/kubernetes/bin/nvidia/bin)).
    type: str
    default: nvidia-smi
  pci_devices_dir:
    description: The sysfs directory listing PCI devices.
    type: path
    default: /sys/bus/pci/devices
  sys_module_dir:
    description: The sysfs directory listing loaded kernel modules.
    type: path
    default: /sys/module
notes:
  - Architecture comes from an exact table of data-centre GPUs, then from device-ID ranges per
    GPU die family (RV(gpus[].architecture_source) says which).
"""

EXAMPLES = r"""
- name: Read the GPUs of the node
  gpufleet.k8s.nvidia_gpu_info:
  register: node_gpus

- name: Show the driver and the GPUs
  ansible.builtin.debug:
    msg: "{{ node_gpus.driver_version }}: {{ node_gpus.gpus | map(attribute='name') | list }}"
  when: node_gpus.driver_loaded

- name: Show the architectures found on the PCI bus when no driver answers
  ansible.builtin.debug:
    msg: "{{ node_gpus.pci_gpus | map(attribute='architecture') | list }} ({{ node_gpus.nvidia_smi_failure }})"
  when: not node_gpus.driver_loaded
"""

RETURN = r"""
driver_loaded:
  description: Whether nvidia-smi ran and reported the driver.
  returned: always
  type: bool
source:
  description: Where RV(gpus) came from, C(nvidia-smi) or C(pci) (then RV(gpus) is empty).
  returned: always
  type: str
nvidia_smi_found:
  description: Whether the nvidia-smi binary exists.
  returned: always
  type: bool
nvidia_smi_error:
  description: What nvidia-smi printed instead of its XML, or why it did not run; null when it worked.
  returned: always
  type: str
  sample: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. ...
nvidia_smi_failure:
  description: >-
    Short reason: C(not-installed), C(driver-not-loaded), C(no-devices), C(driver-library-mismatch),
    C(device-handle-error), C(insufficient-permissions) or C(unknown); null when it worked.
  returned: always
  type: str
driver_version:
  description: The loaded driver's version.
  returned: always
  type: str
  sample: "570.172.08"
cuda_version:
  description: The newest CUDA version the driver supports.
  returned: always
  type: str
  sample: "12.8"
attached_gpus:
  description: Number of GPUs nvidia-smi reports.
  returned: always
  type: int
gpus:
  description: One entry per GPU reported by nvidia-smi, in its index order.
  returned: always
  type: list
  elements: dict
  contains:
    index: {description: nvidia-smi index, type: int}
    minor_number: {description: /dev/nvidiaN number, type: int}
    uuid: {description: GPU UUID, type: str}
    name: {description: Product name, type: str, sample: NVIDIA H100 80GB HBM3}
    pci_bus_id: {description: PCI bus ID, type: str, sample: "00000000:18:00.0"}
    pci_device_id: {description: PCI device ID, type: str, sample: "0x2330"}
    architecture: {description: GPU architecture, type: str, sample: hopper}
    architecture_source: {description: "C(table), C(range), C(nvidia-smi) or C(unknown)", type: str}
    memory_total_mib: {description: Total framebuffer memory in MiB, type: int}
    mig_mode_current: {description: "C(Enabled), C(Disabled) or null (not MIG capable)", type: str}
    mig_mode_pending: {description: MIG mode after the next GPU reset, type: str}
    mig_devices:
      description: MIG devices (index, gpu_instance_id, compute_instance_id, multiprocessor_count, memory_total_mib).
      type: list
      elements: dict
    persistence_mode: {description: Whether persistence mode is on, type: bool}
    ecc_mode_current: {description: Current ECC mode, type: str}
    ecc_mode_pending: {description: ECC mode after the next reboot, type: str}
    temperature_c: {description: GPU temperature in Celsius, type: int}
    health:
      description:
        - Memory health counters, null where not reported - C(ecc_dbe_volatile) (uncorrectable DRAM ECC errors since
          the driver loaded), C(remapped_row_pending) (a row remapping waits for a GPU reset), C(remapped_row_failure),
          C(retired_pages_pending) (older GPUs; pages wait for a reset to be retired).
      type: dict
    brand: {description: Product brand, type: str}
    vbios_version: {description: VBIOS version, type: str}
    virtualization_mode: {description: "Virtualization mode (C(Pass-Through), C(VGPU), ...), null on bare metal", type: str}
    compute_mode: {description: Compute mode, type: str}
    memory_reserved_mib: {description: Reserved framebuffer memory in MiB, type: int}
    memory_used_mib: {description: Used framebuffer memory in MiB, type: int}
    memory_free_mib: {description: Free framebuffer memory in MiB, type: int}
    utilization_gpu_pct: {description: GPU utilization in percent, type: int}
    utilization_memory_pct: {description: Memory utilization in percent, type: int}
    memory_temperature_c: {description: HBM temperature in Celsius, type: int}
    power_state: {description: Performance state (P0-P12), type: str}
    power_draw_w:
      description:
        - Instant power draw in watts (R580's C(gpu_power_readings/instant_power_draw); C(power_draw) on older drivers).
      type: float
    power_draw_average_w: {description: Average power draw in watts (DTD v13), type: float}
    power_limit_w: {description: Current power limit in watts, type: float}
    power_limit_default_w: {description: Default power limit in watts, type: float}
    power_limit_min_w: {description: Lowest settable power limit in watts, type: float}
    power_limit_max_w: {description: Highest settable power limit in watts, type: float}
    memory_power_draw_average_w: {description: Average memory power draw in watts (C(gpu_memory_power_readings)), type: float}
    module_power_draw_w: {description: Module (board + CPU on superchips) power draw in watts, type: float}
pci_gpus:
  description: NVIDIA display and 3D controllers on the PCI bus (no driver needed).
  returned: always
  type: list
  elements: dict
  contains:
    pci_bus_id: {description: PCI address, type: str, sample: "0000:18:00.0"}
    pci_device_id: {description: PCI device ID, type: str, sample: "0x2330"}
    pci_class: {description: PCI class code, type: str, sample: "0x030200"}
    name: {description: "Name from the table, or null", type: str}
    architecture: {description: Architecture or null when unknown, type: str}
    architecture_source: {description: "C(table), C(range) or C(unknown)", type: str}
    grace_hopper: {description: Whether this is a Grace Hopper superchip GPU, type: bool}
    kernel_driver: {description: "Kernel driver bound to the device (nvidia, nouveau) or null", type: str}
nvswitches:
  description: NVIDIA NVSwitch bridges on the PCI bus (class C(0x0680)); their GPUs need Fabric Manager.
  returned: always
  type: list
  elements: dict
  contains:
    pci_bus_id: {description: PCI address, type: str}
    pci_device_id: {description: PCI device ID, type: str, sample: "0x22a3"}
nvswitch_count:
  description: Number of entries in RV(nvswitches).
  returned: always
  type: int
pci_gpu_count:
  description: Number of entries in RV(pci_gpus).
  returned: always
  type: int
architectures:
  description: Sorted distinct architectures found by either source.
  returned: always
  type: list
  elements: str
  sample: [hopper]
grace_hopper:
  description: Whether any GPU is a Grace Hopper superchip (open kernel modules required).
  returned: always
  type: bool
nvidia_module_loaded:
  description: Whether the nvidia kernel module is loaded (C(/sys/module/nvidia)).
  returned: always
  type: bool
nvidia_module_version:
  description: Version of the loaded nvidia kernel module, null when not loaded.
  returned: always
  type: str
  sample: "535.261.03"
nouveau_loaded:
  description: Whether the nouveau module is loaded (it must not be, for the NVIDIA driver).
  returned: always
  type: bool
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.nvidia_smi import NVIDIA_SMI_ARGS, gpu_info

EXTRA_SMI_DIRS = ["/usr/bin", "/usr/local/nvidia/bin", "/home/kubernetes/bin/nvidia/bin"]


def argspec():
    return dict(
        nvidia_smi_path=dict(type="str", default="nvidia-smi"),
        pci_devices_dir=dict(type="path", default="/sys/bus/pci/devices"),
        sys_module_dir=dict(type="path", default="/sys/module"),
    )


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    path = module.params["nvidia_smi_path"]
    if os.sep not in path:
        path = module.get_bin_path(path, required=False, opt_dirs=EXTRA_SMI_DIRS)
    elif not os.access(path, os.X_OK):
        path = None

    def run_smi():
        if not path:
            return None
        return module.run_command([path] + NVIDIA_SMI_ARGS, environ_update={"LC_ALL": "C"})

    try:
        result = gpu_info(run_smi, module.params["pci_devices_dir"], module.params["sys_module_dir"])
    except GpufleetError as exc:
        module.fail_json(msg="nvidia-smi output could not be read: %s" % exc.msg)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
