# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Pool sharing mode -> NVIDIA k8s-device-plugin configuration (config file ``version: v1``).

One named config per pool; nodes select theirs with the ``nvidia.com/device-plugin.config``
label (set on the pool's nodes by provisioning). The config named ``default`` applies to GPU
nodes without the label. ``device_plugin_objects`` builds the standalone deployment: namespace,
RuntimeClass, RBAC for the config-manager, the config ConfigMap, the plugin DaemonSet (with the
config-manager init container and sidecar), the MPS control daemon when a pool uses MPS, and GFD.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

from ansible_collections.gpufleet.k8s.plugins.module_utils.model.dra import dra_pools, device_plugin_exclusion
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import addons as _a
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import image_ref


def pool_plugin_config(pool):
    """The device-plugin config (as a dict) for one normalized pool."""
    sharing = pool.get("sharing") or {"mode": "none"}
    mode = sharing.get("mode", "none")
    config = {"version": "v1", "flags": {"migStrategy": "none", "failOnInitError": True}}
    if mode == "mig":
        config["flags"]["migStrategy"] = sharing.get("mig_strategy", "single")
    elif mode in ("time-slicing", "mps"):
        resource = {"name": "nvidia.com/gpu", "replicas": int(sharing["replicas"])}
        key = "timeSlicing" if mode == "time-slicing" else "mps"
        block = {"resources": [resource]}
        if sharing.get("rename_by_default"):
            block["renameByDefault"] = True
        if sharing.get("fail_requests_greater_than_one"):
            block["failRequestsGreaterThanOne"] = True
        config["sharing"] = {key: block}
    return config


def plugin_configs(pools):
    """{config name: YAML text} for every pool, plus ``default`` (whole GPUs, no sharing); a DRA pool's is the
    one its nodes' GFD reads (dra_gfd_config).

    Pools with the same sharing settings share one text, dumped once (a large fleet has many pools
    and few distinct settings)."""
    texts = {}

    def text(config):
        key = json.dumps(config, sort_keys=True)
        if key not in texts:
            texts[key] = yaml.safe_dump(config, sort_keys=True)
        return texts[key]

    configs = {"default": text(pool_plugin_config({"sharing": {"mode": "none"}}))}
    for pool in pools:
        configs[pool["name"]] = text(dra_gfd_config(pool) if pool.get("allocation") == "dra"
                                     else pool_plugin_config(pool))
    return configs


def dra_gfd_config(pool):
    """The config a DRA pool's nodes name in their nvidia.com/device-plugin.config label. No device plugin runs
    there (dra.py), but GPU Feature Discovery does (standalone and operator), and its config-manager exits when
    the label names a config the ConfigMap lacks, which crash-loops GFD. Only GFD reads it, for its labels: whole
    GPUs without sharing (the DRA driver shares per claim through its GpuConfig, so GFD's replicas and -SHARED
    product labels would be wrong), and for a MIG pool migStrategy mixed, so GFD labels the MIG devices per
    profile (nvidia.com/mig-<profile>.*) whatever layout the node has; single would need every GPU of the node in
    one profile and none would label only the parent GPUs."""
    mig = (pool.get("sharing") or {}).get("mode") == "mig"
    return {"version": "v1", "flags": {"migStrategy": "mixed" if mig else "none", "failOnInitError": True}}


# ---------------------------------------------------------------------------------------------
# Standalone deployment: the objects of role nvidia_device_plugin.
# ---------------------------------------------------------------------------------------------


NAME = "nvidia-device-plugin"
CONFIG_MAP = "nvidia-device-plugin-configs"
SERVICE_ACCOUNT = "nvidia-device-plugin"
CONFIG_LABEL = "nvidia.com/device-plugin.config"
MPS_ROOT = "/run/nvidia/mps"
GFD_FEATURES_DIR = "/etc/kubernetes/node-feature-discovery/features.d"


# Requests and memory limits (no CPU limit: a CFS quota throttles a node agent exactly when the node
# is busy). The config-manager only copies a file on a label change.
AGENT_RESOURCES = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "512Mi"}}
SIDECAR_RESOURCES = {"requests": {"cpu": "5m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}}


def _env(pairs):
    return [{"name": k, "value": v} for k, v in pairs]


def _node_name_env():
    return {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}


def _config_manager(image, oneshot, process_to_signal):
    """The config-manager that copies the config named by the node label into /config."""
    env = [_node_name_env()] + _env([
        ("ONESHOT", "true" if oneshot else "false"),
        ("KUBECONFIG", ""),
        ("NODE_LABEL", CONFIG_LABEL),
        ("CONFIG_FILE_SRCDIR", "/available-configs"),
        ("CONFIG_FILE_DST", "/config/config.yaml"),
        ("DEFAULT_CONFIG", "default"),
        ("FALLBACK_STRATEGIES", "named,single"),
        ("SEND_SIGNAL", "false" if oneshot else "true"),
        ("SIGNAL", "" if oneshot else "1"),
        ("PROCESS_TO_SIGNAL", "" if oneshot else process_to_signal),
        ("NVIDIA_VISIBLE_DEVICES", "void"),
    ])
    return {
        "name": "config-manager-init" if oneshot else "config-manager",
        "image": image,
        "command": ["config-manager"],
        "env": env,
        # It copies a file between two volumes and needs no GPU: a read-only root filesystem, and
        # NVIDIA_VISIBLE_DEVICES=void keeps the nvidia runtime from injecting devices into it.
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                            "readOnlyRootFilesystem": True},
        "volumeMounts": [{"name": "available-configs", "mountPath": "/available-configs"},
                         {"name": "config", "mountPath": "/config"}],
        "resources": copy.deepcopy(SIDECAR_RESOURCES),
    }


def _restricted(mig):
    """No privileges at all, except that MIG device access needs SYS_ADMIN (upstream's chart adds it
    to the runtime's default set; here every other capability is dropped first)."""
    caps = {"drop": ["ALL"]}
    if mig:
        caps["add"] = ["SYS_ADMIN"]
    return {"allowPrivilegeEscalation": False, "capabilities": caps}


def _pod_spec(s, plan, containers, init, volumes, runtime_class, host_pid=False):
    """A node agent's pod spec: its containers share one process namespace (the config-manager sidecar
    signals the agent), or with ``host_pid`` they run in the host's PID namespace instead (the API server
    refuses the two together)."""
    spec = {
        "priorityClassName": "system-node-critical",
        "securityContext": _a.pod_security_context(),
        "serviceAccountName": SERVICE_ACCOUNT,
        "shareProcessNamespace": not host_pid,
        "tolerations": _a.gpu_tolerations(plan, s["nvidia_device_plugin_extra_tolerations"]),
        "affinity": _a.gpu_node_affinity(plan),
        "initContainers": init,
        "containers": containers,
        "volumes": volumes,
    }
    if host_pid:
        spec["hostPID"] = True
    if runtime_class:
        spec["runtimeClassName"] = "nvidia"
    return spec


def _daemonset(name, ns, component, pod_spec):
    sel = {"app.kubernetes.io/name": name}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns, "labels": _a.labels(name, component)},
        "spec": {
            "selector": {"matchLabels": sel},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {"metadata": {"labels": _a.labels(name, component)}, "spec": pod_spec},
        },
    }


def _config_volumes():
    return [{"name": "available-configs", "configMap": {"name": CONFIG_MAP}},
            {"name": "config", "emptyDir": {}}]


def device_plugin_objects(plan, extra):
    """Every object of the standalone device plugin, in apply order (namespace first)."""
    s = _a.settings(plan, extra)
    ns = s["nvidia_device_plugin_namespace"]
    image = image_ref("device_plugin", s["gpufleet_registry_prefix"], s["gpufleet_image_overrides"])
    rc = s["device_plugin_runtime_class"]
    objs = [_a.namespace(ns)]
    if rc:
        objs.append(_a.runtime_class())
    objs.append({"apiVersion": "v1", "kind": "ServiceAccount",
                 "metadata": {"name": SERVICE_ACCOUNT, "namespace": ns, "labels": _a.labels(NAME)}})
    # config-manager reads this node's nvidia.com/device-plugin.config label: read-only on nodes.
    objs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": "gpufleet-nvidia-device-plugin", "labels": _a.labels(NAME)},
                 "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]})
    objs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": "gpufleet-nvidia-device-plugin", "labels": _a.labels(NAME)},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                             "name": "gpufleet-nvidia-device-plugin"},
                 "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": ns}]})
    objs.append({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": CONFIG_MAP, "namespace": ns, "labels": _a.labels(NAME)},
                 "data": plugin_configs(plan.get("pools") or [])})

    # The device plugin.
    env = _env([("CONFIG_FILE", "/config/config.yaml"), ("MPS_ROOT", MPS_ROOT),
                ("NVIDIA_VISIBLE_DEVICES", "all"), ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")])
    if s["any_mig"]:
        env.append({"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"})
    mounts = [{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
              {"name": "config", "mountPath": "/config"},
              {"name": "cdi-root", "mountPath": "/var/run/cdi"}]
    volumes = _config_volumes() + [
        _a.host_path("device-plugin", "/var/lib/kubelet/device-plugins", "Directory"),
        _a.host_path("cdi-root", "/var/run/cdi", "DirectoryOrCreate"),
    ]
    if s["any_mps"]:
        mounts += [{"name": "mps-root", "mountPath": "/mps"}, {"name": "mps-shm", "mountPath": "/dev/shm"}]
        volumes += [_a.host_path("mps-root", MPS_ROOT, "DirectoryOrCreate"),
                    _a.host_path("mps-shm", MPS_ROOT + "/shm")]
    plugin = {"name": "nvidia-device-plugin", "image": image, "command": ["nvidia-device-plugin"], "env": env,
              "securityContext": _restricted(s["any_mig"]), "volumeMounts": mounts,
              "resources": copy.deepcopy(AGENT_RESOURCES)}
    plugin_spec = _pod_spec(s, plan, [plugin, _config_manager(image, False, "nvidia-device-plugin")],
                            [_config_manager(image, True, "")], volumes, rc)
    if dra_pools(plan.get("pools")):
        # one GPU is never advertised twice: the DRA driver publishes the DRA pools' GPUs (dra.py)
        for term in plugin_spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                "nodeSelectorTerms"]:
            term["matchExpressions"].append(device_plugin_exclusion())
    objs.append(_daemonset(NAME, ns, "device-plugin", plugin_spec))

    # MPS control daemon: one per node of a pool that shares GPUs with MPS (nodes labelled with such a
    # pool, or labelled nvidia.com/mps.capable=true by GFD). Privileged (it starts nvidia-cuda-mps-control
    # and mounts the MPS shm) and in the host's PID namespace, as the device plugin's chart v0.20.0 runs it
    # by default (mps.enableHostPID): the MPS server finds its own PID through /proc/self. Hence no shared
    # process namespace (the API server refuses both together): the config-manager sidecar finds the daemon
    # by its command line among the host's processes, as in the chart (PROCESS_TO_SIGNAL unchanged).
    if s["any_mps"]:
        mps_name = NAME + "-mps-control-daemon"
        mps_spec = _pod_spec(
            s, plan,
            [{"name": "mps-control-daemon", "image": image, "command": ["mps-control-daemon"],
              "env": [_node_name_env()] + _env([("CONFIG_FILE", "/config/config.yaml"),
                                                ("NVIDIA_VISIBLE_DEVICES", "all"),
                                                ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")]),
              "securityContext": {"privileged": True}, "resources": copy.deepcopy(AGENT_RESOURCES),
              "volumeMounts": [{"name": "mps-root", "mountPath": "/mps"}, {"name": "mps-shm", "mountPath": "/dev/shm"},
                               {"name": "config", "mountPath": "/config"}]},
             _config_manager(image, False, "/usr/bin/mps-control-daemon")],
            [{"name": "mps-control-daemon-mounts", "image": image, "command": ["mps-control-daemon", "mount-shm"],
              "securityContext": {"privileged": True}, "resources": copy.deepcopy(SIDECAR_RESOURCES),
              "volumeMounts": [{"name": "mps-root", "mountPath": "/mps", "mountPropagation": "Bidirectional"}]},
             _config_manager(image, True, "")],
            _config_volumes() + [_a.host_path("mps-root", MPS_ROOT, "DirectoryOrCreate"),
                                 _a.host_path("mps-shm", MPS_ROOT + "/shm")], rc, host_pid=True)
        mps_pools = sorted(p["name"] for p in plan.get("pools") or [] if (p.get("sharing") or {}).get("mode") == "mps"
                           and p.get("allocation") != "dra")
        mps_spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": _a.POOL_LABEL, "operator": "In", "values": mps_pools}]},
            {"matchExpressions": [{"key": "nvidia.com/mps.capable", "operator": "In", "values": ["true"]}]},
        ]}}}
        objs.append(_daemonset(mps_name, ns, "mps-control-daemon", mps_spec))

    # GPU feature discovery: writes nvidia.com/gpu.* labels as an NFD feature file on each node. With a
    # MIG pool it sees the MIG devices as the plugin does (NVIDIA_MIG_MONITOR_DEVICES, SYS_ADMIN), as the
    # chart gives it whenever a MIG strategy other than none may apply; without, it would miss the
    # nvidia.com/mig.* labels.
    if s["nvidia_device_plugin_gfd_enabled"]:
        gfd_env = [_node_name_env()] + _env([("CONFIG_FILE", "/config/config.yaml"),
                                             ("GFD_SLEEP_INTERVAL", "60s"),
                                             ("NVIDIA_VISIBLE_DEVICES", "all"),
                                             ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")])
        if s["any_mig"]:
            gfd_env.append({"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"})
        gfd = {"name": "gpu-feature-discovery", "image": image, "command": ["gpu-feature-discovery"],
               "env": gfd_env,
               "securityContext": _restricted(s["any_mig"]),
               "volumeMounts": [{"name": "output-dir", "mountPath": GFD_FEATURES_DIR},
                                {"name": "host-sys", "mountPath": "/sys", "readOnly": True},
                                {"name": "config", "mountPath": "/config"}],
               "resources": copy.deepcopy(AGENT_RESOURCES)}
        objs.append(_daemonset("gpu-feature-discovery", ns, "gpu-feature-discovery", _pod_spec(
            s, plan, [gfd, _config_manager(image, False, "gpu-feature-discovery")],
            [_config_manager(image, True, "")],
            _config_volumes() + [_a.host_path("output-dir", GFD_FEATURES_DIR, "DirectoryOrCreate"),
                                 _a.host_path("host-sys", "/sys", "Directory")], rc)))
    return _a.with_pull_secrets(objs, s["gpufleet_image_pull_secrets"])
