"""Operator mode in apply mode: the ClusterPolicy checked against the CRD's field names (not the
chart's), OLM detected before anything is applied, and one connection for every task.

No registry ships the ClusterPolicy CRD: tests/fixtures/gpu-operator/clusterpolicy-upgradepolicy.schema.json
records the driver.upgradePolicy fields of the CRD (v25.3.4) as a closed schema."""
import json
import os

import jsonschema
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.cluster_access import (
    access_problem, connection, helm_connection, helm_problem, olm_problem, retired)
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.gpu_operator import (
    cluster_policy_objects, operator_values)
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight

SCHEMA = json.load(open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "gpu-operator",
                                     "clusterpolicy-upgradepolicy.schema.json")))


def plan(extra=None):
    errors, _w, p = run_preflight({"platform": "openshift", "cluster_name": "ocp", "addons_mode": "operator",
                                   "pools": [{"name": "a", "gpu_type": "a100-80gb", "gpus_per_node": 8}],
                                   "apply": False, "extra": extra or {}})
    assert not errors, errors
    return p


@pytest.mark.parametrize("policy", [{}, {"gpuPodDeletion": {"force": True}, "drain": {"enable": True, "podSelector": "a=b"}},
                                    {"waitForCompletion": {"timeoutSeconds": 600}}])
def test_cluster_policy_upgrade_policy_uses_the_crd_field_names(policy):
    extra = {"gpu_operator_upgrade_policy": policy}
    objs = cluster_policy_objects(plan(extra), extra)
    cp = [o for o in objs if o["kind"] == "ClusterPolicy"][0]
    up = cp["spec"]["driver"]["upgradePolicy"]
    jsonschema.validate(up, SCHEMA)
    assert "podDeletion" in up and "gpuPodDeletion" not in up
    # the Helm values keep the chart's name
    assert "gpuPodDeletion" in operator_values(plan(extra), extra)["driver"]["upgradePolicy"]


def test_the_recorded_schema_refuses_the_chart_key():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"gpuPodDeletion": {"force": False}}, SCHEMA)


@pytest.mark.parametrize("found,expect", [
    (["operatorgroups.operators.coreos.com", "subscriptions.operators.coreos.com"], ""),
    ([], "serves no operatorgroups.operators.coreos.com, subscriptions.operators.coreos.com (OLM is not installed)"),
    (["subscriptions.operators.coreos.com"], "serves no operatorgroups.operators.coreos.com (OLM"),
])
def test_olm_is_detected_before_anything_is_applied(found, expect):
    got = olm_problem(found)
    assert (expect in got and "This step applied nothing" in got) if expect else got == ""


@pytest.mark.parametrize("values,expect", [
    ({}, {}),
    ({"gpufleet_k8s_kubeconfig": "/k", "gpufleet_k8s_context": "prod", "gpufleet_k8s_host": ""},
     {"kubeconfig": "/k", "context": "prod"}),
    ({"gpufleet_k8s_host": "https://api:6443", "gpufleet_k8s_api_key": "t", "gpufleet_k8s_ca_cert": "/ca",
      "gpufleet_k8s_validate_certs": True}, {"host": "https://api:6443", "api_key": "t", "ca_cert": "/ca"}),
    ({"gpufleet_k8s_validate_certs": False}, {"validate_certs": False}),
])
def test_one_connection_dict(values, expect):
    assert connection(values) == expect
    assert helm_connection(values) == dict(expect, binary_path="helm")


def test_retired_variables_name_their_replacement():
    assert retired({"k8s_apply_kubeconfig": "", "gpu_validate_context": "x"}) == [
        "gpu_validate_context: replaced by gpufleet_k8s_context (one connection for every task); move the value there"]


@pytest.mark.parametrize("error,cause", [
    ("Could not create API client: Invalid kube-config file. No configuration found.", "no usable kubeconfig"),
    ("HTTPSConnectionPool(host='api', port=6443): Max retries exceeded with url: /version (Caused by "
     "SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed')))",
     "not trusted (set gpufleet_k8s_ca_cert)"),
    ("(401)\nReason: Unauthorized", "refused the credentials"),
    ("HTTPSConnectionPool(host='nope.invalid', port=443): Max retries exceeded (Caused by NameResolutionError("
     "\"Failed to resolve 'nope.invalid' ([Errno -2] Name or service not known)\"))", "does not resolve"),
    ("[Errno 2] No such file or directory: '/etc/k8s/ca.crt'", "a file the connection names is not there"),
])
def test_access_problem_names_the_cause(error, cause):
    msg = access_problem(error, {"host": "https://api:6443"})
    assert cause in msg and "(API server https://api:6443)" in msg and "This step applied nothing" in msg


def test_helm_problem():
    assert helm_problem({"rc": 0}, "helm") == ""
    msg = helm_problem({"failed": True, "msg": "[Errno 2] No such file or directory: b'helm'", "rc": 2}, "helm")
    assert "gpufleet_helm_binary" in msg and "No such file" in msg


DS = {"metadata": {"name": "nvidia-device-plugin", "namespace": "nvidia-device-plugin"}}
NFD_DS = {"metadata": {"name": "nfd-worker", "namespace": "node-feature-discovery"}}
CP = {"metadata": {"name": "gpu-cluster-policy"}}


@pytest.mark.parametrize("mode,ds,cp,expect", [
    ("operator", [], [], ""),
    ("operator", [DS], [], "still run (DaemonSet nvidia-device-plugin/nvidia-device-plugin)"),
    ("operator", [DS, NFD_DS], [], "-e nvidia_device_plugin_nfd_enabled=true"),
    ("standalone", [DS], [], ""),
    ("standalone", [], [CP], "the GPU Operator runs (ClusterPolicy gpu-cluster-policy)"),
    ("operator", [], [CP], ""),
])
def test_mode_switch_refuses_two_device_plugins(mode, ds, cp, expect):
    from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.mode_switch import switch_problem
    got = switch_problem(mode, ds, cp, "inventories/prod")
    if expect:
        assert expect in got and "This step applied nothing" in got and "-i inventories/prod" in got
    else:
        assert got == ""
