"""Labels and taints gpufleet owns on Nodes (module_utils/pools/node_ownership.py): the read-modify-write
that keeps everyone else's taints, ownership recorded on the Node, never a Node created or deleted.

tests/helpers/k8s_fake.py stands in for the API server's merge-patch and resourceVersion
rules, over Nodes in the shape the v1.28 API returns them (tests/fixtures/k8s/nodes.json)."""
import copy
import json
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.filter.nodes import gpu_pool_nodes, pool_node_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.node_ownership import (
    OWNED_ANNOTATION,
    converge,
    owned,
    plan_diff,
    plan_node,
    plan_nodes)
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.node_names import node_names
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from k8s_fake import FakeNodeApi, Store, merge_patch

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "k8s", "nodes.json")
NODES = {n["metadata"]["name"]: n for n in json.load(open(FIXTURE))["items"]}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
CORDON = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-12-01T01:00:00Z"}
TRAIN = {"gpufleet.io/pool": "train", "nvidia.com/device-plugin.config": "train"}


def node(name):
    return copy.deepcopy(NODES[name])


def applied(n, plan):
    """The Node after the plan's patch (merge patch, as the API server applies it)."""
    return merge_patch(n, plan["patch"]) if plan["patch"] else n


def test_cordoned_node_keeps_the_controller_taint_and_gets_gpufleets():
    n = node("gpu-a1")
    plan = plan_node(n, TRAIN, [GPU_TAINT])
    assert plan["changed"] and not plan["conflicts"]
    assert plan["patch"]["metadata"]["resourceVersion"] == "4811"  # precondition: the version read
    assert plan["patch"]["spec"]["taints"] == [CORDON, GPU_TAINT]  # the cordon taint kept, as it was
    after = applied(n, plan)
    assert after["metadata"]["labels"]["kubernetes.io/hostname"] == "gpu-a1"
    assert json.loads(after["metadata"]["annotations"][OWNED_ANNOTATION]) == {
        "labels": TRAIN, "taints": ["nvidia.com/gpu:NoSchedule"]}
    # second run: nothing to do
    again = plan_node(after, TRAIN, [GPU_TAINT])
    assert not again["changed"] and again["patch"] is None


@pytest.mark.parametrize("labels,taints,expect_taints,expect_labels", [
    # absent: everything gpufleet owns goes, the controller's NotReady taints stay
    ({}, [], ["node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule"], {}),
    # the pool's taint changes value: replaced in place, not duplicated
    (TRAIN, [dict(GPU_TAINT, value="a100")],
     ["node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule", "nvidia.com/gpu:NoSchedule"],
     TRAIN),
    # a label dropped from the pool is removed, the others stay
    ({"gpufleet.io/pool": "train"}, [GPU_TAINT],
     ["node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule", "nvidia.com/gpu:NoSchedule"],
     {"gpufleet.io/pool": "train"}),
])
def test_changes_on_a_node_gpufleet_already_manages(labels, taints, expect_taints, expect_labels):
    start = applied(node("gpu-a2"), plan_node(node("gpu-a2"), dict(TRAIN, team="ml"), [GPU_TAINT]))
    plan = plan_node(start, labels, taints)
    assert plan["changed"] and not plan["conflicts"]
    after = applied(start, plan)
    assert ["%s:%s" % (t["key"], t["effect"]) for t in after["spec"].get("taints", [])] == expect_taints
    assert {k: v for k, v in after["metadata"]["labels"].items() if not k.startswith(("kubernetes.io", "beta."))} \
        == expect_labels
    assert after["metadata"]["labels"]["kubernetes.io/hostname"] == "gpu-a2"
    assert after["spec"]["taints"][0]["timeAdded"] == "2026-12-01T02:58:00Z"  # others' taints byte-for-byte
    if labels or taints:
        assert json.loads(after["metadata"]["annotations"][OWNED_ANNOTATION]) == {
            "labels": labels, "taints": ["%s:%s" % (t["key"], t["effect"]) for t in taints]}
    else:  # gpufleet owns nothing any more: its record goes too
        assert OWNED_ANNOTATION not in (after["metadata"].get("annotations") or {})
    assert not plan_node(after, labels, taints)["changed"]


def test_ssa_labelled_node_ownership_comes_from_managed_fields():
    n = node("gpu-b1")
    assert owned(n) == {"labels": {"gpufleet.io/pool": "old-pool", "nvidia.com/device-plugin.config": "old-pool",
                                   "team": "ml"}, "taints": ["nvidia.com/gpu:NoSchedule"]}
    plan = plan_node(n, {}, [])
    after = applied(n, plan)
    assert "gpufleet.io/pool" not in after["metadata"]["labels"] and "taints" not in after["spec"]
    assert plan["patch"]["spec"] == {"taints": None}
    # an old server-side apply entry is still there: the empty record stays so it is never read again
    assert json.loads(after["metadata"]["annotations"][OWNED_ANNOTATION]) == {"labels": {}, "taints": []}
    assert not plan_node(after, {}, [])["changed"]


def test_after_absent_a_cordon_written_back_by_gpufleet_is_never_claimed():
    """gpufleet's own Update writes the taint list (atomic: it then owns f:spec.f:taints in
    managedFields) - the kept cordon taint must still not count as gpufleet's on the next run."""
    n = applied(node("gpu-a1"), plan_node(node("gpu-a1"), TRAIN, [GPU_TAINT]))
    n = applied(n, plan_node(n, {}, []))
    n["metadata"]["managedFields"].append({"manager": "gpufleet", "operation": "Update", "apiVersion": "v1",
                                           "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:taints": {}}}})
    assert owned(n) == {"labels": {}, "taints": []}
    assert plan_nodes([n], [], prune=True) == []
    assert OWNED_ANNOTATION not in n["metadata"].get("annotations", {})  # absent left no record: Update is not Apply


@pytest.mark.parametrize("labels,taints,what", [
    ({"gpufleet.io/pool": "train"}, [], "label gpufleet.io/pool='other' was set by someone else"),
    ({}, [GPU_TAINT], "taint nvidia.com/gpu=mine:NoSchedule was set by someone else"),
])
def test_others_values_are_conflicts_not_overwrites(labels, taints, what):
    n = node("cpu-1")
    n["metadata"]["labels"]["gpufleet.io/pool"] = "other"
    n["spec"]["taints"] = [dict(GPU_TAINT, value="mine")]
    plan = plan_node(n, labels, taints)
    assert plan["conflicts"] and what in plan["conflicts"][0], plan["conflicts"]
    assert not plan_node(n, labels, taints, force=True)["conflicts"]


def test_label_someone_else_changed_is_left_and_noted():
    start = applied(node("cpu-1"), plan_node(node("cpu-1"), {"team": "ml"}, []))
    start["metadata"]["labels"]["team"] = "research"
    plan = plan_node(start, {}, [])
    assert applied(start, plan)["metadata"]["labels"]["team"] == "research"
    assert "label team is now 'research'" in plan["notes"][0]


def test_converge_writes_each_changed_node_once_then_nothing():
    store = Store(NODES.values())
    desired = [{"name": "gpu-a1", "host": "a1", "labels": TRAIN, "taints": [GPU_TAINT]},
               {"name": "gpu-a2", "host": "a2", "labels": TRAIN, "taints": [GPU_TAINT]}]
    plans = converge(FakeNodeApi(store), desired)
    # gpu-b1 was gpufleet's (older server-side apply) and is not in the inventory: pruned
    assert sorted(p["name"] for p in plans if p["changed"]) == ["gpu-a1", "gpu-a2", "gpu-b1"]
    assert [r[0] for r in store.requests] == ["LIST", "PATCH", "PATCH", "PATCH"]
    assert sorted(store.nodes) == ["cpu-1", "gpu-a1", "gpu-a2", "gpu-b1"]  # nothing deleted or created
    assert store.nodes["gpu-a1"]["spec"]["taints"][0] == CORDON
    store.requests.clear()
    assert not any(p["changed"] for p in converge(FakeNodeApi(store), desired))
    assert [r[0] for r in store.requests] == ["LIST"]


def test_absent_removes_only_what_gpufleet_owns_and_deletes_no_node():
    store = Store(NODES.values())
    desired = [{"name": "gpu-a1", "host": "a1", "labels": TRAIN, "taints": [GPU_TAINT]}]
    converge(FakeNodeApi(store), desired)
    before = copy.deepcopy(store.nodes)
    converge(FakeNodeApi(store), [])  # gpu_pools_state: absent
    assert sorted(store.nodes) == sorted(before)
    a1 = store.nodes["gpu-a1"]
    assert a1["spec"]["taints"] == [CORDON] and "gpufleet.io/pool" not in a1["metadata"]["labels"]
    assert a1["metadata"]["labels"] == NODES["gpu-a1"]["metadata"]["labels"]


def test_check_mode_plans_without_writing():
    store = Store(NODES.values())
    plans = converge(FakeNodeApi(store), [{"name": "gpu-a1", "host": "a1", "labels": TRAIN, "taints": [GPU_TAINT]}],
                     check_mode=True)
    assert [r[0] for r in store.requests] == ["LIST"]
    diff = plan_diff([p for p in plans if p["name"] == "gpu-a1"][0])
    assert "+  - nvidia.com/gpu=present:NoSchedule" not in diff["before"]
    assert "  - nvidia.com/gpu=present:NoSchedule" in diff["after"]
    assert "  - node.kubernetes.io/unschedulable=:NoSchedule" in diff["before"] and diff["before_header"] == "Node/gpu-a1"


def test_conflict_409_rereads_and_keeps_the_taint_added_meanwhile():
    store = Store(NODES.values())

    def cordon_meanwhile(s):  # kube-controller-manager taints gpu-a2 between gpufleet's read and write
        s.nodes["gpu-a2"]["spec"]["taints"].append(dict(CORDON))
        s.bump("gpu-a2")

    store.before_patch = cordon_meanwhile
    converge(FakeNodeApi(store), [{"name": "gpu-a2", "host": "a2", "labels": TRAIN, "taints": [GPU_TAINT]}], prune=False)
    ops = [r[0] for r in store.requests]
    assert ops == ["LIST", "PATCH", "GET", "PATCH"], ops
    keys = [t["key"] for t in store.nodes["gpu-a2"]["spec"]["taints"]]
    assert keys == ["node.kubernetes.io/not-ready", "node.kubernetes.io/not-ready",
                    "node.kubernetes.io/unschedulable", "nvidia.com/gpu"]


def test_missing_node_is_refused_naming_the_host_and_nothing_is_written():
    store = Store(NODES.values())
    with pytest.raises(GpufleetError) as err:
        converge(FakeNodeApi(store), [{"name": "gpu-a1", "host": "a1", "labels": TRAIN, "taints": []},
                                      {"name": "a100-node-09", "host": "a100-node-09.example.internal",
                                       "labels": TRAIN, "taints": []}])
    assert "host a100-node-09.example.internal: no Node named 'a100-node-09' in the cluster" in err.value.msg
    assert "gpufleet_node_name" in err.value.msg and "Nothing was changed" in err.value.msg
    assert [r[0] for r in store.requests] == ["LIST"]


def test_conflicts_stop_before_any_write():
    store = Store(NODES.values())
    store.nodes["cpu-1"]["metadata"]["labels"]["gpufleet.io/pool"] = "theirs"
    with pytest.raises(GpufleetError):
        converge(FakeNodeApi(store), [{"name": "gpu-a1", "host": "a1", "labels": TRAIN, "taints": []},
                                      {"name": "cpu-1", "host": "c1", "labels": TRAIN, "taints": []}])
    assert [r[0] for r in store.requests] == ["LIST"]


@pytest.mark.parametrize("hostvars,expect,error", [
    ({"gpu1.example.com": {}}, {"gpu1.example.com": "gpu1.example.com"}, None),
    ({"gpu1.example.com": {"gpufleet_node_name": "gpu1"}}, {"gpu1.example.com": "gpu1"}, None),
    ({"GPU_1": {}}, None, "gpufleet_node_name (host GPU_1): 'GPU_1' is not a Kubernetes Node name"),
    ({"a": {"gpufleet_node_name": "n1"}, "b": {"gpufleet_node_name": "n1"}}, None,
     "gpufleet_node_name (host b): Node 'n1' is already the Node of host a"),
])
def test_node_names(hostvars, expect, error):
    if error:
        with pytest.raises(GpufleetError) as err:
            node_names(sorted(hostvars), hostvars)
        assert error in err.value.msg
    else:
        assert node_names(sorted(hostvars), hostvars) == expect


def test_pool_filters_use_the_node_name_mapping():
    pools = normalize_pools([{"name": "train", "gpu_type": "a100-80gb", "gpus_per_node": 8}])
    groups = {"gpu_pool_train": ["h1.example.internal", "h2.example.internal"]}
    hostvars = {"h1.example.internal": {"gpufleet_node_name": "h1"}, "h2.example.internal": {}}
    assert [o["metadata"]["name"] for o in pool_node_objects(pools, groups, hostvars)] == ["h1", "h2.example.internal"]
    nodes = gpu_pool_nodes(pools, groups, hostvars)
    assert nodes[0] == {"name": "h1", "host": "h1.example.internal", "labels": {
        "gpufleet.io/pool": "train", "nvidia.com/device-plugin.config": "train"}, "taints": [GPU_TAINT]}


def test_prune_only_touches_nodes_gpufleet_owns_something_on():
    plans = plan_nodes(list(NODES.values()), [], prune=True)
    assert [p["name"] for p in plans] == ["gpu-b1"]


def test_parallel_patches_one_node_failing_names_it_and_the_others_are_written():
    """Patches go several at a time: a Node that keeps conflicting fails by name after the bounded retries,
    the other Nodes are still written, and the message says how many were."""
    store = Store(NODES.values())
    api = FakeNodeApi(store)
    real_patch = store.patch

    def always_changing(name, patch):  # someone rewrites gpu-a2 before every gpufleet write
        if name == "gpu-a2":
            with store.lock:
                store.bump("gpu-a2")
        return real_patch(name, patch)

    store.patch = always_changing
    desired = [{"name": n, "host": n, "labels": TRAIN, "taints": [GPU_TAINT]} for n in ("gpu-a1", "gpu-a2", "cpu-1")]
    with pytest.raises(GpufleetError) as err:
        converge(api, desired, prune=False, retries=3, workers=4)
    assert "Node gpu-a2 kept changing while gpufleet wrote it (4 conflicts)" in err.value.msg
    assert "2 of 3 Nodes to change were written" in err.value.msg
    assert [r[0] for r in store.requests].count("GET") == 3  # re-read after each of the 3 retried conflicts
    for name in ("gpu-a1", "cpu-1"):
        assert store.nodes[name]["metadata"]["labels"]["gpufleet.io/pool"] == "train"
    assert "gpufleet.io/pool" not in store.nodes["gpu-a2"]["metadata"]["labels"]


@pytest.mark.parametrize("workers", [1, 8])
def test_sequential_and_parallel_writes_give_the_same_nodes(workers):
    store = Store(NODES.values())
    desired = [{"name": n, "host": n, "labels": TRAIN, "taints": [GPU_TAINT]} for n in ("gpu-a1", "gpu-a2", "cpu-1")]
    plans = converge(FakeNodeApi(store), desired, workers=workers)
    assert [p["name"] for p in plans] == ["gpu-a1", "gpu-a2", "cpu-1", "gpu-b1"]  # the planned order
    assert all(p["changed"] for p in plans)
    seq = Store(NODES.values())
    converge(FakeNodeApi(seq), desired, workers=1)
    strip = lambda nodes: {k: dict(v, metadata=dict(v["metadata"], resourceVersion=None)) for k, v in nodes.items()}  # noqa: E731
    assert strip(store.nodes) == strip(seq.nodes)
