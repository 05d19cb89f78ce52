# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""dcgm-exporter: objects, metrics CSV and the Prometheus scrape job (role dcgm_exporter).

The exporter runs with the least privilege that still gives profiling metrics: root (DCGM needs
it), ``SYS_ADMIN`` only (all other capabilities dropped), no privilege escalation, not privileged,
no hostIPC, the runtime's default seccomp profile, priority class ``system-node-critical`` (as
upstream's chart); it reads ``/var/lib/kubelet/pod-resources`` to attribute GPUs to pods.

Optional hardening (issue 30 item 8): a NetworkPolicy that admits port 9400 only from the namespaces
named in ``dcgm_exporter_network_policy_namespaces``, and TLS and/or basic auth through the
exporter's web configuration (Prometheus exporter-toolkit format) read from a Secret the user
creates (``dcgm_exporter_web_config_secret``): gpufleet mounts it and never reads its content, so no
credential passes through Ansible. With a web config the probes check the TCP port (an HTTP probe
would get 401 from basic auth or fail the TLS handshake).

A ServiceMonitor is rendered only when the ``monitoring.coreos.com`` API is there (apply mode asks
the cluster) or when forced; a plain Prometheus scrape job file is always written for users
without the Prometheus Operator. GKE (Standard and Autopilot) gets no exporter DaemonSet: GKE's
managed DCGM metrics are used instead and a scrape job for them is written.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import addons as _a
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import comments, dump_yaml
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import image_ref

NAME = "dcgm-exporter"
PORT = 9400
CSV_KEY = "dcgm-metrics.csv"
CSV_DIR = "/etc/dcgm-exporter/gpufleet"
WEB_CONFIG_DIR = "/etc/dcgm-exporter/web"
WEB_CONFIG_KEY = "web-config.yml"
GKE_MANAGED_NAMESPACE = "gke-managed-system"
METRIC_FIELD = re.compile(r"^DCGM_FI_[A-Z0-9_]+$")
METRIC_TYPES = ("gauge", "counter", "label")

# The default counters: utilisation, memory, temperature, power, errors and the profiling
# metrics SYS_ADMIN makes available.
DEFAULT_METRICS = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active sending or receiving data."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
     "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
     "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second."),
)


def parse_metric(item):
    """A user metric as (field, type, help): a mapping {field, type, help} or a CSV line.

    Raises ValueError with what is wrong."""
    if isinstance(item, dict):
        field, kind, text = item.get("field"), item.get("type", "gauge"), item.get("help", "")
    elif isinstance(item, str):
        parts = [p.strip() for p in item.split(",", 2)]
        if len(parts) < 2:
            raise ValueError("%r is not 'DCGM_FI_FIELD, type, help'" % item)
        field, kind, text = parts[0], parts[1], parts[2] if len(parts) > 2 else ""
    else:
        raise ValueError("%r is neither a mapping {field, type, help} nor a CSV line" % (item,))
    if not isinstance(field, str) or not METRIC_FIELD.match(field):
        raise ValueError("field %r is not a DCGM field name (DCGM_FI_...)" % (field,))
    if kind not in METRIC_TYPES:
        raise ValueError("type %r of %s is not one of: %s" % (kind, field, ", ".join(METRIC_TYPES)))
    return field, kind, str(text or field).replace(",", ";")


def metrics_csv(extra_metrics):
    """The counters CSV: defaults, then the user's additions (a user entry replaces a default)."""
    rows = {f: (f, k, h) for f, k, h in DEFAULT_METRICS}
    order = [f for f, _k, _h in DEFAULT_METRICS]
    for item in extra_metrics or []:
        field, kind, text = parse_metric(item)
        if field not in rows:
            order.append(field)
        rows[field] = (field, kind, text)
    lines = ["# Format: DCGM field, Prometheus metric type, help message (rendered by gpufleet)"]
    lines += ["%s, %s, %s" % rows[f] for f in order]
    return "\n".join(lines) + "\n"


def service_monitor_wanted(setting, api_present, render_only):
    """ServiceMonitor rule: true forces, false never; auto renders it only when the API exists
    (known in apply mode; in render mode auto means no ServiceMonitor)."""
    if isinstance(setting, bool):
        return setting
    if str(setting).lower() in ("true", "yes"):
        return True
    if str(setting).lower() in ("false", "no"):
        return False
    return bool(api_present) and not render_only


def _probe(web_secret):
    """Health probe: HTTP /health, or the TCP port when a web config may demand TLS or a password."""
    if web_secret:
        return {"tcpSocket": {"port": PORT}}
    return {"httpGet": {"path": "/health", "port": PORT}}


def network_policy(ns, namespaces):
    """Ingress to the exporter pods: TCP 9400 from pods in ``namespaces`` only (selected by the
    ``kubernetes.io/metadata.name`` label the API server sets on every Namespace); everything else
    inbound is denied. Egress is not restricted (the exporter talks to the kubelet socket only)."""
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": NAME, "namespace": ns, "labels": _a.labels(NAME)},
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "policyTypes": ["Ingress"],
            "ingress": [{
                "from": [{"namespaceSelector": {"matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": sorted(set(namespaces))}]}}],
                "ports": [{"protocol": "TCP", "port": PORT}],
            }],
        },
    }


def service_monitor(ns, interval, timeout, extra_labels, scheme="http"):
    lab = _a.labels(NAME)
    lab.update({str(k): str(v) for k, v in (extra_labels or {}).items()})
    endpoint_scheme = {} if scheme == "http" else {"scheme": scheme}
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
        "metadata": {"name": NAME, "namespace": ns, "labels": lab},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "namespaceSelector": {"matchNames": [ns]},
            "endpoints": [dict(endpoint_scheme, port="metrics", path="/metrics", interval=interval,
                               scrapeTimeout=timeout,
                               relabelings=[{"sourceLabels": ["__meta_kubernetes_pod_node_name"],
                                             "targetLabel": "kubernetes_node", "action": "replace"}])],
        },
    }


def dcgm_exporter_objects(plan, extra, service_monitor_api=False):
    """Kubernetes objects of the exporter, in apply order. Empty on GKE (managed metrics)."""
    s = _a.settings(plan, extra)
    if not s["dcgm_exporter_enabled"]:
        return []
    ns = s["dcgm_exporter_namespace"]
    image = image_ref("dcgm_exporter", s["gpufleet_registry_prefix"], s["gpufleet_image_overrides"])
    web_secret = s["dcgm_exporter_web_config_secret"]
    lab = _a.labels(NAME)
    objs = [
        _a.namespace(ns),
        {"apiVersion": "v1", "kind": "ServiceAccount", "automountServiceAccountToken": False,
         "metadata": {"name": NAME, "namespace": ns, "labels": lab}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME + "-metrics", "namespace": ns, "labels": lab},
         "data": {CSV_KEY: metrics_csv(s["dcgm_exporter_extra_metrics"])}},
    ]
    env = [
        {"name": "DCGM_EXPORTER_LISTEN", "value": ":%d" % PORT},
        {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
        {"name": "DCGM_EXPORTER_COLLECTORS", "value": "%s/%s" % (CSV_DIR, CSV_KEY)},
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    ]
    container = {
        "name": NAME, "image": image, "env": env,
        "ports": [{"name": "metrics", "containerPort": PORT, "protocol": "TCP"}],
        "securityContext": {"runAsNonRoot": False, "runAsUser": 0, "privileged": False,
                            "allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}},
        "volumeMounts": [{"name": "pod-resources", "mountPath": "/var/lib/kubelet/pod-resources", "readOnly": True},
                         {"name": "metrics", "mountPath": CSV_DIR, "readOnly": True}],
        "readinessProbe": dict(_probe(web_secret), initialDelaySeconds=45, periodSeconds=5),
        "livenessProbe": dict(_probe(web_secret), initialDelaySeconds=45, periodSeconds=5),
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
    }
    volumes = [_a.host_path("pod-resources", "/var/lib/kubelet/pod-resources", "Directory"),
               {"name": "metrics", "configMap": {"name": NAME + "-metrics"}}]
    if web_secret:
        env.append({"name": "DCGM_EXPORTER_WEB_CONFIG_FILE", "value": "%s/%s" % (WEB_CONFIG_DIR, WEB_CONFIG_KEY)})
        container["volumeMounts"].append({"name": "web-config", "mountPath": WEB_CONFIG_DIR, "readOnly": True})
        volumes.append({"name": "web-config", "secret": {"secretName": web_secret, "defaultMode": 0o400}})
    pod = {
        "priorityClassName": "system-node-critical",
        "securityContext": _a.pod_security_context(),
        "serviceAccountName": NAME,
        "automountServiceAccountToken": False,
        "hostIPC": False,
        "tolerations": _a.gpu_tolerations(plan),
        "affinity": _a.gpu_node_affinity(plan),
        "containers": [container],
        "volumes": volumes,
    }
    if s["dcgm_exporter_runtime_class"]:
        pod["runtimeClassName"] = "nvidia"
    objs.append({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": ns, "labels": lab},
        "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
                 "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                 "template": {"metadata": {"labels": lab}, "spec": pod}},
    })
    objs.append({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": NAME, "namespace": ns, "labels": lab},
        "spec": {"type": "ClusterIP", "selector": {"app.kubernetes.io/name": NAME},
                 "ports": [{"name": "metrics", "port": PORT, "targetPort": PORT, "protocol": "TCP"}]},
    })
    if s["dcgm_exporter_network_policy_namespaces"]:
        objs.append(network_policy(ns, s["dcgm_exporter_network_policy_namespaces"]))
    if service_monitor_wanted(s["dcgm_exporter_service_monitor"], service_monitor_api, not plan.get("apply")):
        objs.append(service_monitor(ns, s["dcgm_exporter_scrape_interval"], s["dcgm_exporter_scrape_timeout"],
                                    s["dcgm_exporter_service_monitor_labels"],
                                    s["dcgm_exporter_web_config_scheme"] if web_secret else "http"))
    return _a.with_pull_secrets(objs, s["gpufleet_image_pull_secrets"])


def scrape_job(plan, extra):
    """The Prometheus ``scrape_configs`` file (for ``scrape_config_files`` or to paste in).

    Standalone: kubernetes_sd endpoints in the exporter's namespace. GKE: the pods of GKE's managed
    DCGM exporter (enabled with ``--monitoring=SYSTEM,DCGM``) in ``gke-managed-system``."""
    s = _a.settings(plan, extra)
    node_relabel = {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "kubernetes_node",
                    "action": "replace"}
    common = {"scrape_interval": s["dcgm_exporter_scrape_interval"], "scrape_timeout": s["dcgm_exporter_scrape_timeout"],
              "metrics_path": "/metrics",
              "scheme": s["dcgm_exporter_web_config_scheme"] if s["dcgm_exporter_web_config_secret"] else "http"}
    if plan.get("platform") in ("gke", "gke-autopilot"):
        header = comments("GKE: no dcgm-exporter DaemonSet is deployed by gpufleet. GPU metrics come from GKE's "
                          "managed", "DCGM exporter: enable it with",
                          "  gcloud container clusters update %s --monitoring=SYSTEM,DCGM" % plan.get("cluster_name"),
                          "The metrics then reach Cloud Monitoring (Managed Service for Prometheus) as DCGM_FI_*.",
                          "For a self-hosted Prometheus, this job scrapes the managed exporter's pods directly.")
        job = dict(common, job_name="gke-managed-dcgm-exporter",
                   kubernetes_sd_configs=[{"role": "pod", "namespaces": {"names": [GKE_MANAGED_NAMESPACE]}}],
                   relabel_configs=[
                       {"source_labels": ["__meta_kubernetes_pod_name"], "regex": "dcgm-exporter-.*", "action": "keep"},
                       {"source_labels": ["__meta_kubernetes_pod_container_port_number"], "regex": str(PORT),
                        "action": "keep"},
                       node_relabel])
    else:
        header = comments("Prometheus scrape job for gpufleet's dcgm-exporter (for Prometheus without the Operator):",
                          "list this file under scrape_config_files, or copy the job into scrape_configs.")
        job = dict(common, job_name="gpufleet-dcgm-exporter",
                   kubernetes_sd_configs=[{"role": "endpoints",
                                           "namespaces": {"names": [s["dcgm_exporter_namespace"]]}}],
                   relabel_configs=[
                       {"source_labels": ["__meta_kubernetes_service_label_app_kubernetes_io_name"], "regex": NAME,
                        "action": "keep"},
                       {"source_labels": ["__meta_kubernetes_endpoint_port_name"], "regex": "metrics", "action": "keep"},
                       node_relabel])
    return header + dump_yaml(_a.unshare({"scrape_configs": [job]}))
