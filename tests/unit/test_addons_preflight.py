"""Every bad add-on input is refused in preflight, named by its variable; role defaults match."""
import copy
import os

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.addons import defaults as addon_defaults
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.addons_preflight import addon_problems
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POOLS = [{"name": "train", "gpu_type": "a100-80gb", "sharing": {"mode": "mig", "mig_strategy": "single",
                                                                  "mig_profile": "1g.10gb", "mig_preconfigured": True}},
         {"name": "infer", "gpu_type": "l4", "sharing": {"mode": "time-slicing", "replicas": 4}}]
BASE = {"platform": "kubeadm", "cluster_name": "c1", "addons_mode": "standalone", "pools": POOLS, "apply": False,
        "extra": {}}


ZONES = {"eks": "us-east-1a", "gke": "us-central1-a", "gke-autopilot": "us-central1-a"}


def cloud_pools(platform):
    """POOLS made valid for a cloud's provisioning checks (zones, a GPU limit, offered GPU counts)."""
    counts = {"a100-80gb": 8} if platform == "eks" else {}
    return [dict(p, zones=[ZONES[platform]], max_nodes=2, gpus_per_node=counts.get(p["gpu_type"], 1)) for p in POOLS]


def params(platform=None, mode=None, pools=None, **extra):
    out = copy.deepcopy(BASE)
    if platform:
        out["platform"] = platform
        if platform in ZONES and pools is None:
            out["pools"] = cloud_pools(platform)
    if mode:
        out["addons_mode"] = mode
    if pools is not None:
        out["pools"] = pools
    out["extra"] = extra
    return out


def mps_mig_pool():
    return [{"name": "p", "gpu_type": "a100-80gb", "sharing": {"mode": "mps", "replicas": 2, "mig_strategy": "mixed"}}]


BAD = [
    ("operator + standalone device plugin", params(mode="operator", nvidia_device_plugin_enabled=True),
     "nvidia_device_plugin_enabled: true conflicts with gpufleet_addons_mode=operator"),
    ("operator + standalone dcgm-exporter", params(mode="operator", dcgm_exporter_enabled=True),
     "dcgm_exporter_enabled: true conflicts with gpufleet_addons_mode=operator"),
    ("time-slicing replicas 0", params(pools=[{"name": "p", "gpu_type": "l4", "sharing": {"mode": "time-slicing", "replicas": 0}}]),
     "gpufleet_gpu_pools[0].sharing.replicas: 0 is not allowed"),
    ("time-slicing replicas negative", params(pools=[{"name": "p", "gpu_type": "l4", "sharing": {"mode": "time-slicing", "replicas": -2}}]),
     "gpufleet_gpu_pools[0].sharing.replicas: -2 is not allowed"),
    ("unknown MIG strategy", params(pools=[{"name": "p", "gpu_type": "a100-80gb", "sharing": {"mode": "mig", "mig_strategy": "half"}}]),
     "gpufleet_gpu_pools[0].sharing.mig_strategy: 'half' is not allowed; use one of: single, mixed"),
    ("MPS with MIG mixed on one pool", params(pools=mps_mig_pool()),
     "gpufleet_gpu_pools[0].sharing: MPS and MIG cannot be combined on one pool"),
    ("ServiceMonitor forced on Autopilot", params(platform="gke-autopilot", mode="none", dcgm_exporter_service_monitor=True),
     "dcgm_exporter_service_monitor: true is not possible on gke-autopilot"),
    ("operator ServiceMonitor forced on Autopilot", params(platform="gke-autopilot", mode="none", gpu_operator_service_monitor=True),
     "gpu_operator_service_monitor: true is not possible on gke-autopilot"),
    ("unknown platform preset", params(mode="operator", gpu_operator_preset="aks"),
     "gpu_operator_preset: 'aks' is not a platform preset; use one of: auto, eks, gke"),
    ("empty image tag", params(gpufleet_image_overrides={"dcgm_exporter": {"tag": ""}}),
     "gpufleet_image_overrides.dcgm_exporter.tag: '' is not an image tag"),
    ("bad digest", params(gpufleet_image_overrides={"device_plugin": {"digest": "sha256:xyz"}}),
     "gpufleet_image_overrides.device_plugin.digest: 'sha256:xyz' is not a digest"),
    ("unknown image name", params(gpufleet_image_overrides={"cuda": {"tag": "12"}}),
     "gpufleet_image_overrides.cuda: unknown image; use one of: dcgm_exporter, device_plugin, dra_driver, nfd"),
    ("registry prefix with scheme", params(gpufleet_registry_prefix="https://mirror.local"),
     "gpufleet_registry_prefix: 'https://mirror.local' is not a registry prefix"),
    ("operator on Autopilot", params(platform="gke-autopilot", mode="operator"),
     "gpufleet_addons_mode: operator is not supported on GKE Autopilot"),
    ("operator driver with host driver", params(mode="operator", gpu_operator_driver_enabled=True),
     "gpu_operator_driver_enabled: true conflicts with gpu_operator_host_driver"),
    ("operator toolkit with host toolkit", params(platform="eks", mode="operator", gpu_operator_toolkit_enabled=True),
     "gpu_operator_toolkit_enabled: true conflicts with gpu_operator_host_toolkit"),
    ("no driver anywhere", params(mode="operator", gpu_operator_host_driver=False, gpu_operator_driver_enabled=False),
     "gpu_operator_driver_enabled: false leaves the nodes without a driver"),
    ("unknown kernel module type", params(mode="operator", gpu_operator_kernel_module_type="dkms"),
     "gpu_operator_kernel_module_type: 'dkms' is not allowed; use one of: auto, open, proprietary"),
    ("unknown upgrade policy key", params(mode="operator", gpu_operator_upgrade_policy={"autoUpgrad": True}),
     "gpu_operator_upgrade_policy.autoUpgrad: unknown key"),
    ("negative parallel upgrades", params(mode="operator", gpu_operator_upgrade_policy={"maxParallelUpgrades": -1}),
     "gpu_operator_upgrade_policy.maxParallelUpgrades: -1 is not allowed"),
    ("unpinned chart version", params(mode="operator", gpu_operator_chart_version="latest"),
     "gpu_operator_chart_version: 'latest' is not a pinned chart version"),
    ("chart path and repo", params(mode="operator", gpu_operator_chart_path="/srv/gpu-operator-v25.3.4.tgz",
                                   gpu_operator_chart_repo_url="https://charts.local"),
     "gpu_operator_chart_repo_url: is set together with gpu_operator_chart_path"),
    ("OpenShift preset off OpenShift", params(mode="operator", gpu_operator_preset="openshift"),
     "gpu_operator_preset: 'openshift' does not fit gpufleet_platform 'kubeadm'"),
    ("device plugin forced on GKE", params(platform="gke", nvidia_device_plugin_enabled=True),
     "nvidia_device_plugin_enabled: true is not possible on gke"),
    ("exporter forced on Autopilot", params(platform="gke-autopilot", dcgm_exporter_enabled=True),
     "dcgm_exporter_enabled: true is not possible on gke-autopilot"),
    ("ServiceMonitor setting not auto/true/false", params(dcgm_exporter_service_monitor="maybe"),
     "dcgm_exporter_service_monitor: 'maybe' is not allowed; use one of: auto, true, false"),
    ("scrape timeout above interval", params(dcgm_exporter_scrape_timeout="30s"),
     "dcgm_exporter_scrape_timeout: 30s is longer than dcgm_exporter_scrape_interval 15s"),
    ("olm approval", params(gpu_operator_olm_approval="manual"),
     "gpu_operator_olm_approval: 'manual' is not allowed; use one of: Automatic, Manual"),
    ("nfd channel", params(gpu_operator_olm_nfd_channel="stable channel"),
     "gpu_operator_olm_nfd_channel: 'stable channel' is not an OLM channel name"),
    ("network policy namespace not a name", params(dcgm_exporter_network_policy_namespaces=["Monitoring"]),
     "dcgm_exporter_network_policy_namespaces: ['Monitoring'] is not a list of namespace names"),
    ("network policy namespaces not a list", params(dcgm_exporter_network_policy_namespaces="monitoring"),
     "dcgm_exporter_network_policy_namespaces: 'monitoring' is not a list of namespace names"),
    ("web config secret not a name", params(dcgm_exporter_web_config_secret="web/config"),
     "dcgm_exporter_web_config_secret: 'web/config' is not a Secret name"),
    ("web config scheme", params(dcgm_exporter_web_config_scheme="ftp"),
     "dcgm_exporter_web_config_scheme: 'ftp' is not allowed; use one of: http, https"),
    ("bad extra metric", params(dcgm_exporter_extra_metrics=["gpu_util, gauge, x"]),
     "dcgm_exporter_extra_metrics[0]: field 'gpu_util' is not a DCGM field name"),
    ("bad namespace", params(dcgm_exporter_namespace="GPU_Monitoring"),
     "dcgm_exporter_namespace: 'GPU_Monitoring' is not a namespace name"),
    ("NFD with the operator", params(mode="operator", nvidia_device_plugin_nfd_enabled=True),
     "nvidia_device_plugin_nfd_enabled: true conflicts with gpufleet_addons_mode=operator"),
    ("plugin forced with mode none", params(mode="none", nvidia_device_plugin_enabled=True),
     "nvidia_device_plugin_enabled: true has no effect with gpufleet_addons_mode=none"),
    ("pool named default", params(pools=[{"name": "default", "gpu_type": "l4"}]),
     "gpufleet_gpu_pools[0].name: 'default' is reserved"),
    ("pull secret not a name", params(gpufleet_image_pull_secrets=["Mirror Pull"]),
     "gpufleet_image_pull_secrets: ['Mirror Pull'] is not a list of Secret names"),
    ("bad state", params(nvidia_device_plugin_state="gone"),
     "nvidia_device_plugin_state: 'gone' is not allowed; use one of: present, absent"),
]


@pytest.mark.parametrize("case,inp,fragment", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_with_the_variable_named(case, inp, fragment):
    errors, _warnings, _plan = run_preflight(inp)
    assert any(fragment in e for e in errors), errors


def test_at_least_twelve_bad_inputs():
    assert len(BAD) >= 12


@pytest.mark.parametrize("inp", [
    params(), params(mode="operator"), params(platform="eks", mode="operator"), params(platform="gke", mode="operator"),
    params(platform="openshift", mode="operator"), params(platform="gke-autopilot", mode="none"),
    params(platform="gke-autopilot"), params(platform="k3s", mode="operator", gpu_operator_host_toolkit=False,
                                             gpu_operator_toolkit_enabled=True),
    params(gpufleet_registry_prefix="mirror.local:5000/nvidia",
           gpufleet_image_overrides={"device_plugin": {"tag": "v0.17.4", "digest": "sha256:" + "0" * 64}}),
    params(mode="operator", gpu_operator_chart_path="/srv/charts/gpu-operator-v25.3.4.tgz"),
])
def test_good_inputs_pass(inp):
    errors, _warnings, _plan = run_preflight(inp)
    assert errors == []


def test_role_self_check_uses_the_same_rules():
    errors, _w, plan = run_preflight(params())
    assert addon_problems(plan, {"nvidia_device_plugin_enabled": True}) == []
    plan["addons_mode"] = "operator"
    assert addon_problems(plan, {"nvidia_device_plugin_enabled": True})[0].startswith("nvidia_device_plugin_enabled:")


@pytest.mark.parametrize("role,prefix", [("nvidia_device_plugin", "nvidia_device_plugin_"),
                                         ("dcgm_exporter", "dcgm_exporter_"), ("gpu_operator", "gpu_operator_")])
def test_role_defaults_and_argument_specs_equal_the_module_utils_defaults(role, prefix):
    with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as handle:
        specs = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    expected = {k: v for k, v in addon_defaults().items() if k.startswith(prefix)}
    assert defaults == expected
    assert {k: v["default"] for k, v in specs.items()} == expected


def test_exporter_runtime_class_without_the_plugin_runtime_class_is_a_warning():
    errors, warnings, _plan = run_preflight(params(nvidia_device_plugin_enabled=False))
    assert errors == []
    assert any(w.startswith("dcgm_exporter_runtime_class:") for w in warnings)
    assert run_preflight(params())[1] == []

