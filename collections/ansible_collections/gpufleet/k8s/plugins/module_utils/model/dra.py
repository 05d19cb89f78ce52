# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Dynamic Resource Allocation (``resource.k8s.io/v1``) for GPU pools with ``allocation: dra``.

A pool either has its GPUs advertised by the device plugin (``nvidia.com/gpu`` extended resources,
the default) or published by NVIDIA's DRA Driver for GPUs (Helm chart ``dra-driver-nvidia-gpu``) as
devices in ResourceSlices, which pods ask for through ResourceClaims. Never both on one node: the
DRA pools' nodes carry ``gpufleet.io/gpu-allocation=dra``; the driver's kubelet plugin is selected
onto exactly those nodes and the device plugin (standalone: node affinity; operator: the operator's
``nvidia.com/gpu.deploy.device-plugin=false`` node label) is kept off them.

Facts used (from the driver's documentation and source, and the Kubernetes API reference):
driver name ``gpu.nvidia.com``; DeviceClasses ``gpu.nvidia.com`` (devices whose attribute ``type``
is ``gpu``) and ``mig.nvidia.com`` (``type`` ``mig``), and for ComputeDomains
``compute-domain-daemon.nvidia.com`` / ``compute-domain-default-channel.nvidia.com``; device
attributes ``productName``, ``uuid``, ``architecture``, ``cudaComputeCapability``, ``profile`` (MIG),
capacity ``memory``; GPU sharing through the opaque ``GpuConfig`` (``resource.nvidia.com/v1beta1``)
with ``sharing.strategy`` ``TimeSlicing`` or ``MPS``. The API is GA (and served by default) from
Kubernetes 1.34.

This module is the pool side (what a DRA pool is, its claims, what its nodes publish); installing
NVIDIA's driver (Helm values, cluster-wide settings and checks) is dra_driver.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, kind_of, one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_TYPES, published_memory_gib
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.mig import MIG_PROFILES

ALLOCATIONS = ("device-plugin", "dra")
DRIVER = "gpu.nvidia.com"
GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
COMPUTE_DOMAIN_CLASSES = ("compute-domain-daemon.nvidia.com", "compute-domain-default-channel.nvidia.com")
API_VERSION = "resource.k8s.io/v1"
GPU_CONFIG_API = "resource.nvidia.com/v1beta1"
SHARING_STRATEGIES = {"time-slicing": "TimeSlicing", "mps": "MPS"}
# The driver's feature gate each sharing strategy needs (sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0,
# pkg/featuregates: both alpha and off by default). Without it the GPU kubelet plugin's validation refuses a
# GpuConfig with that strategy at prepare ("... is selected as the GPU sharing strategy, but the ... feature
# gate is not enabled"), and the chart renders no MPS RBAC.
SHARING_FEATURE_GATES = {"time-slicing": "TimeSlicingSettings", "mps": "MPSSupport"}
TIME_SLICE_INTERVALS = ("Default", "Short", "Medium", "Long")
# Node labels on a DRA pool's nodes (pool_node_labels): the kubelet plugin's nodeSelector, the device
# plugin's exclusion, and the GPU Operator's own switch for its device plugin.
ALLOCATION_LABEL = "gpufleet.io/gpu-allocation"
OPERATOR_DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.device-plugin"
# The taint every DRA pool's nodes get (spec.normalize_pool adds it to the pool's taints unless the pool has a
# taint with this key already). The chart's gpu.nvidia.com DeviceClass sets extendedResourceName nvidia.com/gpu,
# and with Kubernetes' DRAExtendedResource (beta and on from 1.36, GA from 1.37) the scheduler then satisfies a
# plain nvidia.com/gpu request with a DRA device on a node that does not advertise the resource: a pod that asked
# for a device-plugin GPU would land on a DRA node by surprise (a drain moved one there). The pool's own pods get
# the toleration from its placement, its node agents from the pools' taints; other pods stay off unless they
# tolerate it. docs/dra.md says how to accept them instead.
DRA_TAINT = {"key": ALLOCATION_LABEL, "value": "dra", "effect": "NoSchedule"}
MIN_KUBERNETES = (1, 34)
CLAIM_NAME = "gpu"
# Sharing keys of the device plugin that mean nothing to the DRA driver (it shares through GpuConfig).
DEVICE_PLUGIN_ONLY_SHARING = ("replicas", "mig_strategy", "rename_by_default", "fail_requests_greater_than_one")
DRA_KEYS = ("product_name", "min_memory_gb", "time_slice_interval", "mps_active_thread_percentage",
            "claim_namespaces", "compute_domain")
# ComputeDomain (the driver's CRD computedomains.resource.nvidia.com, version v1beta1, chart 0.4.0 and later):
# spec.numNodes (integer >= 0, optional since 0.4.0 with default 0, required before; 0 recommended with the
# driver's default IMEXDaemonsWithDNSNames; gpufleet always renders it) and
# spec.channel.resourceClaimTemplate.name (required; the driver's controller creates that ResourceClaimTemplate
# in the ComputeDomain's namespace), spec.channel.allocationMode (Single | All, default Single). The spec
# cannot change once created (the CRD's validation rule self == oldSelf).
COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"
COMPUTE_DOMAIN_KEYS = ("num_nodes", "channel_allocation_mode")
CHANNEL_ALLOCATION_MODES = ("Single", "All")
CHANNEL_CLAIM_NAME = "compute-domain-channel"
VERSION = re.compile(r"^v?([0-9]+)\.([0-9]+)(\.[0-9]+)?([-+].*)?$")
QUOTED = re.compile(r"^[^'\\\n]*$")


def is_dra(pool):
    return isinstance(pool, dict) and pool.get("allocation") == "dra"


def dra_pools(pools):
    return [p for p in pools or [] if is_dra(p)]


def device_plugin_pools(pools):
    return [p for p in pools or [] if isinstance(p, dict) and not is_dra(p)]


def parse_version(text):
    """(major, minor) of a Kubernetes version text (``1.34``, ``v1.34.2``, ``1.35.1-gke.100``), or None."""
    match = VERSION.match(str(text).strip()) if isinstance(text, (str, int, float)) and not isinstance(text, bool) \
        else None
    return (int(match.group(1)), int(match.group(2))) if match else None


# ------------------------------------------------------------------------------------------ checks
def check_pool(var, pool, problems):
    """Shape of ``allocation`` and ``dra`` of one (normalized) pool; spec.validate_pools calls it."""
    allocation = pool.get("allocation")
    if allocation not in ALLOCATIONS:
        problems.error(var + ".allocation", "%r is not allowed; use %s" % (allocation, one_of(ALLOCATIONS)))
        return
    dra = pool.get("dra")
    if not isinstance(dra, dict):
        problems.error(var + ".dra", "must be a mapping (keys %s), got %s" % (", ".join(DRA_KEYS), kind_of(dra)))
        return
    if allocation != "dra":
        if dra:
            problems.error(var + ".dra", "is only used with allocation dra; use one of: allocation: dra, or drop it")
        return
    unknown = sorted(str(k) for k in dra if k not in DRA_KEYS)
    if unknown:
        problems.error(var + ".dra", "unknown key(s) %s; use %s" % (", ".join(unknown), one_of(DRA_KEYS)))
    name = dra.get("product_name")
    if name is not None and (not isinstance(name, str) or not name.strip() or not QUOTED.match(name)):
        problems.error(var + ".dra.product_name", "%r is not allowed; use the productName the driver publishes, "
                       "e.g. 'NVIDIA H100 80GB HBM3' (no quote, backslash or line break)" % (name,))
    mem = dra.get("min_memory_gb")
    if mem is not None and (isinstance(mem, bool) or not isinstance(mem, int) or mem < 1):
        problems.error(var + ".dra.min_memory_gb", "%r is not allowed; use an integer >= 1 (GiB)" % (mem,))
    elif mem is not None and _mode(pool) != "mig":
        _check_memory(var + ".dra.min_memory_gb", pool, mem, problems)
    namespaces = dra.get("claim_namespaces")
    if namespaces is not None and (not isinstance(namespaces, list) or not all(
            isinstance(n, str) and re.match(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", n) for n in namespaces)):
        problems.error(var + ".dra.claim_namespaces", "%r is not allowed; use a list of namespace names" % (namespaces,))
    elif namespaces and len(set(namespaces)) != len(namespaces):
        # each would render the pool's claim templates twice, and kustomize refuses the duplicate objects
        twice = sorted(n for n in set(namespaces) if namespaces.count(n) > 1)
        problems.error(var + ".dra.claim_namespaces", "%s named more than once; use a list of namespace names, "
                       "each once" % ", ".join(twice))
    sharing = pool.get("sharing") if isinstance(pool.get("sharing"), dict) else {}
    mode = sharing.get("mode", "none")
    given = sorted(k for k in DEVICE_PLUGIN_ONLY_SHARING if k in sharing)
    if given:
        problems.error(var + ".sharing", "%s only appl%s to the device plugin; a DRA pool shares through the "
                       "driver's GpuConfig: use sharing.mode (%s) with dra.time_slice_interval or "
                       "dra.mps_active_thread_percentage, or allocation: device-plugin"
                       % (", ".join(given), "ies" if len(given) == 1 else "y",
                          one_of(("none", "time-slicing", "mps", "mig"))))
    interval = dra.get("time_slice_interval")
    if interval is not None and (mode != "time-slicing" or interval not in TIME_SLICE_INTERVALS):
        problems.error(var + ".dra.time_slice_interval", "%r is not allowed%s; use %s" % (
            interval, "" if mode == "time-slicing" else " (sharing.mode is %s, not time-slicing)" % mode,
            one_of(TIME_SLICE_INTERVALS)))
    pct = dra.get("mps_active_thread_percentage")
    if pct is not None and (mode != "mps" or isinstance(pct, bool) or not isinstance(pct, int) or not 1 <= pct <= 100):
        problems.error(var + ".dra.mps_active_thread_percentage", "%r is not allowed%s; use an integer from 1 to 100"
                       % (pct, "" if mode == "mps" else " (sharing.mode is %s, not mps)" % mode))
    _check_compute_domain(var + ".dra.compute_domain", dra.get("compute_domain"), problems)
    if mode == "mig" and not sharing.get("mig_profile"):
        profiles = MIG_PROFILES.get(pool.get("gpu_type")) or {}
        problems.error(var + ".sharing.mig_profile", "is required for a DRA pool with MIG: its claims ask the "
                       "mig.nvidia.com class for that profile; use %s"
                       % (one_of(sorted(profiles)) if profiles else "a MIG profile such as 1g.10gb"))


def _check_memory(var, pool, mem, problems):
    """A min_memory_gb no GPU of the pool's type reaches renders a claim that never schedules."""
    most = published_memory_gib(pool.get("gpu_type"))
    if most is not None and mem > most:
        problems.error(var, "%d is more than a %s GPU has as the DRA driver publishes it (%dMi, from NVML: %.2f GiB), "
                       "so the pool's claims would never be allocated; use at most %d"
                       % (mem, pool.get("gpu_type"), GPU_TYPES[pool["gpu_type"]]["dra_memory_mib"],
                          GPU_TYPES[pool["gpu_type"]]["dra_memory_mib"] / 1024.0, most))


def _check_compute_domain(var, value, problems):
    if value is None:
        return
    if not isinstance(value, dict):
        problems.error(var, "must be a mapping (keys %s), got %s" % (", ".join(COMPUTE_DOMAIN_KEYS), kind_of(value)))
        return
    unknown = sorted(str(k) for k in value if k not in COMPUTE_DOMAIN_KEYS)
    if unknown:
        problems.error(var, "unknown key(s) %s; use %s" % (", ".join(unknown), one_of(COMPUTE_DOMAIN_KEYS)))
    nodes = value.get("num_nodes", 0)
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 0:
        problems.error(var + ".num_nodes", "%r is not allowed; use an integer >= 0 (0: the driver does not wait for "
                       "a node count, as NVIDIA recommends)" % (nodes,))
    mode = value.get("channel_allocation_mode", "Single")
    if mode not in CHANNEL_ALLOCATION_MODES:
        problems.error(var + ".channel_allocation_mode", "%r is not allowed; use %s"
                       % (mode, one_of(CHANNEL_ALLOCATION_MODES)))


def compute_domain(pool):
    """The pool's dra.compute_domain settings, or None."""
    value = (pool.get("dra") or {}).get("compute_domain") if is_dra(pool) else None
    return value if isinstance(value, dict) else None


# ------------------------------------------------------------------------------------------ claims
def _cel_text(value):
    return "'%s'" % value


def selectors(pool, mig=False):
    """CEL selectors for the pool's ``dra.product_name`` / ``dra.min_memory_gb`` (memory: whole GPUs)."""
    dra = pool.get("dra") or {}
    out = []
    if dra.get("product_name"):
        out.append({"cel": {"expression": "device.attributes['%s'].productName == %s"
                            % (DRIVER, _cel_text(dra["product_name"]))}})
    if dra.get("min_memory_gb") and not mig:
        out.append({"cel": {"expression": "device.capacity['%s'].memory.compareTo(quantity('%dGi')) >= 0"
                            % (DRIVER, dra["min_memory_gb"])}})
    return out


def _mode(pool):
    return (pool.get("sharing") or {}).get("mode", "none")


def feature_gates(pools):
    """{gate: True} of the driver's feature gates the DRA pools' sharing modes need (SHARING_FEATURE_GATES)."""
    return {SHARING_FEATURE_GATES[_mode(p)]: True for p in dra_pools(pools) if _mode(p) in SHARING_FEATURE_GATES}


def gpu_counts(pool):
    return sorted({1, pool["gpus_per_node"]})


def template_name(pool, gpus=1):
    mode = _mode(pool)
    if mode == "mig":
        return "%s-mig-%s" % (pool["name"], pool["sharing"]["mig_profile"])
    if gpus == 1:
        return "%s-gpu" % pool["name"]
    return "%s-gpus-%d" % (pool["name"], gpus)


def shared_claim_name(pool):
    return "%s-shared-gpu" % pool["name"]


def _request(pool, count, mig=False):
    exactly = {"deviceClassName": MIG_CLASS if mig else GPU_CLASS, "allocationMode": "ExactCount", "count": count}
    sel = selectors(pool, mig=mig)
    if mig:
        sel = [{"cel": {"expression": "device.attributes['%s'].profile == %s"
                        % (DRIVER, _cel_text(pool["sharing"]["mig_profile"]))}}] + sel
    if sel:
        exactly["selectors"] = sel
    return {"name": CLAIM_NAME, "exactly": exactly}


def _sharing_config(pool):
    mode = _mode(pool)
    dra = pool.get("dra") or {}
    sharing = {"strategy": SHARING_STRATEGIES[mode]}
    if mode == "time-slicing" and dra.get("time_slice_interval"):
        sharing["timeSlicingConfig"] = {"interval": dra["time_slice_interval"]}
    if mode == "mps" and dra.get("mps_active_thread_percentage"):
        sharing["mpsConfig"] = {"defaultActiveThreadPercentage": dra["mps_active_thread_percentage"]}
    return [{"requests": [CLAIM_NAME], "opaque": {"driver": DRIVER, "parameters": {
        "apiVersion": GPU_CONFIG_API, "kind": "GpuConfig", "sharing": sharing}}}]


def _labels(pool):
    return {"app.kubernetes.io/managed-by": "gpufleet", "gpufleet.io/pool": pool["name"]}


def claim_objects(pool, namespace):
    """What the pool's workloads in ``namespace`` claim: ResourceClaimTemplates for one GPU and for a
    node's GPUs (whole-GPU pools), for one MIG device of the pool's profile (MIG pools); a shared pool
    gets one ResourceClaim (its pods share the one GPU it allocates, time-sliced or through MPS, as the
    GpuConfig says) and a template for pods that want the sharing config on a GPU of their own."""
    if not is_dra(pool):
        return []
    mode = _mode(pool)

    def meta(name):
        return {"name": name, "namespace": namespace, "labels": _labels(pool)}
    out = []
    if mode == "mig":
        out.append({"apiVersion": API_VERSION, "kind": "ResourceClaimTemplate", "metadata": meta(template_name(pool)),
                    "spec": {"spec": {"devices": {"requests": [_request(pool, 1, mig=True)]}}}})
        return out
    if mode in SHARING_STRATEGIES:
        devices = {"requests": [_request(pool, 1)], "config": _sharing_config(pool)}
        out.append({"apiVersion": API_VERSION, "kind": "ResourceClaim", "metadata": meta(shared_claim_name(pool)),
                    "spec": {"devices": devices}})
        out.append({"apiVersion": API_VERSION, "kind": "ResourceClaimTemplate", "metadata": meta(template_name(pool)),
                    "spec": {"spec": {"devices": dict(devices)}}})
        return out
    for count in gpu_counts(pool):
        out.append({"apiVersion": API_VERSION, "kind": "ResourceClaimTemplate",
                    "metadata": meta(template_name(pool, count)),
                    "spec": {"spec": {"devices": {"requests": [_request(pool, count)]}}}})
    return out


def compute_domain_name(pool):
    return "%s-compute-domain" % pool["name"]


def channel_template_name(pool):
    return "%s-compute-domain-channel" % pool["name"]


def compute_domain_objects(pool, namespace):
    """The pool's ComputeDomain in ``namespace`` (none without dra.compute_domain). The driver's controller
    creates the ResourceClaimTemplate channel_template_name(pool) beside it; a pod that joins the domain
    claims an IMEX channel through it (pod_channel_claims)."""
    settings = compute_domain(pool)
    if settings is None:
        return []
    return [{"apiVersion": COMPUTE_DOMAIN_API, "kind": "ComputeDomain",
             "metadata": {"name": compute_domain_name(pool), "namespace": namespace, "labels": _labels(pool)},
             "spec": {"numNodes": settings.get("num_nodes", 0),
                      "channel": {"resourceClaimTemplate": {"name": channel_template_name(pool)},
                                  "allocationMode": settings.get("channel_allocation_mode", "Single")}}}]


def pod_channel_claims(pool):
    """``(resourceClaims entry, container claims entry)`` of a pod that joins the pool's ComputeDomain."""
    return ({"name": CHANNEL_CLAIM_NAME, "resourceClaimTemplateName": channel_template_name(pool)},
            {"name": CHANNEL_CLAIM_NAME})


def claims_for_pools(pools, namespaces, own=True, compute_domains=True):
    """Claim objects of every DRA pool in each of ``namespaces`` and (``own``) the pool's dra.claim_namespaces,
    and (``compute_domains``) the ComputeDomain of a pool with dra.compute_domain in each of them."""
    out = []
    for pool in dra_pools(pools):
        wanted = list(namespaces) + [n for n in ((pool.get("dra") or {}).get("claim_namespaces") or [] if own else [])
                                     if n not in namespaces]
        for ns in wanted:
            out.extend(claim_objects(pool, ns))
            if compute_domains:
                out.extend(compute_domain_objects(pool, ns))
    return out


def pod_claims(pool, gpus=None):
    """``(resourceClaims, container resources)`` for a pod of a DRA pool: one GPU, ``gpus`` GPUs (one or a
    node's worth), one MIG device, or the pool's shared GPU."""
    mode = _mode(pool)
    count = 1 if gpus is None and mode != "none" else (pool["gpus_per_node"] if gpus is None else gpus)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise GpufleetError("gpus must be an integer >= 1, got %r" % (count,))
    if mode in SHARING_STRATEGIES:
        if count != 1:
            raise GpufleetError("pool %s shares one GPU between its pods (DRA %s); ask for 1, not %d"
                                % (pool["name"], mode, count))
        ref = {"name": CLAIM_NAME, "resourceClaimName": shared_claim_name(pool)}
    elif mode == "mig":
        if count != 1:
            raise GpufleetError("pool %s: a pod claims one MIG device (%s); ask for 1, not %d"
                                % (pool["name"], pool["sharing"]["mig_profile"], count))
        ref = {"name": CLAIM_NAME, "resourceClaimTemplateName": template_name(pool)}
    else:
        if count not in gpu_counts(pool):
            raise GpufleetError("pool %s renders claim templates for %s GPU(s) per pod; ask for one of them, not %d"
                                % (pool["name"], " or ".join(str(c) for c in gpu_counts(pool)), count))
        ref = {"name": CLAIM_NAME, "resourceClaimTemplateName": template_name(pool, count)}
    return [ref], {"claims": [{"name": CLAIM_NAME}]}


def node_labels(pool):
    """Labels of a DRA pool's nodes: the kubelet plugin's selector, and the GPU Operator's switch that
    keeps its device plugin off them."""
    if not is_dra(pool):
        return {}
    return {ALLOCATION_LABEL: "dra", OPERATOR_DEVICE_PLUGIN_LABEL: "false"}


def device_plugin_exclusion():
    """Node selector expression every device plugin term gets: never on a DRA pool's node."""
    return {"key": ALLOCATION_LABEL, "operator": "NotIn", "values": ["dra"]}


# ------------------------------------------------------------------------------------------ counting
def _attr(device, name):
    value = (device.get("attributes") or {}).get(name) or {}
    return value.get("string", value.get("stringValue"))


def node_devices(slices):
    """{node name: {"gpu": count, "mig": {profile: count}}} of the driver's devices in ``slices``
    (ResourceSlice objects as the API returns them; other drivers' slices are ignored)."""
    out = {}
    for item in slices or []:
        spec = item.get("spec") or {}
        if spec.get("driver") != DRIVER or not spec.get("nodeName"):
            continue
        entry = out.setdefault(spec["nodeName"], {"gpu": 0, "mig": {}})
        for device in spec.get("devices") or []:
            kind = _attr(device, "type")
            if kind == "gpu":
                entry["gpu"] += 1
            elif kind == "mig":
                profile = _attr(device, "profile") or "unknown"
                entry["mig"][profile] = entry["mig"].get(profile, 0) + 1
    return out


def expected_devices(pool, per_gpu=None):
    """{what: count} one node of a DRA pool must publish: ``gpu`` devices, or ``mig <profile>`` devices
    (``per_gpu``: MIG instances of the profile per GPU, when known)."""
    if _mode(pool) == "mig":
        profile = (pool.get("sharing") or {}).get("mig_profile")
        return {"mig %s" % profile: pool["gpus_per_node"] * per_gpu} if per_gpu else {}
    return {"gpu": pool["gpus_per_node"]}


def published(devices, what):
    """The count of ``what`` (an expected_devices key) in one node's node_devices entry."""
    devices = devices or {"gpu": 0, "mig": {}}
    if what == "gpu":
        return devices["gpu"]
    return devices["mig"].get(what[len("mig "):], 0)


def claim_device_classes(claim):
    """The device classes a ResourceClaim's requests ask for (``exactly`` and each ``firstAvailable`` choice)."""
    out = set()
    for request in (((claim or {}).get("spec") or {}).get("devices") or {}).get("requests") or []:
        for choice in [request.get("exactly") or {}] + list(request.get("firstAvailable") or []):
            if choice.get("deviceClassName"):
                out.add(choice["deviceClassName"])
    return out


def claims_gpus(claim):
    """True when a ResourceClaim asks NVIDIA's driver for a GPU or a MIG device."""
    return bool(claim_device_classes(claim) & {GPU_CLASS, MIG_CLASS})


def claim_allocations(claims):
    """{node name: allocated devices of the driver} from ResourceClaims (status.allocation; the node is the
    device pool's name, which the driver's kubelet plugin sets to the node name)."""
    out = {}
    for claim in claims or []:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or []:
            if result.get("driver") == DRIVER and result.get("pool"):
                out[result["pool"]] = out.get(result["pool"], 0) + 1
    return out
