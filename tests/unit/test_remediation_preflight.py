"""The remediation policy is checked in preflight (issue 39: a policy that cannot hold - reboot on EKS,
max_percent 150 - passed preflight and was refused only after the cluster was reached)."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight

POOLS = [{"name": "p1", "gpu_type": "l4"}]


def errors_of(platform, **extra):
    params = {"platform": platform, "cluster_name": "c1", "addons_mode": "standalone", "pools": POOLS,
              "extra": dict({"nvidia_driver_flavour": "proprietary"}, **extra)}
    return [e for e in run_preflight(params)[0] if e.startswith("gpu_remediation_")]


@pytest.mark.parametrize("platform,extra,variable,fragment", [
    ("eks", {"gpu_remediation_actions": ["taint", "cordon", "drain", "reboot"]}, "gpu_remediation_actions",
     "on platform eks use replace"),
    ("gke", {"gpu_remediation_actions": ["taint", "cordon", "drain", "reset"]}, "gpu_remediation_actions",
     "on platform gke use replace"),
    ("kubeadm", {"gpu_remediation_max_percent": 150}, "gpu_remediation_max_percent", "at most 100"),
    ("kubeadm", {"gpu_remediation_max_nodes": 0}, "gpu_remediation_max_nodes", "integer >= 1"),
    ("kubeadm", {"gpu_remediation_actions": ["drain"]}, "gpu_remediation_actions", "drain needs cordon"),
])
def test_a_policy_that_cannot_hold_is_refused_in_preflight(platform, extra, variable, fragment):
    errors = errors_of(platform, **extra)
    assert any(e.startswith(variable + ":") and fragment in e for e in errors), errors


@pytest.mark.parametrize("platform,extra", [
    ("kubeadm", {"gpu_remediation_actions": ["taint", "cordon", "drain", "reboot"], "gpu_remediation_max_percent": 50}),
    ("eks", {"gpu_remediation_actions": ["taint", "cordon", "drain", "replace"]}),
    ("eks", {}),
])
def test_a_policy_that_holds_passes(platform, extra):
    assert errors_of(platform, **extra) == []


@pytest.mark.parametrize("extra", [
    {"gpu_remediation_dry_run": "false"},                 # -e gpu_remediation_dry_run=false arrives as text
    {"gpu_remediation_max_nodes": "2", "gpu_remediation_max_percent": "50"},
    {"gpu_remediation_restore": "yes", "gpu_remediation_drain_timeout": "300"},
])
def test_values_given_as_text_are_cast_as_the_role_casts_them(extra):
    assert errors_of("eks", **extra) == []


def test_a_text_number_out_of_range_is_still_refused():
    errors = errors_of("kubeadm", gpu_remediation_max_percent="150")
    assert any(e.startswith("gpu_remediation_max_percent:") for e in errors), errors
