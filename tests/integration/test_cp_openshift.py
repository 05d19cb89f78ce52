"""The OpenShift path on a real control plane (tests/helpers/controlplane.py): OLM's CRDs are served (as on an
OpenShift cluster), the operators' own CRDs are not yet. The cluster stage applies the Namespaces,
OperatorGroups and Subscriptions, then waits; when "OLM" installs the operators - here the test creates
their real CRDs (../shared/crds) some seconds after the Subscriptions appear, the part OLM plays - the stage
applies the NodeFeatureDiscovery instance and the ClusterPolicy, which the real API server validates
against those CRDs. No OLM runs here: nothing reconciles the Subscriptions (stand-in: the test itself).
"""
import time

import pytest

from controlplane import shared_crds_or_skip
from ansible_run import popen, recap, run_site

INVENTORY = "inventories/openshift"
OLM_CRDS = ["operators.coreos.com_operatorgroups.yaml", "operators.coreos.com_subscriptions.yaml"]
OPERATOR_CRDS = ["nfd.openshift.io_nodefeaturediscoveries.yaml", "nvidia.com_clusterpolicies.yaml"]
SUBSCRIPTIONS = "/apis/operators.coreos.com/v1alpha1/subscriptions"


@pytest.fixture(scope="module")
def cluster(control_plane):
    shared_crds_or_skip(pytest)
    control_plane.install_crds(OLM_CRDS)
    for name in ("h100-worker-01.ocp.example.internal", "h100-worker-02.ocp.example.internal"):
        control_plane.add_node(name, gpu=56)
    control_plane.add_node("l40s-worker-01.ocp.example.internal", gpu=8)
    return control_plane


def extra(cp):
    return ["-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig]


def test_waits_for_the_operator_crds_then_applies_nfd_and_the_cluster_policy(cluster, tmp_path):
    cp = cluster
    log = tmp_path / "cluster.log"
    # output to a file, not a pipe nobody reads while the stage waits (a full pipe would block it)
    with open(log, "w") as out:
        proc = popen("ansible-playbook", "playbooks/cluster.yml", "-i", INVENTORY,
                     "-e", "gpufleet_build_dir=%s" % (tmp_path / "build"), *extra(cp), stdout=out)
        try:
            # (the wait task's banner is printed only when it ends: skipped tasks are not shown)
            cp.wait(lambda: proc.poll() is not None or len(cp.items(SUBSCRIPTIONS)) >= 2, 180, "the Subscriptions")
            assert proc.poll() is None, log.read_text()[-5000:]
            subs = sorted(s["spec"]["name"] for s in cp.items(SUBSCRIPTIONS))
            assert subs == ["gpu-operator-certified", "nfd"], subs
            # the stage waits: no ClusterPolicy can exist yet, and it has not given up
            time.sleep(10)
            assert proc.poll() is None, log.read_text()[-5000:]
            cp.install_crds(OPERATOR_CRDS)  # what OLM does when it installs the operators
            rc = proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    output = log.read_text()
    assert rc == 0, output[-5000:]
    assert "Wait until OLM has installed the NFD and ClusterPolicy APIs" in output
    (policy,) = cp.items("/apis/nvidia.com/v1/clusterpolicies")
    assert policy["spec"]["mig"]["strategy"] == "mixed"
    # CDI on (the operator's toolkit configures CRI-O). gpufleet no longer sets the deprecated defaultRuntime
    # (the operator detects the runtime); the CRD's own default (docker) fills the unused field.
    assert policy["spec"]["cdi"]["enabled"] is True
    assert policy["spec"]["operator"].get("defaultRuntime", "docker") == "docker"
    nfd = cp.items("/apis/nfd.openshift.io/v1/nodefeaturediscoveries")
    assert len(nfd) == 1, nfd
    # a second run finds everything in place: nothing changes
    rc, output = run_site(tmp_path / "build", *extra(cp), playbook="playbooks/cluster.yml", inventory=INVENTORY)
    assert rc == 0, output[-5000:]
    assert recap(output)["changed"] == 0, output[-5000:]


def test_manual_approval_subscriptions_are_accepted_by_the_subscription_crd(cluster):
    """Issue 30 item 7: with gpu_operator_olm_approval Manual the rendered Subscriptions (startingCSV
    pinned, NFD on its channel) are accepted by the real Subscription CRD and keep those fields (a
    field the schema does not know would be pruned). Applied in a namespace of this test's own, so
    the stage's namespaces stay untouched."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.gpu_operator import operator_objects
    from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
    plan = {"platform": "openshift", "addons_mode": "operator", "cluster_name": "ocp", "apply": True,
            "pools": normalize_pools([{"name": "p", "gpu_type": "h100-80gb"}])}
    subs = [o for o in operator_objects(plan, {"gpu_operator_olm_approval": "Manual"}) if o["kind"] == "Subscription"]
    assert len(subs) == 2
    ns = "olm-manual-approval-test"
    cluster.apply("/api/v1/namespaces/" + ns, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    stored = {}
    for sub in subs:
        sub = dict(sub, metadata=dict(sub["metadata"], namespace=ns))
        stored[sub["spec"]["name"]] = cluster.apply(cluster.object_path(sub), sub)["spec"]
    assert stored["gpu-operator-certified"]["installPlanApproval"] == "Manual"
    assert stored["gpu-operator-certified"]["startingCSV"] == "gpu-operator-certified.v26.7.0"
    assert stored["gpu-operator-certified"]["channel"] == "v26.7"
    assert stored["nfd"]["installPlanApproval"] == "Manual" and stored["nfd"]["channel"] == "stable"
