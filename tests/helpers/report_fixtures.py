"""The fleet report from recorded API and Prometheus answers (tests/fixtures/report/<case>/) and an
inventory's real pools: shared by tests/unit/test_fleet_report_platforms.py and test_report_browser.py."""
import json
import os

import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import build_report
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/helpers/ -> the checkout
FIX = os.path.join(ROOT, "tests", "fixtures", "report")


def plan_of(inventory, platform):
    with open(os.path.join(ROOT, "inventories", inventory, "group_vars", "all", "gpufleet.yml")) as handle:
        data = yaml.safe_load(handle)
    return {"cluster_name": data["gpufleet_cluster_name"], "platform": platform,
            "pools": normalize_pools(data["gpufleet_gpu_pools"])}


def live(case, plan, **kw):
    def load(name):
        with open(os.path.join(FIX, case, name)) as handle:
            return json.load(handle)
    return build_report(plan, nodes=load("nodes.json")["items"], pods=load("pods.json")["items"],
                        utilisation=load("prometheus.json"), **kw)
