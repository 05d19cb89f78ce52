"""Node labels at fleet size on a real control plane (tests/helpers/controlplane.py, KWOK standing in for the
kubelets): gpufleet.k8s.node_labels reads every Node with one list request and writes the Nodes that must
change several at a time. The real provision stage labels and taints 50 Nodes and changes nothing on the
second run; the module's Node client against the real API server is counted (one LIST, one PATCH per Node,
patches in flight together) and survives a real 409 Conflict (another writer changes a Node between
gpufleet's read and its write: gpufleet reads that Node again, keeps the other writer's label, and writes).
"""
import json
import threading

import pytest

from ansible_run import recap
from cp_nodes import gpufleet_traces, inventory, provision

NAMES = ["gpu-p%02d" % i for i in range(50)]
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def fleet(control_plane):
    control_plane.add_nodes(NAMES + ["cpu-x1"], gpu=8)
    return control_plane


class CountingApi:
    """The module's own Node client (real kubernetes client, real API server), counting its requests and how
    many patches were in flight at once; ``meanwhile`` {Node: function} runs once before that Node's first
    patch (another writer changing the Node after gpufleet read it)."""

    def __init__(self, api, meanwhile=None):
        self.api, self.meanwhile = api, dict(meanwhile or {})
        self.calls, self.lock = [], threading.Lock()
        self.in_flight = self.most_in_flight = 0

    def list_nodes(self):
        self.calls.append(("LIST", None))
        return self.api.list_nodes()

    def get_node(self, name):
        with self.lock:
            self.calls.append(("GET", name))
        return self.api.get_node(name)

    def patch_node(self, name, patch):
        with self.lock:
            self.calls.append(("PATCH", name))
            hook = self.meanwhile.pop(name, None)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if hook:
                hook()
            return self.api.patch_node(name, patch)
        finally:
            with self.lock:
                self.in_flight -= 1


def test_provision_stage_labels_fifty_nodes_then_changes_nothing(fleet, tmp_path):
    cp = fleet
    inv = inventory(tmp_path, {"%s.example.internal" % n: n for n in NAMES})
    rc, out = provision(cp, tmp_path, inv)
    assert rc == 0, out[-4000:]
    assert recap(out)["changed"] >= 1, out[-3000:]
    for name in NAMES:
        labels, taints, notes = gpufleet_traces(cp.node(name))
        assert labels.get("gpufleet.io/pool") == "train-a100" and taints == [GPU_TAINT], (name, labels, taints)
        assert json.loads(notes["gpufleet.io/owned"])["labels"]["gpufleet.io/pool"] == "train-a100"
    assert gpufleet_traces(cp.node("cpu-x1")) == ({}, [], {})

    rc, out = provision(cp, tmp_path, inv)
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]


def test_one_list_parallel_patches_and_a_real_conflict_retried(fleet):
    kubernetes = pytest.importorskip("kubernetes")
    from ansible_collections.gpufleet.k8s.plugins.modules.node_labels import NodeApi
    from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.node_ownership import converge

    cp = fleet
    client = kubernetes.config.new_client_from_config(config_file=cp.kubeconfig)
    want = {"gpufleet.io/pool": "serve", "nvidia.com/device-plugin.config": "serve"}
    desired = [{"name": n, "host": n + ".example.internal", "labels": want, "taints": [GPU_TAINT]} for n in NAMES]

    def other_writer():  # a real write between gpufleet's list and its patch: the API server answers 409
        cp.merge_patch("/api/v1/nodes/gpu-p07", {"metadata": {"labels": {"team": "research"}}})

    api = CountingApi(NodeApi(client), {"gpu-p07": other_writer})
    plans = converge(api, desired, prune=True, workers=8)
    assert [p["name"] for p in plans] == NAMES  # the planned order, every Node once
    assert sum(p["changed"] for p in plans) == 50
    ops = [c[0] for c in api.calls]
    assert ops[0] == "LIST" and ops.count("LIST") == 1
    assert api.calls.count(("GET", "gpu-p07")) == 1 and ops.count("GET") == 1  # the conflict, read again once
    assert ops.count("PATCH") == 51 and api.calls.count(("PATCH", "gpu-p07")) == 2
    assert api.most_in_flight > 1, "patches were not in flight together"
    for name in NAMES:
        labels, taints, _notes = gpufleet_traces(cp.node(name))
        assert labels == want and taints == [GPU_TAINT], (name, labels, taints)
    assert cp.node("gpu-p07")["metadata"]["labels"]["team"] == "research"  # the other writer's label kept

    again = CountingApi(NodeApi(client))
    assert not any(p["changed"] for p in converge(again, desired, prune=True, workers=8))
    assert [c[0] for c in again.calls] == ["LIST"]
