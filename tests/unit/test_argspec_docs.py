"""Argument specs -> AWX surveys and role README sections."""
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.argspec_docs import (
    README_BEGIN, README_END, render_role_readme, roles_of_playbook, stage_options, survey_question, survey_spec)
from ansible_collections.gpufleet.k8s.plugins.module_utils.errors import GpufleetError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CASES = [
    ({"type": "str", "description": "d"}, {"type": "text", "default": "", "required": False}),
    ({"type": "path", "default": "/x"}, {"type": "text", "default": "/x"}),
    ({"type": "str", "choices": ["a", "b"], "default": "a"}, {"type": "multiplechoice", "choices": ["a", "b"], "default": "a"}),
    ({"type": "bool", "default": False}, {"type": "multiplechoice", "choices": ["true", "false"], "default": "false"}),
    ({"type": "bool", "default": True}, {"default": "true"}),
    ({"type": "int", "default": 300}, {"type": "integer", "default": 300}),
    ({"type": "float", "default": 0.5}, {"type": "float", "default": 0.5}),
    ({"type": "list", "elements": "str", "choices": ["x", "y"], "default": ["x"]}, {"type": "multiselect", "default": "x"}),
    ({"type": "list", "elements": "dict", "default": []}, {"type": "textarea", "default": "[]"}),
    ({"type": "dict", "default": {"b": 1, "a": 2}}, {"type": "textarea", "default": '{"a": 2, "b": 1}'}),
    ({"type": "raw"}, {"type": "textarea"}),
    ({"type": "str", "no_log": True, "required": True}, {"type": "password", "required": True}),
    ({"type": "str", "description": ["line one", "line two"]}, {"question_description": "line one line two"}),
]


@pytest.mark.parametrize("option,expected", CASES)
def test_every_argument_type_maps_to_a_survey_question(option, expected):
    question = survey_question("v", option)
    assert question["variable"] == "v"
    for key, value in expected.items():
        assert question[key] == value, (key, question)


def test_unknown_type_is_refused():
    with pytest.raises(GpufleetError):
        survey_question("v", {"type": "bits"})


def test_stage_playbook_roles_and_options_come_from_the_repo():
    assert roles_of_playbook(os.path.join(ROOT, "playbooks", "cluster.yml"))[0] == "gpufleet"
    options = stage_options(ROOT, "playbooks/preflight.yml")
    assert options["gpufleet_platform"]["required"] is True
    spec = survey_spec("s", options)
    names = [q["variable"] for q in spec["spec"]]
    assert names == sorted(names) and "gpufleet_gpu_pools" in names
    platform = [q for q in spec["spec"] if q["variable"] == "gpufleet_platform"][0]
    assert platform["type"] == "multiplechoice" and "eks" in platform["choices"] and platform["required"]


def test_readme_section_replaced_in_place_keeping_hand_written_text():
    spec = {"short_description": "S", "options": {"r_a": {"type": "int", "default": 1, "description": "A | B"}}}
    first = render_role_readme("", "r", spec)
    assert first.startswith("# Role r\n\nS\n") and "| `r_a` | int | `1` | no |  | A \\| B |" in first
    edited = first.replace("# Role r", "# Role r\n\nHand-written intro.")
    spec["options"]["r_b"] = {"type": "str", "description": "new"}
    second = render_role_readme(edited, "r", spec)
    assert "Hand-written intro." in second and "`r_b`" in second
    assert second.count(README_BEGIN) == 1 and second.count(README_END) == 1
    assert render_role_readme(second, "r", spec) == second


def test_workflow_chains_stages_in_order_on_success():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.argspec_docs import workflow_nodes
    nodes = workflow_nodes(["preflight", "provision", "report"], "org")
    assert [n["identifier"] for n in nodes] == ["preflight", "provision", "report"]
    assert nodes[0]["related"] == {"success_nodes": [{"identifier": "provision"}]}
    assert nodes[1]["related"] == {"success_nodes": [{"identifier": "report"}]}
    assert "related" not in nodes[2]
    assert nodes[2]["unified_job_template"] == {"name": "gpufleet report", "type": "job_template",
                                                "organization": {"name": "org"}}
