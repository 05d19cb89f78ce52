"""The recorded regional catalog (core/gpu_regions_data.py) and its check (core/gpu_regions.py).

FACTS below were read from the catalog's sources (see gpu_regions_data.py), not from the code: each
row fails when the recorded data is wrong for it (an offering dropped or one invented)."""
import os

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import gpu_regions
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import gpu_regions_data
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_TYPES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (cloud, region, gpu_type, offered)
FACTS = [
    ("aws", "us-east-1", "h100-80gb", True),       # p5.48xlarge in use1
    ("aws", "us-east-1", "l4", True),              # g6
    ("aws", "us-east-1", "a100-80gb", True),       # p4de: us-east-1 and us-west-2 only
    ("aws", "eu-west-1", "a100-80gb", False),
    ("aws", "eu-west-1", "h200-141gb", False),     # neither p5e nor p5en in euw1
    ("aws", "eu-west-1", "l4", False),             # no g6 in euw1
    ("aws", "eu-west-1", "a100-40gb", True),       # p4d
    ("aws", "eu-central-1", "l40s", True),         # g6e
    ("aws", "eu-west-3", "l40s", False),
    ("aws", "us-west-1", "h200-141gb", True),      # p5en in usw1
    ("aws", "ap-southeast-1", "h100-80gb", False),
    ("aws", "ap-southeast-1", "a10g", True),       # g5 (DescribeInstanceTypeOfferings for g5.2xlarge)
    ("aws", "us-west-2", "v100", True),
    ("gcp", "us-central1", "a100-40gb", True),
    ("gcp", "us-central1", "h200-141gb", True),    # a3-ultragpu in us-central1-b
    ("gcp", "europe-west4", "h100-80gb", True),
    ("gcp", "europe-west1", "v100", False),
    ("gcp", "europe-west1", "a100-40gb", False),
    ("gcp", "asia-southeast1", "v100", False),
    ("gcp", "asia-southeast1", "a100-80gb", True),  # a2-ultragpu in asia-southeast1-c
    ("gcp", "us-west4", "h200-141gb", False),
    ("gcp", "us-east4", "a100-40gb", False),
]

# (zone, gpu_type, offered)
ZONE_FACTS = [
    ("us-central1-f", "l4", False),
    ("us-central1-a", "l4", True),
    ("us-central1-b", "a100-80gb", False),
    ("us-central1-c", "a100-80gb", True),
    ("europe-west4-a", "h100-80gb", False),
    ("europe-west4-a", "h200-141gb", True),
    ("europe-west4-c", "a100-40gb", False),
    ("asia-southeast1-a", "a100-40gb", False),
    ("us-east1-b", "t4", False),
]


@pytest.mark.parametrize("cloud, region, gpu_type, offered", FACTS)
def test_recorded_region_facts(cloud, region, gpu_type, offered):
    assert gpu_regions.offered_in(cloud, region, gpu_type) is offered


@pytest.mark.parametrize("zone, gpu_type, offered", ZONE_FACTS)
def test_recorded_zone_facts(zone, gpu_type, offered):
    region = zone.rsplit("-", 1)[0]
    assert (zone in gpu_regions.zones_offering(region, gpu_type)) is offered


def test_names_in_the_data_are_known_names():
    families = set(f for facts in GPU_TYPES.values() for f in facts["eks_families"])
    accelerators = set(facts["gke_accelerator"] for facts in GPU_TYPES.values() if facts["gke_accelerator"])
    assert gpu_regions.recorded_names("aws") <= families
    assert gpu_regions.recorded_names("gcp") <= accelerators
    assert gpu_regions_data.RECORDED and "SkyPilot" in gpu_regions_data.SOURCE


def test_regions_the_issue_names_are_recorded():
    assert {"us-east-1", "us-west-2", "eu-west-1"} <= set(gpu_regions.known_regions("aws"))
    assert {"us-central1", "europe-west4", "asia-southeast1"} <= set(gpu_regions.known_regions("gcp"))


def _inventory_pools(name):
    with open(os.path.join(ROOT, "inventories", name, "group_vars", "all", "gpufleet.yml")) as handle:
        return yaml.safe_load(handle)["gpufleet_gpu_pools"]


@pytest.mark.parametrize("inventory, cloud", [("eks", "aws"), ("gke", "gcp"), ("gke-autopilot", "gcp")])
def test_every_example_inventory_pool_is_offered_where_it_is(inventory, cloud):
    for pool in _inventory_pools(inventory):
        region = pool["zones"][0][:-1] if cloud == "aws" else pool["zones"][0].rsplit("-", 1)[0]
        problems = Problems()
        gpu_regions.check_offering("p", pool, {"name": inventory, "cloud": cloud, "region": region},
                                   pool["zones"], problems)
        assert problems.errors == [] and problems.warnings == [], (inventory, pool["name"])


def check(pool, cluster, zones=()):
    problems = Problems()
    gpu_regions.check_offering("gpufleet_gpu_pools[0]", pool, cluster, list(zones), problems)
    return problems


def test_refusal_names_pool_cluster_region_and_the_regions_that_offer_it():
    problems = check({"name": "big", "gpu_type": "a100-80gb"}, {"name": "eu", "cloud": "aws", "region": "eu-west-1"})
    msg, = problems.errors
    assert msg.startswith("gpufleet_gpu_pools[0]: pool big: gpu_type a100-80gb (p4de) is not offered in cluster eu "
                          "(aws region eu-west-1); regions that offer it: us-east-1, us-west-2 ")


def test_zone_refusal_names_the_zones_that_offer_it():
    problems = check({"name": "p", "gpu_type": "l4"}, {"name": "g", "cloud": "gcp", "region": "us-central1"},
                     ["us-central1-a", "us-central1-f"])
    msg, = problems.errors
    assert msg.startswith("gpufleet_gpu_pools[0].zones[1]: pool p: zone us-central1-f of cluster g")
    assert "zones of us-central1 that do: us-central1-a, us-central1-b, us-central1-c" in msg


@pytest.mark.parametrize("cluster", [
    {"name": "x", "cloud": "aws", "region": "mx-central-1"},
    {"name": "x", "cloud": "gcp", "region": "africa-south1"},
])
def test_unknown_region_is_a_warning(cluster):
    problems = check({"name": "p", "gpu_type": "t4"}, cluster)
    assert problems.errors == []
    assert len(problems.warnings) == 1 and "not checked" in problems.warnings[0]
    assert repr(cluster["region"]) in problems.warnings[0]


def test_type_the_catalog_does_not_record_is_a_warning():
    problems = check({"name": "p", "gpu_type": "b200"}, {"name": "x", "cloud": "aws", "region": "us-east-1"})
    assert problems.errors == [] and "p6-b200" in problems.warnings[0]


def test_onprem_and_unknown_types_pass_untouched():
    assert not check({"name": "p", "gpu_type": "b200"}, {"name": "x", "cloud": "onprem", "region": "fra"}).warnings
    assert not check({"name": "p", "gpu_type": "nope"}, {"name": "x", "cloud": "aws", "region": "us-east-1"}).errors


def test_type_not_on_the_cloud():
    problems = check({"name": "p", "gpu_type": "l40s"}, {"name": "x", "cloud": "gcp", "region": "us-central1"})
    assert "l40s is not offered on gcp at all" in problems.errors[0]


def test_gb200_is_unrecorded_on_gcp_and_refused_on_aws():
    """No regional offering of nvidia-gb200 (A4X) is recorded: a warning on GCP; EKS has no gb200 at all."""
    gcp = check({"name": "p", "gpu_type": "gb200"}, {"name": "x", "cloud": "gcp", "region": "us-central1"})
    assert gcp.errors == [] and "nvidia-gb200" in gcp.warnings[0] and "not checked" in gcp.warnings[0]
    aws = check({"name": "p", "gpu_type": "gb200"}, {"name": "x", "cloud": "aws", "region": "us-east-1"})
    assert aws.warnings == [] and "not offered on aws at all" in aws.errors[0]
