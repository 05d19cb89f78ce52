"""GPU Operator values per platform preset, OpenShift OLM objects, versions file."""
import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import versions
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import plugin_configs
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.gpu_operator import (
    cluster_policy_objects, deep_merge, operator_objects, operator_values, values_file)
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from k8s_schema import assert_valid

POOLS = normalize_pools([
    {"name": "train", "gpu_type": "a100-80gb", "sharing": {"mode": "mig", "mig_strategy": "mixed", "mig_profile": "1g.10gb"}},
    {"name": "infer", "gpu_type": "l4", "sharing": {"mode": "time-slicing", "replicas": 4}},
])


def plan(platform, apply=False):
    return {"platform": platform, "addons_mode": "operator", "cluster_name": "c1", "apply": apply, "pools": POOLS}


def env(values):
    return {e["name"]: e["value"] for e in values["toolkit"].get("env", [])}


@pytest.mark.parametrize("platform,config,socket,source", [
    ("k3s", "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl", "/run/k3s/containerd/containerd.sock",
     "file=/var/lib/rancher/k3s/agent/etc/containerd/config.toml"),
    ("rke2", "/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl", "/run/k3s/containerd/containerd.sock",
     "file=/var/lib/rancher/rke2/agent/etc/containerd/config.toml"),
    ("k0s", "/etc/k0s/containerd.d/nvidia.toml", "/run/k0s/containerd.sock", None),
    ("microk8s", "/var/snap/microk8s/current/args/containerd-template.toml",
     "/var/snap/microk8s/common/run/containerd.sock", None),
    ("kubeadm", "/etc/containerd/config.toml", "/run/containerd/containerd.sock", None),
])
def test_self_managed_toolkit_paths_when_the_operator_runs_the_toolkit(platform, config, socket, source):
    values = operator_values(plan(platform), {"gpu_operator_host_toolkit": False})
    assert values["toolkit"]["enabled"] is True
    e = env(values)
    assert (e["CONTAINERD_CONFIG"], e["CONTAINERD_SOCKET"], e.get("RUNTIME_CONFIG_SOURCE")) == (config, socket, source)
    assert e["CONTAINERD_RUNTIME_CLASS"] == "nvidia"


def test_self_managed_default_uses_host_driver_and_toolkit():
    values = operator_values(plan("kubeadm"), {})
    assert values["driver"]["enabled"] is False and values["toolkit"]["enabled"] is False
    assert "env" not in values["toolkit"]


def test_gke_standard_preset():
    values = operator_values(plan("gke"), {})
    assert values["driver"]["enabled"] is False
    assert values["hostPaths"] == {"driverInstallDir": "/home/kubernetes/bin/nvidia"}
    assert values["toolkit"]["installDir"] == "/home/kubernetes/bin/nvidia" and values["toolkit"]["enabled"] is True
    assert values["cdi"] == {"enabled": True}
    objs = operator_objects(plan("gke"), {})
    quota = [o for o in objs if o["kind"] == "ResourceQuota"][0]
    assert quota["spec"]["scopeSelector"]["matchExpressions"][0]["values"][0] == "system-node-critical"
    for obj in objs:
        assert_valid(obj)
    assert "gke-no-default-nvidia-gpu-device-plugin=true" in values_file(plan("gke"), {})


@pytest.mark.parametrize("extra,driver,toolkit", [
    ({}, False, False),  # accelerated AMI: driver and toolkit on the host
    ({"gpu_operator_host_driver": False, "gpu_operator_host_toolkit": False}, True, True),
])
def test_eks_driver_follows_the_ami(extra, driver, toolkit):
    values = operator_values(plan("eks"), extra)
    assert (values["driver"]["enabled"], values["toolkit"]["enabled"]) == (driver, toolkit)


def test_pools_drive_device_plugin_config_mig_and_mig_manager():
    values = operator_values(plan("kubeadm"), {})
    assert values["devicePlugin"]["config"] == {"create": True, "name": "gpufleet-device-plugin-configs",
                                                "default": "default", "data": plugin_configs(POOLS)}
    assert values["mig"] == {"strategy": "mixed"}
    assert values["migManager"]["enabled"] is True
    no_mig = dict(plan("kubeadm"), pools=[POOLS[1]])
    assert operator_values(no_mig, {})["migManager"]["enabled"] is False


def test_driver_options_upgrade_policy_service_monitor_and_overrides():
    extra = {"gpu_operator_host_driver": False, "gpu_operator_kernel_module_type": "open",
             "gpu_operator_driver_version": "570.148.08",
             "gpu_operator_upgrade_policy": {"maxParallelUpgrades": 2, "drain": {"enable": True}},
             "gpu_operator_values_overrides": {"driver": {"usePrecompiled": True}, "nfd": {"enabled": False}}}
    values = operator_values(plan("kubeadm"), extra)
    drv = values["driver"]
    assert drv["enabled"] is True and drv["kernelModuleType"] == "open" and drv["version"] == "570.148.08"
    assert drv["usePrecompiled"] is True and values["nfd"]["enabled"] is False
    assert drv["upgradePolicy"]["maxParallelUpgrades"] == 2
    assert drv["upgradePolicy"]["drain"] == {"enable": True, "force": False, "timeoutSeconds": 300, "deleteEmptyDir": False}
    assert values["dcgmExporter"]["serviceMonitor"]["enabled"] is False  # render mode, auto
    assert operator_values(plan("kubeadm", apply=True), {}, service_monitor_api=True)["dcgmExporter"]["serviceMonitor"]["enabled"]
    assert operator_values(plan("kubeadm"), {"gpu_operator_service_monitor": True})["dcgmExporter"]["serviceMonitor"]["enabled"]


def test_registry_prefix_rewrites_every_operator_repository():
    values = operator_values(plan("kubeadm"), {"gpufleet_registry_prefix": "registry.corp:5000/mirror"})
    assert values["operator"]["repository"] == "registry.corp:5000/mirror/nvidia"
    assert values["toolkit"]["repository"] == "registry.corp:5000/mirror/nvidia/k8s"
    assert values["node-feature-discovery"]["image"]["repository"] == "registry.corp:5000/mirror/nfd/node-feature-discovery"
    # since chart v25.10 the validator and the node status exporter run the operator's own image
    # (nvcr.io/nvidia/gpu-operator), not one under nvidia/cloud-native
    assert values["validator"]["repository"] == values["nodeStatusExporter"]["repository"] == \
        "registry.corp:5000/mirror/nvidia"
    assert len(versions.OPERATOR_REPOSITORIES) >= 20


# cdi.enabled per platform (docs/add-ons.md#cdi): on exactly where the operator's toolkit container
# configures the runtime; off where the hosts' toolkit does (gpufleet's node stage leaves enable_cdi off).
@pytest.mark.parametrize("platform,extra,toolkit,cdi", [
    ("gke", {}, True, True),
    ("openshift", {}, True, True),
    ("eks", {}, False, False),
    ("kubeadm", {}, False, False),
    ("k3s", {}, False, False),
    ("rke2", {}, False, False),
    ("k0s", {}, False, False),
    ("microk8s", {}, False, False),
    ("eks", {"gpu_operator_host_driver": False, "gpu_operator_host_toolkit": False}, True, True),
    ("kubeadm", {"gpu_operator_host_toolkit": False}, True, True),
    ("kubeadm", {"gpu_operator_cdi_enabled": True}, False, True),
    ("gke", {"gpu_operator_cdi_enabled": False}, True, False),
])
def test_cdi_is_a_choice_per_platform(platform, extra, toolkit, cdi):
    values = operator_values(plan(platform), extra)
    assert values["toolkit"]["enabled"] is toolkit
    assert values["cdi"] == {"enabled": cdi}
    if platform == "openshift":
        (policy,) = [o for o in cluster_policy_objects(plan(platform), extra) if o["kind"] == "ClusterPolicy"]
        assert policy["spec"]["cdi"] == {"enabled": cdi}
        assert "defaultRuntime" not in policy["spec"]["operator"]


def test_openshift_uses_olm_and_a_cluster_policy():
    objs = operator_objects(plan("openshift"), {})
    subs = {o["spec"]["name"]: o for o in objs if o["kind"] == "Subscription"}
    assert set(subs) == {"gpu-operator-certified", "nfd"}
    assert subs["gpu-operator-certified"]["metadata"]["namespace"] == "nvidia-gpu-operator"
    assert subs["gpu-operator-certified"]["spec"]["source"] == "certified-operators"
    for obj in objs:
        if obj["apiVersion"] in ("v1",):
            assert_valid(obj)
    policy = [o for o in cluster_policy_objects(plan("openshift"), {}) if o["kind"] == "ClusterPolicy"][0]
    assert policy["spec"]["driver"]["enabled"] is True  # RHCOS: the operator installs the driver
    assert policy["spec"]["devicePlugin"]["config"] == {"name": "gpufleet-device-plugin-configs", "default": "default"}
    assert policy["spec"]["dcgmExporter"]["serviceMonitor"]["enabled"] is True
    assert cluster_policy_objects(plan("kubeadm"), {}) == []


@pytest.mark.parametrize("approval", ["Automatic", "Manual"])
def test_openshift_subscriptions_pin_the_operator_version_and_take_the_approval(approval):
    """Issue 30 item 7: the GPU Operator Subscription starts at the pinned CSV; with Manual approval OLM
    installs nothing (and no upgrade) until an administrator approves; NFD's channel is a setting."""
    objs = operator_objects(plan("openshift"), {"gpu_operator_olm_approval": approval,
                                                "gpu_operator_olm_nfd_channel": "stable"})
    subs = {o["spec"]["name"]: o["spec"] for o in objs if o["kind"] == "Subscription"}
    assert subs["gpu-operator-certified"] == {
        "channel": "v26.7", "name": "gpu-operator-certified", "source": "certified-operators",
        "sourceNamespace": "openshift-marketplace", "installPlanApproval": approval,
        "startingCSV": "gpu-operator-certified.v26.7.0"}
    assert subs["nfd"]["installPlanApproval"] == approval and subs["nfd"]["channel"] == "stable"
    assert "startingCSV" not in subs["nfd"]
    assert versions.OLM_PACKAGES["gpu_operator"]["starting_csv"].endswith(".v" + versions.CHARTS["gpu_operator"]["version"][1:])


def test_values_file_is_yaml_with_a_header():
    text = values_file(plan("k3s"), {})
    assert text.startswith("# GPU Operator Helm values rendered by gpufleet")
    assert "v26.7.0" in text.splitlines()[1]
    values = yaml.safe_load(text)
    # neither is read by the v26.7.0 chart (test_operator_values_contract checks every key gpufleet sets)
    assert "operator" not in values and "default" not in values["cdi"]


def test_deep_merge_keeps_siblings_and_replaces_lists():
    assert deep_merge({"a": {"b": 1, "c": [1]}}, {"a": {"c": [2]}}) == {"a": {"b": 1, "c": [2]}}


def test_versions_file_pins_every_image():
    """Tag and, except where versions.UNDIGESTED gives the reason, the published digest (issue 30 item 7)."""
    for name, img in versions.IMAGES.items():
        assert versions.TAG.match(img["tag"]) and img["tag"] != "latest", name
        assert name in versions.UNDIGESTED or versions.DIGEST.match(img["digest"]), name
        suffix = ":" + img["tag"] + ("@" + img["digest"] if img["digest"] else "")
        assert versions.image_ref(name).endswith(suffix)
    assert set(versions.UNDIGESTED) <= set(versions.IMAGES)
    # an exception names its reason (a searched-for, unpublished digest), never an empty one
    assert all(isinstance(why, str) and why.strip() for why in versions.UNDIGESTED.values())
    # the DRA driver: the v0.5.0 GPU Operator v26.7.0 ships, by the digest in that release's OLM bundle
    assert versions.image_ref("dra_driver") == (
        "nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0@sha256:"
        "9b46984c0eb18def60e2b9817b874275f4b5b08d12d491de4f1a7b91b51d706c")
    assert versions.image_ref("dcgm_exporter") == (
        "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless@sha256:"
        "613ab03c11d442fd960ff515f547e9921537454a712d08160bc8f677f89f1c35")
    # another tag without its own digest: the pinned tag's digest is dropped, not silently kept
    assert versions.image_ref("dcgm_exporter", "m.local", {"dcgm_exporter": {"tag": "4.2.3-4.1.3-ubuntu24.04"}}) \
        == "m.local/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu24.04"
    # a mirror copy (repository override) keeps it
    assert versions.image_ref("device_plugin", "", {"device_plugin": {"repository": "m.local/dp"}}) \
        == "m.local/dp:v0.20.0@" + versions.IMAGES["device_plugin"]["digest"]
    assert versions.CHARTS["gpu_operator"]["version"].startswith("v")


def test_image_pull_secrets_reach_every_pod_and_operator_component():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_exporter import dcgm_exporter_objects
    from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import device_plugin_objects
    extra = {"gpufleet_image_pull_secrets": ["mirror-pull"]}
    values = operator_values(plan("kubeadm"), extra)
    assert values["operator"]["imagePullSecrets"] == ["mirror-pull"]
    assert values["driver"]["imagePullSecrets"] == ["mirror-pull"]
    assert values["node-feature-discovery"]["imagePullSecrets"] == [{"name": "mirror-pull"}]
    std = dict(plan("kubeadm"), addons_mode="standalone")
    pods = [o["spec"]["template"]["spec"] for o in device_plugin_objects(std, extra) + dcgm_exporter_objects(std, extra)
            if o["kind"] == "DaemonSet"]
    assert len(pods) == 3 and all(p["imagePullSecrets"] == [{"name": "mirror-pull"}] for p in pods)
    for obj in device_plugin_objects(std, extra):
        assert_valid(obj)
