# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Pod placement for a GPU pool: the resource to ask for, where to land, which taints to tolerate.

``placement(pool, platform)`` returns a fragment ``{resources, affinity | nodeSelector,
tolerations[, annotations]}``: ``resources`` belongs in the container, ``annotations`` in the pod's
metadata (``karpenter.sh/do-not-disrupt: "true"`` for EKS pools with ``do_not_disrupt``), the rest
in the pod spec. GPUs are
requested as limits only (extended resources need no request). Node labels per platform:
GKE ``cloud.google.com/machine-family``, ``cloud.google.com/gke-accelerator``,
``cloud.google.com/gke-spot`` (spot nodes carry the taint ``cloud.google.com/gke-spot=true:
NoSchedule``); EKS Karpenter ``karpenter.k8s.aws/instance-family``,
``karpenter.k8s.aws/instance-gpu-name``, ``karpenter.sh/capacity-type``; self-managed
``gpufleet.io/pool``. A pool whose GPU type sits on non-amd64 hosts (gpu_catalog ``cpu_arch``, e.g. gb200 on
Grace: arm64) also selects ``kubernetes.io/arch`` and, on GKE, tolerates the taint GKE puts on Arm nodes by
default (``kubernetes.io/arch=arm64:NoSchedule``; GKE API TaintConfig.ArchitectureTaintBehavior, default ARM);
amd64 pools render as before.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.gpu_access import GKE_PLATFORMS, gke_sharing_selector
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_TYPES, cpu_arch
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.selfmanaged import POOL_LABEL
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.dra import pod_claims

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_RESOURCE = "nvidia.com/gpu.shared"
GKE_SPOT_TOLERATION = {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true",
                       "effect": "NoSchedule"}
COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"
ARCH_LABEL = "kubernetes.io/arch"
DEFAULT_ARCH = "amd64"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


def resource_name(pool, platform=None):
    """The extended resource a pod of this pool asks for, per the pool's sharing mode.

    On GKE every shared GPU and every MIG partition is advertised as ``nvidia.com/gpu`` by
    Google's device plugin."""
    sharing = pool.get("sharing") or {"mode": "none"}
    mode = sharing.get("mode", "none")
    if platform in GKE_PLATFORMS:
        return GPU_RESOURCE
    if mode == "mig" and sharing.get("mig_strategy") == "mixed":
        profile = sharing.get("mig_profile")
        if not profile:
            raise GpufleetError("pool %s: MIG mixed strategy needs sharing.mig_profile (e.g. 1g.10gb) to name "
                                "the resource nvidia.com/mig-<profile>" % pool.get("name"))
        return "nvidia.com/mig-%s" % profile
    if mode in ("time-slicing", "mps") and sharing.get("rename_by_default"):
        return SHARED_RESOURCE
    return GPU_RESOURCE


def default_count(pool):
    """Whole pools ask for a full node's GPUs; shared and MIG pools for one slice."""
    mode = (pool.get("sharing") or {}).get("mode", "none")
    return pool["gpus_per_node"] if mode == "none" else 1


def _expr(key, values):
    return {"key": key, "operator": "In", "values": [str(v) for v in values]}


def _arch_selector(pool):
    """``{kubernetes.io/arch: <arch>}`` for a pool on non-amd64 hosts, else nothing (amd64 output unchanged)."""
    arch = cpu_arch(pool["gpu_type"])
    return {} if arch == DEFAULT_ARCH else {ARCH_LABEL: arch}


def _node_expressions(pool, platform):
    return _platform_expressions(pool, platform) + [_expr(k, [v]) for k, v in sorted(_arch_selector(pool).items())]


def _platform_expressions(pool, platform):
    facts = GPU_TYPES[pool["gpu_type"]]
    caps = pool.get("capacity_types") or ["on-demand"]
    if platform == "gke":
        exprs = [_expr("cloud.google.com/machine-family", [facts["gke_machine_family"]]),
                 _expr("cloud.google.com/gke-accelerator", [facts["gke_accelerator"]])]
        if caps == ["spot"]:
            exprs.append(_expr("cloud.google.com/gke-spot", ["true"]))
        for key, value in sorted(gke_sharing_selector(pool).items()):
            exprs.append(_expr(key, [value]))
        return exprs
    if platform == "eks":
        return [_expr("karpenter.k8s.aws/instance-family", facts["eks_families"]),
                _expr("karpenter.k8s.aws/instance-gpu-name", [facts["eks_gpu_name"]]),
                _expr("karpenter.sh/capacity-type", caps)]
    return [_expr(POOL_LABEL, [pool["name"]])]


def _tolerations(pool, platform):
    out = []
    for taint in pool.get("taints") or []:
        item = {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}
        if item not in out:
            out.append(item)
    if platform in ("gke", "gke-autopilot") and "spot" in (pool.get("capacity_types") or []):
        out.append(dict(GKE_SPOT_TOLERATION))
    if platform in ("gke", "gke-autopilot") and pool.get("compute_class"):
        out.append({"key": COMPUTE_CLASS_LABEL, "operator": "Equal", "value": pool["name"], "effect": "NoSchedule"})
    arch = _arch_selector(pool).get(ARCH_LABEL)
    if platform in ("gke", "gke-autopilot") and arch == "arm64":
        out.append({"key": ARCH_LABEL, "operator": "Equal", "value": arch, "effect": "NoSchedule"})
    return out


def placement(pool, platform, gpus=None, runtime_class=None):
    """Pod spec fragment for ``pool`` on ``platform`` (see the module docstring).

    ``runtime_class`` (``gpu_access.access(...)["runtime_class"]``) adds ``runtimeClassName``
    where nvidia is not the nodes' default runtime. A pool with ``allocation: dra`` gets
    ``resourceClaims`` (pod spec) and ``resources.claims`` (container) instead of a GPU limit."""
    if pool.get("gpu_type") not in GPU_TYPES:
        raise GpufleetError("pool %s: unknown gpu_type %r" % (pool.get("name"), pool.get("gpu_type")))
    count = default_count(pool) if gpus is None else gpus
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise GpufleetError("gpus must be an integer >= 1, got %r" % (count,))
    if pool.get("allocation") == "dra":
        # DRA pool: the pod claims devices (ResourceClaimTemplate / shared ResourceClaim, dra.py)
        claims, resources = pod_claims(pool, gpus)
        out = {"resources": resources, "resourceClaims": claims}
    else:
        out = {"resources": {"limits": {resource_name(pool, platform): count}}}
    facts = GPU_TYPES[pool["gpu_type"]]
    if pool.get("compute_class") and platform in ("gke", "gke-autopilot"):
        # a ComputeClass carries the hardware choice; other hard selectors would fight it.
        # The GKE sharing labels stay in both cases: without gpuSharing in the class (GKE version
        # unknown or < 1.35.2-gke.1485000, gke.py) they ask node auto-creation for a shared node
        # pool; with it, GKE puts the same labels (strategy, clients per GPU, partition size) on the
        # nodes the class creates, so the pod asks for exactly what those nodes carry and never
        # lands on an unshared node of the class.
        out["nodeSelector"] = dict({COMPUTE_CLASS_LABEL: pool["name"]}, **gke_sharing_selector(pool))
        out["nodeSelector"].update(_arch_selector(pool))
    elif platform == "gke-autopilot":
        selector = {"cloud.google.com/gke-accelerator": facts["gke_accelerator"]}
        if pool.get("capacity_types") == ["spot"]:
            selector["cloud.google.com/gke-spot"] = "true"
        selector.update(gke_sharing_selector(pool))
        selector.update(_arch_selector(pool))
        out["nodeSelector"] = selector
    else:
        out["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": _node_expressions(pool, platform)}]}}}
    tolerations = _tolerations(pool, platform)
    if tolerations:
        out["tolerations"] = tolerations
    if runtime_class:
        out["runtimeClassName"] = runtime_class
    if pool.get("do_not_disrupt") is True and platform == "eks":
        # Karpenter does not voluntarily disrupt (consolidate, drift) a node running such a pod
        out["annotations"] = {DO_NOT_DISRUPT: "true"}
    return out


# Pod Security "restricted" (what the validation Jobs run with, and what a GPU workload should start
# from): non-root with a non-zero UID, the runtime's default seccomp profile, no privilege escalation,
# every capability dropped.
RESTRICTED_POD = {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                  "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                        "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
# The example's own CPU and memory (the vectorAdd sample needs a few MiB); the GPUs come from placement.
EXAMPLE_REQUESTS = {"cpu": "100m", "memory": "128Mi"}
EXAMPLE_LIMITS = {"cpu": "1", "memory": "512Mi"}


def example_job(pool, platform, image, namespace, runtime_class=None):
    """A Job running the CUDA vectorAdd sample on one pool (rendered, never applied), Pod Security
    restricted, with no ServiceAccount token and a read-only root filesystem (the sample writes
    nothing)."""
    frag = placement(pool, platform, runtime_class=runtime_class)
    resources = copy.deepcopy(frag["resources"])
    resources.setdefault("requests", {}).update(EXAMPLE_REQUESTS)
    resources.setdefault("limits", {}).update(EXAMPLE_LIMITS)
    pod_spec = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "securityContext": copy.deepcopy(RESTRICTED_POD),
        "containers": [{
            "name": "cuda-vectoradd",
            "image": image,
            "resources": resources,
            "securityContext": dict(copy.deepcopy(RESTRICTED_CONTAINER), readOnlyRootFilesystem=True),
        }],
    }
    for key in ("affinity", "nodeSelector", "tolerations", "runtimeClassName", "resourceClaims"):
        if key in frag:
            pod_spec[key] = frag[key]
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "gpu-example-%s" % pool["name"], "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "gpufleet", POOL_LABEL: pool["name"]}},
        "spec": {"backoffLimit": 0, "ttlSecondsAfterFinished": 3600,
                 "template": {"metadata": _pod_metadata(pool, frag), "spec": pod_spec}},
    }


def _pod_metadata(pool, frag):
    meta = {"labels": {POOL_LABEL: pool["name"]}}
    if frag.get("annotations"):
        meta["annotations"] = dict(frag["annotations"])
    return meta


def example_jobs(pools, platform, image, namespace, runtime_class=None):
    return [example_job(p, platform, image, namespace, runtime_class) for p in pools]
