"""The report stage's cluster read (issue 30, item 3): each Pod cut down to what the report uses, so that
env values and commands (secrets inline) never reach the report module's arguments; a failed read
(run without a log) raised with the client's message."""
import json
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import build_report, cluster_reads, report_pod
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "report")
PLAN = {"cluster_name": "example", "platform": "kubeadm", "pools": normalize_pools([
    {"name": "train-a100", "gpu_type": "a100-80gb", "gpus_per_node": 8, "min_nodes": 2, "max_nodes": 2,
     "sharing": {"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.10gb"}},
    {"name": "infer-l4", "gpu_type": "l4", "gpus_per_node": 1, "min_nodes": 3, "max_nodes": 6,
     "sharing": {"mode": "time-slicing", "replicas": 4}},
])}
SECRET = "s3cr3t-value"
POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "srv", "namespace": "team", "annotations": {"note": SECRET}, "labels": {"app": SECRET}},
    "spec": {"nodeName": "l4-1", "nodeSelector": {"gpufleet.io/pool": "infer-l4", "other": SECRET},
             "containers": [{"name": "srv", "image": "registry.example/srv:1", "command": ["run", "--token", SECRET],
                             "args": [SECRET], "env": [{"name": "DB_PASSWORD", "value": SECRET}],
                             "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "1"}}},
                            {"name": "sidecar", "env": [{"name": "K", "value": SECRET}]}],
             "initContainers": [{"name": "init", "env": [{"name": "K", "value": SECRET}]}],
             "volumes": [{"name": "v", "secret": {"secretName": SECRET}}]},
    "status": {"phase": "Running", "message": SECRET},
}


def fixture(name):
    with open(os.path.join(FIX, name)) as handle:
        return json.load(handle)


@pytest.mark.parametrize("pod,expected", [
    (POD, {"metadata": {"namespace": "team", "name": "srv"},
           "spec": {"nodeName": "l4-1", "nodeSelector": {"gpufleet.io/pool": "infer-l4"},
                    "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "1"}}}, {}]},
           "status": {"phase": "Running"}}),
    ({"metadata": {"name": "pending"}, "spec": {"containers": [{"env": [{"name": "K", "value": SECRET}]}]},
      "status": {"phase": "Pending"}},
     {"metadata": {"name": "pending"}, "spec": {"containers": [{}]}, "status": {"phase": "Pending"}}),
    ({}, {"metadata": {}, "spec": {"containers": []}, "status": {"phase": None}}),
])
def test_a_pod_is_cut_down_to_what_the_report_reads(pod, expected):
    assert report_pod(pod) == expected
    assert SECRET not in json.dumps(report_pod(pod))


def test_the_report_from_cut_down_pods_equals_the_report_from_full_pods():
    nodes, pods = fixture("nodes.json")["items"], fixture("pods.json")["items"]
    args = dict(utilisation=fixture("prometheus.json"), idle_percent=10, utilisation_scale=1.0)
    full = build_report(PLAN, nodes=nodes, pods=pods, **args)
    cut = build_report(PLAN, nodes=nodes, pods=[report_pod(p) for p in pods], **args)
    assert cut == full and any(n["requested"] for n in full["nodes"])


def read(node_result, pod_result):
    return {"results": [dict(node_result, item="Node"), dict(pod_result, item="Pod")], "changed": False}


def test_cluster_reads_returns_the_nodes_as_read_and_cut_down_pods():
    node = {"metadata": {"name": "l4-1", "labels": {"gpufleet.io/pool": "infer-l4"}}}
    out = cluster_reads(read({"resources": [node], "api_found": True}, {"resources": [POD], "api_found": True}))
    assert out == {"nodes": [node], "pods": [report_pod(POD)]}


def test_a_skipped_read_render_mode_gives_nothing():
    # ansible-core 2.18 templates the report task's vars in render mode too, where the read is skipped
    assert cluster_reads(read({"skipped": True}, {"skipped": True})) == {"nodes": [], "pods": []}
    assert cluster_reads({"skipped": True, "results": []}) == {"nodes": [], "pods": []}


@pytest.mark.parametrize("results,message", [
    (read({"resources": []}, {"failed": True, "msg": "Failed to get client due to (403) Forbidden"}),
     "the report could not read the cluster (Pod: Failed to get client due to (403) Forbidden); "
     "the report was not written"),
    (read({"failed": True, "msg": "timed out"}, {"failed": True}),
     "the report could not read the cluster (Node: timed out; Pod: no answer); the report was not written"),
    (read({"failed": True, "msg": "Connection refused"}, {"failed": True, "msg": "Connection refused"}),
     "the report could not read the cluster (Node, Pod: Connection refused); the report was not written"),
    ({"results": []}, "fleet_report_cluster: the input must be the registered k8s_info loop over [Node, Pod]"),
    (None, "fleet_report_cluster: the input must be the registered k8s_info loop over [Node, Pod]"),
])
def test_a_failed_or_odd_read_is_raised_with_its_message(results, message):
    with pytest.raises(GpufleetError) as err:
        cluster_reads(results)
    assert err.value.msg == message
