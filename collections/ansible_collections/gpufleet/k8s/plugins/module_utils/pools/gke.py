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
``machineFamily``, ``gpu {type, count[, gpuSharing]}``, ``spot``; ``nodePoolAutoCreation.enabled``;
``whenUnsatisfiable``. GKE Autopilot manages its own nodes: only workload-side placement applies.

GPU sharing in a ComputeClass (ComputeClass CRD reference,
https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass, GKE 1.35.2-gke.1485000
and later): ``priorities[].gpu.gpuSharing {sharingStrategy: TIME_SHARING|MPS,
maxSharedClientsPerGPU: 2..48 (required with sharingStrategy), gpuPartitionSize: <MIG profile>}``.
It is rendered only when ``gpu_pools_gke_version`` says the cluster has such a version; otherwise
the class has no sharing field and the pods' GKE sharing nodeSelectors alone ask node
auto-creation for a shared node pool (``gpu_access.gke_sharing_selector``; kept in both cases,
since GKE puts those same labels on the shared nodes a class creates).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_TYPES
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.pools_check import (
    GKE_PLATFORMS, GPU_SHARING_MIN_GKE, GPU_SHARING_MIN_GKE_TEXT, cluster_region, parse_gke_version, resolve_settings,
    spread_zones)
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import pool_gpu_limit

COMPUTE_CLASS_API = "cloud.google.com/v1"
# ComputeClass gpuSharing.sharingStrategy per gpufleet sharing mode
CLASS_STRATEGIES = {"time-slicing": "TIME_SHARING", "mps": "MPS"}
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


def class_gpu_sharing_supported(settings):
    """Whether the cluster's GKE version (``gpu_pools_gke_version``) has ComputeClass gpuSharing.

    Empty or unparseable (preflight refuses the latter) is unknown: not supported."""
    version = parse_gke_version(settings.get("gke_version"))
    return version is not None and version >= GPU_SHARING_MIN_GKE


def gpu_sharing(pool):
    """The ComputeClass ``gpu.gpuSharing`` of a pool's sharing mode, or None (no sharing)."""
    sharing = pool.get("sharing") or {}
    mode = sharing.get("mode")
    if pool.get("allocation") == "dra":
        return None  # the DRA driver shares (GpuConfig), not GKE's device plugin
    if mode in CLASS_STRATEGIES:
        return {"sharingStrategy": CLASS_STRATEGIES[mode], "maxSharedClientsPerGPU": int(sharing["replicas"])}
    if mode == "mig" and sharing.get("mig_profile"):
        return {"gpuPartitionSize": sharing["mig_profile"]}
    return None


def sharing_notes(pools, settings):
    """One line per ComputeClass pool with sharing: where its sharing is rendered (task output, plan.md)."""
    out = []
    supported = class_gpu_sharing_supported(settings)
    for pool in pools:
        if not pool.get("compute_class") or gpu_sharing(pool) is None:
            continue
        if supported:
            out.append("%s: ComputeClass priorities[].gpu.gpuSharing %s (GKE %s >= %s), and the pods' GKE "
                       "sharing nodeSelectors" % (pool["name"], _flow(gpu_sharing(pool)),
                                                  settings["gke_version"], GPU_SHARING_MIN_GKE_TEXT))
        elif settings.get("gke_version"):
            out.append("%s: no gpuSharing in the ComputeClass (GKE %s is below %s); the pods' GKE sharing "
                       "nodeSelectors ask node auto-creation for the shared node pool"
                       % (pool["name"], settings["gke_version"], GPU_SHARING_MIN_GKE_TEXT))
        else:
            out.append("%s: no gpuSharing in the ComputeClass (gpu_pools_gke_version is unset, so the cluster "
                       "version is unknown; set it to %s or later to render it); the pods' GKE sharing "
                       "nodeSelectors ask node auto-creation for the shared node pool"
                       % (pool["name"], GPU_SHARING_MIN_GKE_TEXT))
    return out


def _flow(mapping):
    return "{%s}" % ", ".join("%s: %s" % (k, mapping[k]) for k in sorted(mapping))


def compute_class(pool, settings):
    facts = GPU_TYPES[pool["gpu_type"]]
    gpu = {"type": facts["gke_accelerator"], "count": pool["gpus_per_node"]}
    # GKE labels the nodes it creates for such a class like any shared node pool
    # (gke-gpu-sharing-strategy, gke-max-shared-clients-per-gpu, gke-gpu-partition-size): the
    # pods' selectors (placement) match them.
    sharing = gpu_sharing(pool) if class_gpu_sharing_supported(settings) else None
    priorities = []
    for capacity in pool["capacity_types"]:
        priorities.append({
            "machineFamily": facts["gke_machine_family"],
            # a copy per priority: no shared objects (YAML anchors) in the dump
            "gpu": dict(gpu, gpuSharing=dict(sharing)) if sharing else dict(gpu),
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


def check(params, plan, problems):
    """Preflight: record, per ComputeClass pool with sharing, where its sharing is rendered
    (``plan["gke_class_sharing"]``: plan.md and the provision stage print it)."""
    if plan.get("platform") not in GKE_PLATFORMS or problems.errors:
        return
    extra = params.get("extra") or {}
    settings = resolve_settings({k: v for k, v in extra.items() if k.startswith("gpu_pools_")})
    plan["gke_class_sharing"] = sharing_notes(plan.get("pools") or [], settings)
