# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Vendor-neutral GPU type names and what they are on each cloud.

Facts (instance families, GKE accelerator names, architectures) come from the providers'
public documentation. Architecture decides the driver's kernel-module flavour.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# architecture order matters: index compares generations
ARCHITECTURES = ("maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")
# open kernel modules: unsupported before Turing, mandatory from Hopper-Grace/Blackwell
OPEN_UNSUPPORTED = ("maxwell", "pascal", "volta")
OPEN_REQUIRED = ("blackwell",)

# name -> facts per cloud (from the providers' public documentation, late 2026):
#   arch, memory_gib               the GPU itself
#   dra_memory_mib                 the GPU's memory as NVIDIA's DRA driver publishes it (ResourceSlice capacity
#                                  ``memory``): NVML's total framebuffer memory, which nvidia-smi shows as "FB
#                                  Memory Usage / Total" in MiB; less than memory_gib GiB (an H100 80GB is
#                                  81559Mi, 79.65 GiB), so a claim's ``memory >= <memory_gib>Gi`` never matches.
#                                  Where two totals were seen for one type, the smaller. Sources (read 2026-12-07):
#                                  h100-80gb 81559: tests/fixtures/nvidia-smi/h100-sxm-8x.xml and the real driver's
#                                    ResourceSlice (81559Mi, seen when NVIDIA's driver ran, issue 38);
#                                  h200-141gb 143771: the real recording tests/fixtures/nvidia-smi/h200-580-recorded.xml
#                                    (driver 580.159.04);
#                                  t4 15360, l4 23034, a10g 23028, l40s 46068, a100-80gb 81920: nvidia-smi totals
#                                    listed in modal-labs/modal-client PR #2797 (2025-01, "A10" there is their A10G);
#                                  a100-40gb 40536: nvidia-smi with driver 470.82.01 (nanopool/phoenix-miner issue 17);
#                                    the same PR lists 40960 for another driver, the smaller is kept;
#                                  v100 16160: nvidia-smi of Tesla V100-SXM2-16GB and V100-PCIE-16GB in public issue
#                                    and README outputs (drivers 410-470);
#                                  b200 183359: nvidia-smi with driver 580.95.05 (NVIDIA/TensorRT-LLM issue 10278);
#                                  gb200 189471: nvidia-smi of GB200 nodes in public repositories' outputs (R570+).
#   eks_families                   EC2 instance families carrying this GPU (Karpenter label
#                                  karpenter.k8s.aws/instance-family)
#   eks_gpu_name                   Karpenter label karpenter.k8s.aws/instance-gpu-name (EC2's GPU
#                                  name, lower case)
#   eks_gpu_counts                 GPUs per instance that those families offer
#   gke_accelerator                GKE accelerator type (node label cloud.google.com/gke-accelerator,
#                                  NAP resourceType, ComputeClass gpu.type); None: not on GKE
#   gke_machine_family             Compute Engine machine family (cloud.google.com/machine-family)
#   gke_gpu_counts                 GPUs per VM that the machine family offers for this accelerator
#   cpu_arch                       the host CPU architecture of the nodes carrying this GPU, as the node
#                                  label kubernetes.io/arch spells it (amd64 | arm64); added to every
#                                  type below (default amd64) so that Karpenter's requirement and AMI and
#                                  the pods' placement follow it
GPU_TYPES = {
    "t4": {"arch": "turing", "memory_gib": 16, "dra_memory_mib": 15360,
           "eks_families": ["g4dn"], "eks_gpu_name": "t4", "eks_gpu_counts": [1, 4, 8],
           "gke_accelerator": "nvidia-tesla-t4", "gke_machine_family": "n1", "gke_gpu_counts": [1, 2, 4]},
    "v100": {"arch": "volta", "memory_gib": 16, "dra_memory_mib": 16160,
             "eks_families": ["p3", "p3dn"], "eks_gpu_name": "v100", "eks_gpu_counts": [1, 4, 8],
             "gke_accelerator": "nvidia-tesla-v100", "gke_machine_family": "n1", "gke_gpu_counts": [1, 2, 4, 8]},
    "a10g": {"arch": "ampere", "memory_gib": 24, "dra_memory_mib": 23028,
             "eks_families": ["g5"], "eks_gpu_name": "a10g", "eks_gpu_counts": [1, 4, 8],
             "gke_accelerator": None, "gke_machine_family": None, "gke_gpu_counts": []},
    "l4": {"arch": "ada", "memory_gib": 24, "dra_memory_mib": 23034,
           "eks_families": ["g6"], "eks_gpu_name": "l4", "eks_gpu_counts": [1, 4, 8],
           "gke_accelerator": "nvidia-l4", "gke_machine_family": "g2", "gke_gpu_counts": [1, 2, 4, 8]},
    "l40s": {"arch": "ada", "memory_gib": 48, "dra_memory_mib": 46068,
             "eks_families": ["g6e"], "eks_gpu_name": "l40s", "eks_gpu_counts": [1, 4, 8],
             "gke_accelerator": None, "gke_machine_family": None, "gke_gpu_counts": []},
    "a100-40gb": {"arch": "ampere", "memory_gib": 40, "dra_memory_mib": 40536,
                  "eks_families": ["p4d"], "eks_gpu_name": "a100", "eks_gpu_counts": [8],
                  "gke_accelerator": "nvidia-tesla-a100", "gke_machine_family": "a2",
                  "gke_gpu_counts": [1, 2, 4, 8, 16]},
    "a100-80gb": {"arch": "ampere", "memory_gib": 80, "dra_memory_mib": 81920,
                  "eks_families": ["p4de"], "eks_gpu_name": "a100", "eks_gpu_counts": [8],
                  "gke_accelerator": "nvidia-a100-80gb", "gke_machine_family": "a2", "gke_gpu_counts": [1, 2, 4, 8]},
    "h100-80gb": {"arch": "hopper", "memory_gib": 80, "dra_memory_mib": 81559,
                  "eks_families": ["p5"], "eks_gpu_name": "h100", "eks_gpu_counts": [1, 8],
                  "gke_accelerator": "nvidia-h100-80gb", "gke_machine_family": "a3", "gke_gpu_counts": [1, 2, 4, 8]},
    "h200-141gb": {"arch": "hopper", "memory_gib": 141, "dra_memory_mib": 143771,
                   "eks_families": ["p5e", "p5en"], "eks_gpu_name": "h200", "eks_gpu_counts": [8],
                   "gke_accelerator": "nvidia-h200-141gb", "gke_machine_family": "a3", "gke_gpu_counts": [8]},
    "b200": {"arch": "blackwell", "memory_gib": 180, "dra_memory_mib": 183359,
             "eks_families": ["p6-b200"], "eks_gpu_name": "b200", "eks_gpu_counts": [8],
             "gke_accelerator": "nvidia-b200", "gke_machine_family": "a4", "gke_gpu_counts": [8]},
    # GB200 Grace Blackwell superchip: two Blackwell GPUs and one Grace (Arm Neoverse) CPU per superchip, so
    # its nodes are arm64. Sources (read 2026-12-03):
    # - NVIDIA MIG user guide, "Supported GPUs" (docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html):
    #   GB200, Blackwell, GB100, compute capability 10.0, 186GB, up to 7 MIG instances.
    # - Driver: Blackwell, so open kernel modules only and R570 or newer (driver_compat); GB200's PCI ID 0x2941 is
    #   first in R570's list of GPUs the open modules support (awslabs/amazon-eks-ami
    #   templates/al2023/runtime/gpu/nvidia-open-supported-devices-{555,560,570}.txt, 2026-07).
    # - Google Cloud "Accelerator-optimized machine family" (cloud.google.com/compute/docs/accelerator-optimized-machines)
    #   lists the A4X series; a4x-highgpu-4g with 4 nvidia-gb200 (186 GB) is as recorded from the GCP docs on
    #   2026-12-01 in tests/fixtures/clouds/gce-gpu-machine-types.yml. Grace is an Arm CPU (AWS blog below: the GB200
    #   superchip pairs two Blackwell GPUs with a Grace CPU; GCP's A4X Max page: "only available on the NVIDIA Grace
    #   platform"), hence arm64 nodes.
    # - AWS (EC2 API enum InstanceType "p6e-gb200.36xlarge"; AWS Containers blog "Unlocking next-generation AI
    #   performance with Dynamic Resource Allocation on Amazon EKS and Amazon EC2 P6e-GB200", 2025): P6e-GB200
    #   UltraServers. Left off EKS here: EC2's GPU name for it (Karpenter label karpenter.k8s.aws/instance-gpu-name)
    #   and its GPUs per instance are not in AWS's or Karpenter's documentation (Karpenter's instance-type reference
    #   of 2026-08 has no p6e-gb200 entry), so a NodePool could not be written from facts.
    "gb200": {"arch": "blackwell", "memory_gib": 186, "dra_memory_mib": 189471, "cpu_arch": "arm64",
              "eks_families": [], "eks_gpu_name": None, "eks_gpu_counts": [],
              "gke_accelerator": "nvidia-gb200", "gke_machine_family": "a4x", "gke_gpu_counts": [4]},
}
for _facts in GPU_TYPES.values():
    _facts.setdefault("cpu_arch", "amd64")

# kubernetes.io/arch values the catalog uses
CPU_ARCHS = ("amd64", "arm64")

GPU_MANUFACTURER = "nvidia"
# The GKE platforms share GKE's accelerator names; self-managed clusters take any GPU type.
GKE_PLATFORMS = ("gke", "gke-autopilot")


def offered_on(gpu_type, platform):
    """True when ``gpu_type`` can be provisioned on ``platform`` (self-managed: always)."""
    facts = GPU_TYPES.get(gpu_type)
    if facts is None:
        return False
    if platform == "eks":
        return bool(facts["eks_families"])
    if platform in GKE_PLATFORMS:
        return facts["gke_accelerator"] is not None
    return True


def types_on(platform):
    return sorted(name for name in GPU_TYPES if offered_on(name, platform))


def gpu_counts_on(gpu_type, platform):
    """GPUs per node the cloud offers for ``gpu_type``; None where any count is possible."""
    facts = GPU_TYPES[gpu_type]
    if platform == "eks":
        return list(facts["eks_gpu_counts"])
    if platform in GKE_PLATFORMS:
        return list(facts["gke_gpu_counts"])
    return None


def cpu_arch(gpu_type):
    """kubernetes.io/arch of the nodes carrying ``gpu_type`` (amd64 unless the catalog says otherwise)."""
    return GPU_TYPES[gpu_type].get("cpu_arch", "amd64")


def pool_archs(pools):
    """The non-amd64 kubernetes.io/arch values of ``pools``' GPU types (unknown types skipped), sorted."""
    return sorted({cpu_arch(p["gpu_type"]) for p in pools or [] if isinstance(p, dict) and p.get("gpu_type") in GPU_TYPES}
                  - {"amd64"})


def gke_accelerators():
    return sorted(f["gke_accelerator"] for f in GPU_TYPES.values() if f["gke_accelerator"])


# MIG is available on these (A100, H100, H200, B200 class). GB200 is in NVIDIA's list of MIG-capable GPUs,
# but its profile table (names, memory, counts) was not found in NVIDIA's MIG user guide: left out until it is.
MIG_CAPABLE = ("a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb", "b200")

# GPU types sold only as members of a multi-node NVLink domain (GB200 NVL72 racks: GCP A4X, AWS P6e-GB200
# UltraServers), where a DRA ComputeDomain's IMEX channels can span nodes
MULTI_NODE_NVLINK = ("gb200",)


def gpu_type_names():
    return sorted(GPU_TYPES)


def published_memory_gib(gpu_type):
    """The largest whole GiB the DRA driver's ``memory`` capacity of a ``gpu_type`` GPU reaches (dra_memory_mib:
    what NVML reports, less than the marketed size), or None for a type the catalogue lacks."""
    mib = (GPU_TYPES.get(gpu_type) or {}).get("dra_memory_mib")
    return mib // 1024 if mib else None
