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

# name: architecture, memory GiB, EKS instance families, GKE accelerator type, GKE machine family
GPU_TYPES = {
    "t4": {"arch": "turing", "memory_gib": 16, "eks_families": ["g4dn"],
           "gke_accelerator": "nvidia-tesla-t4", "gke_machine_family": "n1"},
    "v100": {"arch": "volta", "memory_gib": 16, "eks_families": ["p3"],
             "gke_accelerator": "nvidia-tesla-v100", "gke_machine_family": "n1"},
    "a10g": {"arch": "ampere", "memory_gib": 24, "eks_families": ["g5"],
             "gke_accelerator": None, "gke_machine_family": None},
    "l4": {"arch": "ada", "memory_gib": 24, "eks_families": ["g6"],
           "gke_accelerator": "nvidia-l4", "gke_machine_family": "g2"},
    "l40s": {"arch": "ada", "memory_gib": 48, "eks_families": ["g6e"],
             "gke_accelerator": None, "gke_machine_family": None},
    "a100-40gb": {"arch": "ampere", "memory_gib": 40, "eks_families": ["p4d"],
                  "gke_accelerator": "nvidia-tesla-a100", "gke_machine_family": "a2"},
    "a100-80gb": {"arch": "ampere", "memory_gib": 80, "eks_families": ["p4de"],
                  "gke_accelerator": "nvidia-a100-80gb", "gke_machine_family": "a2"},
    "h100-80gb": {"arch": "hopper", "memory_gib": 80, "eks_families": ["p5"],
                  "gke_accelerator": "nvidia-h100-80gb", "gke_machine_family": "a3"},
    "h200-141gb": {"arch": "hopper", "memory_gib": 141, "eks_families": ["p5e", "p5en"],
                   "gke_accelerator": "nvidia-h200-141gb", "gke_machine_family": "a3"},
    "b200": {"arch": "blackwell", "memory_gib": 180, "eks_families": ["p6-b200"],
             "gke_accelerator": "nvidia-b200", "gke_machine_family": "a4"},
}

# MIG is available on these (A100, H100, H200, B200 class)
MIG_CAPABLE = ("a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb", "b200")


def gpu_type_names():
    return sorted(GPU_TYPES)
