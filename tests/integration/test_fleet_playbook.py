"""playbooks/fleet.yml with the real ansible-playbook on the shipped eks, gke and kubeadm-operator inventories
(render mode, nothing contacted): selection by tag and region, the fleet file refused before any cluster runs,
check mode passed on to every cluster, and a credential in fleet_run_vars kept off the output. The fleet on
the real control plane (apply mode, one cluster failing): test_cp_fleet.py."""
import json
import os
import re
import stat

import yaml

from ansible_run import ROOT, flat, run_playbook

SECRET = "fleet-secret-7f3a9c"


def fleet(tmp_path, select=None, **settings):
    """A fleet inventory at tmp_path/fleet naming the shipped inventories (each cluster building under tmp_path)."""
    folder = tmp_path / "fleet"
    (folder / "group_vars" / "all").mkdir(parents=True)
    (folder / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"gpufleet_controller": {"hosts": {
        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}}}))
    clusters = [
        {"name": "onprem-fra", "inventory": os.path.join(ROOT, "inventories", "kubeadm-operator"), "cloud": "onprem",
         "region": "fra1", "tags": ["prod", "training"]},
        {"name": "eks-use1", "inventory": os.path.join(ROOT, "inventories", "eks"), "cloud": "aws",
         "region": "us-east-1", "tags": ["prod"]},
        {"name": "gke-usc1", "inventory": os.path.join(ROOT, "inventories", "gke"), "cloud": "gcp",
         "region": "us-central1", "tags": ["research"]},
    ]
    for cluster in clusters:
        cluster["vars"] = {"gpufleet_build_dir": str(tmp_path / ("build-" + cluster["name"]))}
    variables = {"fleet_run_name": "test", "fleet_run_clusters": clusters, "fleet_run_select": select or [],
                 "fleet_run_run_dir": str(tmp_path / "run")}
    variables.update(settings)
    (folder / "group_vars" / "all" / "fleet.yml").write_text(yaml.safe_dump(variables))
    return str(folder)


def run_fleet(tmp_path, inventory, *args):
    return run_playbook("playbooks/fleet.yml", "-i", inventory, "-e", "fleet_overview_dir=%s" % (tmp_path / "report"),
                        *args, timeout=600)


def test_selection_by_tag_and_region_runs_only_those_clusters(tmp_path):
    inv = fleet(tmp_path, select=["tag=research", "region=fra1"], fleet_run_stage="provision")
    rc, out = run_fleet(tmp_path, inv)
    assert rc == 0, out[-4000:]
    assert "gke-usc1: ok (rc 0" in out and "onprem-fra: ok (rc 0" in out
    assert "eks-use1: skipped (not selected (fleet_run_select))" in out
    assert sorted(os.listdir(str(tmp_path / "run"))) == ["gke-usc1", "onprem-fra"]
    assert (tmp_path / "build-gke-usc1" / "provision").is_dir() and not (tmp_path / "build-eks-use1").exists()
    # each cluster rendered from its own inventory: GKE node auto-provisioning, the kubeadm hosts' Nodes
    assert (tmp_path / "build-gke-usc1" / "provision" / "gke" / "autoprovisioning.yaml").is_file()
    assert sorted(os.listdir(str(tmp_path / "build-onprem-fra" / "provision" / "nodes"))) == [
        "00-node-h100-node-01.example.internal.yaml", "01-node-h100-node-02.example.internal.yaml",
        "02-node-l40s-node-01.example.internal.yaml"]
    assert not (tmp_path / "build-gke-usc1" / "provision" / "nodes").exists()
    assert "Write the fleet-wide report" not in out       # provision does not run the clusters' report
    # a second run changes nothing on any cluster, and the fleet run reports no change
    rc, out = run_fleet(tmp_path, inv)
    assert rc == 0, out[-4000:]
    assert "gke-usc1: ok (rc 0" in out and re.search(r"gke-usc1: ok \(rc 0, [\d.]+ s, changed 0\)", out)
    assert re.search(r"onprem-fra: ok \(rc 0, [\d.]+ s, changed 0\)", out)
    assert re.search(r"TASK \[fleet_run : Run the stage on the selected clusters\][^\n]*\nok: \[localhost\]", out), out


def test_a_wrong_fleet_file_runs_no_cluster(tmp_path):
    inv = fleet(tmp_path, select=["tag=staging"])
    rc, out = run_fleet(tmp_path, inv)
    assert rc != 0
    assert "fleet_run_select[0]: no cluster of the fleet has tag 'staging'; known: prod, research, training" in flat(out)
    assert not (tmp_path / "run").exists()
    clusters = yaml.safe_load(open(os.path.join(inv, "group_vars", "all", "fleet.yml")))["fleet_run_clusters"]
    clusters[2]["inventory"] = clusters[1]["inventory"]
    rc, out = run_fleet(tmp_path, inv, "-e", json.dumps({"fleet_run_clusters": clusters, "fleet_run_select": []}))
    assert rc != 0
    assert ("fleet_run_clusters[2].inventory: {0} (fleet_run_clusters[1], eks-use1) and {0} (fleet_run_clusters[2], "
            "gke-usc1) are the same inventory".format(clusters[1]["inventory"])) in flat(out), flat(out)[-3000:]
    assert not (tmp_path / "run").exists()


def test_check_mode_reaches_every_cluster_and_a_credential_stays_in_the_private_file(tmp_path):
    inv = fleet(tmp_path, select=["eks-use1"], fleet_run_stage="provision",
                fleet_run_vars={"gpufleet_fleet_test_token": SECRET})
    rc, out = run_fleet(tmp_path, inv, "--check", "--diff", "-vvv")
    assert rc == 0, out[-4000:]
    assert "eks-use1: ok (rc 0" in out
    assert not (tmp_path / "build-eks-use1").exists(), "check mode wrote the cluster's build tree"
    vars_file = tmp_path / "run" / "eks-use1" / "fleet-vars.json"
    assert stat.S_IMODE(os.stat(str(vars_file)).st_mode) == 0o600
    assert json.loads(vars_file.read_text())["gpufleet_fleet_test_token"] == SECRET
    log = (tmp_path / "run" / "eks-use1" / "provision.log").read_text()
    assert SECRET not in out and SECRET not in log


def test_a_pool_spread_across_two_clusters_is_rendered_by_each_for_its_share(tmp_path):
    """fleet_run_pools (docs/fleet-pools.md): each cluster gets its part in its vars file and renders it with its own
    provisioner (Karpenter on EKS, node auto-provisioning on GKE); the plan shows the spread."""
    pools = [{"name": "fleet-l4", "gpu_type": "l4", "gpus_per_node": 1, "max_nodes": 10, "min_nodes": 0,
              "spread": [{"cluster": "eks-use1", "share": 60, "zones": ["us-east-1a"]},
                         {"cluster": "gke-usc1", "share": 40, "zones": ["us-central1-a"]}]}]
    inv = fleet(tmp_path, select=["cloud=aws", "cloud=gcp"], fleet_run_stage="provision", fleet_run_pools=pools)
    rc, out = run_fleet(tmp_path, inv)
    assert rc == 0, out[-4000:]
    assert '"pool": "fleet-l4", "cluster": "eks-use1"' in flat(out)
    parts = {}
    for name in ("eks-use1", "gke-usc1"):
        with open(str(tmp_path / "run" / name / "fleet-vars.json")) as handle:
            parts[name] = json.load(handle)["gpufleet_fleet_pools"]
    assert [(p["name"], p["max_nodes"], p["zones"]) for p in parts["eks-use1"]] == [("fleet-l4", 6, ["us-east-1a"])]
    assert [(p["name"], p["max_nodes"], p["zones"]) for p in parts["gke-usc1"]] == [("fleet-l4", 4, ["us-central1-a"])]
    assert (tmp_path / "build-eks-use1" / "provision" / "karpenter" / "05-nodepool-fleet-l4.yaml").is_file()
    # GKE: the inventory's infer-l4 (10 nodes x 1 GPU) plus the fleet part (4 x 1) in the NAP L4 limit
    with open(str(tmp_path / "build-gke-usc1" / "provision" / "gke" / "autoprovisioning.yaml")) as handle:
        limits = dict((r["resourceType"], r["maximum"]) for r in yaml.safe_load(handle)["resourceLimits"])
    assert limits["nvidia-l4"] == 14


def test_the_build_directory_a_cluster_inventory_sets_itself_is_where_the_fleet_looks(tmp_path):
    """gpufleet_build_dir set inside the cluster's own inventory (not in the fleet file): the cluster's run writes
    there, says so in its run folder (gpufleet_fleet_build_dir_file), and the fleet overview reads the cluster's
    report from there, not from build/<inventory folder name>."""
    import shutil
    own = tmp_path / "gke-own"
    shutil.copytree(os.path.join(ROOT, "inventories", "gke"), str(own))
    (own / "group_vars" / "all" / "zz-own-build.yml").write_text(
        yaml.safe_dump({"gpufleet_build_dir": str(tmp_path / "own-build")}))
    inv = fleet(tmp_path, select=["gke-usc1"], fleet_run_stage="report")
    fleet_file = os.path.join(inv, "group_vars", "all", "fleet.yml")
    settings = yaml.safe_load(open(fleet_file))
    gke = next(c for c in settings["fleet_run_clusters"] if c["name"] == "gke-usc1")
    gke.update(inventory=str(own), vars={})
    with open(fleet_file, "w") as handle:
        yaml.safe_dump(settings, handle)
    rc, out = run_fleet(tmp_path, inv)
    assert rc == 0, out[-4000:]
    assert (tmp_path / "own-build" / "report" / "fleet.json").is_file()
    said = tmp_path / "run" / "gke-usc1" / "build-dir"
    assert said.read_text().strip() == str(tmp_path / "own-build")
    assert stat.S_IMODE(os.stat(str(said)).st_mode) == 0o600
    gke_row = next(c for c in json.loads((tmp_path / "report" / "report.json").read_text())["clusters"]
                   if c["name"] == "gke-usc1")
    # read from own-build: the report of the cluster's render, not "no report at <project>/build/gke-own/..."
    assert (gke_row["state"], gke_row["message"], gke_row["pools"], gke_row["max_gpus"]) == ("ok", "", 3, 30), gke_row
    assert not os.path.exists(os.path.join(ROOT, "build", "gke-own"))
