"""The fleet file (fleet_run_clusters, fleet_run_select, fleet_run_extra_args): checked before any cluster runs,
every message naming the variable path and what is allowed; selection by name, region, cloud and tag; the
per-cluster command line carries no variable but the private vars file."""
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import fleet_inventory as fleet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLEET_DIR = os.path.join(ROOT, "inventories", "fleet-example")


def example():
    return [
        {"name": "onprem-fra", "inventory": "../kubeadm-operator", "platform": "kubeadm", "cloud": "onprem",
         "region": "fra1", "tags": ["prod", "training"]},
        {"name": "eks-use1", "inventory": "../eks", "platform": "eks", "cloud": "aws", "region": "us-east-1",
         "tags": ["prod"]},
        {"name": "gke-usc1", "inventory": "../gke", "platform": "gke", "cloud": "gcp", "region": "us-central1",
         "tags": ["research"]},
    ]


def with_change(index, **change):
    clusters = example()
    for key, value in change.items():
        if value is KeyError:
            clusters[index].pop(key)
        else:
            clusters[index][key] = value
    return clusters


def test_the_shipped_example_loads_with_absolute_inventories():
    clusters = fleet.load(example(), FLEET_DIR)
    assert [c["name"] for c in clusters] == ["onprem-fra", "eks-use1", "gke-usc1"]
    assert clusters[1]["inventory"] == os.path.join(ROOT, "inventories", "eks")
    assert clusters[0]["tags"] == ["prod", "training"] and clusters[2]["vars"] == {}


BAD = [
    (with_change(1, name="EKS_use1"), "fleet_run_clusters[1].name: 'EKS_use1' is not valid; use a DNS label"),
    (with_change(1, name="a" * 64), "fleet_run_clusters[1].name: '%s' is not valid" % ("a" * 64)),
    (with_change(2, name="eks-use1"),
     "fleet_run_clusters[2].name: 'eks-use1' is also the name of fleet_run_clusters[1]; cluster names are unique"),
    (with_change(1, name=KeyError), "fleet_run_clusters[1].name: missing; give a non-empty string"),
    (with_change(2, inventory="../eks"),
     "fleet_run_clusters[2].inventory: ../eks (fleet_run_clusters[1], eks-use1) and ../eks (fleet_run_clusters[2], "
     "gke-usc1) are the same inventory"),
    (with_change(2, inventory="../eks/"), "fleet_run_clusters[2].inventory: ../eks (fleet_run_clusters[1], eks-use1) "
                                          "and ../eks/ (fleet_run_clusters[2], gke-usc1) are the same inventory"),
    # issue 39: the folder and its hosts file are one inventory (one group_vars, one build/<inventory>/)
    (with_change(2, inventory="../eks/hosts.yml"),
     "fleet_run_clusters[2].inventory: ../eks (fleet_run_clusters[1], eks-use1) and ../eks/hosts.yml "
     "(fleet_run_clusters[2], gke-usc1) are the same inventory (%s)" % os.path.join(ROOT, "inventories", "eks")),
    (with_change(1, environment="K8S_AUTH_API_KEY"), "fleet_run_clusters[1].environment: a string; give a list of "
                                                     "names of the controller's environment variables"),
    (with_change(1, environment=["K8S-AUTH"]), "fleet_run_clusters[1].environment[0]: 'K8S-AUTH' is not valid; use "
                                               "letters, digits and '_'"),
    (with_change(1, environment=["AWS_PROFILE", "AWS_PROFILE"]),
     "fleet_run_clusters[1].environment[1]: 'AWS_PROFILE' is also fleet_run_clusters[1].environment[0]"),
    (with_change(1, credentials=[""]), "fleet_run_clusters[1].credentials[0]: empty; give a non-empty string"),
    (with_change(0, inventory="../nowhere"), "fleet_run_clusters[0].inventory: ../nowhere does not exist "
                                             "(relative paths are relative to the fleet inventory"),
    (with_change(0, inventory="."), "fleet_run_clusters[0].inventory: . is the fleet inventory itself"),
    (with_change(1, cloud="azure"), "fleet_run_clusters[1].cloud: 'azure'; use one of: aws, gcp, onprem"),
    (with_change(1, cloud=KeyError), "fleet_run_clusters[1].cloud: missing; use one of: aws, gcp, onprem"),
    (with_change(1, platform="nomad"), "fleet_run_clusters[1].platform: 'nomad'; use one of: eks, gke"),
    (with_change(1, region="us east 1"), "fleet_run_clusters[1].region: 'us east 1' is not valid; use letters"),
    (with_change(1, region="us-east-1\nx"), "fleet_run_clusters[1].region: holds U+000A (line feed) at character 10"),
    (with_change(1, region=5), "fleet_run_clusters[1].region: a number; give a non-empty string"),
    (with_change(1, tags="prod"), "fleet_run_clusters[1].tags: a string; give a list of tags"),
    (with_change(1, tags=["prod", "a\x1bb"]), "fleet_run_clusters[1].tags[1]: holds U+001B (escape)"),
    (with_change(1, zone="us-east-1a"), "fleet_run_clusters[1]: unknown key(s) zone; allowed keys: name, inventory"),
    (with_change(1, vars=["x"]), "fleet_run_clusters[1].vars: a list; give a mapping of variables"),
    (with_change(1, vars={"gpufleet_fleet_pools": []}),
     "fleet_run_clusters[1].vars.gpufleet_fleet_pools: is set by the fleet run itself"),
    ([], "fleet_run_clusters: empty; give a list of clusters"),
    ({"name": "x"}, "fleet_run_clusters: a mapping; give a list of clusters"),
    (["eks"], "fleet_run_clusters[0]: a string; each cluster is a mapping"),
]


@pytest.mark.parametrize("clusters,message", BAD)
def test_bad_fleet_files_are_refused_naming_the_variable(clusters, message):
    with pytest.raises(GpufleetError) as err:
        fleet.load(clusters, FLEET_DIR)
    assert message in err.value.msg


def test_every_problem_is_reported_at_once():
    clusters = with_change(1, cloud="azure")
    clusters[2]["name"] = "Bad"
    with pytest.raises(GpufleetError) as err:
        fleet.load(clusters, FLEET_DIR)
    assert "has 2 problem(s)" in err.value.msg
    assert "fleet_run_clusters[1].cloud" in err.value.msg and "fleet_run_clusters[2].name" in err.value.msg


def test_common_vars_may_not_set_what_the_fleet_sets():
    with pytest.raises(GpufleetError) as err:
        fleet.load(example(), FLEET_DIR, {"gpufleet_fleet_cluster": {}})
    assert "fleet_run_vars.gpufleet_fleet_cluster: is set by the fleet run itself" in err.value.msg


SELECT = [
    ([], ["onprem-fra", "eks-use1", "gke-usc1"]),
    (None, ["onprem-fra", "eks-use1", "gke-usc1"]),
    (["gke-usc1"], ["gke-usc1"]),
    (["region=us-east-1"], ["eks-use1"]),
    (["cloud=onprem"], ["onprem-fra"]),
    (["tag=prod"], ["onprem-fra", "eks-use1"]),
    (["tag=research", "region=fra1"], ["onprem-fra", "gke-usc1"]),       # union, fleet order
    (["gke-usc1", "tag=research"], ["gke-usc1"]),                        # no duplicates
    ("region=us-east-1, gke-usc1", ["eks-use1", "gke-usc1"]),            # one comma-separated string
    ([" tag = training "], ["onprem-fra"]),
]


@pytest.mark.parametrize("selectors,names", SELECT)
def test_selection_by_name_region_cloud_and_tag(selectors, names):
    clusters = fleet.load(example(), FLEET_DIR)
    assert [c["name"] for c in fleet.select(clusters, selectors)] == names


SELECT_BAD = [
    (["gke-euw1"], "fleet_run_select[0]: 'gke-euw1' is not a cluster of the fleet; known clusters: "
                   "onprem-fra, eks-use1, gke-usc1"),
    (["eks-use1", "region=eu-west-1"], "fleet_run_select[1]: no cluster of the fleet has region 'eu-west-1'; "
                                       "known: fra1, us-central1, us-east-1"),
    (["tag=staging"], "fleet_run_select[0]: no cluster of the fleet has tag 'staging'; known: prod, research, training"),
    (["cloud=azure"], "fleet_run_select[0]: 'cloud=azure'; cloud is one of: aws, gcp, onprem"),
    (["zone=us-east-1a"], "fleet_run_select[0]: 'zone=us-east-1a' selects by 'zone'; select by one of: region, cloud, tag"),
    ([""], "fleet_run_select[0]: empty"),
    ([3], "fleet_run_select[0]: a number"),
    ({"tag": "prod"}, "fleet_run_select: a mapping; give a list of selectors"),
    (["eks\nuse1"], "fleet_run_select[0]: holds U+000A (line feed)"),
]


@pytest.mark.parametrize("selectors,message", SELECT_BAD)
def test_a_selector_that_picks_nothing_is_refused_naming_what_is_known(selectors, message):
    clusters = fleet.load(example(), FLEET_DIR)
    with pytest.raises(GpufleetError) as err:
        fleet.select(clusters, selectors)
    assert message in err.value.msg


EXTRA = [
    (["--tags=cluster", "-v"], ["--tags=cluster", "-v"]),
    (["--tags", "cluster,report", "--skip-tags", "nodes"], ["--tags=cluster,report", "--skip-tags=nodes"]),
    (["--limit", "gpu_pool_train_a100:!a100-node-02.example.internal"],
     ["--limit=gpu_pool_train_a100:!a100-node-02.example.internal"]),
    (["--forks=10", "-vvvv", "--flush-cache"], ["--forks=10", "-vvvv", "--flush-cache"]),
    ([], []),
]


@pytest.mark.parametrize("args,out", EXTRA)
def test_extra_args_from_the_allowed_list_pass_on(args, out):
    assert fleet.extra_args(args) == out


EXTRA_BAD = [
    (["-e", "gpufleet_apply=true"], "fleet_run_extra_args[0]: '-e' is not passed on to the clusters"),
    (["--extra-vars=token=s3cret"], "'--extra-vars=token=s3cret' is not passed on"),
    (["--inventory=/etc"], "is not passed on to the clusters; allowed: --flush-cache, --forks, --limit"),
    (["--tags"], "fleet_run_extra_args[0]: --tags needs a value"),
    (["--tags=a b"], "--tags needs a value of letters"),
    (["--tags=$(reboot)"], "--tags needs a value of letters"),
    (["--forks=0"], "--forks needs a positive number"),
    (["-v=3"], "fleet_run_extra_args[0]: -v takes no value"),
    ([1], "fleet_run_extra_args[0]: a number; give strings"),
    ("--tags=x", "fleet_run_extra_args: a string; give a list"),
]


@pytest.mark.parametrize("args,message", EXTRA_BAD)
def test_other_extra_args_are_refused(args, message):
    with pytest.raises(GpufleetError) as err:
        fleet.extra_args(args)
    assert message in err.value.msg


def test_command_line_has_the_cluster_inventory_and_only_the_vars_file():
    cluster = fleet.load(example(), FLEET_DIR)[1]
    argv = fleet.command_line("/venv/bin/ansible-playbook", os.path.join(ROOT, "playbooks"), cluster, "site", "/run/eks-use1/fleet-vars.json",
                              check_mode=True, diff=True, extra=["--tags=cluster"])
    assert argv == ["/venv/bin/ansible-playbook", "-i", os.path.join(ROOT, "inventories", "eks"),
                    os.path.join(ROOT, "playbooks", "site.yml"), "-e", "@/run/eks-use1/fleet-vars.json",
                    "--check", "--diff", "--tags=cluster"]
    plain = fleet.command_line("ansible-playbook", os.path.join(ROOT, "playbooks"), cluster, "provision", "/v.json")
    assert "--check" not in plain and "--diff" not in plain


def test_every_stage_has_its_playbook_and_nothing_else_is_a_stage():
    for stage in fleet.STAGES:
        assert os.path.isfile(fleet.stage_playbook(os.path.join(ROOT, "playbooks"), stage)), stage
    with pytest.raises(GpufleetError) as err:
        fleet.stage_playbook(os.path.join(ROOT, "playbooks"), "onboard")
    assert "fleet_run_stage: 'onboard'; use one of: preflight, provision" in err.value.msg


def test_cluster_vars_layer_common_then_cluster_then_fleet():
    cluster = fleet.load(with_change(1, vars={"gpufleet_apply": True, "x": 2}), FLEET_DIR)[1]
    out = fleet.cluster_vars(cluster, [{"name": "p"}], {"x": 1, "y": 1})
    assert out == {"x": 2, "y": 1, "gpufleet_apply": True, "gpufleet_fleet_pools": [{"name": "p"}],
                   "gpufleet_fleet_cluster": {"name": "eks-use1", "cloud": "aws", "region": "us-east-1",
                                              "tags": ["prod"]}}


def test_build_dir_follows_the_cluster_inventory_or_its_build_dir():
    clusters = fleet.load(with_change(2, vars={"gpufleet_build_dir": "/tmp/gke-build"}), FLEET_DIR)
    assert fleet.build_dir(ROOT, clusters[1]) == os.path.join(ROOT, "build", "eks")
    assert fleet.build_dir(ROOT, clusters[2]) == "/tmp/gke-build"
    assert fleet.build_dir(ROOT, clusters[0], {"gpufleet_build_dir": "build/x"}) == os.path.join(ROOT, "build", "x")


def test_build_dir_is_what_the_clusters_run_said_when_it_said_one_absolute_path(tmp_path):
    clusters = fleet.load(with_change(2, vars={"gpufleet_build_dir": "/tmp/gke-build"}), FLEET_DIR)
    said = tmp_path / fleet.BUILD_DIR_FILE
    assert fleet.build_dir(ROOT, clusters[2], None, str(tmp_path)) == "/tmp/gke-build"     # nothing said
    said.write_text("/srv/gpufleet/gke-own\n")
    assert fleet.build_dir(ROOT, clusters[2], None, str(tmp_path)) == "/srv/gpufleet/gke-own"
    assert fleet.build_dir(ROOT, clusters[2]) == "/tmp/gke-build"                           # no run folder given
    for text in ("relative/dir\n", "/a\n/b\n", "\n"):
        said.write_text(text)
        assert fleet.build_dir(ROOT, clusters[2], None, str(tmp_path)) == "/tmp/gke-build", text


def test_an_inventory_name_in_the_fleet_entry_names_the_build_dir_of_a_file_inventory(tmp_path):
    inventory = tmp_path / "site-a" / "hosts.yml"
    inventory.parent.mkdir()
    inventory.write_text("all: {}\n")
    cluster = {"inventory": str(inventory), "vars": {"gpufleet_inventory_name": "lab-a"}}
    assert fleet.build_dir(ROOT, cluster) == os.path.join(ROOT, "build", "lab-a")
    assert fleet.build_dir(ROOT, dict(cluster, vars={})) == os.path.join(ROOT, "build", "site-a")
