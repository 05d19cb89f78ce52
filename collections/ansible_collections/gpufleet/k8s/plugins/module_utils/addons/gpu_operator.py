# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""NVIDIA GPU Operator: Helm values from a platform preset plus user overrides (role gpu_operator).

Presets (``gpu_operator_preset``, ``auto`` = ``gpufleet_platform``):

- ``eks``: accelerated AMIs ship driver and toolkit (``gpu_operator_host_driver``/``_host_toolkit``
  auto = true), so ``driver.enabled``/``toolkit.enabled`` are false unless the nodes run a plain AMI.
- ``gke``: Google installs the driver under /home/kubernetes/bin/nvidia: ``driver.enabled=false``,
  ``hostPaths.driverInstallDir`` and ``toolkit.installDir`` there, CDI on, a
  ResourceQuota that admits system-node-critical pods in the operator namespace, and GPU node pools
  must carry the label ``gke-no-default-nvidia-gpu-device-plugin=true`` (and
  ``gpu-driver-version=disabled``) so Google's own device plugin stays off.
- ``kubeadm``, ``k3s``, ``rke2``, ``k0s``, ``microk8s``: ``toolkit.env`` names the distribution's
  containerd config and socket.
- ``openshift``: no Helm; OLM Subscriptions for ``gpu-operator-certified`` and the NFD operator plus
  a ClusterPolicy built from the same values.

GKE Autopilot is refused: the GPU Operator is not supported there.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import addons as _a
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_exporter import metrics_csv, service_monitor_wanted
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import plugin_configs
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.gpu_access import MIG_CONFIG_LABEL, mig_config_label
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import comments, dump_yaml
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import (
    CHARTS, OLM_PACKAGES, OPERATOR_REPOSITORIES, with_prefix)

PRESETS = ("eks", "gke", "kubeadm", "k3s", "rke2", "k0s", "microk8s", "openshift")
KERNEL_MODULE_TYPES = ("auto", "open", "proprietary")
DEVICE_PLUGIN_CONFIG_MAP = "gpufleet-device-plugin-configs"
DCGM_METRICS_CONFIG_MAP = "gpufleet-dcgm-metrics"
GKE_DRIVER_DIR = "/home/kubernetes/bin/nvidia"
GKE_NODE_LABEL = "gke-no-default-nvidia-gpu-device-plugin"

# Containerd config file, the file the toolkit reads the current config from, and the socket.
CONTAINERD = {
    "kubeadm": ("/etc/containerd/config.toml", None, "/run/containerd/containerd.sock"),
    "eks": ("/etc/containerd/config.toml", None, "/run/containerd/containerd.sock"),
    "k3s": ("/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl",
            "/var/lib/rancher/k3s/agent/etc/containerd/config.toml", "/run/k3s/containerd/containerd.sock"),
    "rke2": ("/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl",
             "/var/lib/rancher/rke2/agent/etc/containerd/config.toml", "/run/k3s/containerd/containerd.sock"),
    "k0s": ("/etc/k0s/containerd.d/nvidia.toml", None, "/run/k0s/containerd.sock"),
    "microk8s": ("/var/snap/microk8s/current/args/containerd-template.toml", None,
                 "/var/snap/microk8s/common/run/containerd.sock"),
}

# Distributions that embed their own containerd binary: the toolkit (>= 1.17.6) must run that one
# to read the current config (NVIDIA/gpu-operator#1323, nvidia-container-toolkit#1029).
RUNTIME_EXECUTABLE = {"k0s": "/var/lib/k0s/bin/containerd"}

DEFAULT_UPGRADE_POLICY = {
    "autoUpgrade": True,
    "maxParallelUpgrades": 1,
    "maxUnavailable": "25%",
    "gpuPodDeletion": {"force": False, "timeoutSeconds": 300, "deleteEmptyDir": False},
    "drain": {"enable": False, "force": False, "timeoutSeconds": 300, "deleteEmptyDir": False},
}
UPGRADE_POLICY_KEYS = tuple(DEFAULT_UPGRADE_POLICY) + ("waitForCompletion",)
# The chart's values say gpuPodDeletion; the ClusterPolicy CRD (nvidia.com/v1, v25.3.4 and later)
# calls the same object podDeletion, and the API server refuses the unknown field.
CR_UPGRADE_POLICY_RENAMES = {"gpuPodDeletion": "podDeletion"}


def deep_merge(base, over):
    """``over`` merged into a copy of ``base``: mappings recursively, anything else replaced."""
    out = copy.deepcopy(base)
    for key, value in (over or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def set_path(tree, dotted, value):
    keys = dotted.split(".")
    for key in keys[:-1]:
        tree = tree.setdefault(key, {})
    tree[keys[-1]] = value


def preset(plan, s):
    p = s["gpu_operator_preset"]
    return plan.get("platform") if _a.is_auto(p) else p


def host_components(plan, s):
    """(driver on the host?, toolkit on the host?) for the resolved preset."""
    pre = preset(plan, s)
    driver = _a.truthy(s["gpu_operator_host_driver"], pre != "openshift")
    toolkit = _a.truthy(s["gpu_operator_host_toolkit"], pre not in ("openshift", "gke"))
    return driver, toolkit


def namespace_name(plan, s):
    ns = s["gpu_operator_namespace"]
    if _a.is_auto(ns):
        return "nvidia-gpu-operator" if preset(plan, s) == "openshift" else "gpu-operator"
    return ns


def mig_strategy(plan):
    strategies = {(p.get("sharing") or {}).get("mig_strategy") for p in plan.get("pools") or []
                  if (p.get("sharing") or {}).get("mode") == "mig" and p.get("allocation") != "dra"}
    return "mixed" if "mixed" in strategies else "single"


def cdi_enabled(s, toolkit_enabled):
    """cdi.enabled: auto is on exactly where the operator's toolkit container configures the runtime.

    That container turns CDI on in the runtime it configures (containerd's enable_cdi, CRI-O's CDI
    devices), so the device plugin can hand devices over as CDI names: GKE, OpenShift, and any preset
    with gpu_operator_host_toolkit false. Where the toolkit is on the hosts (gpufleet's node stage, the
    EKS accelerated AMI) the operator does not touch the runtime: gpufleet's node stage leaves containerd's
    enable_cdi off unless nvidia_container_toolkit_enable_cdi is true (containerd 1.6 has no CDI at all)
    and makes nvidia the default runtime, so devices go through that runtime instead. Set
    gpu_operator_cdi_enabled: true where the hosts' runtime has CDI on (docs/add-ons.md)."""
    return _a.truthy(s["gpu_operator_cdi_enabled"], toolkit_enabled)


def operator_values(plan, extra, service_monitor_api=False):
    """The chart values (dict) for the plan; user overrides are merged last."""
    s = _a.settings(plan, extra)
    pre = preset(plan, s)
    host_driver, host_toolkit = host_components(plan, s)
    driver_enabled = _a.truthy(s["gpu_operator_driver_enabled"], not host_driver)
    toolkit_enabled = _a.truthy(s["gpu_operator_toolkit_enabled"], not host_toolkit)
    cdi = cdi_enabled(s, toolkit_enabled)
    sm_setting = s["gpu_operator_service_monitor"]
    if _a.is_auto(sm_setting) and pre == "openshift":
        sm_setting = True  # OpenShift always serves monitoring.coreos.com
    values = {
        "psa": {"enabled": True},
        "cdi": {"enabled": cdi},
        "nfd": {"enabled": pre != "openshift"},
        "daemonsets": {"priorityClassName": "system-node-critical", "tolerations": _a.gpu_tolerations(plan)},
        "driver": {
            "enabled": driver_enabled,
            "kernelModuleType": s["gpu_operator_kernel_module_type"],
            "upgradePolicy": deep_merge(DEFAULT_UPGRADE_POLICY, s["gpu_operator_upgrade_policy"]),
        },
        "toolkit": {"enabled": toolkit_enabled},
        "devicePlugin": {"enabled": True, "config": {
            "create": True, "name": DEVICE_PLUGIN_CONFIG_MAP, "default": "default",
            "data": plugin_configs(plan.get("pools") or [])}},
        "gfd": {"enabled": True},
        "mig": {"strategy": mig_strategy(plan)},
        "migManager": {"enabled": _a.truthy(s["gpu_operator_mig_manager_enabled"], _a.pools_use(plan, "mig"))},
        "dcgmExporter": {
            "enabled": True,
            "config": {"create": True, "name": DCGM_METRICS_CONFIG_MAP, "data": metrics_csv(s["dcgm_exporter_extra_metrics"])},
            "serviceMonitor": {
                "enabled": service_monitor_wanted(sm_setting, service_monitor_api, not plan.get("apply")),
                "interval": s["dcgm_exporter_scrape_interval"],
                "honorLabels": False,
                "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"],
                                 "targetLabel": "kubernetes_node", "action": "replace"}]},
        },
    }
    if s["gpu_operator_driver_version"]:
        values["driver"]["version"] = str(s["gpu_operator_driver_version"])
    if pre == "gke":
        values["hostPaths"] = {"driverInstallDir": GKE_DRIVER_DIR}
        values["toolkit"]["installDir"] = GKE_DRIVER_DIR
    if toolkit_enabled and pre in CONTAINERD:
        config, source, socket = CONTAINERD[pre]
        env = [{"name": "CONTAINERD_CONFIG", "value": config}, {"name": "CONTAINERD_SOCKET", "value": socket}]
        if source:
            env.append({"name": "RUNTIME_CONFIG_SOURCE", "value": "file=" + source})
        if pre in RUNTIME_EXECUTABLE:
            env.append({"name": "RUNTIME_EXECUTABLE_PATH", "value": RUNTIME_EXECUTABLE[pre]})
        # nvidia as the default runtime: workload pods carry no runtimeClassName (gpu_access.access).
        env += [{"name": "CONTAINERD_RUNTIME_CLASS", "value": "nvidia"},
                {"name": "CONTAINERD_SET_AS_DEFAULT", "value": "true"}]
        values["toolkit"]["env"] = env
    prefix = s["gpufleet_registry_prefix"]
    if prefix:
        for path, repo in sorted(OPERATOR_REPOSITORIES.items()):
            set_path(values, path, with_prefix(repo, prefix))
    secrets = s["gpufleet_image_pull_secrets"]
    if secrets:
        for path in sorted(OPERATOR_REPOSITORIES):
            component = path.rsplit(".", 1)[0]
            if component == "node-feature-discovery.image":
                set_path(values, "node-feature-discovery.imagePullSecrets", [{"name": n} for n in secrets])
            elif "." not in component:
                set_path(values, component + ".imagePullSecrets", list(secrets))
    return _a.unshare(deep_merge(values, s["gpu_operator_values_overrides"]))


def chart(s):
    out = dict(CHARTS["gpu_operator"])
    if s["gpu_operator_chart_version"]:
        out["version"] = s["gpu_operator_chart_version"]
    if s["gpu_operator_chart_repo_url"]:
        out["repo_url"] = s["gpu_operator_chart_repo_url"]
    out["path"] = s["gpu_operator_chart_path"]
    return out


def notes(plan, extra):
    """Lines for the user (printed by the role and written at the top of the values file)."""
    s = _a.settings(plan, extra)
    pre = preset(plan, s)
    host_driver, host_toolkit = host_components(plan, s)
    out = []
    if pre == "gke":
        out.append("GKE: GPU node pools must carry the node label %s=true and be created with "
                   "gpu-driver-version=disabled (or the Google driver installer) so Google's device plugin "
                   "stays off and the operator's device plugin takes over." % GKE_NODE_LABEL)
        out.append("GKE: a ResourceQuota admits system-node-critical pods in namespace %s." % namespace_name(plan, s))
    if pre == "openshift":
        out.append("OpenShift: no Helm release; OLM installs gpu-operator-certified and the NFD operator, and the "
                   "ClusterPolicy in cluster/gpu-operator-policy/ is built from these values.")
    if host_driver:
        out.append("driver.enabled derived from gpu_operator_host_driver=true: the driver on the hosts is used.")
    if host_toolkit:
        out.append("toolkit.enabled derived from gpu_operator_host_toolkit=true: the toolkit on the hosts is used.")
    for pool in plan.get("pools") or []:
        label = mig_config_label(pool)
        if label and pre != "gke":
            out.append("MIG: the nodes of pool %s carry %s=%s (set by gpufleet's provision stage); the MIG manager "
                       "partitions them to that layout." % (pool["name"], MIG_CONFIG_LABEL, label[MIG_CONFIG_LABEL]))
    return out


def values_file(plan, extra, service_monitor_api=False):
    """The rendered values file (text), with a header naming chart, version and notes."""
    s = _a.settings(plan, extra)
    ch = chart(s)
    header = ["GPU Operator Helm values rendered by gpufleet for cluster %s (preset %s)."
              % (plan.get("cluster_name"), preset(plan, s)),
              ("Chart: %s %s from %s" % (ch["name"], ch["version"], ch["path"] or ch["repo_url"])
               if preset(plan, s) != "openshift" else
               "Installed through OLM (%s, channel %s); these values build the ClusterPolicy." % (
                   OLM_PACKAGES["gpu_operator"]["package"], OLM_PACKAGES["gpu_operator"]["channel"]))]
    header += ["Note: " + line for line in notes(plan, extra)]
    return comments(*header) + dump_yaml(operator_values(plan, extra, service_monitor_api))


def operator_objects(plan, extra):
    """Kubernetes objects applied before the chart (or, on OpenShift, the OLM objects)."""
    s = _a.settings(plan, extra)
    pre = preset(plan, s)
    ns = namespace_name(plan, s)
    objs = [_a.namespace(ns)]
    if pre == "gke":
        objs.append({"apiVersion": "v1", "kind": "ResourceQuota",
                     "metadata": {"name": "gpu-operator-quota", "namespace": ns, "labels": _a.labels("gpu-operator")},
                     "spec": {"hard": {"pods": "100"},
                              "scopeSelector": {"matchExpressions": [
                                  {"operator": "In", "scopeName": "PriorityClass",
                                   "values": ["system-node-critical", "system-cluster-critical"]}]}}})
    if pre == "openshift":
        objs[0]["metadata"]["labels"]["openshift.io/cluster-monitoring"] = "true"
        nfd_ns = "openshift-nfd"
        objs.append(_a.namespace(nfd_ns))
        for name, namespace_ in (("nfd", nfd_ns), ("gpu_operator", ns)):
            pkg = OLM_PACKAGES[name]
            objs.append({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
                         "metadata": {"name": pkg["package"], "namespace": namespace_},
                         "spec": {"targetNamespaces": [namespace_]}})
            sub = {"channel": s["gpu_operator_olm_nfd_channel"] if name == "nfd" else pkg["channel"],
                   "name": pkg["package"], "source": pkg["source"], "sourceNamespace": pkg["source_namespace"],
                   "installPlanApproval": s["gpu_operator_olm_approval"]}
            if pkg.get("starting_csv"):
                sub["startingCSV"] = pkg["starting_csv"]
            objs.append({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                         "metadata": {"name": pkg["package"], "namespace": namespace_}, "spec": sub})
        objs.append({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": DEVICE_PLUGIN_CONFIG_MAP, "namespace": ns, "labels": _a.labels("gpu-operator")},
                     "data": plugin_configs(plan.get("pools") or [])})
        objs.append({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": DCGM_METRICS_CONFIG_MAP, "namespace": ns, "labels": _a.labels("gpu-operator")},
                     "data": {"dcgm-metrics.csv": metrics_csv(s["dcgm_exporter_extra_metrics"])}})
    return _a.unshare(objs)


def cr_upgrade_policy(values_policy):
    """driver.upgradePolicy of the Helm values, with the ClusterPolicy CRD's field names."""
    return {CR_UPGRADE_POLICY_RENAMES.get(k, k): v for k, v in (values_policy or {}).items()}


def cluster_policy_objects(plan, extra):
    """OpenShift: the NodeFeatureDiscovery instance and the ClusterPolicy, applied once OLM has
    installed the operators (their CRDs exist)."""
    s = _a.settings(plan, extra)
    if preset(plan, s) != "openshift":
        return []
    v = operator_values(plan, extra, service_monitor_api=True)
    dp_config = {"name": DEVICE_PLUGIN_CONFIG_MAP, "default": "default"}
    spec = {
        "operator": {"use_ocp_driver_toolkit": True},
        "daemonsets": v["daemonsets"],
        "driver": {"enabled": v["driver"]["enabled"], "kernelModuleType": v["driver"]["kernelModuleType"],
                   "upgradePolicy": cr_upgrade_policy(v["driver"]["upgradePolicy"])},
        "toolkit": {"enabled": v["toolkit"]["enabled"]},
        "devicePlugin": {"enabled": True, "config": dp_config},
        "dcgm": {"enabled": True},
        "dcgmExporter": {"enabled": True, "config": {"name": DCGM_METRICS_CONFIG_MAP},
                         "serviceMonitor": v["dcgmExporter"]["serviceMonitor"]},
        "gfd": {"enabled": True},
        "mig": v["mig"],
        "migManager": {"enabled": v["migManager"]["enabled"]},
        "nodeStatusExporter": {"enabled": True},
        "cdi": v["cdi"],
        "validator": {"plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "false"}]}},
    }
    if "version" in v["driver"]:
        spec["driver"]["version"] = v["driver"]["version"]
    spec = deep_merge(spec, s["gpu_operator_values_overrides"])
    return _a.unshare([
        {"apiVersion": "nfd.openshift.io/v1", "kind": "NodeFeatureDiscovery",
         "metadata": {"name": "nfd-instance", "namespace": "openshift-nfd"},
         "spec": {"operand": {"servicePort": 12000}}},
        {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
         "metadata": {"name": "gpu-cluster-policy", "labels": _a.labels("gpu-operator")}, "spec": spec},
    ])
