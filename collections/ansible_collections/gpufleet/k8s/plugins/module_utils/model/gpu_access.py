# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""How a pod gets a GPU, per platform and add-on mode, and how GPU sharing reaches the node.

Three things must agree for a pod that asks for ``nvidia.com/gpu`` to see a device:

1. the device plugin advertises the resource the pod asks for (sharing mode, MIG layout),
2. something partitions MIG GPUs into the layout the plugin reports (GPU Operator MIG manager
   reading the node label ``nvidia.com/mig.config``, GKE's ``gke-gpu-partition-size``, or the
   user on the host),
3. the container runtime that starts the pod injects the devices: the nvidia runtime as
   containerd's default, ``runtimeClassName: nvidia``, CDI, or the platform itself (GKE).

``access(platform, addons_mode, extra)`` answers 3 for one inventory; ``mig_config_label``,
``gke_sharing_selector`` answer 2 and the GKE half of 1. Placement, the pool labels, the GPU
Operator values and preflight all call these, so they cannot disagree.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.mig import MIG_PROFILES

MIG_CONFIG_LABEL = "nvidia.com/mig.config"
GKE_SHARING_STRATEGY = "cloud.google.com/gke-gpu-sharing-strategy"
GKE_MAX_SHARED_CLIENTS = "cloud.google.com/gke-max-shared-clients-per-gpu"
GKE_PARTITION_SIZE = "cloud.google.com/gke-gpu-partition-size"
GKE_STRATEGIES = {"time-slicing": "time-sharing", "mps": "mps"}
GKE_PLATFORMS = ("gke", "gke-autopilot")
# GKE's range of shared clients per GPU (node label gke-max-shared-clients-per-gpu, node pool
# maxSharedClientsPerGpu, ComputeClass gpuSharing.maxSharedClientsPerGPU)
GKE_SHARED_CLIENTS_RANGE = (2, 48)
RUNTIME_CLASS = "nvidia"

# How pods get devices. ``how`` is one of: runtime-default (nvidia is containerd's / CRI-O's
# default runtime), runtime-class (pods need runtimeClassName: nvidia), cdi (the device plugin
# hands out CDI devices the runtime resolves), platform (GKE: Google's device plugin mounts the
# driver and devices itself).
_ACCESS = {
    # (platform, mode) -> (how, who sets it up)
    ("eks", "standalone"): ("runtime-default", "the EKS accelerated AL2023 AMI (nvidia is containerd's default runtime)"),
    ("eks", "operator"): ("runtime-default", "the EKS accelerated AL2023 AMI (host toolkit; the operator leaves it)"),
    ("eks", "none"): ("runtime-default", "the EKS accelerated AL2023 AMI"),
    ("gke", "standalone"): ("platform", "GKE: Google's device plugin mounts the driver and devices"),
    ("gke", "none"): ("platform", "GKE: Google's device plugin mounts the driver and devices"),
    ("gke", "operator"): ("cdi", "GPU Operator GKE preset: cdi.enabled and cdi.default"),
    ("gke-autopilot", "standalone"): ("platform", "GKE Autopilot: Google's device plugin"),
    ("gke-autopilot", "none"): ("platform", "GKE Autopilot: Google's device plugin"),
    ("openshift", "operator"): ("runtime-default", "GPU Operator on CRI-O (the toolkit's OCI hook / CDI for every container)"),
    ("openshift", "standalone"): ("runtime-default", "gpufleet's node stage: CRI-O drop-in with default_runtime = nvidia"),
    ("openshift", "none"): ("runtime-default", "your CRI-O configuration"),
}
SELF_MANAGED = ("kubeadm", "k3s", "rke2", "k0s", "microk8s")
# Where gpufleet's node stage makes nvidia the default runtime, per distribution.
NODE_STAGE_DEFAULT = {
    "kubeadm": "containerd drop-in with default_runtime_name = \"nvidia\"",
    "k3s": "default-runtime: nvidia in /etc/rancher/k3s/config.yaml.d (or the containerd template)",
    "rke2": "default-runtime: nvidia in /etc/rancher/rke2/config.yaml.d (or the containerd template)",
    "k0s": "/etc/k0s/containerd.d/nvidia.toml with default_runtime_name = \"nvidia\"",
    "microk8s": "containerd-template.toml with default_runtime_name = \"nvidia\"",
}


def _bool(value, default):
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return str(value).lower() in ("true", "yes", "1")


def operator_runs_toolkit(platform, extra):
    """Whether the GPU Operator (not the host) configures the container runtime."""
    extra = extra or {}
    if platform in ("openshift", "gke"):
        return True
    host = extra.get("gpu_operator_host_toolkit", "auto")
    forced = extra.get("gpu_operator_toolkit_enabled", "auto")
    if forced not in ("auto", None):
        return _bool(forced, False)
    return host not in ("auto", None) and not _bool(host, True)


def access(platform, addons_mode, extra=None):
    """``{"how", "by", "runtime_class"}`` for GPU pods of this inventory (see module docstring).

    ``runtime_class`` is ``"nvidia"`` when pods must name the runtime class, else None."""
    extra = extra or {}
    if platform in SELF_MANAGED:
        if addons_mode == "operator" and operator_runs_toolkit(platform, extra):
            how, by = "runtime-default", "the GPU Operator's toolkit (CONTAINERD_SET_AS_DEFAULT=true)"
        elif _bool(extra.get("nvidia_container_toolkit_set_as_default"), True):
            how, by = "runtime-default", "gpufleet's node stage: " + NODE_STAGE_DEFAULT[platform]
        else:
            how, by = "runtime-class", "nvidia_container_toolkit_set_as_default: false (runtimeClassName: nvidia)"
    else:
        how, by = _ACCESS.get((platform, addons_mode), ("runtime-default", "the platform"))
    return {"how": how, "by": by, "runtime_class": RUNTIME_CLASS if how == "runtime-class" else None}


def mig_config_label(pool):
    """``{"nvidia.com/mig.config": "all-<profile>"}`` for a MIG pool with a profile, else {}.

    The GPU Operator's MIG manager applies that named layout (from its default mig-parted
    config) to every GPU of the node; GFD and the device plugin then report it. A pool with
    ``mig_preconfigured: true`` gets no label: its layout is the user's, nothing may change it."""
    sharing = pool.get("sharing") or {}
    if sharing.get("mode") == "mig" and sharing.get("mig_profile") and not sharing.get("mig_preconfigured") \
            and not sharing.get("mig_manager"):
        return {MIG_CONFIG_LABEL: "all-%s" % sharing["mig_profile"]}
    return {}


def gke_sharing_selector(pool):
    """GKE's own node labels for a shared pool: what a pod selects so that node auto-provisioning
    (or a ComputeClass) creates, and the scheduler picks, a node pool shared that way."""
    sharing = pool.get("sharing") or {}
    mode = sharing.get("mode")
    if pool.get("allocation") == "dra":
        return {}  # the DRA driver shares (GpuConfig), not GKE's device plugin
    if mode in GKE_STRATEGIES:
        return {GKE_SHARING_STRATEGY: GKE_STRATEGIES[mode], GKE_MAX_SHARED_CLIENTS: str(int(sharing["replicas"]))}
    if mode == "mig" and sharing.get("mig_profile"):
        return {GKE_PARTITION_SIZE: sharing["mig_profile"]}
    return {}


def check_sharing(plan, extra, problems):
    """Preflight: MIG and sharing settings that render fine but give pods no (or the wrong) GPU.

    Also records ``plan["gpu_access"]`` (``access(...)``) for the stages that place pods."""
    platform, mode = plan.get("platform"), plan.get("addons_mode")
    plan["gpu_access"] = access(platform, mode, extra)
    for i, pool in enumerate(plan.get("pools") or []):
        sharing = pool.get("sharing") or {}
        var = "gpufleet_gpu_pools[%d].sharing" % i
        profiles = sorted(MIG_PROFILES.get(pool.get("gpu_type"), {}))
        if sharing.get("mode") == "mig" and sharing.get("mig_manager") == "gpufleet":
            _check_gpufleet_mig(var, platform, mode, sharing, profiles, problems)
            continue
        if platform in GKE_PLATFORMS:
            if sharing.get("mode") == "mig":
                if not sharing.get("mig_profile"):
                    problems.error(var + ".mig_profile", "is required for MIG on %s: GKE partitions the GPUs by "
                                   "%s=<profile>; use %s" % (platform, GKE_PARTITION_SIZE, one_of(profiles)))
                if sharing.get("mig_strategy") == "mixed":
                    problems.error(var + ".mig_strategy", "'mixed' is not possible on %s: GKE partitions every GPU "
                                   "of a node alike and advertises each partition as nvidia.com/gpu; use one of: "
                                   "single" % platform)
            replicas = sharing.get("replicas")
            low, high = GKE_SHARED_CLIENTS_RANGE
            if sharing.get("mode") in GKE_STRATEGIES and isinstance(replicas, int) and not isinstance(replicas, bool) \
                    and not low <= replicas <= high:
                problems.error(var + ".replicas", "%d is outside GKE's range of %s clients per GPU "
                               "(gke-max-shared-clients-per-gpu, ComputeClass maxSharedClientsPerGPU); use an "
                               "integer from %d to %d" % (replicas, sharing["mode"], low, high))
            if sharing.get("mode") in GKE_STRATEGIES and sharing.get("rename_by_default"):
                problems.error(var + ".rename_by_default", "true is not possible on %s: GKE advertises shared GPUs "
                               "as nvidia.com/gpu; use one of: false" % platform)
            if sharing.get("mode") in GKE_STRATEGIES and sharing.get("fail_requests_greater_than_one") is False:
                problems.warn(var, "GKE always refuses requests of more than one shared nvidia.com/gpu")
            if mode == "operator" and sharing.get("mode", "none") != "none":
                problems.warn(var, "GKE shares and partitions GPUs through Google's device plugin, which "
                              "gpufleet_addons_mode=operator replaces: placement still asks GKE for a %s node pool, "
                              "but the operator's device plugin on it has no per-pool config (GKE nodes carry no "
                              "nvidia.com/device-plugin.config label); use gpufleet_addons_mode: standalone for "
                              "GPU sharing on GKE" % sharing["mode"])
            continue
        if sharing.get("mode") != "mig" or sharing.get("mig_preconfigured") or mode == "none":
            continue
        # a run that removes the add-ons (the command a mode switch gives) places no MIG pods
        if mode == "standalone" and extra.get("nvidia_device_plugin_state") == "absent":
            continue
        if mode == "operator" and extra.get("gpu_operator_state") == "absent":
            continue
        if mode == "standalone":
            problems.error(var + ".mode", "MIG with gpufleet_addons_mode=standalone: nothing partitions the GPUs "
                           "(gpufleet has no host-side MIG partitioning; the MIG manager is part of the GPU "
                           "Operator), so the nodes would advertise whole GPUs or nothing and MIG pods stay "
                           "Pending; use one of: gpufleet_addons_mode: operator (the MIG manager applies "
                           "nvidia.com/mig.config=all-<profile>), sharing.mig_manager: gpufleet (the node "
                           "stage partitions the GPUs, role gpu_mig), sharing.mig_preconfigured: true (you "
                           "partitioned the GPUs on the hosts yourself)")
        elif mode == "operator" and not sharing.get("mig_profile"):
            problems.error(var + ".mig_profile", "is required for MIG with gpufleet_addons_mode=operator: the MIG "
                           "manager partitions by the node label %s=all-<profile> (without it the GPUs stay "
                           "all-disabled); use %s" % (MIG_CONFIG_LABEL, one_of(profiles)))


def _check_gpufleet_mig(var, platform, mode, sharing, profiles, problems):
    """sharing.mig_manager gpufleet: the node stage (role gpu_mig) partitions the hosts' GPUs, which it
    reaches only on self-managed platforms and in standalone mode (the operator's MIG manager would undo it)."""
    if platform not in SELF_MANAGED:
        problems.error(var + ".mig_manager", "gpufleet partitions MIG only on the hosts of self-managed clusters "
                       "(gpufleet_platform %s); on %s use one of: gpufleet_addons_mode: operator, "
                       "sharing.mig_preconfigured: true, or drop mig_manager" % (", ".join(SELF_MANAGED), platform))
    elif mode == "operator":
        problems.error(var + ".mig_manager", "gpufleet with gpufleet_addons_mode=operator: the GPU Operator's MIG "
                       "manager partitions the GPUs (nvidia.com/mig.config) and would undo gpufleet's layout; use "
                       "one of: gpufleet_addons_mode: standalone, or drop mig_manager")
    if not sharing.get("mig_profile"):
        problems.error(var + ".mig_profile", "is required with mig_manager gpufleet: the node stage partitions every "
                       "GPU of the pool into it; use %s" % (one_of(profiles) if profiles else "a MIG profile"))


ROW_ORDER = (
    ("eks", "standalone"), ("eks", "operator"), ("gke", "standalone"), ("gke", "operator"),
    ("gke-autopilot", "standalone"), ("kubeadm", "standalone"), ("kubeadm", "operator"),
    ("kubeadm", "operator-toolkit"), ("k3s", "standalone"), ("rke2", "standalone"), ("k0s", "standalone"),
    ("microk8s", "standalone"), ("openshift", "operator"),
)


def table_markdown():
    """The table in docs/reference/tables.md: per platform and mode, what makes a pod get a GPU (generated, tested)."""
    rows = ["| platform | mode | how a GPU pod gets its devices | set up by | the pod needs |", "|---|---|---|---|---|"]
    for platform, mode in ROW_ORDER:
        extra = {}
        label = mode
        if mode == "operator-toolkit":
            mode, extra = "operator", {"gpu_operator_host_toolkit": False}
            label = "operator, `gpu_operator_host_toolkit: false`"
        elif platform == "gke-autopilot":
            label = "standalone / none"
        a = access(platform, mode, extra)
        need = "`runtimeClassName: nvidia`" if a["runtime_class"] else "only the resource limit"
        rows.append("| %s | %s | %s | %s | %s |" % (platform, label, a["how"], a["by"], need))
    a = access("kubeadm", "standalone", {"nvidia_container_toolkit_set_as_default": False})
    rows.append("| self-managed | standalone, `nvidia_container_toolkit_set_as_default: false` | %s | %s | "
                "`runtimeClassName: nvidia` (placement and the example Jobs add it) |" % (a["how"], a["by"]))
    return "\n".join(rows)
