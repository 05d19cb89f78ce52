"""Argument specs -> AWX surveys (module_utils/role_specs.py) and role README sections
(scripts/argspec_docs.py, a developer tool outside the collection)."""
import os
import sys

from ansible_collections.gpufleet.k8s.plugins.module_utils.role_specs import roles_of_playbook, stage_options

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from argspec_docs import README_BEGIN, README_END, render_role_readme  # noqa: E402


def test_stage_playbook_roles_and_options_come_from_the_repo():
    assert roles_of_playbook(os.path.join(ROOT, "playbooks", "cluster.yml"))[0] == "gpufleet"
    options = stage_options(ROOT, "playbooks/preflight.yml")
    # not "required": preflight refuses a missing platform itself, listing these choices (issue 26)
    assert options["gpufleet_platform"]["choices"][:3] == ["eks", "gke", "gke-autopilot"]
    assert "gpufleet_gpu_pools" in options


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
    from ansible_collections.gpufleet.k8s.plugins.module_utils.awx_survey import workflow_nodes
    nodes = workflow_nodes(["preflight", "provision", "report"], "org")
    assert [n["identifier"] for n in nodes] == ["preflight", "provision", "report"]
    assert nodes[0]["related"] == {"success_nodes": [{"identifier": "provision"}]}
    assert nodes[1]["related"] == {"success_nodes": [{"identifier": "report"}]}
    assert "related" not in nodes[2]
    assert nodes[2]["unified_job_template"] == {"name": "gpufleet report", "type": "job_template",
                                                "organization": {"name": "org"}}
