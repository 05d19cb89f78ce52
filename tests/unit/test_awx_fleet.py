"""A fleet inventory as AWX objects (module_utils/fleet/awx_fleet.py): one job template per (cluster, stage)
on the cluster's own AWX inventory, a workflow whose node graph runs each cluster's stages in order and the
clusters side by side; bad fleets refused before AWX changes. No AWX runs here: the graph is checked as AWX
would walk it (roots start at once, success_nodes follow)."""
import os
import shutil

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import awx_fleet
from ansible_collections.gpufleet.k8s.plugins.modules import awx_fleet as awx_fleet_module
from ansible_collections.gpufleet.k8s.plugins.plugin_utils.controller_module import run_in_process

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAGES = ["preflight", "provision", "nodes", "cluster", "validate", "report"]


def waves(nodes):
    """The order AWX runs a workflow in when every job succeeds: a list of sets of node identifiers, each wave
    starting when the one before ended."""
    by_id = dict((n["identifier"], n) for n in nodes)
    wave = set(awx_fleet.roots(nodes))
    out, seen = [], set()
    while wave:
        assert not wave & seen, "a node runs twice"
        out.append(wave)
        seen |= wave
        wave = {t["identifier"] for i in wave for t in (by_id[i].get("related") or {}).get("success_nodes", [])}
    assert seen == set(by_id), "nodes no path reaches: %s" % sorted(set(by_id) - seen)
    return out


def test_the_shipped_fleet_example_becomes_one_workflow():
    plans = awx_fleet.fleet_plans(ROOT, STAGES, "gpufleet")
    assert [p["folder"] for p in plans] == ["fleet-example"]
    plan = plans[0]
    assert plan["workflow"] == "gpufleet fleet example" and plan["clusters"] == ["onprem-fra", "eks-use1", "gke-usc1"]
    assert len(plan["job_templates"]) == 18
    eks_nodes = [t for t in plan["job_templates"] if t["cluster"] == "eks-use1"]
    assert [t["stage"] for t in eks_nodes] == STAGES
    assert eks_nodes[3] == {"name": "gpufleet fleet example eks-use1 cluster", "stage": "cluster", "cluster": "eks-use1",
                            "playbook": "playbooks/cluster.yml", "inventory": "gpufleet eks", "credentials": [],
                            "extra_vars": {"gpufleet_fleet_cluster": {"name": "eks-use1", "cloud": "aws",
                                                                      "region": "us-east-1", "tags": ["prod"]},
                                           "gpufleet_fleet_pools": []}}
    assert {t["inventory"] for t in plan["job_templates"]} == {"gpufleet kubeadm-operator", "gpufleet eks", "gpufleet gke"}


def test_each_cluster_runs_its_stages_in_order_and_the_clusters_side_by_side():
    plan = awx_fleet.fleet_plans(ROOT, STAGES, "gpufleet")[0]
    order = waves(plan["workflow_nodes"])
    assert order == [{"%s %s" % (c, stage) for c in plan["clusters"]} for stage in STAGES]
    node = plan["workflow_nodes"][0]
    assert node["unified_job_template"] == {"name": "gpufleet fleet example onprem-fra preflight",
                                            "type": "job_template", "organization": {"name": "gpufleet"}}
    # a failed stage of one cluster stops that cluster only: no node follows another cluster's node
    for n in plan["workflow_nodes"]:
        for nxt in (n.get("related") or {}).get("success_nodes", []):
            assert nxt["identifier"].split(" ")[0] == n["identifier"].split(" ")[0]
        assert set(n.get("related") or {}) <= {"success_nodes"}
    assert {t["name"] for t in plan["job_templates"]} == {n["unified_job_template"]["name"] for n in plan["workflow_nodes"]}


def test_the_workflow_nodes_are_what_awx_workflow_job_template_takes():
    plan = awx_fleet.fleet_plans(ROOT, ["preflight", "cluster"], "org", prefix="gf ")[0]
    assert plan["workflow_nodes"][:2] == [
        {"identifier": "onprem-fra preflight",
         "unified_job_template": {"name": "gf fleet example onprem-fra preflight", "type": "job_template",
                                  "organization": {"name": "org"}},
         "related": {"success_nodes": [{"identifier": "onprem-fra cluster"}]}},
        {"identifier": "onprem-fra cluster",
         "unified_job_template": {"name": "gf fleet example onprem-fra cluster", "type": "job_template",
                                  "organization": {"name": "org"}}}]


@pytest.fixture()
def project(tmp_path):
    """A project with the real playbooks and the eks and gke inventories, and a fleet inventory to edit."""
    shutil.copytree(os.path.join(ROOT, "playbooks"), str(tmp_path / "playbooks"))
    for name in ("eks", "gke"):
        shutil.copytree(os.path.join(ROOT, "inventories", name), str(tmp_path / "inventories" / name))
    (tmp_path / "inventories" / "f1" / "group_vars" / "all").mkdir(parents=True)
    return tmp_path


def write_fleet(project, folder, variables, layout="dir"):
    base = project / "inventories" / folder / "group_vars"
    base.mkdir(parents=True, exist_ok=True)
    target = base / "all" / "fleet.yml" if layout == "dir" else base / "all.yml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(variables if isinstance(variables, str) else yaml.safe_dump(variables))


TWO = [{"name": "eks-a", "inventory": "../eks", "cloud": "aws", "region": "us-east-1", "tags": ["prod"],
        "vars": {"gpufleet_apply": True}},
       {"name": "gke-b", "inventory": "../gke", "cloud": "gcp", "region": "us-central1"}]


def test_a_fleet_file_with_vaulted_values_and_all_yml_is_found(project):
    write_fleet(project, "f1", "fleet_run_name: lab\nfleet_run_clusters: %s\nfleet_run_vars:\n  token: !vault |\n"
                               "    $ANSIBLE_VAULT;1.1;AES256\n    6162\n" % yaml.safe_dump(TWO, default_flow_style=True),
                layout="file")
    write_fleet(project, "plain", {"gpufleet_platform": "eks"})
    plans = awx_fleet.fleet_plans(str(project), ["preflight"], "o")
    assert [(p["folder"], p["name"], p["inventory"]) for p in plans] == [("f1", "lab", "gpufleet f1")]
    assert plans[0]["job_templates"][0]["extra_vars"]["gpufleet_apply"] is True
    assert waves(plans[0]["workflow_nodes"]) == [{"eks-a preflight", "gke-b preflight"}]


@pytest.mark.parametrize("clusters,stages,message", [
    ([dict(TWO[0], cloud="azure")], STAGES,
     "fleet inventory inventories/f1: the fleet file has 1 problem(s): fleet_run_clusters[0].cloud: 'azure'"),
    ([dict(TWO[0], inventory="../../playbooks")], STAGES,
     "fleet_run_clusters[0].inventory: ../../playbooks is not a folder of the project's inventories/"),
    (TWO, ["preflight", "deploy"], "fleet_run_stage: 'deploy'; use one of"),
    (TWO, [], "gpufleet_awx_stages: empty"),
])
def test_bad_fleets_are_refused_before_awx_changes(project, clusters, stages, message):
    write_fleet(project, "f1", {"fleet_run_clusters": clusters})
    with pytest.raises(GpufleetError) as err:
        awx_fleet.fleet_plans(str(project), stages, "o")
    assert message in err.value.msg


def test_two_fleets_may_not_share_a_workflow_name(project):
    write_fleet(project, "f1", {"fleet_run_name": "x", "fleet_run_clusters": TWO[:1]})
    write_fleet(project, "f2", {"fleet_run_name": "x", "fleet_run_clusters": TWO[1:]})
    with pytest.raises(GpufleetError) as err:
        awx_fleet.fleet_plans(str(project), STAGES, "o")
    assert "inventories/f1 and inventories/f2 both name their fleet 'x'" in err.value.msg


def test_the_module_returns_the_fleets_and_fails_clearly(project):
    write_fleet(project, "f1", {"fleet_run_clusters": TWO})
    result = run_in_process(awx_fleet_module, {"project_dir": str(project), "stages": ["preflight", "report"],
                                               "organization": "o"})
    assert result["changed"] is False and [f["name"] for f in result["fleets"]] == ["f1"]
    write_fleet(project, "f1", {"fleet_run_clusters": [dict(TWO[0], name="Bad_Name")]})
    result = run_in_process(awx_fleet_module, {"project_dir": str(project), "stages": ["preflight"], "organization": "o"})
    assert result["failed"] is True
    assert result["msg"].startswith("cannot build the fleet workflows: fleet inventory inventories/f1: ")
    assert "fleet_run_clusters[0].name: 'Bad_Name' is not valid" in result["msg"]


def test_each_cluster_template_gets_only_the_credentials_its_entry_names(project):
    """Issue 39 item 3: every credential of gpufleet_awx_credentials went to every cluster's job templates (the EKS
    cluster's jobs carried the GKE cluster's service account). Now each template carries what its cluster names."""
    two = [dict(TWO[0], credentials=["eks kubeconfig", "aws"]), dict(TWO[1], credentials=["gke kubeconfig"])]
    write_fleet(project, "f1", {"fleet_run_clusters": two})
    known = ["aws", "eks kubeconfig", "gke kubeconfig", "ssh"]
    plan = awx_fleet.fleet_plans(str(project), ["preflight", "cluster"], "o", credentials=known)[0]
    got = dict((t["name"], t["credentials"]) for t in plan["job_templates"])
    assert got == {"gpufleet fleet f1 eks-a preflight": ["eks kubeconfig", "aws"],
                   "gpufleet fleet f1 eks-a cluster": ["eks kubeconfig", "aws"],
                   "gpufleet fleet f1 gke-b preflight": ["gke kubeconfig"],
                   "gpufleet fleet f1 gke-b cluster": ["gke kubeconfig"]}
    # a cluster that names none gets none
    write_fleet(project, "f1", {"fleet_run_clusters": TWO})
    plan = awx_fleet.fleet_plans(str(project), ["preflight"], "o", credentials=known)[0]
    assert [t["credentials"] for t in plan["job_templates"]] == [[], []]


def test_a_credential_gpufleet_does_not_create_is_refused(project):
    write_fleet(project, "f1", {"fleet_run_clusters": [dict(TWO[0], credentials=["aws", "someone else's"]), TWO[1]]})
    with pytest.raises(GpufleetError) as err:
        awx_fleet.fleet_plans(str(project), ["preflight"], "o", credentials=["aws", "ssh"])
    assert err.value.msg == ("inventories/f1: fleet_run_clusters[0].credentials: \"someone else's\" not in "
                             "gpufleet_awx_credentials (known: aws, ssh); a cluster's job templates get only the "
                             "credentials its entry names, from those gpufleet creates")


def test_configure_attaches_each_template_s_own_credentials():
    with open(os.path.join(ROOT, "awx", "configure.yml")) as handle:
        tasks = yaml.safe_load(handle)[0]["tasks"]
    fleet_templates = next(t for t in tasks if t["name"].startswith("Create one job template per fleet cluster"))
    assert fleet_templates["awx.awx.job_template"]["credentials"] == "{{ item.credentials }}"
    fleets = next(t for t in tasks if "gpufleet.k8s.awx_fleet" in t)
    assert (fleets["gpufleet.k8s.awx_fleet"]["credentials"]
            == "{{ gpufleet_awx_credentials | map(attribute='name') | list }}")
