"""GKE: node auto-provisioning file, its gcloud command, and ComputeClasses.

No GKE API runs here. The NAP file is checked against a hand-written schema of the fields GKE
documents for ``--autoprovisioning-config-file`` ("Use node auto-provisioning",
cloud.google.com/kubernetes-engine/docs/how-to/node-auto-provisioning, and the
AutoprovisioningNodePoolDefaults / ResourceLimit REST reference: diskSizeGb minimum 10 GB, memory
limits in GB, GPU limits per accelerator type). ComputeClasses are checked with
@kubernetes-models/gke (generated from the ComputeClass CRD).
"""
import copy

import pytest
import yaml

from crd_schema import assert_crs_valid, validate_crs
from nap_schema import check_nap
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools import gke
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.pools_check import resolve_settings
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import dump_yaml
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pool

A100 = normalize_pool({"name": "train-a100", "gpu_type": "a100-40gb", "gpus_per_node": 2, "capacity_types": ["spot"],
                       "zones": ["us-central1-a", "us-central1-b", "us-central1-c"], "max_nodes": 8,
                       "min_nodes": 1})
L4 = normalize_pool({"name": "infer-l4", "gpu_type": "l4", "zones": ["us-central1-b", "us-central1-f"],
                     "max_nodes": 10, "disk_size_gb": 200, "compute_class": True,
                     "capacity_types": ["spot", "on-demand"], "max_cpu": 2000})
L4B = normalize_pool({"name": "batch-l4", "gpu_type": "l4", "gpus_per_node": 4, "zones": ["us-central1-a"],
                      "max_gpus": 12})

def nap(*pools, **settings):
    return gke.nap_config(list(pools), resolve_settings(settings))


def test_nap_file_matches_the_documented_fields():
    doc = nap(A100, L4, L4B)
    assert check_nap(doc) == []
    # and survives the YAML round trip the role writes
    assert yaml.safe_load(dump_yaml(doc)) == doc


@pytest.mark.parametrize("mutate,problem", [
    (lambda d: d.update(diskSizeGb=5), "minimum of 10"),
    (lambda d: d.update(diskType="pd-fast"), "diskType"),
    (lambda d: d.update(resourceLimit=[]), "unknown field"),
    (lambda d: d["resourceLimits"].append({"resourceType": "nvidia-a10g", "maximum": 1}), "unknown"),
    (lambda d: d["resourceLimits"][0].update(minimum=10, maximum=5), "minimum <= maximum"),
    (lambda d: d["management"].update(autoRepair="yes"), "booleans"),
])
def test_the_nap_schema_check_can_fail(mutate, problem):
    doc = copy.deepcopy(nap(A100))
    mutate(doc)
    assert any(problem in p for p in check_nap(doc))


def test_nap_limits_per_accelerator_locations_and_defaults():
    doc = nap(A100, L4, L4B)
    limits = {r["resourceType"]: (r["minimum"], r["maximum"]) for r in doc["resourceLimits"]}
    assert limits == {"cpu": (0, 2000), "memory": (0, 8192), "nvidia-tesla-a100": (2, 16), "nvidia-l4": (0, 22)}
    assert [r["resourceType"] for r in doc["resourceLimits"]][:2] == ["cpu", "memory"]
    # zone spread: every pool's zones, first preference first, once each
    assert doc["autoprovisioningLocations"] == ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"]
    assert doc["management"] == {"autoRepair": True, "autoUpgrade": True}
    assert doc["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}
    assert doc["diskSizeGb"] == 200 and doc["diskType"] == "pd-balanced" and doc["imageType"] == "COS_CONTAINERD"


def test_nap_settings_are_used():
    doc = nap(A100, gke_nap_cpu_max=64, gke_nap_memory_gb_max=256, gke_image_type="UBUNTU_CONTAINERD",
              gke_disk_type="pd-ssd", gke_auto_upgrade=False, gke_secure_boot=False)
    assert doc["resourceLimits"][:2] == [{"resourceType": "cpu", "minimum": 0, "maximum": 64},
                                         {"resourceType": "memory", "minimum": 0, "maximum": 256}]
    assert doc["imageType"] == "UBUNTU_CONTAINERD" and doc["diskType"] == "pd-ssd"
    assert doc["management"]["autoUpgrade"] is False and doc["shieldedInstanceConfig"]["enableSecureBoot"] is False


@pytest.mark.parametrize("settings,argv_tail", [
    ({}, ["--location=us-central1", "--quiet"]),
    ({"gke_project": "ml-proj", "region": "us-east4"}, ["--location=us-east4", "--project=ml-proj", "--quiet"]),
])
def test_gcloud_command(settings, argv_tail):
    plan = {"platform": "gke", "pools": [A100]}
    argv = gke.nap_command("research", "/b/nap.yaml", plan, resolve_settings(settings))
    assert argv[:7] == ["gcloud", "container", "clusters", "update", "research", "--enable-autoprovisioning",
                        "--autoprovisioning-config-file=/b/nap.yaml"]
    assert argv[7:] == argv_tail


def test_compute_class_priorities_follow_capacity_preference_and_validate():
    classes = gke.compute_classes([A100, L4, L4B], resolve_settings({}))
    assert [c["metadata"]["name"] for c in classes] == ["infer-l4"]
    spec = classes[0]["spec"]
    assert spec["nodePoolAutoCreation"] == {"enabled": True}
    assert [(p["machineFamily"], p["gpu"], p["spot"]) for p in spec["priorities"]] == [
        ("g2", {"type": "nvidia-l4", "count": 1}, True), ("g2", {"type": "nvidia-l4", "count": 1}, False)]
    assert spec["autoscalingPolicy"] == {"consolidationDelayMinutes": 30}
    assert_crs_valid(classes)


def test_compute_class_schema_check_can_fail():
    cc = gke.compute_class(L4, resolve_settings({}))
    cc["spec"]["priorities"][0]["storage"]["bootDiskType"] = "pd-fast"
    del cc["spec"]["whenUnsatisfiable"]
    result = validate_crs([cc])[0]
    assert not result["ok"] and "whenUnsatisfiable" in result["error"] and "bootDiskType" in result["error"]


@pytest.mark.parametrize("duration,minutes", [("30m", 30), ("1h", 60), ("90s", 2), ("1h30m", 90), ("Never", None)])
def test_minutes(duration, minutes):
    assert gke._minutes(duration) == minutes


# gb200 on GKE: A4X machines (a4x-highgpu-4g: 4 x nvidia-gb200, Grace/arm64 hosts; tests/fixtures/clouds)
GB200 = normalize_pool({"name": "nvl-gb200", "gpu_type": "gb200", "gpus_per_node": 4, "zones": ["us-central1-a"],
                        "max_nodes": 18, "compute_class": True})


def test_gb200_renders_a_nap_limit_and_an_a4x_compute_class():
    doc = nap(GB200)
    assert check_nap(doc) == []
    assert {"resourceType": "nvidia-gb200", "minimum": 0, "maximum": 72} in doc["resourceLimits"]
    (klass,) = gke.compute_classes([GB200], resolve_settings({}))
    assert [(p["machineFamily"], p["gpu"]) for p in klass["spec"]["priorities"]] == [
        ("a4x", {"type": "nvidia-gb200", "count": 4})]
    assert_crs_valid([klass])
