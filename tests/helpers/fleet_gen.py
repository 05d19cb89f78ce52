"""Generated fleets for the fleet-wide report (tests/unit/test_fleet_overview*.py, bench/fleet_overview.py).

Each cluster's report is the real per-cluster format: gpufleet.k8s.fleet_report's ``build_report`` run on
generated Node and Pod objects (and a Prometheus answer), the way the report stage builds it from a live
cluster. Everything follows from the seed, so a fleet is the same on every run."""
import json
import os
import random

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import build_report
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools

REGIONS = [("aws", "us-east-1", "eks"), ("aws", "eu-west-1", "eks"), ("aws", "ap-northeast-1", "eks"),
           ("gcp", "us-central1", "gke"), ("gcp", "europe-west4", "gke"), ("onprem", "fra1", "kubeadm"),
           ("onprem", "ams2", "kubeadm")]
# (pool name, GPU type, GPUs per node, sharing)
POOLS = [("train-h100", "h100-80gb", 8, {"mode": "none"}), ("train-a100", "a100-80gb", 8, {"mode": "none"}),
         ("infer-l4", "l4", 1, {"mode": "time-slicing", "replicas": 4}), ("batch-l40s", "l40s", 4, {"mode": "none"})]
PRICES = {"h100-80gb": 6.0, "a100-80gb": 3.67, "l4": 0.8, "l40s": 1.9}


def gpu_pod(name, gpus, node=None, pool=None):
    spec = {"containers": [{"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if node:
        spec["nodeName"] = node
    if pool:
        spec["nodeSelector"] = {"gpufleet.io/pool": pool}
    return {"metadata": {"namespace": "ml", "name": name}, "spec": spec,
            "status": {"phase": "Running" if node else "Pending"}}


def cluster_objects(rng, pools, cluster):
    """Nodes (labelled with their pool, allocatable after sharing), Pods (running and pending) and a
    Prometheus answer (GR_ENGINE_ACTIVE per GPU, 0-1) for one cluster."""
    nodes, pods, samples = [], [], []
    for pool in pools:
        units = pool["gpus_per_node"] * (pool["sharing"].get("replicas") or 1)
        count = rng.randint(pool["min_nodes"], pool["max_nodes"])
        busy = rng.choice([0.0, 0.25, 0.5, 0.9, 1.0])
        for i in range(count):
            name = "%s-%s-%02d" % (cluster, pool["name"], i)
            nodes.append({"metadata": {"name": name, "labels": {"gpufleet.io/pool": pool["name"],
                                                                 "nvidia.com/gpu.present": "true"}},
                          "status": {"allocatable": {"nvidia.com/gpu": str(units), "cpu": "96"}}})
            used = int(round(units * busy))
            if used:
                pods.append(gpu_pod("%s-job" % name, used, node=name))
            for gpu in range(pool["gpus_per_node"]):
                samples.append({"metric": {"hostname": name, "gpu": str(gpu)},
                                "value": [0, "%.3f" % (busy * rng.uniform(0.3, 1.0))]})
        if busy >= 0.9 and rng.random() < 0.6:
            for j in range(rng.randint(1, 4)):
                pods.append(gpu_pod("%s-%s-wait-%d" % (cluster, pool["name"], j), 1, pool=pool["name"]))
    return nodes, pods, {"status": "success", "data": {"resultType": "vector", "result": samples}}


def cluster_report(index, seed=0):
    """(fleet entry without report_json, per-cluster report) of cluster number ``index``."""
    rng = random.Random("%d-%d" % (seed, index))
    cloud, region, platform = REGIONS[index % len(REGIONS)]
    name = "%s-%s-%03d" % (platform, region.replace("-", ""), index)
    chosen = sorted(rng.sample(range(len(POOLS)), rng.randint(1, 3)))
    pools = normalize_pools([{"name": POOLS[i][0], "gpu_type": POOLS[i][1], "gpus_per_node": POOLS[i][2],
                              "min_nodes": rng.randint(0, 2), "max_nodes": rng.randint(2, 6), "sharing": POOLS[i][3]}
                             for i in chosen])
    nodes, pods, prom = cluster_objects(rng, pools, name)
    report = build_report({"cluster_name": name, "platform": platform, "pools": pools}, nodes=nodes, pods=pods,
                          utilisation=prom, prices=PRICES, generated_at="2026-12-01T03:00:00Z")
    return {"name": name, "cloud": cloud, "region": region, "tags": ["prod" if index % 3 else "research"]}, report


def write_fleet(root, count, seed=0, failed=(), missing=()):
    """Write ``count`` clusters' build/<name>/report/fleet.json under ``root``; returns the
    fleet_overview_clusters list. Indexes in ``failed`` get status failed, in ``missing`` no report file."""
    clusters = []
    for index in range(count):
        entry, report = cluster_report(index, seed)
        path = os.path.join(str(root), "build", entry["name"], "report", "fleet.json")
        if index not in missing:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                json.dump(report, handle, indent=2, sort_keys=True)
        entry.update(report_json=path, status="failed" if index in failed else "ok",
                     message="apply stage failed: the API server did not answer" if index in failed else "")
        clusters.append(entry)
    return clusters
