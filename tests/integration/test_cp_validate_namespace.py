"""Issue 30 item 5, the validate stage on a real control plane (tests/helpers/controlplane.py): the stage creates its own
namespace and deletes it with everything in it when it ends, so it refuses, before creating anything, a
gpu_validate_namespace that exists and that it did not create (a user's namespace with the user's ConfigMap
stays as it was), and reuses one an earlier run of the stage left behind (annotated gpufleet.io/created-by),
deleting it at the end as always. KWOK stands in for the kubelet and completes the Job pods.
"""

import pytest

from ansible_run import flat, run_site
from inventories import one_t4_pool

USER_NS = "team-v"


@pytest.fixture(scope="module")
def cluster(control_plane, tmp_path_factory):
    inv = tmp_path_factory.mktemp("validate-ns") / "inv"
    one_t4_pool(inv)
    control_plane.add_node("gpu-a1", gpu=1, labels={"gpufleet.io/pool": "plain"},
                           taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    control_plane.add_node("cpu-1")
    return control_plane, str(inv)


def validate(cp, inv, tmp, *extra):
    return run_site(tmp / "b", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                    "-e", '{"gpu_validate_timeout": 120, "gpu_validate_metrics": false}', *extra,
                    playbook="playbooks/validate.yml", inventory=inv)


def test_a_users_namespace_is_refused_before_anything_is_created(cluster, tmp_path):
    cp, inv = cluster
    cp.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": USER_NS, "labels": {"owner": "team"}}})
    cp.create("/api/v1/namespaces/%s/configmaps" % USER_NS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "user-settings", "namespace": USER_NS}, "data": {"keep": "me"}})
    before = cp.get("/api/v1/namespaces/" + USER_NS)["metadata"]

    rc, out = validate(cp, inv, tmp_path, "-e", "gpu_validate_namespace=" + USER_NS)
    text = flat(out)
    assert rc != 0, text[-3000:]
    assert "gpu_validate_namespace: namespace 'team-v' exists and gpufleet did not create it" in text, text[-3000:]
    assert "use a name that does not exist (e.g. the default gpufleet-validate)" in text
    live = cp.get("/api/v1/namespaces/" + USER_NS)["metadata"]
    assert not live.get("deletionTimestamp"), "the user's namespace is being deleted"
    assert live["resourceVersion"] == before["resourceVersion"]  # not relabelled restricted, not annotated
    assert cp.get("/api/v1/namespaces/%s/configmaps/user-settings" % USER_NS)["data"] == {"keep": "me"}
    assert cp.items("/apis/batch/v1/namespaces/%s/jobs" % USER_NS) == []


def test_a_namespace_an_earlier_run_left_is_reused_and_removed(cluster, tmp_path):
    cp, inv = cluster
    # what a run stopped before its cleanup leaves: the stage's namespace, annotated
    cp.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "gpufleet-validate", "annotations": {"gpufleet.io/created-by": "validate/gpu-validate"},
        "labels": {"pod-security.kubernetes.io/enforce": "restricted", "app.kubernetes.io/managed-by": "gpufleet"}}})
    rc, out = validate(cp, inv, tmp_path)
    assert rc == 0, flat(out)[-3000:]
    assert "TASK [gpu_validate : Wait for every validation Job" in out
    cp.wait(lambda: not cp.exists("/api/v1/namespaces/gpufleet-validate"), 60, "gpufleet-validate removed")
