"""Onboarding: a starting inventory from recorded Node lists (tests/fixtures/report; no cluster
here) for EKS, GKE, a MIG pool and an unlabelled self-managed cluster."""
import json
import os

import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.onboard import inventory_files, propose

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures", "report")


def nodes(case):
    with open(os.path.join(FIX, case, "nodes.json")) as handle:
        return json.load(handle)["items"]


def test_eks_pools_from_karpenter_and_driver_pin_with_skew():
    p = propose(nodes("eks"), "ml-prod")
    assert p["platform"] == "eks"
    pools = {x["name"]: x for x in p["pools"]}
    assert pools["train-h100"]["gpu_type"] == "h100-80gb" and pools["train-h100"]["gpus_per_node"] == 8
    assert pools["infer-l4"]["gpu_type"] == "l4"
    # the node without a nodepool label and the a10g node form their own pools by GPU type and count
    assert pools["l4-x4"]["gpu_type"] == "l4" and pools["a10g-x1"]["gpu_type"] == "a10g"
    assert all(x["zones"] == [] for x in p["pools"]) and pools["infer-l4"]["max_nodes"] == 1
    assert p["pin"] == "570.172.08"
    assert p["drivers"] == {"570.172.08": ["ip-10-0-1-11.ec2.internal", "ip-10-0-2-21.ec2.internal"]}
    assert "ip-10-0-9-9.ec2.internal" not in json.dumps(p)   # no GPU: not onboarded


def test_gke_pools_from_node_pools_and_accelerators():
    p = propose(nodes("gke"), "research")
    assert p["platform"] == "gke"
    assert [(x["name"], x["gpu_type"], x["gpus_per_node"]) for x in p["pools"]] == [
        ("nap-g2-standard-8-cc", "l4", 2), ("nap-a2-highgpu-2g-spot-1a2b3c", "a100-40gb", 2)]
    assert "no GPU feature discovery driver labels: set nvidia_driver_version by hand" in p["notes"]


def test_mig_pool_counts_physical_gpus_and_keeps_the_profile():
    p = propose(nodes("mig"), "example")
    assert p["platform"] == "kubeadm"
    assert p["pools"] == [{"name": "train-a100", "gpu_type": "a100-80gb", "gpus_per_node": 8,
                           "node_group": "gpu_pool_train_a100",
                           "sharing": {"mode": "mig", "mig_strategy": "single", "mig_preconfigured": True,
                                       "mig_profile": "1g.10gb"}}]
    assert p["groups"] == {"gpu_pool_train_a100": ["a100-node-01.example.internal"]} and p["pin"] == "580.95.05"


def test_unknown_gpu_type_is_named_once_per_pool_and_files_are_yaml():
    p = propose([n for n in nodes(".")], "example")
    assert [x["gpu_type"] for x in p["pools"]] == ["FIXME", "FIXME"]
    assert sum("GPU type unknown" in n for n in p["notes"]) == 2
    files = inventory_files(p)
    hosts = yaml.safe_load(files["hosts.yml"])
    assert sorted(hosts["all"]["children"]["gpu_nodes"]["children"]) == ["gpu_pool_infer_l4", "gpu_pool_train_a100"]
    values = yaml.safe_load(files["group_vars/all/gpufleet.yml"])
    assert values["nvidia_driver_version"] == "580.95.05" and values["gpufleet_apply"] is False
    assert "# NOTE: node a100-node-01.example.internal: GPU type unknown" in files["group_vars/all/gpufleet.yml"]


def test_a_gb200_product_or_accelerator_label_is_gb200_not_b200():
    """GFD's product label of a GB200 contains "B200": the GB200 pattern must win; GKE's accelerator name maps too."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.onboard import gpu_type
    assert gpu_type({"nvidia.com/gpu.product": "NVIDIA-GB200"}) == "gb200"
    assert gpu_type({"nvidia.com/gpu.product": "NVIDIA-B200"}) == "b200"
    assert gpu_type({"cloud.google.com/gke-accelerator": "nvidia-gb200"}) == "gb200"
