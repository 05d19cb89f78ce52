# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""GKE: the node auto-provisioning (NAP) config file, its gcloud command, and ComputeClasses.

NAP file fields (``gcloud container clusters update CLUSTER --enable-autoprovisioning
--autoprovisioning-config-file=FILE``, GKE "Use node auto-provisioning"): ``resourceLimits[]``
``{resourceType, minimum, maximum}`` with cpu (cores), memory (GB) and one entry per GPU
accelerator type, ``autoprovisioningLocations``, ``management {autoRepair, autoUpgrade}``,
``shieldedInstanceConfig {enableSecureBoot, enableIntegrityMonitoring}``, ``diskSizeGb``,
``diskType``, ``imageType``. ComputeClass (cloud.google.com/v1): ``priorities[]`` with
``machineFamily``, ``gpu {type, count}``, ``spot``; ``nodePoolAutoCreation.enabled``;
``whenUnsatisfiable``. GKE Autopilot manages its own nodes: only workload-side placement applies.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.gpu_catalog import GPU_TYPES
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools_check import cluster_region, spread_zones
from ansible_collections.gpufleet.k8s.plugins.module_utils.spec import pool_gpu_limit

COMPUTE_CLASS_API = "cloud.google.com/v1"
AUTOPILOT_NOTE = ("GKE Autopilot: Google creates and manages the GPU nodes (driver and device plugin included); "
                  "gpufleet renders workload-side placement only (accelerator nodeSelector, or a ComputeClass "
                  "for pools with compute_class: true). No node auto-provisioning file, node pools, node "
                  "labels or taints are managed.")


def nap_config(pools, settings, platform="gke"):
    """The NAP config file as a dict (``plan.pools`` normalized)."""
    accel = {}
    order = []
    for pool in pools:
        name = GPU_TYPES[pool["gpu_type"]]["gke_accelerator"]
        if name not in accel:
            accel[name] = [0, 0]
            order.append(name)
        accel[name][0] += (pool.get("min_nodes") or 0) * pool["gpus_per_node"]
        accel[name][1] += pool_gpu_limit(pool) or 0
    cpu_max = max(settings["gke_nap_cpu_max"], sum(p.get("max_cpu") or 0 for p in pools))
    mem_max = max(settings["gke_nap_memory_gb_max"], sum(p.get("max_memory_gb") or 0 for p in pools))
    limits = [
        {"resourceType": "cpu", "minimum": settings["gke_nap_cpu_min"], "maximum": cpu_max},
        {"resourceType": "memory", "minimum": settings["gke_nap_memory_gb_min"], "maximum": mem_max},
    ]
    for name in sorted(order):
        low, high = accel[name]
        limits.append({"resourceType": name, "minimum": low, "maximum": max(high, low)})
    return {
        "resourceLimits": limits,
        "autoprovisioningLocations": spread_zones(pools),
        "management": {"autoRepair": bool(settings["gke_auto_repair"]),
                       "autoUpgrade": bool(settings["gke_auto_upgrade"])},
        "shieldedInstanceConfig": {"enableSecureBoot": bool(settings["gke_secure_boot"]),
                                   "enableIntegrityMonitoring": bool(settings["gke_integrity_monitoring"])},
        "diskSizeGb": max(p["disk_size_gb"] for p in pools),
        "diskType": settings["gke_disk_type"],
        "imageType": settings["gke_image_type"],
    }


def nap_command(cluster, config_path, plan, settings):
    """argv of the gcloud call that applies the NAP file."""
    argv = [settings["gcloud_command"], "container", "clusters", "update", cluster,
            "--enable-autoprovisioning", "--autoprovisioning-config-file=%s" % config_path]
    region = cluster_region(plan, settings)
    if region:
        argv.append("--location=%s" % region)
    if settings.get("gke_project"):
        argv.append("--project=%s" % settings["gke_project"])
    argv.append("--quiet")
    return argv


def _minutes(duration):
    """'30m' -> 30, '1h' -> 60, '90s' -> 2 (rounded up); 'Never' -> None."""
    if duration == "Never":
        return None
    total = 0
    for amount, unit in re.findall(r"([0-9]+)(s|m|h)", duration):
        total += int(amount) * {"s": 1, "m": 60, "h": 3600}[unit]
    return (total + 59) // 60


def compute_class(pool, settings):
    facts = GPU_TYPES[pool["gpu_type"]]
    priorities = []
    for capacity in pool["capacity_types"]:
        priorities.append({
            "machineFamily": facts["gke_machine_family"],
            "gpu": {"type": facts["gke_accelerator"], "count": pool["gpus_per_node"]},
            "spot": capacity == "spot",
            "storage": {"bootDiskSize": pool["disk_size_gb"], "bootDiskType": settings["gke_disk_type"]},
        })
    spec = {
        "priorities": priorities,
        "nodePoolAutoCreation": {"enabled": True},
        "whenUnsatisfiable": "DoNotScaleUp",
    }
    minutes = _minutes(pool["consolidate_after"])
    if minutes is not None:
        spec["autoscalingPolicy"] = {"consolidationDelayMinutes": max(minutes, 1)}
    return {"apiVersion": COMPUTE_CLASS_API, "kind": "ComputeClass",
            "metadata": {"name": pool["name"], "labels": {"app.kubernetes.io/managed-by": "gpufleet"}},
            "spec": spec}


def compute_classes(pools, settings):
    return [compute_class(p, settings) for p in pools if p.get("compute_class")]
