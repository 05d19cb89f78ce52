"""Ownership of Node labels and taints that were there before gpufleet (issue 39): gpufleet records as its own
only what it writes itself. A label or taint already on the Node exactly as a pool wants it (set by hand
before gpufleet's first run) stays the user's: not recorded in gpufleet.io/owned, and still there after
``gpu_pools_state: absent``. Each row: the Node before the first run, the pool's labels/taints, then the
first run, a second run (idempotent) and absent, each applied as the API server applies a merge patch."""
import json

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.pools import node_ownership as no
from k8s_fake import merge_patch

GPU = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
POOL = {"gpufleet.io/pool": "train"}


def mk(labels=None, taints=None):
    node = {"apiVersion": "v1", "kind": "Node", "spec": {},
            "metadata": {"name": "n1", "resourceVersion": "1", "labels": dict({"kubernetes.io/hostname": "n1"},
                                                                              **(labels or {}))}}
    if taints is not None:
        node["spec"]["taints"] = [dict(t) for t in taints]
    return node


def run(node, labels, taints):
    plan = no.plan_node(node, labels, taints)
    assert plan["conflicts"] == []
    return (merge_patch(node, plan["patch"]) if plan["patch"] else node), plan


def ids(node):
    return ["%s=%s:%s" % (t["key"], t.get("value") or "", t["effect"]) for t in node["spec"].get("taints") or []]


BARE = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize("before_labels, before_taints, pool_taints, owned_labels, owned_taints, "
                         "after_absent_labels, after_absent_taints", [
    # nothing there: gpufleet adds and owns both; absent removes both
    ({}, [], [GPU], POOL, ["nvidia.com/gpu:NoSchedule"], {}, []),
    # the user's hand-set taint, same key, value and effect as the pool's: theirs, kept by absent
    ({}, [GPU], [GPU], POOL, [], {}, ["nvidia.com/gpu=present:NoSchedule"]),
    # the user's taint with an empty value where the pool's has none: the same taint, theirs
    ({}, [dict(BARE, value="")], [BARE], POOL, [], {}, ["nvidia.com/gpu=:NoSchedule"]),
    # the user's label, same value as the pool's: theirs, kept by absent
    (POOL, [], [GPU], {}, ["nvidia.com/gpu:NoSchedule"], POOL, []),
    # both set by hand: gpufleet owns nothing there, absent changes nothing
    (POOL, [GPU], [GPU], {}, [], POOL, ["nvidia.com/gpu=present:NoSchedule"]),
    # a taint of the same key with another effect is another taint: gpufleet adds and owns its own
    ({}, [dict(GPU, effect="NoExecute")], [GPU], POOL, ["nvidia.com/gpu:NoSchedule"], {},
     ["nvidia.com/gpu=present:NoExecute"]),
])
def test_what_was_there_before_gpufleet_stays_the_users(before_labels, before_taints, pool_taints, owned_labels,
                                                         owned_taints, after_absent_labels, after_absent_taints):
    node = mk(before_labels, before_taints)
    first, plan = run(node, POOL, pool_taints)
    record = json.loads(first["metadata"].get("annotations", {}).get(no.OWNED_ANNOTATION) or "null")
    assert (record or {"labels": {}, "taints": []}) == {"labels": owned_labels, "taints": owned_taints}
    assert all(first["metadata"]["labels"][k] == v for k, v in POOL.items())
    # a second run changes nothing and claims nothing more
    again, plan2 = run(first, POOL, pool_taints)
    assert plan2["patch"] is None
    # gpu_pools_state: absent removes only what gpufleet wrote
    gone, _ = run(again, {}, [])
    assert {k: v for k, v in gone["metadata"]["labels"].items() if k != "kubernetes.io/hostname"} == after_absent_labels
    assert ids(gone) == after_absent_taints
    assert no.OWNED_ANNOTATION not in (gone["metadata"].get("annotations") or {})


def test_a_label_the_user_set_to_another_value_is_still_a_conflict():
    plan = no.plan_node(mk({"gpufleet.io/pool": "mine"}), POOL, [])
    assert plan["conflicts"] and plan["patch"] is not None  # refused by converge before any write


def test_the_run_says_which_labels_and_taints_stay_the_users():
    plan = no.plan_node(mk(POOL, [GPU]), POOL, [GPU])
    assert plan["notes"] == [
        "Node n1: label gpufleet.io/pool=train was there before gpufleet set it: it stays yours (not recorded as "
        "gpufleet's, not removed by gpufleet)",
        "Node n1: taint nvidia.com/gpu=present:NoSchedule was there before gpufleet set it: it stays yours (not "
        "recorded as gpufleet's, not removed by gpufleet)"]
