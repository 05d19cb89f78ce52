"""The add-on golden files (tests/golden/addons/<preset>.yaml) and the pools they are rendered for:
tests/unit/test_addons_golden.py renders them from the module_utils, tests/integration/
test_addons_golden_role.py through the roles."""
import os

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden", "addons")
POOLS = [
    {"name": "train-h100", "gpu_type": "h100-80gb", "gpus_per_node": 8, "max_nodes": 2,
     "sharing": {"mode": "mig", "mig_strategy": "mixed", "mig_profile": "1g.10gb"}},
    {"name": "infer-l4", "gpu_type": "l4", "max_nodes": 4, "sharing": {"mode": "time-slicing", "replicas": 4},
     "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                {"key": "workload", "value": "inference", "effect": "NoSchedule"}]},
    {"name": "batch-t4", "gpu_type": "t4", "max_nodes": 2, "sharing": {"mode": "mps", "replicas": 2}},
]
ZONES = {"eks": ["us-east-1a", "us-east-1b"], "gke": ["us-central1-a"], "gke-autopilot": ["us-central1-a"]}


def pools_for(preset, mode="operator"):
    """Cloud pools need zones (provisioning preflight); self-managed ones take none. GKE partitions
    MIG GPUs alike (strategy single); standalone mode does not partition MIG GPUs, so there the
    MIG pool is declared partitioned on the hosts (mig_preconfigured)."""
    out = []
    for pool in POOLS:
        pool = dict(pool, zones=ZONES[preset]) if preset in ZONES else dict(pool)
        if pool["sharing"]["mode"] == "mig":
            pool["sharing"] = dict(pool["sharing"])
            if preset in ("gke", "gke-autopilot"):
                pool["sharing"]["mig_strategy"] = "single"
            elif mode == "standalone":
                pool["sharing"]["mig_preconfigured"] = True
        out.append(pool)
    return out
