"""The drain rules of module_utils/day2/drain.py (kubectl drain's order), over tables; the real Eviction API
and PodDisruptionBudgets are exercised in tests/integration/test_cp_upgrade.py."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.drain import (
    DrainError, TooManyRequests, blocking_budgets, classify, drain)


def pod(name, owner=None, emptydir=False, phase="Running", deleting=False, mirror=False, labels=None, ns="ml"):
    meta = {"name": name, "namespace": ns, "uid": "uid-" + name, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": "x", "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    if mirror:
        meta["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    vols = [{"name": "d", "emptyDir": {}}] if emptydir else [{"name": "c", "configMap": {"name": "c"}}]
    return {"metadata": meta, "spec": {"volumes": vols}, "status": {"phase": phase}}


@pytest.mark.parametrize("p, opts, verdict", [
    # the device plugin's pod: DaemonSet + emptyDir is skipped, never blocked (kubernetes.core issue 622)
    (pod("dp", "DaemonSet", emptydir=True), {}, "skipped"),
    (pod("dp", "DaemonSet", emptydir=True), {"ignore_daemonsets": False}, "blocked"),
    (pod("web", "ReplicaSet"), {}, "evict"),
    (pod("cache", "ReplicaSet", emptydir=True), {}, "blocked"),
    (pod("cache", "ReplicaSet", emptydir=True), {"delete_emptydir_data": True}, "evict"),
    (pod("bare"), {}, "blocked"),
    (pod("bare"), {"force": True}, "evict"),
    (pod("done", emptydir=True, phase="Succeeded"), {}, "evict"),  # finished pods pass both rules
    (pod("static", mirror=True), {}, "skipped"),
    (pod("going", "ReplicaSet", deleting=True), {}, "waiting"),
])
def test_classify_follows_kubectls_order(p, opts, verdict):
    evict, waiting, skipped, blockers = classify([p], **opts)
    got = ("evict" if evict else "waiting" if waiting else "skipped" if skipped else "blocked" if blockers else None)
    assert got == verdict, (evict, waiting, skipped, blockers)


def test_blockers_name_every_pod_and_the_variable():
    _, _, _, blockers = classify([pod("a", "ReplicaSet", emptydir=True), pod("b", "StatefulSet", emptydir=True),
                                  pod("c")])
    text = str(blockers)
    assert "ml/a" in text and "ml/b" in text and "gpufleet_upgrade_delete_emptydir_data" in text
    assert "ml/c" in text and "gpufleet_upgrade_drain_force" in text


class FakeCluster:
    """An in-memory stand-in for unit tables only (the real API server is in the integration tests)."""

    def __init__(self, pods, refuse=0, pdbs=()):
        self.pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}
        self.refuse, self.pdbs, self.evictions, self.now = refuse, list(pdbs), [], 0.0

    def list_pods(self, node):
        return list(self.pods.values())

    def evict(self, namespace, name, grace):
        self.evictions.append((namespace, name, grace))
        if self.refuse:
            self.refuse -= 1
            raise TooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.")
        return self.pods.pop((namespace, name), None) is not None

    def get_pod(self, namespace, name):
        return self.pods.get((namespace, name))

    def list_pdbs(self, namespaces):
        return self.pdbs

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def run(cluster, **kw):
    return drain(cluster, "gpu-1", clock=cluster.clock, sleep=cluster.sleep, **kw)


def test_refused_eviction_is_retried_until_the_budget_frees():
    c = FakeCluster([pod("web", "ReplicaSet"), pod("dp", "DaemonSet", emptydir=True)], refuse=3)
    result = run(c, timeout=60, poll=5)
    assert result["evicted"] == ["ml/web"] and result["left_alone"] == ["ml/dp (DaemonSet)"]
    assert len(c.evictions) == 4 and c.now == 15
    assert ("ml", "dp") in c.pods  # DaemonSet pod untouched


def test_budget_that_never_frees_stops_with_its_name_and_pods():
    pdb = {"metadata": {"name": "web-pdb", "namespace": "ml"},
           "spec": {"selector": {"matchLabels": {"app": "web"}}},
           "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}}
    c = FakeCluster([pod("web", "ReplicaSet", labels={"app": "web"})], refuse=10 ** 6, pdbs=[pdb])
    with pytest.raises(DrainError) as err:
        run(c, timeout=30, poll=5)
    msg = str(err.value)
    assert "timed out after 30s" in msg and "PodDisruptionBudget ml/web-pdb" in msg and "protects ml/web" in msg
    assert "gpufleet_upgrade_drain_timeout" in msg
    assert 30 <= c.now <= 35


def test_blocked_drain_evicts_nothing():
    c = FakeCluster([pod("web", "ReplicaSet"), pod("bare")])
    with pytest.raises(DrainError, match="without a controller.*ml/bare"):
        run(c)
    assert c.evictions == []


def test_check_mode_lists_and_evicts_nothing():
    c = FakeCluster([pod("web", "ReplicaSet")])
    assert run(c, check_mode=True)["evicted"] == ["ml/web"] and c.evictions == []


@pytest.mark.parametrize("selector, labels, hit", [
    ({"matchLabels": {"app": "a"}}, {"app": "a"}, True),
    ({"matchLabels": {"app": "a"}}, {"app": "b"}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["x"]}]}, {"tier": "x"}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]}, {"tier": "x"}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {}, True),
    ({}, {"app": "a"}, True),  # an empty selector selects every pod of the namespace
])
def test_budget_selectors(selector, labels, hit):
    pdb = {"metadata": {"name": "b", "namespace": "ml"}, "spec": {"selector": selector}, "status": {}}
    assert bool(blocking_budgets([pod("p", labels=labels)], [pdb])) is hit
