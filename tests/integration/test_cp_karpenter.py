"""Karpenter's real provisioning loop on gpufleet's own rendered NodePools (issue 40).

The EKS inventory (inventories/eks) is rendered by site.yml in render mode; its NodePools, NodeOverlays and
example Jobs' pod templates are what the scenarios use.

REAL: the Karpenter v1.15.0 controller (sigs.k8s.io/karpenter, built from the Go module proxy by
scripts/karpenter-build.sh) and its CRDs from that module's source; kube-apiserver, kube-scheduler and
kube-controller-manager (tests/helpers/controlplane.py); the instance-type data (the AWS provider's recorded
EC2 answers, GPU metadata and prices, with the karpenter.k8s.aws/* labels the AWS provider publishes:
tests/helpers/karpenter.py says which few values are typed there).
STOOD IN: EC2, by Karpenter's KWOK cloud provider (a launch creates the Node; KWOK keeps it Ready), so each
NodePool's ``nodeClassRef`` points at a KWOKNodeClass of the same name instead of the EC2NodeClass - the only
change made to gpufleet's objects; the NVIDIA device plugin, by ``DevicePlugin``: it advertises on each
Karpenter Node what gpufleet's rendered device-plugin config says for the Node's
``nvidia.com/device-plugin.config`` label (GPUs x time-slicing/MPS replicas), as the real plugin would
(tests/helpers/karpenter.py ``advertised``).
"""
import copy
import json
import os
import time

import pytest
import yaml

from karpenter import (DevicePlugin, Karpenter, build, device_plugin_configs, install_crds, instance_types,
                       kwok_nodeclass, kwok_nodepool, load_rendered)
from controlplane import ROOT
from render_cache import rendered_site

NS = "gpufleet-examples"
NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"
AWS = "karpenter.k8s.aws/"


@pytest.fixture(scope="module")
def env(control_plane, tmp_path_factory):
    t0 = time.monotonic()
    dirs = build()
    rc, out, build_dir = rendered_site(tmp_path_factory, inventory="inventories/eks")
    assert rc == 0, out[-3000:]
    cp = control_plane
    install_crds(cp, dirs)
    work = tmp_path_factory.mktemp("karpenter")
    types = work / "instance-types.json"
    types.write_text(json.dumps(instance_types(dirs["aws"])))
    rendered = load_rendered(build_dir)
    pools = {o["metadata"]["name"]: o for o in rendered if o["kind"] == "NodePool"}
    for name in pools:
        cp.create("/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses", kwok_nodeclass(name))
    for obj in rendered:
        if obj["kind"] == "NodePool":
            cp.apply(cp.object_path(obj), kwok_nodepool(obj))
        elif obj["kind"] == "NodeOverlay":
            cp.apply(cp.object_path(obj), obj)
    examples = load_rendered(build_dir, "examples")
    for obj in examples:
        if obj["kind"] == "Namespace":
            cp.apply(cp.object_path(obj), obj)
    jobs = {o["metadata"]["labels"]["gpufleet.io/pool"]: o for o in examples if o["kind"] == "Job"}
    plugin = DevicePlugin(cp, device_plugin_configs(build_dir)).start()
    karpenter = Karpenter(cp, dirs["binary"], str(types)).start()
    # ready once the NodePools are (their NodeClass is Ready and Karpenter has validated them)
    cp.wait(lambda: karpenter.alive() and all(_ready(cp.get("/apis/karpenter.sh/v1/nodepools/" + n)) for n in pools),
            120, "Karpenter's NodePools Ready")
    print("karpenter env ready in %.1f s" % (time.monotonic() - t0))
    with open(os.path.join(ROOT, "inventories", "eks", "group_vars", "all", "gpufleet.yml")) as handle:
        inventory = {p["name"]: p for p in yaml.safe_load(handle)["gpufleet_gpu_pools"]}
    yield {"cp": cp, "karpenter": karpenter, "pools": pools, "jobs": jobs, "inventory": inventory,
           "build": build_dir}
    plugin.stop()
    karpenter.stop()


def _ready(obj):
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


@pytest.fixture
def cluster(env):
    """The env, emptied after the test: pods deleted, NodeClaims deleted and their Nodes gone."""
    yield env
    cp = env["cp"]
    for pod in cp.items("/api/v1/namespaces/%s/pods" % NS):
        cp.request("DELETE", "/api/v1/namespaces/%s/pods/%s" % (NS, pod["metadata"]["name"]),
                   {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
    for claim in cp.items(NODECLAIMS):
        cp.delete(NODECLAIMS + "/" + claim["metadata"]["name"])
    cp.wait(lambda: not cp.items(NODECLAIMS) and not karpenter_nodes(cp) and not cp.items(
        "/api/v1/namespaces/%s/pods" % NS), 120, "NodeClaims, their Nodes and the pods gone", interval=1)


def karpenter_nodes(cp):
    return cp.items("/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool")


def pod_from_job(job, name, gpus=None):
    """A bare Pod of gpufleet's example Job's pod template (so it keeps running), optionally asking ``gpus``."""
    template = copy.deepcopy(job["spec"]["template"])
    spec = template["spec"]
    if gpus is not None:
        limits = spec["containers"][0]["resources"]["limits"]
        key = next(k for k in limits if k.startswith("nvidia.com/"))
        limits[key] = gpus
    meta = dict(template.get("metadata") or {}, name=name, namespace=NS)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def cpu_pod(name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": {
        "automountServiceAccountToken": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "cpu", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}},
                        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}]}}


def create_pods(cp, pods):
    for pod in pods:
        cp.create("/api/v1/namespaces/%s/pods" % NS, pod)


def pods(cp):
    return {p["metadata"]["name"]: p for p in cp.items("/api/v1/namespaces/%s/pods" % NS)}


def running(cp, names):
    got = pods(cp)
    missing = [n for n in names if n not in got]
    assert not missing, "pods gone: %s" % missing
    return all(got[n]["spec"].get("nodeName") and got[n]["status"].get("phase") == "Running" for n in names)


def claims(cp, pool=None):
    return [c for c in cp.items(NODECLAIMS)
            if pool is None or c["metadata"]["labels"].get("karpenter.sh/nodepool") == pool]


def settle(cp, seconds):
    """Let Karpenter run ``seconds`` more batch windows (a negative check needs the time to have passed)."""
    time.sleep(seconds)


def allowed(nodepool, labels):
    """The requirements of ``nodepool`` that ``labels`` break (empty: the node is one the pool allows)."""
    broken = []
    for req in nodepool["spec"]["template"]["spec"]["requirements"]:
        value = labels.get(req["key"])
        if req["operator"] == "In" and value not in req["values"]:
            broken.append((req["key"], value, req["values"]))
    return broken


def test_placement_pod_gets_a_node_of_its_pool_and_a_cpu_pod_never_lands_there(cluster):
    cp, pool = cluster["cp"], cluster["pools"]["train-h100"]
    create_pods(cp, [pod_from_job(cluster["jobs"]["train-h100"], "train-0")])
    cp.wait(lambda: running(cp, ["train-0"]), 90, "the placement pod running", interval=1)
    node = cp.node(pods(cp)["train-0"]["spec"]["nodeName"])
    labels = node["metadata"]["labels"]
    assert [c["metadata"]["labels"]["karpenter.sh/nodepool"] for c in claims(cp)] == ["train-h100"]
    assert labels["karpenter.sh/nodepool"] == "train-h100"
    assert allowed(pool, labels) == []
    assert labels["node.kubernetes.io/instance-type"] == "p5.48xlarge"
    assert labels[AWS + "instance-gpu-count"] == "8" and labels[AWS + "instance-gpu-name"] == "h100"
    template = pool["spec"]["template"]
    assert template["metadata"]["labels"].items() <= labels.items()
    taints = [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in node["spec"].get("taints") or []]
    for taint in template["spec"].get("taints") or []:
        assert taint in taints, taints
    # a CPU pod: no NodePool of gpufleet's takes it (all are tainted) and the GPU node's taint keeps it off
    create_pods(cp, [cpu_pod("cpu-0")])
    settle(cp, 8)
    cpu = pods(cp)["cpu-0"]
    assert not cpu["spec"].get("nodeName"), "the CPU pod landed on %s" % cpu["spec"]["nodeName"]
    assert cpu["status"].get("phase") == "Pending", cpu["status"]
    assert len(claims(cp)) == 1, "a GPU node was started for the CPU pod"


def test_pods_beyond_the_pools_gpu_limit_stay_pending(cluster):
    cp, spec = cluster["cp"], cluster["inventory"]["train-h100"]
    limit = spec["max_nodes"] * spec["gpus_per_node"]             # 4 nodes x 8 GPUs (the inventory's)
    names = ["train-%d" % i for i in range(spec["max_nodes"] + 1)]  # whole-node pods, one more than fits
    create_pods(cp, [pod_from_job(cluster["jobs"]["train-h100"], n) for n in names])
    cp.wait(lambda: sum(bool(p["spec"].get("nodeName")) for p in pods(cp).values()) >= spec["max_nodes"], 120,
            "the pool filled to its limit", interval=1)
    settle(cp, 8)
    assert len(claims(cp, "train-h100")) == spec["max_nodes"]
    placed = [p for p in pods(cp).values() if p["spec"].get("nodeName")]
    assert len(placed) == spec["max_nodes"] and len(names) - len(placed) == 1
    used = cp.get("/apis/karpenter.sh/v1/nodepools/train-h100")["status"]["resources"]["nvidia.com/gpu"]
    assert int(used) <= limit


def test_time_sliced_pool_packs_one_node_and_reaches_max_nodes(cluster):
    cp, pool = cluster["cp"], cluster["pools"]["infer-l4"]
    job = cluster["jobs"]["infer-l4"]
    # 4 pods of one slice each: the node offers 4 replicas of its one L4, so one node takes them all
    small = ["l4-slice-%d" % i for i in range(4)]
    create_pods(cp, [pod_from_job(job, n) for n in small])
    cp.wait(lambda: running(cp, small), 90, "4 one-slice pods running", interval=1)
    settle(cp, 5)
    assert len(claims(cp, "infer-l4")) == 1, [c["status"].get("nodeName") for c in claims(cp)]
    assert len({pods(cp)[n]["spec"]["nodeName"] for n in small}) == 1
    # then whole-node pods (4 slices each) until the pool holds max_nodes (20) nodes: one more stays pending
    max_nodes = cluster["inventory"]["infer-l4"]["max_nodes"]
    full = ["l4-full-%d" % i for i in range(max_nodes)]
    create_pods(cp, [pod_from_job(job, n, gpus=4) for n in full])
    counts = []
    try:
        cp.wait(lambda: counts.append(len(claims(cp, "infer-l4"))) or counts[-1] >= max_nodes, 120,
                "the pool at max_nodes", interval=1)
    except TimeoutError:
        pass
    assert counts[-1] >= max_nodes, "infer-l4 stopped at %d nodes of max_nodes %d" % (counts[-1], max_nodes)
    cp.wait(lambda: sum(running(cp, [n]) for n in full) == max_nodes - 1, 120,
            "%d whole-node pods running" % (max_nodes - 1), interval=1)
    settle(cp, 8)
    assert len(claims(cp, "infer-l4")) == max_nodes
    pending = [n for n, p in pods(cp).items() if not p["spec"].get("nodeName")]
    assert pending and len(pending) == 1, pending
    for node in karpenter_nodes(cp):
        assert allowed(pool, node["metadata"]["labels"]) == []


def test_two_pools_each_pod_lands_on_the_pool_it_asks_for(cluster):
    cp, pools = cluster["cp"], cluster["pools"]
    create_pods(cp, [pod_from_job(cluster["jobs"]["train-h100"], "two-h100"),
                     pod_from_job(cluster["jobs"]["infer-l4"], "two-l4")])
    cp.wait(lambda: running(cp, ["two-h100", "two-l4"]), 90, "both pods running", interval=1)
    settle(cp, 5)
    got = pods(cp)
    for pod, pool in (("two-h100", "train-h100"), ("two-l4", "infer-l4")):
        labels = cp.node(got[pod]["spec"]["nodeName"])["metadata"]["labels"]
        assert labels["karpenter.sh/nodepool"] == pool and labels["gpufleet.io/pool"] == pool
        assert allowed(pools[pool], labels) == []
    assert sorted(c["metadata"]["labels"]["karpenter.sh/nodepool"] for c in claims(cp)) == ["infer-l4", "train-h100"]
    h100 = cp.node(got["two-h100"]["spec"]["nodeName"])["metadata"]["labels"]
    assert h100["karpenter.sh/capacity-type"] == "on-demand"


def test_consolidation_and_do_not_disrupt(cluster):
    """infer-l4 with ``consolidateAfter`` shortened from 30m to 20s (the one change besides nodeClassRef, so the
    test need not wait half an hour; shorter, a node launched on a loaded machine could be emptied-and-removed
    before its pods were bound): an emptied node goes away after it; then the NodePool's template changes
    (a label, as a new gpufleet render would), every node of the pool drifts, and Karpenter replaces the node of an
    ordinary pod but not the node running gpufleet's validation (smoke) pod, which carries
    ``karpenter.sh/do-not-disrupt`` (day2.smoke.smoke_job, the validate stage's Job)."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.smoke import smoke_job
    from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pool
    cp, original = cluster["cp"], cluster["pools"]["infer-l4"]
    path = "/apis/karpenter.sh/v1/nodepools/infer-l4"
    short = kwok_nodepool(original)
    short["spec"]["disruption"]["consolidateAfter"] = "20s"
    cp.apply(path, short)
    try:
        create_pods(cp, [pod_from_job(cluster["jobs"]["infer-l4"], "busy-0")])
        cp.wait(lambda: running(cp, ["busy-0"]), 90, "a pod on infer-l4", interval=1)
        first = claims(cp, "infer-l4")[0]["metadata"]["name"]
        cp.request("DELETE", "/api/v1/namespaces/%s/pods/busy-0" % NS,
                   {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
        t0 = time.monotonic()
        cp.wait(lambda: not claims(cp, "infer-l4"), 90, "the empty node removed", interval=1)
        assert time.monotonic() - t0 >= 18, "removed before consolidateAfter"
        assert first not in [c["metadata"]["name"] for c in cp.items(NODECLAIMS)]
        # a smoke pod (gpufleet's validate Job, EKS) and an ordinary pod filling a node of its own
        pool = normalize_pool(cluster["inventory"]["infer-l4"])
        smoke = smoke_job(pool, "eks", "registry.k8s.io/pause:3.10", NS, 300)["spec"]["template"]
        create_pods(cp, [{"apiVersion": "v1", "kind": "Pod", "spec": smoke["spec"],
                          "metadata": dict(smoke["metadata"], name="smoke-0", namespace=NS)},
                         pod_from_job(cluster["jobs"]["infer-l4"], "plain-0", gpus=4)])
        cp.wait(lambda: running(cp, ["smoke-0", "plain-0"]), 90, "the smoke and the plain pod running", interval=1)
        got = pods(cp)
        smoke_node, plain_node = got["smoke-0"]["spec"]["nodeName"], got["plain-0"]["spec"]["nodeName"]
        assert smoke_node != plain_node
        drifted = json.loads(json.dumps(short))
        drifted["spec"]["template"]["metadata"]["labels"]["gpufleet.io/render"] = "2"
        cp.apply(path, drifted)
        cp.wait(lambda: plain_node not in [n["metadata"]["name"] for n in karpenter_nodes(cp)], 150,
                "the drifted node of the plain pod replaced", interval=1)
        # drift goes a node at a time (the default budget, 10%): give the smoke pod's node 30 s more to be taken
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and smoke_node in [n["metadata"]["name"] for n in karpenter_nodes(cp)]:
            time.sleep(1)
        assert smoke_node in [n["metadata"]["name"] for n in karpenter_nodes(cp)], "the smoke pod's node was replaced"
        assert pods(cp)["smoke-0"]["spec"]["nodeName"] == smoke_node
        assert smoke["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    finally:
        cp.apply(path, kwok_nodepool(original))


def test_the_v1alpha5_migration_output_provisions(cluster):
    """The NodePool karpenter_migrate wrote from examples/karpenter/legacy-gpu-provisioner.yaml (the EKS render's
    provision/karpenter-migrated/), nodeClassRef pointed at a KWOKNodeClass as for the others: a 1-GPU pod that
    selects its label and tolerates its taint gets a node of the families the old Provisioner allowed."""
    cp = cluster["cp"]
    migrated = [o for o in load_rendered(cluster["build"], "karpenter-migrated/legacy-gpu-provisioner")
                if o["kind"] == "NodePool"]
    assert [o["metadata"]["name"] for o in migrated] == ["gpu"]
    pool = migrated[0]
    path = "/apis/karpenter.sh/v1/nodepools/gpu"
    cp.create("/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses", kwok_nodeclass("gpu"))
    cp.apply(path, kwok_nodepool(pool))
    try:
        cp.wait(lambda: _ready(cp.get(path)), 60, "the migrated NodePool Ready")
        spec = pod_from_job(cluster["jobs"]["infer-l4"], "migrated-0")["spec"]
        spec.pop("affinity")
        spec["nodeSelector"] = dict(pool["spec"]["template"]["metadata"]["labels"])
        spec["tolerations"] = [{"key": t["key"], "operator": "Exists", "effect": t["effect"]}
                               for t in pool["spec"]["template"]["spec"]["taints"]]
        create_pods(cp, [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "migrated-0", "namespace": NS},
                          "spec": spec}])
        cp.wait(lambda: running(cp, ["migrated-0"]), 90, "the pod on the migrated pool", interval=1)
        node = cp.node(pods(cp)["migrated-0"]["spec"]["nodeName"])
        labels = node["metadata"]["labels"]
        assert labels["karpenter.sh/nodepool"] == "gpu" and allowed(pool, labels) == []
        assert labels[AWS + "instance-family"] in ("g5", "p4d")
        taints = [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in node["spec"].get("taints") or []]
        assert {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"} in taints
    finally:
        for pod in cp.items("/api/v1/namespaces/%s/pods" % NS):
            cp.request("DELETE", "/api/v1/namespaces/%s/pods/%s" % (NS, pod["metadata"]["name"]),
                       {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
        cp.delete(path)
