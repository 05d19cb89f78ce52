"""dcgm-exporter objects, metrics CSV, ServiceMonitor rule and Prometheus scrape job."""
import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_exporter import (
    DEFAULT_METRICS, dcgm_exporter_objects, metrics_csv, parse_metric, scrape_job, service_monitor,
    service_monitor_wanted)
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from k8s_schema import assert_valid
from prom_schema import assert_valid_prometheus, validate_prometheus

POOLS = normalize_pools([{"name": "p", "gpu_type": "l4", "taints": [{"key": "x", "effect": "NoSchedule"}]}])


def plan(platform="kubeadm", apply=False, mode="standalone"):
    return {"platform": platform, "addons_mode": mode, "cluster_name": "c1", "apply": apply, "pools": POOLS}


def kinds(objs):
    return {o["kind"]: o for o in objs}


@pytest.mark.parametrize("platform", ["kubeadm", "eks", "k3s", "rke2", "openshift"])
def test_core_objects_are_schema_valid(platform):
    objs = dcgm_exporter_objects(plan(platform), {})
    assert [o["kind"] for o in objs] == ["Namespace", "ServiceAccount", "ConfigMap", "DaemonSet", "Service"]
    for obj in objs:
        assert_valid(obj)


def test_least_privilege_security_context_and_pod_resources():
    pod = kinds(dcgm_exporter_objects(plan(), {}))["DaemonSet"]["spec"]["template"]["spec"]
    ctr = pod["containers"][0]
    assert ctr["securityContext"] == {"runAsNonRoot": False, "runAsUser": 0, "privileged": False,
                                      "allowPrivilegeEscalation": False,
                                      "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}
    assert pod["priorityClassName"] == "system-node-critical"
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert ctr["readinessProbe"]["httpGet"] == {"path": "/health", "port": 9400}
    assert "DCGM_EXPORTER_WEB_CONFIG_FILE" not in {e["name"] for e in ctr["env"]}
    assert pod["hostIPC"] is False and "hostPID" not in pod and "hostNetwork" not in pod
    assert {"name": "pod-resources", "mountPath": "/var/lib/kubelet/pod-resources", "readOnly": True} in ctr["volumeMounts"]
    assert ctr["ports"] == [{"name": "metrics", "containerPort": 9400, "protocol": "TCP"}]
    assert {"key": "x", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    svc = kinds(dcgm_exporter_objects(plan(), {}))["Service"]
    assert svc["spec"]["ports"][0]["port"] == 9400


def test_network_policy_only_when_namespaces_are_named():
    """Issue 30 item 8: off by default; with namespaces, ingress to port 9400 from those namespaces only."""
    assert "NetworkPolicy" not in kinds(dcgm_exporter_objects(plan(), {}))
    objs = dcgm_exporter_objects(plan(), {"dcgm_exporter_network_policy_namespaces": ["monitoring", "gpufleet-validate"]})
    pol = kinds(objs)["NetworkPolicy"]
    assert_valid(pol)
    assert pol["spec"]["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "dcgm-exporter"}}
    assert pol["spec"]["policyTypes"] == ["Ingress"]
    assert pol["spec"]["ingress"] == [{
        "from": [{"namespaceSelector": {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "In", "values": ["gpufleet-validate", "monitoring"]}]}}],
        "ports": [{"protocol": "TCP", "port": 9400}]}]


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_web_config_secret_is_mounted_and_used(scheme):
    """Issue 30 item 8: TLS/basic auth from a Secret the user owns; probes fall back to TCP, Prometheus
    scrapes with the scheme given."""
    inputs = {"dcgm_exporter_web_config_secret": "exporter-web", "dcgm_exporter_web_config_scheme": scheme}
    objs = kinds(dcgm_exporter_objects(plan(apply=True), dict(inputs, dcgm_exporter_service_monitor=True)))
    pod = objs["DaemonSet"]["spec"]["template"]["spec"]
    ctr = pod["containers"][0]
    assert {"name": "DCGM_EXPORTER_WEB_CONFIG_FILE", "value": "/etc/dcgm-exporter/web/web-config.yml"} in ctr["env"]
    assert {"name": "web-config", "mountPath": "/etc/dcgm-exporter/web", "readOnly": True} in ctr["volumeMounts"]
    assert {"name": "web-config", "secret": {"secretName": "exporter-web", "defaultMode": 0o400}} in pod["volumes"]
    assert ctr["readinessProbe"] == {"tcpSocket": {"port": 9400}, "initialDelaySeconds": 45, "periodSeconds": 5}
    assert ctr["livenessProbe"]["tcpSocket"] == {"port": 9400}
    endpoint = objs["ServiceMonitor"]["spec"]["endpoints"][0]
    assert endpoint.get("scheme", "http") == scheme
    assert yaml.safe_load(scrape_job(plan(), inputs))["scrape_configs"][0]["scheme"] == scheme
    assert_valid(objs["DaemonSet"])


def test_metrics_csv_defaults_plus_user_additions():
    csv = metrics_csv(["DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, counter, NVLink CRC errors",
                       {"field": "DCGM_FI_DEV_GPU_TEMP", "type": "gauge", "help": "Temp, overridden"}])
    lines = [l for l in csv.splitlines() if not l.startswith("#")]
    assert len(lines) == len(DEFAULT_METRICS) + 1
    assert "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %)." in lines
    assert lines[-1] == "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, counter, NVLink CRC errors"
    assert "DCGM_FI_DEV_GPU_TEMP, gauge, Temp; overridden" in lines  # no stray comma in the CSV
    cm = kinds(dcgm_exporter_objects(plan(), {"dcgm_exporter_extra_metrics": ["DCGM_FI_DEV_SM_CLOCK, gauge, x"]}))
    assert "dcgm-metrics.csv" in cm["ConfigMap"]["data"]


@pytest.mark.parametrize("item", ["DCGM_FI_X", "gpu_util, gauge, x", "DCGM_FI_DEV_X, histogram, h", 42, {"type": "gauge"}])
def test_bad_metric_entries_are_rejected(item):
    with pytest.raises(ValueError):
        parse_metric(item)


@pytest.mark.parametrize("setting,api,render_only,expected", [
    ("auto", False, True, False), ("auto", True, True, False), ("auto", True, False, True),
    ("auto", False, False, False), (True, False, True, True), (False, True, False, False),
])
def test_service_monitor_rule(setting, api, render_only, expected):
    assert service_monitor_wanted(setting, api, render_only) is expected


def test_service_monitor_rendered_in_apply_mode_when_api_exists_and_schema_valid():
    objs = dcgm_exporter_objects(plan(apply=True), {"dcgm_exporter_service_monitor_labels": {"release": "prom"}},
                                 service_monitor_api=True)
    sm = kinds(objs)["ServiceMonitor"]
    assert sm["metadata"]["labels"]["release"] == "prom"
    ep = sm["spec"]["endpoints"][0]
    assert (ep["interval"], ep["scrapeTimeout"], ep["port"]) == ("15s", "10s", "metrics")
    assert ep["relabelings"][0]["targetLabel"] == "kubernetes_node"
    assert_valid_prometheus([sm])
    assert "ServiceMonitor" not in kinds(dcgm_exporter_objects(plan(apply=False), {}, service_monitor_api=True))
    assert "ServiceMonitor" in kinds(dcgm_exporter_objects(plan(), {"dcgm_exporter_service_monitor": True}))


def test_the_schema_check_can_fail():
    bad = service_monitor("ns", "fifteen seconds", "10s", {})
    ok, out = validate_prometheus([bad])
    assert not ok and "interval" in out


def test_scrape_job_for_prometheus_without_the_operator():
    text = scrape_job(plan(), {"dcgm_exporter_namespace": "gpu-mon"})
    job = yaml.safe_load(text)["scrape_configs"][0]
    assert job["scrape_interval"] == "15s" and job["scrape_timeout"] == "10s" and job["metrics_path"] == "/metrics"
    assert job["kubernetes_sd_configs"] == [{"role": "endpoints", "namespaces": {"names": ["gpu-mon"]}}]
    assert {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "kubernetes_node",
            "action": "replace"} in job["relabel_configs"]


@pytest.mark.parametrize("platform", ["gke", "gke-autopilot"])
def test_gke_gets_no_exporter_but_a_managed_metrics_scrape_job(platform):
    assert dcgm_exporter_objects(plan(platform), {}) == []
    text = scrape_job(plan(platform), {})
    assert "--monitoring=SYSTEM,DCGM" in text
    job = yaml.safe_load(text)["scrape_configs"][0]
    assert job["job_name"] == "gke-managed-dcgm-exporter"
    assert job["kubernetes_sd_configs"][0]["namespaces"]["names"] == ["gke-managed-system"]
