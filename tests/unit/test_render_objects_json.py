"""render_manifests' objects_json and the objects_json filter: the same files as a list argument,
and a clear message for anything else (Ansible copies every node of a list argument, which made a
200-pool render spend a second per large render task; a string is passed as it is)."""
import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.filter.objects_json import gpufleet_objects_json
from ansible_collections.gpufleet.k8s.plugins.modules import render_manifests
from ansible_collections.gpufleet.k8s.plugins.plugin_utils.controller_module import run_in_process

OBJECTS = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu"}},
           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "gpu"},
            "data": {"config.yaml": "version: v1\nflags: {}\n", "n": "ünïcode"}, "immutable": False}]


def run(args):
    return run_in_process(render_manifests, args, name="gpufleet.k8s.render_manifests")


def tree(path):
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def test_objects_json_renders_the_same_files_as_objects(tmp_path):
    by_list = run({"dest": str(tmp_path / "a"), "objects": OBJECTS, "header": "# h\n"})
    by_json = run({"dest": str(tmp_path / "b"), "objects_json": gpufleet_objects_json(OBJECTS), "header": "# h\n"})
    assert not by_list.get("failed") and not by_json.get("failed"), (by_list, by_json)
    assert tree(tmp_path / "a") == tree(tmp_path / "b") and len(tree(tmp_path / "a")) == 2
    assert by_json["changed"] and not run({"dest": str(tmp_path / "b"), "objects_json": json.dumps(OBJECTS),
                                           "header": "# h\n"})["changed"]


@pytest.mark.parametrize("args,message", [
    ({}, "needs exactly one of objects and objects_json, got neither"),
    ({"objects": OBJECTS, "objects_json": "[]"}, "needs exactly one of objects and objects_json, got objects and objects_json"),
    ({"objects_json": "[{"}, "objects_json is not JSON"),
    ({"objects_json": '{"kind": "Namespace"}'}, "objects_json must hold a list of objects (mappings), got dict"),
    ({"objects_json": '["x"]'}, "objects_json must hold a list of objects (mappings), got list"),
])
def test_wrong_objects_arguments_are_refused_before_anything_is_written(tmp_path, args, message):
    result = run(dict(args, dest=str(tmp_path / "out")))
    assert result.get("failed") and message in result["msg"], result
    assert not (tmp_path / "out").exists()


def test_filter_refuses_what_is_not_a_list_of_objects():
    assert json.loads(gpufleet_objects_json(OBJECTS)) == OBJECTS
    assert gpufleet_objects_json([]) == "[]"
    for bad in ({"kind": "x"}, ["x"], "text"):
        with pytest.raises(AnsibleFilterError, match="must be a list of Kubernetes objects"):
            gpufleet_objects_json(bad)
    with pytest.raises(AnsibleFilterError, match="JSON cannot carry"):
        gpufleet_objects_json([{"kind": "x", "value": float("nan")}])
