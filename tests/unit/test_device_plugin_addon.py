"""Pools -> device-plugin configs and the standalone device plugin objects (role nvidia_device_plugin)."""
import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import (
    device_plugin_objects, plugin_configs, pool_plugin_config)
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from k8s_schema import assert_valid


def plan(pools, platform="kubeadm", mode="standalone"):
    return {"platform": platform, "addons_mode": mode, "cluster_name": "c1", "apply": False,
            "pools": normalize_pools(pools)}


POOLS = [
    {"name": "ts", "gpu_type": "l4", "sharing": {"mode": "time-slicing", "replicas": 4, "rename_by_default": True}},
    {"name": "mps", "gpu_type": "t4", "sharing": {"mode": "mps", "replicas": 3},
     "taints": [{"key": "team", "value": "ml", "effect": "NoExecute"}]},
    {"name": "mig-single", "gpu_type": "a100-80gb", "sharing": {"mode": "mig", "mig_strategy": "single"}},
    {"name": "mig-mixed", "gpu_type": "h100-80gb", "sharing": {"mode": "mig", "mig_strategy": "mixed"}},
    {"name": "whole", "gpu_type": "l40s"},
]


@pytest.mark.parametrize("pool,expected", [
    (POOLS[0], {"version": "v1", "flags": {"migStrategy": "none", "failOnInitError": True},
                "sharing": {"timeSlicing": {"renameByDefault": True,
                                            "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}),
    (POOLS[1], {"version": "v1", "flags": {"migStrategy": "none", "failOnInitError": True},
                "sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 3}]}}}),
    (POOLS[2], {"version": "v1", "flags": {"migStrategy": "single", "failOnInitError": True}}),
    (POOLS[3], {"version": "v1", "flags": {"migStrategy": "mixed", "failOnInitError": True}}),
    (POOLS[4], {"version": "v1", "flags": {"migStrategy": "none", "failOnInitError": True}}),
])
def test_each_sharing_mode_maps_to_its_plugin_config(pool, expected):
    assert pool_plugin_config(normalize_pools([pool])[0]) == expected


def test_one_named_config_per_pool_plus_default_matches_the_node_label_contract():
    configs = plugin_configs(normalize_pools(POOLS))
    assert sorted(configs) == ["default", "mig-mixed", "mig-single", "mps", "ts", "whole"]
    for name, text in configs.items():
        assert yaml.safe_load(text)["version"] == "v1", name
    assert yaml.safe_load(configs["default"])["flags"]["migStrategy"] == "none"


@pytest.mark.parametrize("platform", ["kubeadm", "k3s", "rke2", "k0s", "microk8s", "openshift", "eks"])
def test_every_object_is_schema_valid(platform):
    objs = device_plugin_objects(plan(POOLS, platform), {})
    assert objs[0]["kind"] == "Namespace"
    for obj in objs:
        assert_valid(obj)


def by_kind_name(objs):
    return {(o["kind"], o["metadata"]["name"]): o for o in objs}


def test_daemonset_contract():
    objs = by_kind_name(device_plugin_objects(plan(POOLS), {}))
    ns = objs[("Namespace", "nvidia-device-plugin")]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    ds = objs[("DaemonSet", "nvidia-device-plugin")]
    pod = ds["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-node-critical"
    assert pod["runtimeClassName"] == "nvidia"
    tol = pod["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tol
    assert {"key": "team", "operator": "Exists", "effect": "NoExecute"} in tol  # a pool taint
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    keys = [t["matchExpressions"][0]["key"] for t in terms]
    assert keys == ["feature.node.kubernetes.io/pci-10de.present", "nvidia.com/gpu.present", "gpufleet.io/pool"]
    plugin = pod["containers"][0]
    # pinned by tag and by the digest NVIDIA publishes for it (issue 30 item 7)
    assert plugin["image"] == ("nvcr.io/nvidia/k8s-device-plugin:v0.20.0@sha256:"
                               "a61ba9fd8efb82f3a79f877f7580e02c1e8e7593f62473644bc9c79e315c3312")
    assert {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"} in plugin["volumeMounts"]
    # MIG pools present: the plugin monitors MIG devices and needs SYS_ADMIN (upstream's choice), added
    # after every other capability is dropped (issue 30 item 8); the pod runs the default seccomp profile.
    assert plugin["securityContext"] == {"allowPrivilegeEscalation": False,
                                         "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert plugin["resources"]["limits"] == {"memory": "512Mi"}
    # config-manager: init container (one shot) + sidecar that signals the plugin on label changes.
    init, sidecar = pod["initContainers"][0], pod["containers"][1]
    env = {e["name"]: e.get("value") for e in sidecar["env"]}
    assert env["NODE_LABEL"] == "nvidia.com/device-plugin.config" and env["DEFAULT_CONFIG"] == "default"
    assert env["ONESHOT"] == "false" and env["PROCESS_TO_SIGNAL"] == "nvidia-device-plugin"
    assert {e["name"]: e.get("value") for e in init["env"]}["ONESHOT"] == "true"
    for manager in (init, sidecar):  # no GPU, nothing written outside /config, its own small resources
        assert manager["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                              "readOnlyRootFilesystem": True}
        assert {e["name"]: e.get("value") for e in manager["env"]}["NVIDIA_VISIBLE_DEVICES"] == "void"
        assert manager["resources"] == {"requests": {"cpu": "5m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}}
    assert pod["shareProcessNamespace"] is True
    assert ("ClusterRole", "gpufleet-nvidia-device-plugin") in objs
    assert objs[("ConfigMap", "nvidia-device-plugin-configs")]["data"] == plugin_configs(normalize_pools(POOLS))


def test_mps_pool_adds_control_daemon_and_mps_root():
    objs = by_kind_name(device_plugin_objects(plan(POOLS), {}))
    mps = objs[("DaemonSet", "nvidia-device-plugin-mps-control-daemon")]["spec"]["template"]["spec"]
    # as the device plugin's chart v0.20.0 (mps.enableHostPID: true): privileged and in the host's PID
    # namespace (the MPS server finds its own PID through /proc/self; issue 38 item 2: with a shared process
    # namespace instead it could not start), so no shared process namespace (the API server refuses both);
    # its config-manager sidecar finds it among the host's processes by its command line, as in the chart
    assert mps["hostPID"] is True and mps["shareProcessNamespace"] is False
    assert mps["containers"][0]["securityContext"] == {"privileged": True}
    assert {e["name"]: e.get("value") for e in mps["containers"][1]["env"]}["PROCESS_TO_SIGNAL"] == \
        "/usr/bin/mps-control-daemon"
    assert {"name": "mps-root", "hostPath": {"path": "/run/nvidia/mps", "type": "DirectoryOrCreate"}} in mps["volumes"]
    plugin = objs[("DaemonSet", "nvidia-device-plugin")]["spec"]["template"]["spec"]
    assert any(v["name"] == "mps-root" for v in plugin["volumes"])
    assert "hostPID" not in plugin and plugin["shareProcessNamespace"] is True


def gfd_container(pools):
    pod = by_kind_name(device_plugin_objects(plan(pools), {}))[("DaemonSet", "gpu-feature-discovery")]
    return pod["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("pools,mig", [(POOLS, True), ([POOLS[2]], True), ([POOLS[3]], True),
                                       ([POOLS[0], POOLS[1], POOLS[4]], False)])
def test_gfd_monitors_mig_devices_where_a_pool_uses_mig(pools, mig):
    """Issue 38 item 7: as the device plugin's chart, GFD gets NVIDIA_MIG_MONITOR_DEVICES=all and SYS_ADMIN
    (after dropping every other capability) where a MIG strategy other than none applies; it ran without
    the variable, so the nvidia.com/mig.* labels could be missing. Without MIG: neither."""
    gfd = gfd_container(pools)
    env = {e["name"]: e.get("value") for e in gfd["env"]}
    assert env.get("NVIDIA_MIG_MONITOR_DEVICES") == ("all" if mig else None)
    assert gfd["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": dict(
        {"drop": ["ALL"]}, **({"add": ["SYS_ADMIN"]} if mig else {}))}


def test_without_mps_or_mig_no_control_daemon_and_no_capabilities():
    objs = by_kind_name(device_plugin_objects(plan([POOLS[0], POOLS[4]]), {}))
    assert ("DaemonSet", "nvidia-device-plugin-mps-control-daemon") not in objs
    plugin = objs[("DaemonSet", "nvidia-device-plugin")]["spec"]["template"]["spec"]["containers"][0]
    assert plugin["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert not any(v["name"] == "mps-root" for v in objs[("DaemonSet", "nvidia-device-plugin")]["spec"]["template"]["spec"]["volumes"])


@pytest.mark.parametrize("platform,extra,runtime_class", [
    ("kubeadm", {}, True), ("k3s", {}, True), ("eks", {}, False),
    ("eks", {"nvidia_device_plugin_runtime_class": True}, True),
    ("kubeadm", {"nvidia_device_plugin_runtime_class": False}, False),
])
def test_runtime_class_only_where_nvidia_is_not_the_default_runtime(platform, extra, runtime_class):
    objs = device_plugin_objects(plan(POOLS, platform), extra)
    kinds = [o["kind"] for o in objs]
    assert ("RuntimeClass" in kinds) is runtime_class
    pod = by_kind_name(objs)[("DaemonSet", "nvidia-device-plugin")]["spec"]["template"]["spec"]
    assert ("runtimeClassName" in pod) is runtime_class


def test_gfd_optional_and_registry_prefix_with_digest():
    digest = "sha256:" + "a" * 64
    extra = {"nvidia_device_plugin_gfd_enabled": False, "gpufleet_registry_prefix": "mirror.local:5000",
             "gpufleet_image_overrides": {"device_plugin": {"digest": digest}}}
    objs = by_kind_name(device_plugin_objects(plan(POOLS), extra))
    assert ("DaemonSet", "gpu-feature-discovery") not in objs
    image = objs[("DaemonSet", "nvidia-device-plugin")]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "mirror.local:5000/nvidia/k8s-device-plugin:v0.20.0@" + digest


def test_gfd_writes_the_nfd_feature_file_and_reads_the_pool_config():
    gfd = by_kind_name(device_plugin_objects(plan(POOLS), {}))[("DaemonSet", "gpu-feature-discovery")]
    pod = gfd["spec"]["template"]["spec"]
    assert {"name": "output-dir", "hostPath": {"path": "/etc/kubernetes/node-feature-discovery/features.d",
                                               "type": "DirectoryOrCreate"}} in pod["volumes"]
    assert pod["containers"][0]["command"] == ["gpu-feature-discovery"]
    assert pod["initContainers"][0]["command"] == ["config-manager"]


def test_optional_nfd_is_off_by_default_and_schema_valid_when_on():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.nfd import nfd_objects
    assert nfd_objects(plan(POOLS), {}) == []
    objs = nfd_objects(plan(POOLS), {"nvidia_device_plugin_nfd_enabled": True})
    assert [o["kind"] for o in objs[:4]] == ["CustomResourceDefinition"] * 3 + ["Namespace"]
    for obj in objs:
        assert_valid(obj)
    conf = by_kind_name(objs)[("ConfigMap", "nfd-worker-conf")]["data"]["nfd-worker.conf"]
    # vendor-only PCI labels give feature.node.kubernetes.io/pci-10de.present, the plugin's affinity label
    assert yaml.safe_load(conf) == {"sources": {"pci": {"deviceLabelFields": ["vendor"]}}}
    worker = by_kind_name(objs)[("DaemonSet", "nfd-worker")]["spec"]["template"]["spec"]
    assert any(v["hostPath"]["path"] == "/etc/kubernetes/node-feature-discovery/features.d"
               for v in worker["volumes"] if "hostPath" in v)
    assert worker["containers"][0]["image"] == ("registry.k8s.io/nfd/node-feature-discovery:v0.19.0"
                                                  "@sha256:2fa1c99ad09bdf2c8ad97706a4ad2fd548c84d5ecd70ba32a6152c667b96c4d2")


SHARING = [{"mode": "none"}, {"mode": "time-slicing", "replicas": 2}, {"mode": "time-slicing", "replicas": 16},
           {"mode": "mps", "replicas": 4},
           {"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.10gb", "mig_preconfigured": True},
           {"mode": "mig", "mig_strategy": "mixed", "mig_profile": "3g.40gb", "mig_preconfigured": True}]


def test_any_valid_pool_set_gives_named_configs_and_valid_objects():
    from hypothesis import given, settings, strategies as st
    from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight

    pool = st.builds(lambda name, sharing, taint: {"name": name, "gpu_type": "a100-80gb", "sharing": sharing,
                                                   "taints": [{"key": taint, "effect": "NoSchedule"}]},
                     st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True).filter(lambda n: n != "default"), st.sampled_from(SHARING),
                     st.sampled_from(["nvidia.com/gpu", "team", "example.com/dedicated"]))

    @settings(max_examples=25, deadline=None)
    @given(st.lists(pool, min_size=1, max_size=4, unique_by=lambda p: p["name"]))
    def check(pools):
        errors, _w, plan_ = run_preflight({"platform": "kubeadm", "cluster_name": "c", "addons_mode": "standalone",
                                           "pools": pools, "apply": False, "extra": {}})
        assert errors == []
        objs = by_kind_name(device_plugin_objects(plan_, {}))
        data = objs[("ConfigMap", "nvidia-device-plugin-configs")]["data"]
        assert sorted(data) == sorted(["default"] + [p["name"] for p in pools])
        modes = {p["sharing"]["mode"] for p in pools}
        assert (("DaemonSet", "nvidia-device-plugin-mps-control-daemon") in objs) is ("mps" in modes)
        tolerated = {t["key"] for t in objs[("DaemonSet", "nvidia-device-plugin")]["spec"]["template"]["spec"]["tolerations"]}
        assert {p["taints"][0]["key"] for p in pools} <= tolerated
        for obj in objs.values():
            assert_valid(obj)

    check()
