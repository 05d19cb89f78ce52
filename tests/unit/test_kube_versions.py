"""Kubernetes version inputs are range-checked in preflight (issue 39: "1.99", "1.30" and "1.340" were accepted)."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.model import kube_versions
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight

POOLS = [{"name": "p1", "gpu_type": "l4"}]


def preflight(platform="kubeadm", **extra):
    params = {"platform": platform, "cluster_name": "c1", "addons_mode": "standalone", "pools": POOLS,
              "extra": dict({"nvidia_driver_flavour": "proprietary"}, **extra)}
    errors, warnings, _plan = run_preflight(params)
    return errors


@pytest.mark.parametrize("value,fragment", [
    ("1.99", "1.99 is outside the versions gpufleet supports"),
    ("1.30", "1.30 is outside"),
    ("1.31", "1.31 is outside"),
    ("1.38", "1.38 is outside"),
    ("1.340", "is not a Kubernetes version"),
    ("1.x", "is not a Kubernetes version"),
    ("2.34", "is not a Kubernetes version"),
    ("1.034", "is not a Kubernetes version"),
])
def test_out_of_range_or_malformed_versions_are_refused(value, fragment):
    errors = preflight(gpufleet_kubernetes_version=value)
    mine = [e for e in errors if e.startswith("gpufleet_kubernetes_version:")]
    assert mine and fragment in mine[0] and '"1.32" to "1.37"' in mine[0], errors


@pytest.mark.parametrize("value", ["1.32", "1.34", "v1.35.2", "1.35.1-gke.100", " 1.37 ", ""])
def test_supported_versions_pass(value):
    assert not [e for e in preflight(gpufleet_kubernetes_version=value) if e.startswith("gpufleet_kubernetes")]


def test_a_float_is_not_a_version():
    """YAML reads 1.30 unquoted as the number 1.3: refused, so the user quotes it."""
    errors = preflight(gpufleet_kubernetes_version=1.3)
    assert any(e.startswith("gpufleet_kubernetes_version:") and "not a Kubernetes version" in e for e in errors)


def test_the_eks_node_image_version_is_checked_on_eks_only():
    errors = preflight("eks", gpu_pools_eks_kubernetes_version="1.30", gpu_pools_eks_cluster_name="c1")
    assert any(e.startswith("gpu_pools_eks_kubernetes_version:") and "outside" in e for e in errors), errors
    errors = preflight("kubeadm", gpu_pools_eks_kubernetes_version="1.30")
    assert not [e for e in errors if e.startswith("gpu_pools_eks_kubernetes_version:")]


def test_the_range_is_the_one_the_readme_states():
    import os
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    low, high = kube_versions.SUPPORTED
    assert "| Kubernetes | %s to %s |" % (kube_versions.text(low), kube_versions.text(high)) in readme


# ------------------------------------------------------------------ other inputs issue 39 found accepted wrongly
@pytest.mark.parametrize("var", ["nvidia_dra_driver_namespace", "gpu_pools_example_namespace", "gpu_validate_namespace"])
@pytest.mark.parametrize("value", ["kube-system", "default", "openshift-monitoring"])
def test_namespaces_gpufleet_creates_refuse_system_namespaces(var, value):
    errors = preflight(**{var: value})
    assert any(e.startswith(var + ":") and "system namespace" in e for e in errors), errors


def test_a_dra_claim_namespace_named_twice_is_refused():
    pools = [{"name": "d", "gpu_type": "h100-80gb", "gpus_per_node": 8, "allocation": "dra",
              "dra": {"claim_namespaces": ["team-a", "team-b", "team-a"]}}]
    params = {"platform": "kubeadm", "cluster_name": "c1", "addons_mode": "standalone", "pools": pools,
              "extra": {"nvidia_driver_flavour": "proprietary", "gpufleet_kubernetes_version": "1.35"}}
    errors = run_preflight(params)[0]
    assert any(e.startswith("gpufleet_gpu_pools[0].dra.claim_namespaces:") and "team-a named more than once" in e
               for e in errors), errors


def test_on_eks_dra_is_judged_by_the_node_image_when_it_is_older():
    pools = [{"name": "d", "gpu_type": "h100-80gb", "gpus_per_node": 8, "allocation": "dra"}]
    params = {"platform": "eks", "cluster_name": "c1", "addons_mode": "standalone", "pools": pools,
              "extra": {"gpufleet_kubernetes_version": "1.35", "gpu_pools_eks_kubernetes_version": "1.33"}}
    errors = run_preflight(params)[0]
    assert any(e.startswith("gpu_pools_eks_kubernetes_version: 1.33 is below 1.34") for e in errors), errors
    params["extra"]["gpu_pools_eks_kubernetes_version"] = "1.35"
    assert not [e for e in run_preflight(params)[0] if "is below 1.34" in e]
