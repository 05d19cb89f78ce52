"""The provisioning filters the gpu_pools role calls (thin wrappers; logic tested elsewhere)."""
import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.filter import pools as f
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pool


def plan(platform, **pool):
    base = {"name": "p", "gpu_type": "l4", "zones": ["us-central1-a"], "max_nodes": 2}
    base.update(pool)
    return {"platform": platform, "cluster_name": "c1", "pools": [normalize_pool(base)]}


class Tagged(str):
    """Stands in for Ansible's tagged strings, which yaml.safe_dump refuses."""


@pytest.mark.parametrize("platform,fragment", [
    ("gke-autopilot", "GKE Autopilot: Google creates and manages the GPU nodes"),
    ("gke", "GKE Standard: node auto-provisioning config file; ComputeClass for: none"),
    ("eks", "EKS: Karpenter v1 EC2NodeClass + NodePool per pool (p), AMI from the AL2023 NVIDIA SSM parameter"),
    ("kubeadm", "kubeadm (self-managed): labels gpufleet.io/pool + nvidia.com/device-plugin.config"),
])
def test_summary_says_what_is_managed(platform, fragment):
    assert f.gpu_pools_summary(plan(platform), {}).startswith(fragment)


def test_summary_when_nap_is_off_and_a_compute_class_is_on():
    out = f.gpu_pools_summary(plan("gke", compute_class=True), {"gpu_pools_gke_nap": "disabled"})
    assert out == "GKE Standard: no node auto-provisioning file (gpu_pools_gke_nap: disabled); ComputeClass for: p"


def test_nap_yaml_accepts_tagged_strings_and_is_deterministic():
    values = {"gpu_pools_gke_disk_type": Tagged("pd-ssd")}
    text = f.gpu_pools_nap_yaml(plan("gke"), values)
    assert text == f.gpu_pools_nap_yaml(plan("gke"), values)
    assert text.startswith("# Rendered by gpufleet for cluster c1")
    assert yaml.safe_load(text)["diskType"] == "pd-ssd"


@pytest.mark.parametrize("platform,values,enabled", [
    ("gke", {}, True), ("gke", {"gpu_pools_gke_nap": "disabled"}, False), ("gke-autopilot", {}, False),
    ("eks", {}, False),
])
def test_nap_enabled(platform, values, enabled):
    assert f.gpu_pools_nap_enabled(plan(platform), values) is enabled
