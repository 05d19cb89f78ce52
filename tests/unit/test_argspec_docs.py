"""Argument specs -> AWX surveys (module_utils/role_specs.py). The role README sections generated
from the specs are tested in test_generated_docs.py (scripts/gen-docs.py)."""
import os

from ansible_collections.gpufleet.k8s.plugins.module_utils.role_specs import roles_of_playbook, stage_options

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_stage_playbook_roles_and_options_come_from_the_repo():
    assert roles_of_playbook(os.path.join(ROOT, "playbooks", "cluster.yml"))[0] == "gpufleet"
    options = stage_options(ROOT, "playbooks/preflight.yml")
    # not "required": preflight refuses a missing platform itself, listing these choices (issue 26)
    assert options["gpufleet_platform"]["choices"][:3] == ["eks", "gke", "gke-autopilot"]
    assert "gpufleet_gpu_pools" in options


def test_workflow_chains_stages_in_order_on_success():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.awx_survey import workflow_nodes
    nodes = workflow_nodes(["preflight", "provision", "report"], "org")
    assert [n["identifier"] for n in nodes] == ["preflight", "provision", "report"]
    assert nodes[0]["related"] == {"success_nodes": [{"identifier": "provision"}]}
    assert nodes[1]["related"] == {"success_nodes": [{"identifier": "report"}]}
    assert "related" not in nodes[2]
    assert nodes[2]["unified_job_template"] == {"name": "gpufleet report", "type": "job_template",
                                                "organization": {"name": "org"}}
