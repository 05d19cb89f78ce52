"""gpufleet.k8s.node_labels takes the wanted Nodes as a list (nodes) or as one JSON text (nodes_json, what the
provision stage passes: Ansible walks and copies every element of a list argument); both are checked against
the same suboptions, and a wrong one is refused naming the option before the cluster is asked anything."""
import json

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.modules.node_labels import wanted_nodes

TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
NODES = [{"name": "gpu-a1", "host": "a1.example.internal", "labels": {"gpufleet.io/pool": "train"}, "taints": [TAINT]},
         {"name": "gpu-a2"}]


def test_json_text_gives_the_same_nodes_as_the_list_with_defaults_filled():
    from_json = wanted_nodes({"nodes": None, "nodes_json": json.dumps(NODES)})
    assert from_json[0] == NODES[0]
    assert from_json[1] == {"name": "gpu-a2", "host": None, "labels": {}, "taints": []}
    assert wanted_nodes({"nodes": None, "nodes_json": NODES}) == from_json  # ansible-core 2.18 hands the list over


@pytest.mark.parametrize("params,error", [
    ({"nodes": NODES, "nodes_json": "[]"}, "one of nodes and nodes_json, got both"),
    ({"nodes": None, "nodes_json": "[{"}, "nodes_json is not JSON"),
    ({"nodes": None, "nodes_json": '{"name": "gpu-a1"}'}, "nodes_json must hold a list of Nodes (mappings), got dict"),
    ({"nodes": None, "nodes_json": '[{"host": "a1"}]'}, "nodes_json: missing required arguments: name"),
])
def test_bad_nodes_json_is_refused_naming_the_option(params, error):
    with pytest.raises(GpufleetError) as err:
        wanted_nodes(params)
    assert error in err.value.msg, err.value.msg


def test_neither_given_wants_no_node():
    assert wanted_nodes({"nodes": None, "nodes_json": None}) == []
