"""Argument specs -> AWX surveys (module_utils/core/role_specs.py). The role README sections generated
from the specs are tested in test_generated_docs.py (scripts/gen-docs.py)."""
import os

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.role_specs import roles_of_playbook, stage_options

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_stage_playbook_roles_and_options_come_from_the_repo():
    assert roles_of_playbook(os.path.join(ROOT, "playbooks", "cluster.yml"))[0] == "gpufleet"
    options = stage_options(ROOT, "playbooks/preflight.yml")
    # not "required": preflight refuses a missing platform itself, listing these choices (issue 26)
    assert options["gpufleet_platform"]["choices"][:3] == ["eks", "gke", "gke-autopilot"]
    # declared once, in the gpu_pools role (provision); preflight's survey finds it as a project-wide input
    assert "gpufleet_gpu_pools" not in options
    assert stage_options(ROOT, "playbooks/provision.yml")["gpufleet_gpu_pools"]["type"] == "list"
    from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.awx_survey import stage_survey_options
    assert stage_survey_options(ROOT, "preflight")["gpufleet_gpu_pools"]["type"] == "list"


def test_every_input_is_declared_by_one_role():
    """issue 31: an input documented twice drifts; entry points of one role may share an option."""
    import glob
    import yaml
    owners = {}
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        role = path.split(os.sep)[-3]
        with open(path) as handle:
            for entry in yaml.safe_load(handle)["argument_specs"].values():
                for name in (entry or {}).get("options") or {}:
                    owners.setdefault(name, set()).add(role)
    assert "gpufleet_gpu_pools" in owners
    twice = {name: sorted(roles) for name, roles in owners.items() if len(roles) > 1}
    assert not twice, twice


def test_workflow_chains_stages_in_order_on_success():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.awx_survey import workflow_nodes
    nodes = workflow_nodes(["preflight", "provision", "report"], "org")
    assert [n["identifier"] for n in nodes] == ["preflight", "provision", "report"]
    assert nodes[0]["related"] == {"success_nodes": [{"identifier": "provision"}]}
    assert nodes[1]["related"] == {"success_nodes": [{"identifier": "report"}]}
    assert "related" not in nodes[2]
    assert nodes[2]["unified_job_template"] == {"name": "gpufleet report", "type": "job_template",
                                                "organization": {"name": "org"}}
