"""GPU health remediation (playbooks/remediate.yml) on the real control plane (tests/helpers/controlplane.py).

The GPU nodes are KWOK nodes (STAND-INS for the kubelets): a GPU goes unhealthy the way the device plugin
says so, by the Node's ``nvidia.com/gpu`` allocatable dropping below its capacity, written through the
status subresource. Taints, cordons, evictions, PodDisruptionBudgets and the rescheduling of evicted pods
are the real API server, controllers and scheduler.

The metrics come from the real Prometheus (Debian's ``prometheus`` package) scraping a STAND-IN exporter: a
small HTTP server serving DCGM metric lines generated in the pinned dcgm-exporter's format
(tests/fixtures/dcgm/, tests/helpers/dcgm_fixtures.py); remediation queries them through Prometheus's HTTP API.

The tests run in order and share the cluster: dry run, act within the limits, the next run changes
nothing, the limits with more nodes unhealthy, the way back, a refused policy, forged records, then the metrics.
"""
import json
import os
import time

import pytest

import prom_standin
from ansible_run import ROOT, recap, run_site
from cp_nodes import unreachable_pool
from prom_standin import binary_or_skip

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "dcgm")
TAINT = "gpufleet.io/gpu-unhealthy"
RECORD = "gpufleet.io/gpu-remediation"
HOSTS = ("h1", "h2", "h3", "h4")
POOL = ("gpufleet_platform: kubeadm\ngpufleet_cluster_name: remediate\ngpufleet_addons_mode: standalone\n"
        "gpufleet_gpu_pools:\n  - {name: train, gpu_type: l4, gpus_per_node: 2, node_group: gpu_pool_train, "
        "min_nodes: 2, max_nodes: 4}\n")


@pytest.fixture(scope="module")
def cluster(control_plane, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("remediate")
    # remediation reads nvidia-smi on the hosts that answer, and these do not (the cluster's and the metrics'
    # evidence still count)
    inv = unreachable_pool(control_plane, tmp / "inv", POOL, "gpu_pool_train", HOSTS, gpu=2,
                           labels={"gpufleet.io/pool": "train"},
                           taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    return control_plane, tmp, inv


def remediate(cluster, *extra):
    cp, tmp, inv = cluster
    return run_site(tmp / "build", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                    *extra, playbook="playbooks/remediate.yml", inventory=inv)


def act(*extra):
    return ("-e", "gpu_remediation_dry_run=false") + extra


def set_gpus(cp, name, allocatable):
    cp.request("PATCH", "/api/v1/nodes/%s/status" % name, {"status": {"allocatable": {"nvidia.com/gpu": str(allocatable)}}},
               content_type="application/merge-patch+json")
    cp.wait(lambda: cp.node(name)["status"]["allocatable"]["nvidia.com/gpu"] == str(allocatable), 10,
            "%s allocatable %s" % (name, allocatable))


def state(cp, name):
    node = cp.node(name)
    return {"tainted": any(t["key"] == TAINT for t in node["spec"].get("taints") or []),
            "cordoned": bool(node["spec"].get("unschedulable")),
            "record": json.loads(node["metadata"].get("annotations", {}).get(RECORD, "null")),
            "taints": node["spec"].get("taints") or []}


def out_of_service(cp):
    return sorted(h for h in HOSTS if state(cp, "gpu-" + h)["tainted"] or state(cp, "gpu-" + h)["cordoned"])


def report(cluster):
    with open(os.path.join(str(cluster[1] / "build"), "remediation", "report.json")) as handle:
        return dict((n["name"], n) for n in json.load(handle)["nodes"])


def workload(cp, name, node):
    """A Deployment with one replica pinned to ``node`` by preference (it may move) under a budget
    that allows one disruption."""
    if not cp.exists("/api/v1/namespaces/ml"):
        cp.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    labels = {"app": name}
    cp.create("/apis/apps/v1/namespaces/ml/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ml"},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                         {"weight": 100, "preference": {"matchExpressions": [
                             {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}}]}},
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                     "containers": [{"name": "app", "image": "registry.example/train:1",
                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}})
    cp.create("/apis/policy/v1/namespaces/ml/poddisruptionbudgets", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "ml"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}}})

    def running():
        return [p for p in cp.items("/api/v1/namespaces/ml/pods?labelSelector=app%3D" + name)
                if p["spec"].get("nodeName") == node and p["status"].get("phase") == "Running"]
    return cp.wait(running, 60, "%s running on %s" % (name, node))[0]["metadata"]["name"]


def test_dry_run_reports_and_changes_nothing(cluster):
    cp = cluster[0]
    set_gpus(cp, "gpu-h1", 1)
    before = dict((h, state(cp, "gpu-" + h)) for h in HOSTS)
    rc, out = remediate(cluster)
    assert rc == 0, out[-3000:]
    assert "Read the GPUs with one nvidia-smi call" in out and "Connection refused" in out, out[:5000]  # tried, went on
    assert dict((h, state(cp, "gpu-" + h)) for h in HOSTS) == before
    rep = report(cluster)
    assert rep["gpu-h1"]["decision"] == "act" and rep["gpu-h1"]["state"] == "unhealthy"
    assert rep["gpu-h1"]["findings"][0]["why"] == \
        "nvidia.com/gpu allocatable 1 of capacity 2: the device plugin marked 1 unhealthy"
    assert rep["gpu-h1"]["done"][:3] == ["record why in annotation gpufleet.io/gpu-remediation",
                                         "taint gpufleet.io/gpu-unhealthy:NoSchedule", "cordon"]
    assert "Dry run (nothing changed)" in out
    # --check with the dry run off changes nothing either
    rc, out = remediate(cluster, *act("--check"))
    assert rc == 0, out[-3000:]
    assert dict((h, state(cp, "gpu-" + h)) for h in HOSTS) == before


def test_unhealthy_node_is_tainted_cordoned_and_drained_within_max_nodes(cluster):
    cp = cluster[0]
    pod = workload(cp, "trainer", "gpu-h1")
    set_gpus(cp, "gpu-h2", 1)  # two unhealthy now, max_nodes 1 (the default)
    rc, out = remediate(cluster, *act())
    assert rc == 0, out[-3000:]
    h1 = state(cp, "gpu-h1")
    assert h1["tainted"] and h1["cordoned"]
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in h1["taints"]  # kept
    assert h1["record"]["tainted"] is True and h1["record"]["cordoned"] is True
    assert h1["record"]["reasons"] == ["nvidia.com/gpu allocatable 1 of capacity 2: the device plugin marked 1 unhealthy"]
    # drained: the pod was evicted, and its replacement runs elsewhere
    assert not cp.exists("/api/v1/namespaces/ml/pods/" + pod)
    moved = cp.wait(lambda: [p for p in cp.items("/api/v1/namespaces/ml/pods?labelSelector=app%3Dtrainer")
                             if p["status"].get("phase") == "Running"], 60, "trainer running again")
    assert moved[0]["spec"]["nodeName"] != "gpu-h1"
    # never more than allowed at once: h2 waits
    assert out_of_service(cp) == ["h1"]
    rep = report(cluster)
    assert rep["gpu-h2"]["decision"] == "held"
    assert rep["gpu-h2"]["held_because"].startswith("at most 1 node(s) at once in the cluster (gpu_remediation_max_nodes)")
    assert any(step.startswith("drained: evicted ml/" + pod) for step in rep["gpu-h1"]["done"])


def module_task(out):
    return out.split("Find unhealthy GPU nodes and remediate them within the policy's limits] ")[1].split("TASK [")[0]


def test_next_run_changes_nothing(cluster):
    cp = cluster[0]
    before = dict((h, state(cp, "gpu-" + h)) for h in HOSTS)
    rc, out = remediate(cluster, *act())
    assert rc == 0, out[-3000:]
    # the cluster is left as it was (the report file says the node is now under remediation)
    assert "ok: [localhost]" in module_task(out), out[-3000:]
    assert dict((h, state(cp, "gpu-" + h)) for h in HOSTS) == before
    rc, out = remediate(cluster, *act())
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]


def test_limits_hold_with_more_nodes_unhealthy(cluster):
    cp = cluster[0]
    set_gpus(cp, "gpu-h3", 0)
    # room for every node by count and share, but the pool keeps min_nodes 2 schedulable: one more only
    rc, out = remediate(cluster, *act("-e", "gpu_remediation_max_nodes=4", "-e", "gpu_remediation_max_percent=100"))
    assert rc == 0, out[-3000:]
    assert len(out_of_service(cp)) == 2 and "h1" in out_of_service(cp)
    held = [n for n in report(cluster).values() if n["decision"] == "held"]
    assert len(held) == 1 and held[0]["held_because"].startswith(
        "pool train would drop below its minimum of 2 schedulable node(s) (min_nodes); 2 schedulable now")
    # a smaller share holds the rest: 25% of 4 nodes is 1, and 2 are out already
    set_gpus(cp, "gpu-h4", 1)
    rc, out = remediate(cluster, *act("-e", "gpu_remediation_max_nodes=4", "-e", "gpu_remediation_max_percent=25"))
    assert rc == 0, out[-3000:]
    assert len(out_of_service(cp)) == 2
    assert all(n["held_because"].startswith("at most 25% of pool train at once")
               for n in report(cluster).values() if n["decision"] == "held")


def test_healthy_again_is_untainted_and_uncordoned(cluster):
    cp = cluster[0]
    remediated = ["gpu-" + h for h in out_of_service(cp)]
    assert len(remediated) == 2
    for host in HOSTS:
        set_gpus(cp, "gpu-" + host, 2)
    rc, out = remediate(cluster, *act())
    assert rc == 0, out[-3000:]
    for host in HOSTS:
        s = state(cp, "gpu-" + host)
        assert not s["tainted"] and not s["cordoned"] and s["record"] is None, (host, s)
        # the pool's own taint (gpufleet.io/owned, the pools stage) stays
        assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in s["taints"]
    assert sorted(n for n, e in report(cluster).items() if e["decision"] == "restore") == remediated
    rc, out = remediate(cluster, *act())
    assert rc == 0 and "ok: [localhost]" in module_task(out), out[-3000:]


def test_bad_policy_is_refused_before_anything_changes(cluster):
    cp = cluster[0]
    set_gpus(cp, "gpu-h1", 1)
    rc, out = remediate(cluster, *act("-e", "gpu_remediation_max_percent=0"))
    assert rc == 2
    assert "gpu_remediation_max_percent: 0 is not allowed; use a number above 0 and at most 100" in out
    assert not state(cp, "gpu-h1")["tainted"]
    rc, out = remediate(cluster, *act("-e", '{"gpu_remediation_actions": ["reboot"]}'))
    assert rc == 2 and "gpu_remediation_actions" in out and "reboot" in out
    assert not state(cp, "gpu-h1")["tainted"]
    set_gpus(cp, "gpu-h1", 2)


def test_forged_records_steer_nothing(cluster):
    """Issue 39: any record annotation made an unhealthy node `continue` past every limit, and a stale one on a node
    an admin cordoned made gpufleet uncordon it. Three unhealthy nodes carry forged records (written here as any
    agent allowed to patch Nodes could), a healthy node an admin cordoned carries one too."""
    cp = cluster[0]
    forged = json.dumps({"since": "2026-01-01T00:00:00Z", "reasons": ["forged"], "tainted": True, "cordoned": True,
                         "replaced": ""})
    for host in ("h1", "h2", "h3", "h4"):
        cp.merge_patch("/api/v1/nodes/gpu-" + host, {"metadata": {"annotations": {RECORD: forged}}})
    cp.merge_patch("/api/v1/nodes/gpu-h4", {"spec": {"unschedulable": True}})   # the admin's cordon
    for host in ("h1", "h2", "h3"):
        set_gpus(cp, "gpu-" + host, 1)
    rc, out = remediate(cluster, *act("-e", "gpu_remediation_max_nodes=1", "-e", "gpu_remediation_max_percent=100"))
    assert rc == 0, out[-3000:]
    rep = report(cluster)
    # one node within max_nodes 1, as without the records; its record is now gpufleet's, signed
    assert [h for h in ("h1", "h2", "h3") if state(cp, "gpu-" + h)["tainted"]] == ["h1"], rep
    assert "mac" in state(cp, "gpu-h1")["record"] and state(cp, "gpu-h1")["record"]["reasons"] != ["forged"]
    assert [rep["gpu-" + h]["decision"] for h in ("h1", "h2", "h3")] == ["act", "held", "held"]
    assert all("MAC is not gpufleet's" in rep["gpu-" + h]["notes"][0] for h in ("h2", "h3", "h4"))
    # the admin's cordon stays, and the forged record is not read as gpufleet's
    assert state(cp, "gpu-h4")["cordoned"] and rep["gpu-h4"]["decision"] == "none"
    assert state(cp, "gpu-h2")["record"]["reasons"] == ["forged"]   # left as it is, not acted on

    # clean up: the records removed, the cordon lifted by the admin; gpufleet gives its own node back
    for host in ("h2", "h3", "h4"):
        cp.merge_patch("/api/v1/nodes/gpu-" + host, {"metadata": {"annotations": {RECORD: None}}})
    cp.merge_patch("/api/v1/nodes/gpu-h4", {"spec": {"unschedulable": None}})
    for host in ("h1", "h2", "h3"):
        set_gpus(cp, "gpu-" + host, 2)
    rc, out = remediate(cluster, *act())
    assert rc == 0, out[-3000:]
    assert out_of_service(cp) == [] and report(cluster)["gpu-h1"]["decision"] == "restore"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """The real Prometheus scraping a STAND-IN of the pinned dcgm-exporter (tests/helpers/prom_standin.py) serving
    the generated tests/fixtures/dcgm/unhealthy.prom: the node is in the exporter's ``hostname`` label only (the
    job adds no ``kubernetes_node``)."""
    binary = binary_or_skip(pytest)
    with prom_standin.prometheus(binary, tmp_path_factory.mktemp("prometheus"),
                                 [(os.path.join(FIXTURES, "unhealthy.prom"), {})]) as (url, exporters):
        yield url, exporters[0]


def test_xid_from_prometheus_is_acted_on_and_an_application_xid_is_not(cluster, prometheus):
    cp = cluster[0]
    url, exporter = prometheus
    metrics = ("-e", "gpu_remediation_prometheus_url=" + url, "-e", "gpu_remediation_window=5s")
    rc, out = remediate(cluster, *act(*metrics))
    assert rc == 0, out[-3000:]
    rep = report(cluster)
    assert rep["gpu-h4"]["decision"] == "act"
    assert rep["gpu-h4"]["findings"][0]["why"].startswith("GPU 0: XID 79 (GPU has fallen off the bus")
    assert rep["gpu-h3"]["state"] == "watch" and rep["gpu-h3"]["decision"] == "none"
    assert rep["gpu-h3"]["findings"][0]["verdict"] == "application"
    assert out_of_service(cp) == ["h4"]
    assert state(cp, "gpu-h4")["record"]["reasons"][0].startswith("GPU 0: XID 79")
    # the exporter reports no XID any more; once the window has passed the node is given back
    exporter.path = os.path.join(FIXTURES, "healthy.prom")
    time.sleep(8)
    rc, out = remediate(cluster, *act(*metrics))
    assert rc == 0, out[-3000:]
    assert report(cluster)["gpu-h4"]["decision"] == "restore"
    assert out_of_service(cp) == []


EKS = ("gpufleet_platform: eks\ngpufleet_cluster_name: remediate-eks\ngpufleet_addons_mode: standalone\n"
       "gpu_pools_region: us-east-1\ngpu_pools_eks_kubernetes_version: \"1.33\"\n"
       "gpu_pools_eks_node_role: KarpenterNodeRole-test\n"
       "gpufleet_gpu_pools:\n  - {name: infer, gpu_type: l4, gpus_per_node: 1, max_nodes: 4, zones: [us-east-1a]}\n")


def test_karpenter_nodeclaim_of_an_unhealthy_node_is_deleted(cluster, tmp_path):
    """EKS: replacing a node is deleting its NodeClaim (Karpenter, not running here, would launch a new one).
    The NodeClaim CRD is Karpenter's own, from the AWS provider's Go module (tests/helpers/karpenter.py)."""
    from karpenter import module_dirs
    cp = cluster[0]
    cp.install_crds(["karpenter.sh_nodeclaims.yaml"], folder=os.path.join(module_dirs()["aws"], "pkg", "apis", "crds"))
    inv = tmp_path / "inv"
    (inv / "group_vars" / "all").mkdir(parents=True)
    (inv / "group_vars" / "all" / "gpufleet.yml").write_text(EKS)
    (inv / "hosts.yml").write_text(
        "all:\n  children:\n    gpufleet_controller:\n      hosts:\n        localhost:\n"
        "          ansible_connection: local\n          ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n")
    for name in ("ip-10-0-0-1", "ip-10-0-0-2", "ip-10-0-0-3"):
        cp.add_node(name, gpu=1, labels={"karpenter.sh/nodepool": "infer"})
        claim = name.replace("ip-", "infer-")
        cp.create("/apis/karpenter.sh/v1/nodeclaims", {
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": claim, "labels": {"karpenter.sh/nodepool": "infer"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "infer"},
                     "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6"]}]}})
        cp.request("PATCH", "/apis/karpenter.sh/v1/nodeclaims/%s/status" % claim, {"status": {"nodeName": name}},
                   content_type="application/merge-patch+json")
    set_gpus(cp, "ip-10-0-0-2", 0)
    rc, out = run_site(tmp_path / "build", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                       *act(), playbook="playbooks/remediate.yml", inventory=str(inv))
    assert rc == 0, out[-3000:]
    claims = sorted(c["metadata"]["name"] for c in cp.items("/apis/karpenter.sh/v1/nodeclaims"))
    assert claims == ["infer-10-0-0-1", "infer-10-0-0-3"]
    node = cp.node("ip-10-0-0-2")
    record = json.loads(node["metadata"]["annotations"][RECORD])
    assert record["replaced"] == "infer-10-0-0-2" and record["tainted"] and record["cordoned"]
    with open(str(tmp_path / "build" / "remediation" / "report.json")) as handle:
        rep = dict((n["name"], n) for n in json.load(handle)["nodes"])
    assert "delete NodeClaim infer-10-0-0-2 (Karpenter replaces the node)" in rep["ip-10-0-0-2"]["done"]
    assert rep["ip-10-0-0-1"]["decision"] == "none"
