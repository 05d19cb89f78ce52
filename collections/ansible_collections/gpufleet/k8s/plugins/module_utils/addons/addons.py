# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Inputs shared by the add-on roles (device plugin, dcgm-exporter, GPU Operator).

``defaults()`` gives the default of every add-on variable, read from the roles'
meta/argument_specs.yml (which a unit test keeps equal to their ``defaults/main.yml``); preflight,
which runs before any role's defaults are visible, fills them in here. ``settings(plan, extra)``
resolves the ``auto`` values from the platform and the pools, so the roles and preflight decide
the same way.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import pool_archs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.mirror_urls import apply_to_addons

# The roles whose inputs the add-ons read (their defaults come from their argument specs).
ADDON_ROLES = ("nvidia_device_plugin", "dcgm_exporter", "gpu_operator")
SHARED_INPUTS = ("gpufleet_registry_prefix", "gpufleet_image_overrides", "gpufleet_image_pull_secrets")


def defaults():
    """{variable: default} of every add-on input, from the roles' meta/argument_specs.yml."""
    out = role_specs.defaults(*ADDON_ROLES)
    shared = role_specs.defaults("gpufleet")
    out.update((name, shared[name]) for name in SHARED_INPUTS)
    return out


GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
POOL_LABEL = "gpufleet.io/pool"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpufleet", "app.kubernetes.io/part-of": "gpufleet"}
# Platforms whose GPU nodes run containers with the nvidia runtime as containerd's default
# (EKS accelerated AMIs) or need no runtime at all (GKE injects the driver itself).
NO_RUNTIME_CLASS_PLATFORMS = ("eks", "gke", "gke-autopilot")


BOOL_WORDS = {"true": True, "yes": True, "false": False, "no": False}


def inputs(extra):
    """``extra`` (inventory values) with every add-on default filled in.

    Boolean and ``auto|true|false`` inputs also accept the strings true/false/yes/no (what
    ``-e name=value`` on the command line gives)."""
    defaults_ = defaults()
    out = copy.deepcopy(defaults_)
    for key, value in (extra or {}).items():
        if key in defaults_ and value is not None:
            default = defaults_[key]
            if (isinstance(default, bool) or default == "auto") and isinstance(value, str) \
                    and value.lower() in BOOL_WORDS:
                value = BOOL_WORDS[value.lower()]
            out[key] = copy.deepcopy(value)
    return out


def is_auto(value):
    return isinstance(value, str) and value == "auto"


def truthy(value, auto):
    """Resolve an ``auto|true|false`` input."""
    if is_auto(value):
        return bool(auto)
    return bool(value) if isinstance(value, bool) else str(value).lower() in ("true", "yes", "1")


def pools_use(plan, mode):
    """Whether a device-plugin pool shares by ``mode`` (a DRA pool's sharing is the DRA driver's)."""
    return any((p.get("sharing") or {}).get("mode") == mode and p.get("allocation") != "dra"
               for p in plan.get("pools") or [])


def settings(plan, extra):
    """Resolved add-on settings: every ``auto`` decided from the platform, mode and pools."""
    inp = inputs(extra)
    platform = plan.get("platform")
    mode = plan.get("addons_mode")
    standalone = mode == "standalone"
    s = dict(inp)
    s["device_plugin_enabled"] = truthy(inp["nvidia_device_plugin_enabled"],
                                        standalone and platform not in ("gke", "gke-autopilot"))
    s["device_plugin_runtime_class"] = truthy(inp["nvidia_device_plugin_runtime_class"],
                                              platform not in NO_RUNTIME_CLASS_PLATFORMS)
    s["dcgm_exporter_enabled"] = truthy(inp["dcgm_exporter_enabled"], standalone and platform not in ("gke", "gke-autopilot"))
    s["dcgm_exporter_runtime_class"] = truthy(inp["dcgm_exporter_runtime_class"],
                                              platform not in NO_RUNTIME_CLASS_PLATFORMS)
    s["any_mps"] = pools_use(plan, "mps")
    s["any_mig"] = pools_use(plan, "mig")
    return apply_to_addons(s, platform, extra)


def pod_security_context():
    """Pod-level securityContext of every node agent: the container runtime's default seccomp
    profile (a privileged container, such as the MPS control daemon, runs unconfined regardless)."""
    return {"seccompProfile": {"type": "RuntimeDefault"}}


def labels(name, component=None):
    out = {"app.kubernetes.io/name": name}
    if component:
        out["app.kubernetes.io/component"] = component
    out.update(MANAGED_BY)
    return out


# GPU health remediation's taint (module_utils/fleet/remediation.py): the GPU node agents stay on a node
# under remediation - the device plugin and dcgm-exporter are what says when it is healthy again, and a
# device plugin restarted after a GPU reset must be scheduled back onto the tainted node.
UNHEALTHY_TOLERATION = {"key": "gpufleet.io/gpu-unhealthy", "operator": "Exists", "effect": "NoSchedule"}


def arch_tolerations(pools):
    """For pools on non-amd64 hosts (gb200: arm64): the ``kubernetes.io/arch=<arch>:NoSchedule`` taint GKE puts
    on Arm nodes by default (GKE API TaintConfig.ArchitectureTaintBehavior); nothing for amd64-only pools."""
    return [{"key": "kubernetes.io/arch", "operator": "Equal", "value": arch, "effect": "NoSchedule"}
            for arch in pool_archs(pools)]


def gpu_tolerations(plan, extra_tolerations=()):
    """The GPU node agents' tolerations: ``nvidia.com/gpu``, CriticalAddonsOnly, GPU health remediation's
    taint, plus every pool taint (operator Exists, so any value matches) and the Arm node taint where a pool's
    GPU type is on arm64 hosts."""
    out = [dict(GPU_TOLERATION), {"key": "CriticalAddonsOnly", "operator": "Exists"}, dict(UNHEALTHY_TOLERATION)]
    seen = {(t["key"], t.get("effect")) for t in out}
    for pool in plan.get("pools") or []:
        for taint in pool.get("taints") or []:
            key = (taint["key"], taint.get("effect"))
            if key not in seen:
                seen.add(key)
                out.append({"key": taint["key"], "operator": "Exists", "effect": taint["effect"]})
    out.extend(arch_tolerations(plan.get("pools")))
    for tol in extra_tolerations or []:
        if tol not in out:
            out.append(dict(tol))
    return out


def gpu_node_affinity(plan):
    """Node affinity to GPU nodes: any one label that marks an NVIDIA GPU node.

    Terms are ORed: NFD's PCI vendor label, GFD's ``nvidia.com/gpu.present``, gpufleet's pool
    label (set on self-managed nodes by provisioning, so the first GFD run needs nothing else) and,
    on EKS, Karpenter's GPU manufacturer label.
    """
    terms = [
        {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-10de.present", "operator": "In", "values": ["true"]}]},
        {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]},
        {"matchExpressions": [{"key": POOL_LABEL, "operator": "Exists"}]},
    ]
    if plan.get("platform") == "eks":
        terms.append({"matchExpressions": [{"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "In",
                                            "values": ["nvidia"]}]})
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def namespace(name, pod_security="privileged"):
    lab = {"pod-security.kubernetes.io/enforce": pod_security,
           "pod-security.kubernetes.io/audit": pod_security,
           "pod-security.kubernetes.io/warn": pod_security}
    lab.update(MANAGED_BY)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": lab}}


def runtime_class():
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": "nvidia", "labels": dict(MANAGED_BY)}, "handler": "nvidia"}


def host_path(name, path, kind=None):
    hp = {"path": path}
    if kind:
        hp["type"] = kind
    return {"name": name, "hostPath": hp}


def unshare(data):
    """A copy without shared sub-objects, so YAML dumps carry no anchors/aliases (&id001)."""
    return json.loads(json.dumps(data))


def with_pull_secrets(objs, secrets):
    """Add ``imagePullSecrets`` (names of existing Secrets in each namespace) to every pod template."""
    if secrets:
        for obj in objs:
            if obj.get("kind") in ("DaemonSet", "Deployment"):
                obj["spec"]["template"]["spec"]["imagePullSecrets"] = [{"name": n} for n in secrets]
    return unshare(objs)
