# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""NVIDIA's DRA Driver for GPUs (Helm chart ``dra-driver-nvidia-gpu``, ``nvidia-dra-driver-gpu`` before v0.4.0) for the pools with
``allocation: dra`` (dra.py): the cluster-wide ``nvidia_dra_driver_*`` settings, the preflight checks of
what DRA needs of the cluster (Kubernetes >= 1.34, an add-on mode that installs the driver, the platform's
way), and the release's Helm values (driver root, image, kubelet plugin on the DRA pools' nodes only)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import addons, gpu_operator
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import yaml
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_TYPES, MULTI_NODE_NVLINK
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.dra import ALLOCATION_LABEL, MIN_KUBERNETES, compute_domain, \
    dra_pools, feature_gates, is_dra, parse_version
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import CHARTS, image_ref, images, with_prefix

SETTINGS_PREFIX = "nvidia_dra_driver_"
VERSION_VAR = "gpufleet_kubernetes_version"
EKS_VERSION_VAR = "gpu_pools_eks_kubernetes_version"
CHART_VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$")
# GKE installs the driver under /home/kubernetes/bin/nvidia (GKE's DRA guide: the chart with that root).
DRIVER_ROOTS = {"gke": "/home/kubernetes/bin/nvidia"}
# Multi-node NVLink (what a ComputeDomain's IMEX channels span) exists only on Hopper (GH200 NVL32) and
# Blackwell (GB200/GB300 NVL72) class systems.
COMPUTE_DOMAIN_ARCHS = ("hopper", "blackwell")
# where the GPU Operator's driver container puts the driver (NVIDIA's DRA driver docs: nvidiaDriverRoot)
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
# The chart's name before v0.4.0. The chart names its objects (kubelet plugin DaemonSet, controller Deployment,
# ServiceAccounts, RBAC) and their selector labels after nameOverride, else after the chart's own name, which
# became dra-driver-nvidia-gpu with v0.4.0: without the override, upgrading a release gpufleet installed from
# v25.12.0 would create a second set of objects beside the old ones (the project's upgrade guide asks for this
# override on the first upgrade). gpufleet always sets it, so the names never change and a fresh install gets
# the same names as an upgraded one.
NAME_OVERRIDE = "nvidia-dra-driver-gpu"
# The chart's default kubelet plugin toleration since v0.4.1 (GPU nodes are often tainted by their platform,
# GKE's for one); gpufleet's list replaces the chart's, so it keeps that entry.
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def settings_defaults():
    return {name[len(SETTINGS_PREFIX):]: value
            for name, value in role_specs.defaults("nvidia_dra_driver", prefix=SETTINGS_PREFIX).items()}


def settings(extra):
    """The nvidia_dra_driver_* inputs (without the prefix) over the role's defaults."""
    out = settings_defaults()
    for key, value in (extra or {}).items():
        if isinstance(key, str) and key.startswith(SETTINGS_PREFIX) and value is not None:
            out[key[len(SETTINGS_PREFIX):]] = value
    return out


def _cluster_version(platform, extra):
    """(variable, value) the Kubernetes version DRA is judged by. On EKS the nodes run the version of their AMI
    (gpu_pools_eks_kubernetes_version), whose kubelet must serve DRA too: the lower of that and the control
    plane's gpufleet_kubernetes_version counts (issue 39: a control plane newer than the node image passed)."""
    value = (extra or {}).get(VERSION_VAR)
    if platform == "eks":
        node = (extra or {}).get(EKS_VERSION_VAR, role_specs.defaults(
            "gpu_pools", prefix=EKS_VERSION_VAR).get(EKS_VERSION_VAR))
        if value in (None, ""):
            return EKS_VERSION_VAR, node
        if node not in (None, "") and parse_version(node) is not None and parse_version(value) is not None \
                and parse_version(node) < parse_version(value):
            return EKS_VERSION_VAR, node
    return VERSION_VAR, value


def check(params, plan, problems):
    """Preflight: the cluster-wide DRA settings, and what a DRA pool needs of the cluster."""
    extra = params.get("extra") or {}
    pools = [p for p in plan.get("pools") or [] if isinstance(p, dict)]
    wanted = dra_pools(pools)
    s = settings(extra)
    for key in ("gpus_enabled", "compute_domains_enabled"):
        if not isinstance(s.get(key), bool):
            problems.error(SETTINGS_PREFIX + key, "%r is not a boolean; use one of: true, false" % (s.get(key),))
    version = s.get("chart_version")
    if not isinstance(version, str) or (version and not CHART_VERSION.match(version)):
        problems.error(SETTINGS_PREFIX + "chart_version", "%r is not allowed; use a chart version such as %s "
                       "(no v prefix), or empty for the pinned one" % (version, CHARTS["dra_driver"]["version"]))
    if s.get("state") not in ("present", "absent"):
        problems.error(SETTINGS_PREFIX + "state", "%r is not allowed; use one of: present, absent" % (s.get("state"),))
    if not wanted:
        return
    _check_compute_domains(pools, s, problems)
    platform = plan.get("platform")
    if platform == "gke-autopilot":
        problems.error("gpufleet_gpu_pools", "pool(s) %s use allocation dra, which GKE Autopilot does not offer for "
                       "GPUs through a driver gpufleet installs; use allocation: device-plugin, or gpufleet_platform "
                       "gke" % ", ".join(p["name"] for p in wanted))
    if plan.get("addons_mode") == "none":
        problems.error("gpufleet_addons_mode", "none installs no DRA driver, but pool(s) %s use allocation dra; use "
                       "one of: standalone, operator (or allocation: device-plugin)"
                       % ", ".join(p["name"] for p in wanted))
    if s.get("gpus_enabled") is False:
        problems.error(SETTINGS_PREFIX + "gpus_enabled", "false publishes no GPU, but pool(s) %s use allocation dra "
                       "and claim GPUs; use true" % ", ".join(p["name"] for p in wanted))
    names = ", ".join(p["name"] for p in wanted)
    if platform == "gke":
        for i, pool in enumerate(pools):
            if is_dra(pool) and pool.get("compute_class"):
                problems.error("%s[%d].compute_class" % ("gpufleet_gpu_pools", i), "true asks GKE to create the "
                               "pool's nodes, but GKE's node auto-creation does not support DRA; use one of: false "
                               "(create the node pool yourself), or allocation: device-plugin")
        problems.warn("gpufleet_gpu_pools", "GKE: create the node pool(s) of %s yourself, with --accelerator "
                      "...,gpu-driver-version=disabled (then install the driver with Google's installer, under "
                      "/home/kubernetes/bin/nvidia), the node labels gke-no-default-nvidia-gpu-device-plugin=true, "
                      "%s=dra and gpufleet.io/pool=<pool>, and the node taint %s=dra:NoSchedule (keeps plain "
                      "nvidia.com/gpu pods off); GKE's own time-sharing, MPS and MIG node pool settings do not apply "
                      "to DRA pools" % (names, ALLOCATION_LABEL, ALLOCATION_LABEL))
    if platform == "eks":
        problems.warn("gpufleet_gpu_pools", "EKS: Karpenter does not yet simulate DRA devices (upstream tracking issue "
                      "kubernetes-sigs/karpenter#3228), so a pending pod's claim may not make it launch a node for "
                      "%s; keep min_nodes at the GPUs you need, or run these pools as managed node groups (AMI with "
                      "the NVIDIA driver, node labels %s=dra and gpufleet.io/pool=<pool>)" % (names, ALLOCATION_LABEL))
    var, value = _cluster_version(platform, extra)
    parsed = parse_version(value) if value not in (None, "") else None
    if value in (None, ""):
        problems.error(var, "is not set, and pool(s) %s use allocation dra, which needs Kubernetes >= %d.%d "
                       "(resource.k8s.io/v1); set it to the cluster's version, e.g. \"1.34\""
                       % ((", ".join(p["name"] for p in wanted),) + MIN_KUBERNETES))
    elif parsed is None:
        problems.error(var, "%r is not a Kubernetes version; use e.g. \"1.34\"" % (value,))
    elif parsed < MIN_KUBERNETES:
        problems.error(var, "%s is below %d.%d: pool(s) %s use allocation dra, which needs resource.k8s.io/v1 "
                       "(GA from Kubernetes 1.34); use \"1.34\" or later, or allocation: device-plugin"
                       % ((value,) + MIN_KUBERNETES + (", ".join(p["name"] for p in wanted),)))


def _check_compute_domains(pools, s, problems):
    """A pool's dra.compute_domain needs the driver's ComputeDomain part and a GPU that can be in a multi-node
    NVLink domain; for most of the catalog's GPU types a host may or may not be in an NVL32/NVL72 system: warn,
    except for the types sold only in such domains (gpu_catalog MULTI_NODE_NVLINK: gb200)."""
    archs = [name for name in sorted(GPU_TYPES) if GPU_TYPES[name]["arch"] in COMPUTE_DOMAIN_ARCHS]
    with_domain, sure = [], []
    for i, pool in enumerate(pools):
        if compute_domain(pool) is None:
            continue
        var = "gpufleet_gpu_pools[%d].dra.compute_domain" % i
        with_domain.append(pool["name"])
        if pool.get("gpu_type") in MULTI_NODE_NVLINK:
            sure.append(pool["name"])
        if s.get("compute_domains_enabled") is not True:
            problems.error(var, "pool %s asks for a ComputeDomain, but %scompute_domains_enabled is false, so the "
                           "driver's ComputeDomain part (its CRD and controller) is not installed; set it to true, or "
                           "drop dra.compute_domain" % (pool["name"], SETTINGS_PREFIX))
        facts = GPU_TYPES.get(pool.get("gpu_type")) or {}
        if facts.get("arch") not in COMPUTE_DOMAIN_ARCHS:
            problems.error(var, "pool %s has gpu_type %s (%s), which has no multi-node NVLink, so a ComputeDomain's "
                           "IMEX channels cannot span its nodes; use it with one of: %s, or drop dra.compute_domain"
                           % (pool["name"], pool.get("gpu_type"), facts.get("arch", "unknown"), ", ".join(archs)))
        if (pool.get("sharing") or {}).get("mode") == "mig":
            # nvidia-smi mig -lgip lists every GPU instance profile with P2P "No": no NVLink inside MIG
            problems.error(var, "pool %s hands out MIG devices (sharing.mode mig), which have no NVLink peer access, so "
                           "they cannot join a ComputeDomain; use sharing.mode none, time-slicing or mps, or drop "
                           "dra.compute_domain" % pool["name"])
    # a GPU type sold only inside multi-node NVLink domains (gb200: NVL72 racks) needs no warning
    unsure = [name for name in with_domain if name not in sure]
    if unsure:
        problems.warn("gpufleet_gpu_pools", "pool(s) %s render a ComputeDomain: its IMEX channels exist only on hosts "
                      "in a multi-node NVLink domain (GB200/GB300 NVL72, GH200 NVL32 class) with nvidia-imex installed; "
                      "elsewhere the driver publishes no channel and a pod claiming one stays pending"
                      % ", ".join(unsure))


# ------------------------------------------------------------------------------------------ helm values
def driver_root(plan, s, extra=None):
    """nvidiaDriverRoot: the input, else where the driver is: the GPU Operator's driver container
    (/run/nvidia/driver) in operator mode when the operator installs the driver, GKE's install directory,
    or the host (/)."""
    root = s.get("driver_root") or "auto"
    if root != "auto":
        return root
    if plan.get("addons_mode") == "operator":
        op = addons.settings(plan, extra or {})
        host_driver = gpu_operator.host_components(plan, op)[0]
        if addons.truthy(op["gpu_operator_driver_enabled"], not host_driver):
            return OPERATOR_DRIVER_ROOT
    return DRIVER_ROOTS.get(plan.get("platform"), "/")


def chart(s, chart_path=""):
    out = dict(CHARTS["dra_driver"])
    if s.get("chart_version"):
        out["version"] = s["chart_version"]
    if s.get("chart_repo_url"):
        out["repo_url"] = s["chart_repo_url"]
    out["path"] = chart_path or s.get("chart_path") or ""
    return out


def tolerations(pools):
    out = [dict(GPU_TOLERATION)]
    for pool in dra_pools(pools):
        for taint in pool.get("taints") or []:
            item = {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}
            if item not in out:
                out.append(item)
    return out + addons.arch_tolerations(dra_pools(pools))


def driver_values(plan, extra):
    """Helm values of the DRA driver release for ``plan`` (pools, platform) and the inventory
    values ``extra`` (nvidia_dra_driver_*, gpufleet_registry_prefix, gpufleet_image_overrides,
    gpufleet_image_pull_secrets)."""
    s = settings(extra)
    pools = plan.get("pools") or []
    img = images((extra or {}).get("gpufleet_image_overrides"))["dra_driver"]
    tag = img["tag"] + ("@" + img["digest"] if img.get("digest") else "")
    gpus = bool(s.get("gpus_enabled"))
    values = {
        # object names of the pre-v0.4.0 chart (NAME_OVERRIDE)
        "nameOverride": NAME_OVERRIDE,
        "nvidiaDriverRoot": driver_root(plan, s, extra),
        # the chart refuses resources.gpus.enabled without this acknowledgement (GPU part: tech preview)
        "gpuResourcesEnabledOverride": gpus,
        "resources": {"gpus": {"enabled": gpus},
                      "computeDomains": {"enabled": bool(s.get("compute_domains_enabled"))}},
        "image": {"repository": with_prefix(img["repository"], (extra or {}).get("gpufleet_registry_prefix") or ""),
                  "tag": tag},
        "kubeletPlugin": {
            # exactly the DRA pools' nodes (the chart's default affinity asks for NFD/GFD labels, which
            # a self-managed node may not have yet): null removes it
            "nodeSelector": {ALLOCATION_LABEL: "dra"},
            "affinity": None,
            "tolerations": tolerations(pools),
        },
    }
    gates = feature_gates(pools)
    if gates:
        # the chart writes these into FEATURE_GATES of its controller and kubelet plugins (and renders the MPS
        # control daemon's RBAC only with MPSSupport): exactly the gates the DRA pools' sharing needs
        values["featureGates"] = gates
    secrets = (extra or {}).get("gpufleet_image_pull_secrets") or []
    if secrets:
        values["imagePullSecrets"] = [{"name": str(n)} for n in secrets]
    return _merge(values, s.get("values_overrides") or {})


def _merge(base, over):
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def image_reference(extra):
    return image_ref("dra_driver", (extra or {}).get("gpufleet_registry_prefix") or "",
                     (extra or {}).get("gpufleet_image_overrides"))


# ------------------------------------------------------------------------------------------ CRDs
CRD_KIND = ("apiextensions.k8s.io", "CustomResourceDefinition")


def chart_crds(manifest, chart_label="the DRA driver chart"):
    """The CustomResourceDefinitions in ``manifest``, the output of ``helm show crds`` (or ``helm template
    --include-crds``) of the chart, in their order there. Helm creates a chart's CRDs on the first install only and never updates them,
    so the role applies these before every install or upgrade: a cluster that ran an older release gets the
    schema the new controller and kubelet plugins expect (the project's upgrade guide asks for the same
    by hand). A chart without CRDs, or output that is not YAML, is an error (the pinned chart has two)."""
    if not isinstance(manifest, str):
        raise GpufleetError("the rendered %s is %s, not text" % (chart_label, type(manifest).__name__))
    try:
        docs = list(yaml.safe_load_all(manifest))
    except yaml.YAMLError as exc:
        raise GpufleetError("the rendered %s is not YAML: %s" % (chart_label, str(exc).splitlines()[0]))
    crds = []
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        group = str(doc.get("apiVersion") or "").split("/", maxsplit=1)[0]
        if (group, doc.get("kind")) == CRD_KIND:
            crds.append(doc)
    if not crds:
        raise GpufleetError("the rendered %s holds no CustomResourceDefinition; the chart installs its "
                            "ComputeDomain CRDs from crds/ (is it the right chart?)" % chart_label)
    return crds
