"""gpu_operator_values_overrides is checked after merging (addons_preflight._check_values_overrides):
an override may add and tune chart values, not re-enable what preflight refused or replace what
gpufleet renders from the pools."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight

SELF = [{"name": "p", "gpu_type": "l4", "node_group": "g", "sharing": {"mode": "time-slicing", "replicas": 2}}]
EKS = [{"name": "p", "gpu_type": "l4", "zones": ["us-east-1a"], "max_nodes": 2}]


def errors(overrides, platform="kubeadm", **extra):
    pools = EKS if platform == "eks" else SELF
    extra["gpu_operator_values_overrides"] = overrides
    return run_preflight(dict(platform=platform, cluster_name="c", addons_mode="operator", pools=pools,
                              apply=False, extra=extra))[0]


@pytest.mark.parametrize("overrides,platform,expected", [
    ({"driver": {"enabled": True}}, "kubeadm", "gpu_operator_values_overrides.driver.enabled: True turns the operator's driver on"),
    ({"driver": {"enabled": True}}, "eks", "gpu_operator_host_driver is true for eks"),
    ({"toolkit": {"enabled": "true"}}, "eks", "gpu_operator_values_overrides.toolkit.enabled: 'true'"),
    ({"devicePlugin": "off"}, "kubeadm", "gpu_operator_values_overrides.devicePlugin: 'off' replaces the whole devicePlugin block"),
    ({"driver": None}, "kubeadm", "gpu_operator_values_overrides.driver: None replaces the whole driver block"),
    ({"devicePlugin": {"enabled": False}}, "kubeadm", "gpu_operator_values_overrides.devicePlugin.enabled: False turns off"),
    ({"devicePlugin": {"config": "none"}}, "kubeadm", "gpu_operator_values_overrides.devicePlugin.config: 'none' replaces"),
    ({"devicePlugin": {"config": {"name": "mine"}}}, "kubeadm", "devicePlugin.config.name: 'mine' would detach"),
    ({"devicePlugin": {"config": {"default": "p"}}}, "kubeadm", "devicePlugin.config.default: 'p' would detach"),
    ({"devicePlugin": {"config": {"data": {"p": "version: v1\n"}}}}, "kubeadm",
     "gpu_operator_values_overrides.devicePlugin.config.data.p: replaces the config gpufleet renders for pool p"),
    ({"devicePlugin": {"config": {"data": {"default": "x"}}}}, "kubeadm", "for unlabelled GPU nodes"),
])
def test_refused(overrides, platform, expected):
    found = errors(overrides, platform)
    assert any(expected in e for e in found), found


@pytest.mark.parametrize("overrides,extra", [
    ({"driver": {"enabled": False}}, {}),
    ({"dcgmExporter": {"resources": {"limits": {"memory": "1Gi"}}}}, {}),
    ({"devicePlugin": {"config": {"data": {"extra": "version: v1\n"}}}}, {}),
    ({"driver": {"enabled": True}}, {"gpu_operator_host_driver": False}),
    ({"operator": {"resources": {}}}, {}),
])
def test_accepted(overrides, extra):
    assert errors(overrides, **extra) == []
