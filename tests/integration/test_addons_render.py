"""The add-on roles for real: ansible-playbook site.yml on every example inventory in render mode.

No Kubernetes API server can run here, so the apply step (one shared task file, roles/k8s_apply)
is not exercised; everything it would apply is rendered, schema-checked and checked for
determinism.
"""
import json
import os
import re

import pytest
import yaml

from k8s_schema import assert_valid
from prom_schema import assert_valid_prometheus
from render_cache import private_copy, rendered_site
from ansible_run import ROOT, recap, run_site
from inventories import cluster_inventories

# the inventories that render a cluster (fleet inventories name clusters and render nothing)
INVENTORIES = cluster_inventories()
CORE = ("v1", "apps/v1", "node.k8s.io/v1", "rbac.authorization.k8s.io/v1", "scheduling.k8s.io/v1")
EXPECTED = {
    "example": {"cluster/device-plugin", "cluster/dcgm-exporter", "cluster/gpu-monitoring"},
    "eks": {"cluster/device-plugin", "cluster/dcgm-exporter", "cluster/gpu-monitoring"},
    "k3s": {"cluster/device-plugin", "cluster/dcgm-exporter", "cluster/gpu-monitoring"},
    # GKE runs device plugin and DCGM metrics itself: the scrape job file, dashboard and alerts
    "gke": {"cluster/gpu-monitoring"},
    "gke-autopilot": set(),  # gpufleet_addons_mode none
    "openshift": {"cluster/gpu-operator", "cluster/gpu-operator-policy", "cluster/gpu-monitoring"},
    "kubeadm-operator": {"cluster/gpu-operator", "cluster/gpu-monitoring"},
}


def all_files(build):
    out = {}
    for dirpath, _dirs, files in os.walk(build):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, build)] = handle.read()
    return out


def check_objects(files):
    """Schema-check every rendered Kubernetes object; return the count per apiVersion."""
    seen, prom = {}, []
    for rel, data in files.items():
        if not rel.startswith("cluster/") or not rel.endswith(".yaml"):
            continue
        for obj in yaml.safe_load_all(data):
            if not obj or "apiVersion" not in obj:
                continue
            seen[obj["apiVersion"]] = seen.get(obj["apiVersion"], 0) + 1
            if obj["apiVersion"] in CORE:
                assert_valid(obj)
            elif obj["apiVersion"] == "monitoring.coreos.com/v1":
                prom.append(obj)
    if prom:
        assert_valid_prometheus(prom)
    return seen


@pytest.fixture(scope="module", params=INVENTORIES)
def rendered(request, tmp_path_factory):
    inv = request.param
    rc, out, build = rendered_site(tmp_path_factory, inventory="inventories/" + inv)
    assert rc == 0, out[-3000:]
    return inv, build, out


def test_components_are_rendered_and_schema_valid(rendered):
    inv, build, _out = rendered
    files = all_files(build)
    components = {os.path.dirname(f) for f in files if f.startswith("cluster/") and re.search(r"/[0-9]{2}-", f)}
    assert components == EXPECTED[inv]
    check_objects(files)
    if inv in ("gke", "example", "eks", "k3s"):
        job = yaml.safe_load(files["cluster/dcgm-exporter/prometheus-scrape-job.yaml"])["scrape_configs"][0]
        assert (job["scrape_interval"], job["scrape_timeout"]) == ("15s", "10s")
    if "cluster/gpu-monitoring" in EXPECTED[inv]:
        assert "groups" in yaml.safe_load(files["cluster/gpu-monitoring/prometheus-rules.yml"])
    else:
        assert not any(f.startswith("cluster/gpu-monitoring/") for f in files)
    if inv == "openshift":
        values = yaml.safe_load(files["cluster/gpu-operator/gpu-operator-values.yaml"])
        assert values["driver"]["kernelModuleType"] == "open"


def test_rerun_is_byte_identical_and_changes_nothing(rendered, tmp_path_factory):
    """Every file of every inventory's render (test_pools_render relies on this for provision/)."""
    inv, shared, _out = rendered
    build = private_copy(shared, tmp_path_factory)
    before = all_files(build)
    rc, out = run_site(build, inventory="inventories/" + inv)
    assert rc == 0, out[-3000:]
    assert recap(out)["changed"] == 0
    assert all_files(build) == before


@pytest.mark.parametrize("platform", ["kubeadm", "eks", "gke", "rke2"])
def test_operator_mode_renders_values_for_each_preset(tmp_path, platform):
    build = tmp_path / "op"
    extra = {"gpufleet_addons_mode": "operator", "gpufleet_platform": platform}
    if platform in ("eks", "gke"):
        # cloud pools need zones (provisioning preflight): the example's pools, placed in one zone
        with open(os.path.join(ROOT, "inventories", "example", "group_vars", "all", "gpufleet.yml")) as handle:
            pools = yaml.safe_load(handle)["gpufleet_gpu_pools"]
        zone = {"eks": "us-east-1a", "gke": "us-central1-a"}[platform]
        extra["gpufleet_gpu_pools"] = [dict(p, zones=[zone]) for p in pools]
    rc, out = run_site(build, "-e", json.dumps(extra), playbook="playbooks/cluster.yml")
    assert rc == 0, out[-3000:]
    files = all_files(build)
    assert not any(f.startswith(("cluster/device-plugin", "cluster/dcgm-exporter")) for f in files)
    values = yaml.safe_load(files["cluster/gpu-operator/gpu-operator-values.yaml"])
    assert values["devicePlugin"]["config"]["name"] == "gpufleet-device-plugin-configs"
    assert set(yaml.safe_load(values["devicePlugin"]["config"]["data"]["train-a100"])) == {"version", "flags"}
    check_objects(files)
    assert ("hostPaths" in values) is (platform == "gke")


def test_absent_state_removes_the_scrape_job(tmp_path):
    build = tmp_path / "example"
    rc, out = run_site(build, playbook="playbooks/cluster.yml")
    assert rc == 0, out[-3000:]
    assert (build / "cluster/dcgm-exporter/prometheus-scrape-job.yaml").is_file()
    rc, out = run_site(build, "-e", "dcgm_exporter_state=absent", playbook="playbooks/cluster.yml")
    assert rc == 0, out[-3000:]
    assert not (build / "cluster/dcgm-exporter/prometheus-scrape-job.yaml").exists()


@pytest.mark.parametrize("extra,fragment", [
    ({"gpufleet_addons_mode": "operator", "nvidia_device_plugin_enabled": True},
     "nvidia_device_plugin_enabled: true conflicts with gpufleet_addons_mode=operator"),
    ({"gpufleet_platform": "gke-autopilot", "gpufleet_addons_mode": "operator"},
     "gpufleet_addons_mode: operator is not supported on GKE Autopilot"),
    ({"gpufleet_image_overrides": {"device_plugin": {"tag": ""}}},
     "gpufleet_image_overrides.device_plugin.tag: '' is not an image tag"),
])
def test_bad_addon_input_fails_in_preflight_before_anything_is_written(tmp_path, extra, fragment):
    build = tmp_path / "example"
    rc, out = run_site(build, "-e", json.dumps(extra))
    assert rc != 0
    assert fragment in re.sub(r"\s+", " ", out), out[-3000:]
    assert not build.exists()


def test_switching_mode_or_platform_leaves_no_stale_render(tmp_path):
    """GitOps users commit build/: what the inventory no longer wants must leave the folder."""
    build = tmp_path / "example"

    def components(*extra):
        rc, out = run_site(build, *extra, playbook="playbooks/cluster.yml")
        assert rc == 0, out[-3000:]
        return sorted(os.listdir(build / "cluster"))

    assert components("-e", "nvidia_device_plugin_nfd_enabled=true") == [
        "dcgm-exporter", "device-plugin", "gpu-monitoring", "node-feature-discovery"]
    assert components() == ["dcgm-exporter", "device-plugin", "gpu-monitoring"]
    assert components("-e", "gpufleet_addons_mode=operator") == ["gpu-monitoring", "gpu-operator"]
    with open(os.path.join(ROOT, "inventories", "example", "group_vars", "all", "gpufleet.yml")) as handle:
        gke_pools = [dict(p, zones=["us-central1-a"]) for p in yaml.safe_load(handle)["gpufleet_gpu_pools"]]
    assert components("-e", json.dumps({"gpufleet_platform": "gke", "gpufleet_gpu_pools": gke_pools})) == ["dcgm-exporter", "gpu-monitoring"]
    assert os.listdir(build / "cluster" / "dcgm-exporter") == ["prometheus-scrape-job.yaml"]
    assert components("-e", "gpufleet_addons_mode=none") == []


def test_forced_service_monitor_is_rendered_and_valid_with_string_inputs(tmp_path):
    """-e gives strings: 'true'/'false' work like booleans; the ServiceMonitor passes the npm schema."""
    build = tmp_path / "example"
    rc, out = run_site(build, "-e", "dcgm_exporter_service_monitor=true", "-e", "nvidia_device_plugin_runtime_class=false",
                       playbook="playbooks/cluster.yml")
    assert rc == 0, out[-3000:]
    files = all_files(build)
    assert "cluster/dcgm-exporter/05-servicemonitor-dcgm-exporter.yaml" in files
    assert not any("runtimeclass" in f for f in files)
    assert check_objects(files)["monitoring.coreos.com/v1"] == 1
