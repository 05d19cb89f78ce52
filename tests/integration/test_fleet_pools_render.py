"""Fleet pools on the cluster side, through the real provision playbook: the extra-vars file the fleet
run writes per cluster (gpufleet_fleet_pools + gpufleet_fleet_cluster, passed with -e @file) renders
the extra NodePool beside the inventory's own; a name clash and a GPU type the cluster's region does
not offer are refused by preflight before anything is written (docs/fleet-pools.md)."""
import json
import os
import re

import yaml

from frozen import TODAY_VARS
from ansible_run import recap, run_site

FLEET_L4 = {"name": "fleet-l4", "gpu_type": "l4", "gpus_per_node": 1, "zones": ["us-east-1a", "us-east-1b"],
            "min_nodes": 1, "max_nodes": 12}
EKS_USE1 = {"name": "eks-use1", "cloud": "aws", "region": "us-east-1", "tags": ["prod"], "platform": "eks"}


def fleet_vars(tmp_path, pools, cluster):
    path = tmp_path / "fleet-vars.json"
    path.write_text(json.dumps({"gpufleet_fleet_pools": pools, "gpufleet_fleet_cluster": cluster}))
    return "@%s" % path


def provision(tmp_path, inventory, *extra):
    build = tmp_path / "build"
    rc, out = run_site(str(build), *(TODAY_VARS + list(extra)), playbook="playbooks/provision.yml",
                       inventory="inventories/" + inventory)
    return rc, re.sub(r"\s+", " ", out), build


def test_the_fleet_pool_renders_its_nodepool_beside_the_inventorys_own(tmp_path):
    rc, out, build = provision(tmp_path, "eks", "-e", fleet_vars(tmp_path, [FLEET_L4], EKS_USE1))
    assert rc == 0 and recap(out)["failed"] == 0, out[-3000:]
    karpenter = build / "provision" / "karpenter"
    nodepools = {}
    for name in sorted(os.listdir(str(karpenter))):
        with open(str(karpenter / name)) as handle:
            for doc in yaml.safe_load_all(handle):
                if doc and doc["kind"] == "NodePool":
                    nodepools[doc["metadata"]["name"]] = doc
    assert sorted(nodepools) == ["fleet-l4", "infer-l4", "train-h100"]
    spec = nodepools["fleet-l4"]["spec"]
    assert str(spec["limits"]["nvidia.com/gpu"]) == "12"
    zones = [r for r in spec["template"]["spec"]["requirements"] if r["key"] == "topology.kubernetes.io/zone"]
    assert zones == [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a", "us-east-1b"]}]
    jobs = os.listdir(str(build / "provision" / "examples"))
    assert any("fleet-l4" in name for name in jobs), jobs


def test_a_name_clash_is_refused_before_anything_is_written(tmp_path):
    clash = dict(FLEET_L4, name="infer-l4")
    rc, out, build = provision(tmp_path, "eks", "-e", fleet_vars(tmp_path, [clash], EKS_USE1))
    assert rc != 0
    assert ("gpufleet_fleet_pools[0].name: 'infer-l4' is also the name of gpufleet_gpu_pools[1]: a fleet pool and a "
            "pool of the cluster's own may not share a name") in out, out[-3000:]
    assert not build.exists()


def test_a_gpu_type_the_zone_does_not_offer_is_refused_before_anything_is_written(tmp_path):
    # GKE us-central1: A2 Ultra (a100-80gb) in zones a and c only, per the recorded regional catalog
    pool = {"name": "fleet-a100", "gpu_type": "a100-80gb", "gpus_per_node": 1, "zones": ["us-central1-b"],
            "max_nodes": 2}
    cluster = {"name": "gke-usc1", "cloud": "gcp", "region": "us-central1", "platform": "gke"}
    rc, out, build = provision(tmp_path, "gke", "-e", fleet_vars(tmp_path, [pool], cluster))
    assert rc != 0
    assert ("gpufleet_fleet_pools[0].zones[0]: pool fleet-a100: zone us-central1-b of cluster gke-usc1 (gcp region "
            "us-central1) does not offer a100-80gb (nvidia-a100-80gb); zones of us-central1 that do: us-central1-a, "
            "us-central1-c") in out, out[-3000:]
    assert not build.exists()


def test_a_region_that_does_not_offer_the_inventorys_own_gpu_type_is_refused(tmp_path):
    cluster = dict(EKS_USE1, region="eu-west-1")
    rc, out, build = provision(tmp_path, "eks", "-e", "gpu_pools_region=eu-west-1",
                               "-e", fleet_vars(tmp_path, [], cluster))
    assert rc != 0
    assert ("gpufleet_gpu_pools[0]: pool train-h100: gpu_type h100-80gb (p5) is not offered in cluster eks-use1 "
            "(aws region eu-west-1); regions that offer it: ") in out, out[-3000:]
    assert not build.exists()
