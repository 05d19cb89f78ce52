# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""What a pool's nodes must advertise, and the per-node validation verdict.

Sharing modes change the extended resource a node advertises:
- none: ``nvidia.com/gpu`` = GPUs;
- time-slicing / MPS with N replicas: ``nvidia.com/gpu`` = GPUs x N (``nvidia.com/gpu.shared``
  when ``rename_by_default``);
- MIG single with a profile: ``nvidia.com/gpu`` = GPUs x instances of the profile;
- MIG mixed with a profile: ``nvidia.com/mig-<profile>`` = GPUs x instances.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.model import dra
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.mig import instances_per_gpu
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import advertised_resources

GPU = "nvidia.com/gpu"
POOL_LABEL = "gpufleet.io/pool"
DRIVER_LABELS = ("nvidia.com/cuda.driver-version.full", "nvidia.com/cuda.driver.major")


def expected_resources(pool):
    """{resource name: count} one node of ``pool`` must advertise as allocatable (model.spec)."""
    return advertised_resources(pool)


def _ready(node):
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def _to_int(value):
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


def node_pool(node, pools):
    labels = (node.get("metadata") or {}).get("labels") or {}
    name = labels.get(POOL_LABEL)
    for pool in pools:
        if pool["name"] == name:
            return pool
    return None


def metrics_cell(node_metrics, probe=None):
    """The metrics column of one node: the node's own verdict when known, else the verdict of the stage's
    cluster-wide metrics probe (one Job that reads the exporter Service), else "not checked" (issue 39: the
    column said "not checked" also when the probe had run)."""
    if node_metrics is not None:
        return "ok" if node_metrics else "missing"
    if probe and probe != "not run":
        return "probe " + ("passed" if probe == "passed" else "failed")
    return "not checked"


def validate_nodes(pools, nodes, smoke=None, metrics=None, slices=None, probe=None):
    """Per-node rows and failures.

    ``nodes``: Node objects (k8s_info ``resources``). ``smoke``: {pool name: "passed"|"failed: ..."}.
    ``metrics``: {node name: bool} whether the node's exporter served DCGM_FI_DEV_GPU_UTIL.
    ``probe``: the verdict of the cluster-wide metrics probe ("passed", "failed: ...", "not run"), shown for
    nodes without a verdict of their own.
    ``slices``: ResourceSlice objects; a node of a pool with ``allocation: dra`` is judged by the devices
    NVIDIA's DRA driver publishes for it there (dra.py), not by extended resources.
    """
    devices = dra.node_devices(slices)
    smoke = smoke or {}
    metrics = metrics or {}
    rows, failures = [], []
    seen_pools = set()
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        pool = node_pool(node, pools)
        if pool is None:
            continue
        name = node["metadata"]["name"]
        seen_pools.add(pool["name"])
        labels = node["metadata"].get("labels") or {}
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        expected = expected_resources(pool)
        problems = []
        if not _ready(node):
            problems.append("node not Ready")
        got = {}
        if pool.get("allocation") == "dra":
            profile = (pool.get("sharing") or {}).get("mig_profile")
            expected = dra.expected_devices(pool, instances_per_gpu(pool.get("gpu_type"), profile) if profile else None)
            for what, count in sorted(expected.items()):
                got[what] = dra.published(devices.get(name), what)
                if got[what] != count:
                    problems.append("%s devices in ResourceSlices of %s: %d, expected %d"
                                    % (what, dra.DRIVER, got[what], count))
        for resource, count in sorted(expected.items() if pool.get("allocation") != "dra" else []):
            got[resource] = _to_int(allocatable.get(resource))
            if got[resource] != count:
                problems.append("%s allocatable %d, expected %d" % (resource, got[resource], count))
        pool_smoke = smoke.get(pool["name"], "not run")
        if pool_smoke.startswith("failed"):
            problems.append("smoke job " + pool_smoke)
        node_metrics = metrics.get(name)
        if node_metrics is False:
            problems.append("DCGM_FI_DEV_GPU_UTIL not served")
        driver = next((labels[key] for key in DRIVER_LABELS if key in labels), "unknown")
        row = {
            "node": name, "pool": pool["name"],
            "expected": ", ".join("%s=%d" % kv for kv in sorted(expected.items())),
            "allocatable": ", ".join("%s=%d" % kv for kv in sorted(got.items())),
            "driver": driver, "smoke": pool_smoke,
            "metrics": metrics_cell(node_metrics, probe),
            "ok": not problems, "problems": problems,
        }
        rows.append(row)
        if problems:
            failures.append("%s (pool %s): %s" % (name, pool["name"], "; ".join(problems)))
    for pool in pools:
        if pool["name"] not in seen_pools and (pool.get("min_nodes") or 0) > 0:
            failures.append("pool %s: no node carries %s=%s (min_nodes %d)" % (
                pool["name"], POOL_LABEL, pool["name"], pool["min_nodes"]))
    return rows, failures


def format_table(rows):
    """Fixed-width text table, one line per node."""
    headers = ("node", "pool", "expected", "allocatable", "driver", "smoke", "metrics", "ok")
    data = [[str(row[h]) if h != "ok" else ("yes" if row["ok"] else "NO") for h in headers] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in data]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(headers))]
    lines += ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)) for r in data]
    return [line.rstrip() for line in lines]
