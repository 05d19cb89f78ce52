"""Node ownership in apply mode on a real control plane (tests/helpers/controlplane.py): the real playbooks, the real
kubernetes client, a real kube-apiserver storing the Nodes, and kube-controller-manager adding its own taints
(the cordon taint). KWOK keeps the Nodes Ready in place of kubelets. Every check reads the Node back
through the API.
"""
import json

import pytest

from ansible_run import flat, recap, run_site
from cp_nodes import gpufleet_traces, inventory, provision

CORDON = "node.kubernetes.io/unschedulable"
USER_TAINT = {"key": "dedicated", "value": "ml-team", "effect": "PreferNoSchedule"}


def versions(cp):
    return {n["metadata"]["name"]: n["metadata"]["resourceVersion"] for n in cp.items("/api/v1/nodes")}


def cordon(cp, name):
    cp.merge_patch("/api/v1/nodes/" + name, {"spec": {"unschedulable": True}})
    # kube-controller-manager (node lifecycle controller) adds the taint, as in a real cluster
    cp.wait(lambda: any(t["key"] == CORDON for t in cp.node(name)["spec"].get("taints") or []), 30,
            "the controller's cordon taint on " + name)


@pytest.fixture(scope="module")
def nodes(control_plane):
    control_plane.add_node("gpu-a1", gpu=56, labels={"team": "ml"}, taints=[USER_TAINT])
    control_plane.add_node("gpu-a2", gpu=56)
    control_plane.add_node("gpu-a3", gpu=56)
    control_plane.add_node("cpu-1")
    return control_plane


def test_labels_and_taints_kept_cordon_kept_dropped_host_cleaned_absent_leaves_nothing(nodes, tmp_path):
    cp = nodes
    inv = inventory(tmp_path, {"a1.example.internal": "gpu-a1", "a2.example.internal": "gpu-a2"})

    # check mode with diff: shows each Node change, writes nothing
    before = versions(cp)
    rc, out = provision(cp, tmp_path, inv, "--check", "--diff")
    assert rc == 0, out[-4000:]
    assert "Node/gpu-a1" in out and "+  - nvidia.com/gpu=present:NoSchedule" in out, out[-4000:]
    assert versions(cp) == before

    rc, out = provision(cp, tmp_path, inv)
    assert rc == 0, out[-4000:]
    a1 = cp.node("gpu-a1")
    labels = a1["metadata"]["labels"]
    assert labels["gpufleet.io/pool"] == "train-a100" and labels["gpufleet.io/workload"] == "training"
    assert labels["team"] == "ml"  # the user's label
    assert USER_TAINT in a1["spec"]["taints"]  # the user's taint, as it was
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in a1["spec"]["taints"]
    assert json.loads(a1["metadata"]["annotations"]["gpufleet.io/owned"])["labels"]["gpufleet.io/pool"] == "train-a100"
    assert gpufleet_traces(cp.node("gpu-a3")) == ({}, [], {}) and gpufleet_traces(cp.node("cpu-1")) == ({}, [], {})

    # the second run: changed=0, no write (resourceVersions unchanged)
    before = versions(cp)
    rc, out = provision(cp, tmp_path, inv)
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]
    assert versions(cp) == before

    # the cluster cordons gpu-a2: gpufleet's run keeps the cordon and the controller's taint
    cordon(cp, "gpu-a2")
    rc, out = provision(cp, tmp_path, inv)
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]
    a2 = cp.node("gpu-a2")
    assert a2["spec"]["unschedulable"] is True and any(t["key"] == CORDON for t in a2["spec"]["taints"])

    # host a2 dropped from the inventory: gpu-a2 loses gpufleet's labels, taint and record; the cordon stays
    rc, out = provision(cp, tmp_path, inventory(tmp_path, {"a1.example.internal": "gpu-a1"}, "inv-dropped"))
    assert rc == 0, out[-3000:]
    a2 = cp.node("gpu-a2")
    assert gpufleet_traces(a2) == ({}, [], {})
    assert a2["spec"]["unschedulable"] is True and [t["key"] for t in a2["spec"]["taints"]] == [CORDON]

    # absent: gpufleet's labels, taints and annotation go; every Node stays, the user's things stay
    rc, out = provision(cp, tmp_path, inv, "-e", "gpu_pools_state=absent")
    assert rc == 0, out[-3000:]
    assert sorted(versions(cp)) == ["cpu-1", "gpu-a1", "gpu-a2", "gpu-a3"]
    for name in ("gpu-a1", "gpu-a2"):
        assert gpufleet_traces(cp.node(name)) == ({}, [], {}), cp.node(name)["metadata"]
    a1 = cp.node("gpu-a1")
    assert a1["metadata"]["labels"]["team"] == "ml" and a1["spec"]["taints"] == [USER_TAINT]
    # and absent again: nothing to do
    rc, out = provision(cp, tmp_path, inv, "-e", "gpu_pools_state=absent")
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]


def test_host_without_a_node_is_refused_by_name_and_nothing_is_written(nodes, tmp_path):
    cp = nodes
    before = versions(cp)
    rc, out = provision(cp, tmp_path, inventory(tmp_path, {"a3.example.internal": "gpu-a3",
                                                           "a9.example.internal": "gpu-a9"}))
    text = flat(out)
    assert rc == 2, out[-3000:]
    assert "host a9.example.internal: no Node named 'gpu-a9' in the cluster" in text, text[-3000:]
    assert "Nothing was changed" in text
    assert versions(cp) == before
    assert not cp.exists("/api/v1/nodes/gpu-a9")  # never created


def test_operator_mode_without_helm_stops_before_anything(nodes, tmp_path):
    rc, out = run_site(tmp_path / "example", "-e", "gpufleet_apply=true", "-e", "gpufleet_addons_mode=operator",
                       "-e", "gpufleet_k8s_kubeconfig=%s" % nodes.kubeconfig,
                       "-e", "gpufleet_helm_binary=%s" % (tmp_path / "no-helm"), playbook="playbooks/cluster.yml")
    text = flat(out)
    assert rc == 2, out[-3000:]
    assert "the GPU Operator is installed with helm, but '%s' does not run" % (tmp_path / "no-helm") in text, text[-2000:]
    assert not (tmp_path / "example").exists()
    assert not nodes.exists("/api/v1/namespaces/gpu-operator")


def test_openshift_without_olm_stops_before_applying_namespaces(nodes, tmp_path):
    """The real server serves no operators.coreos.com CRDs: the OpenShift preset stops before it applies."""
    before = {n["metadata"]["name"] for n in nodes.items("/api/v1/namespaces")}
    rc, out = run_site(tmp_path / "openshift", "-e", "gpufleet_apply=true",
                       "-e", "gpufleet_k8s_kubeconfig=%s" % nodes.kubeconfig, playbook="playbooks/cluster.yml",
                       inventory="inventories/openshift")
    text = flat(out)
    assert rc == 2, out[-3000:]
    assert "serves no operatorgroups.operators.coreos.com, subscriptions.operators.coreos.com (OLM is not " \
           "installed). This step applied nothing" in text, text[-3000:]
    assert {n["metadata"]["name"] for n in nodes.items("/api/v1/namespaces")} == before


def test_a_label_and_taint_set_by_hand_before_gpufleet_stay_the_users(nodes, tmp_path):
    """Issue 39: a taint the user set by hand before gpufleet's first run, with the pool's key, value and effect,
    was recorded as gpufleet's and deleted by gpu_pools_state=absent. Now it stays the user's, as does a label
    set to the pool's value."""
    cp = nodes
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    cp.add_node("gpu-u1", gpu=56, labels={"gpufleet.io/workload": "training"}, taints=[gpu_taint])
    inv = inventory(tmp_path, {"u1.example.internal": "gpu-u1"}, "inv-user")
    rc, out = provision(cp, tmp_path, inv)
    assert rc == 0, out[-4000:]
    assert "taint nvidia.com/gpu=present:NoSchedule was there before gpufleet set it" in flat(out), out[-4000:]
    u1 = cp.node("gpu-u1")
    owned = json.loads(u1["metadata"]["annotations"]["gpufleet.io/owned"])
    assert owned["taints"] == [] and "gpufleet.io/workload" not in owned["labels"], owned
    assert owned["labels"]["gpufleet.io/pool"] == "train-a100"
    rc, out = provision(cp, tmp_path, inv, "-e", "gpu_pools_state=absent")
    assert rc == 0, out[-3000:]
    u1 = cp.node("gpu-u1")
    assert gpu_taint in u1["spec"]["taints"], u1["spec"]
    assert u1["metadata"]["labels"]["gpufleet.io/workload"] == "training"
    assert "gpufleet.io/pool" not in u1["metadata"]["labels"]
