# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The fleet GPU report: what the fleet holds, what is requested, what sits idle.

Inputs are plain data so the report can be built from recorded files: the normalized plan,
the inventory groups, per-host GPU facts (``gpufleet.k8s.nvidia_gpu_info``), Node and Pod
lists from the API server, and a Prometheus instant-query response for the average of
``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (a 0-1 ratio that MIG instances report, unlike
``DCGM_FI_DEV_GPU_UTIL``) per node, GPU and MIG instance over the window. Every input but the
plan is optional: in render mode the report is built from the inventory alone.

Nodes map to pools on every platform: the ``gpufleet.io/pool`` label (self-managed), Karpenter's
``karpenter.sh/nodepool`` (EKS: gpufleet names each NodePool after its pool), GKE's
``cloud.google.com/compute-class`` (pools with a ComputeClass), else the first pool whose pod
placement (``gpufleet.k8s.gpu_pod_placement``: GKE accelerator and machine family, Karpenter
instance family and GPU name) selects the node. Drivers come from the host facts, else from GPU
feature discovery's ``nvidia.com/cuda.driver-version.full`` label.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_labels import NODE, node_name, with_node
from ansible_collections.gpufleet.k8s.plugins.module_utils.model import dra
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.mig import instances_per_gpu
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.expected import POOL_LABEL, expected_resources
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.placement import COMPUTE_CLASS_LABEL, placement

KARPENTER_POOL_LABEL = "karpenter.sh/nodepool"
GFD_DRIVER_LABEL = "nvidia.com/cuda.driver-version.full"
GFD_DRIVER_PARTS = ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev")

GPU_RESOURCE_PREFIXES = ("nvidia.com/gpu", "nvidia.com/mig-")
ACTIVE_PHASES = ("Pending", "Running")
# share of a pool's GPU units requested from which a pool at its max size is worth a hint
BUSY_SHARE = 0.9


def _num(value, default=0.0):
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def pod_gpu_requests(pod):
    """GPUs a pod holds: the sum of nvidia.com/gpu* and MIG limits over its containers."""
    total = 0
    spec = pod.get("spec") or {}
    for container in spec.get("containers") or []:
        limits = (container.get("resources") or {}).get("limits") or {}
        for name, value in limits.items():
            if name.startswith(GPU_RESOURCE_PREFIXES):
                total += int(_num(value))
    return total


def report_pod(pod):
    """The part of a Pod the report reads (phase, node, pool selector, container resources). A Pod spec
    can carry secrets inline (env values, command lines): they never reach the report's arguments or logs."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    out = {"metadata": {k: meta[k] for k in ("namespace", "name") if k in meta},
           "spec": {"containers": [{"resources": c["resources"]} if c.get("resources") else {}
                                   for c in spec.get("containers") or []]},
           "status": {"phase": (pod.get("status") or {}).get("phase")}}
    if spec.get("nodeName"):
        out["spec"]["nodeName"] = spec["nodeName"]
    # DRA: which claims the pod references (names only), and the claims generated for it from templates
    refs = [{k: c[k] for k in ("name", "resourceClaimName", "resourceClaimTemplateName") if c.get(k)}
            for c in spec.get("resourceClaims") or [] if isinstance(c, dict)]
    if refs:
        out["spec"]["resourceClaims"] = refs
        generated = [{k: c[k] for k in ("name", "resourceClaimName") if c.get(k)}
                     for c in (pod.get("status") or {}).get("resourceClaimStatuses") or [] if isinstance(c, dict)]
        if generated:
            out["status"]["resourceClaimStatuses"] = generated
    pool = (spec.get("nodeSelector") or {}).get(POOL_LABEL)
    if pool is not None:
        out["spec"]["nodeSelector"] = {POOL_LABEL: pool}
    return out


def cluster_reads(results):
    """``{"nodes": [...], "pods": [...]}`` from the report stage's registered ``k8s_info`` loop over Node and
    Pod (its results in that order), the Pods cut down by :func:`report_pod`. The read runs without a log
    (Pod specs) and its failure is ignored there, so a read that failed is raised here with the client's message."""
    items = (results or {}).get("results") if isinstance(results, dict) else None
    if isinstance(results, dict) and results.get("skipped") and not items:
        return {"nodes": [], "pods": []}
    if not isinstance(items, list) or len(items) != 2:
        raise GpufleetError("fleet_report_cluster: the input must be the registered k8s_info loop over [Node, Pod]")
    if all(isinstance(r, dict) and r.get("skipped") for r in items):
        # render mode skips the read; ansible-core 2.18 templates the task's vars even when unused
        return {"nodes": [], "pods": []}
    failed = {}  # message -> the kinds it failed for (one message, said once)
    for r in items:
        if not isinstance(r.get("resources"), list):
            failed.setdefault(r.get("msg") or "no answer", []).append(str(r.get("item", "?")))
    if failed:
        raise GpufleetError("the report could not read the cluster (%s); the report was not written" % "; ".join(
            "%s: %s" % (", ".join(kinds), msg) for msg, kinds in failed.items()))
    return {"nodes": items[0]["resources"], "pods": [report_pod(p) for p in items[1]["resources"]]}


def utilisation_query(window):
    """The PromQL the report stage asks Prometheus (role fleet_report): the average graphics engine activity
    (0-1; MIG instances report it, DCGM_FI_DEV_GPU_UTIL they do not) per node, GPU and MIG instance over
    ``window``, the node named as ``hostname`` whichever label the exporter used (dcgm_labels)."""
    return "avg by (%s, gpu, GPU_I_ID) (%s)" % (
        NODE, with_node("avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[%s])" % window))


def parse_utilisation(response, scale=100.0):
    """{node: [util %, ...]} from a Prometheus instant-query (vector) response; one value per GPU
    or MIG instance. ``scale`` turns a 0-1 ratio (DCGM_FI_PROF_GR_ENGINE_ACTIVE) into percent;
    1.0 for a metric already in percent."""
    out = {}
    if not response or response.get("status") != "success":
        return out
    for sample in (response.get("data") or {}).get("result") or []:
        metric = sample.get("metric") or {}
        node = node_name(metric)
        if node is None:
            continue
        out.setdefault(node, []).append(round(_num((sample.get("value") or [0, "0"])[1]) * scale, 2))
    return out


def _selector_matches(labels, fragment):
    selector = fragment.get("nodeSelector")
    if selector:
        return all(labels.get(k) == v for k, v in selector.items())
    terms = (((fragment.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        if all(labels.get(e["key"]) in e.get("values", []) for e in term.get("matchExpressions") or []):
            return True
    return False


def node_pool_name(node, pools, platform):
    """The pool a Node belongs to (see the module docstring), or None."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    names = [p["name"] for p in pools]
    for key in (POOL_LABEL, KARPENTER_POOL_LABEL, COMPUTE_CLASS_LABEL):
        if labels.get(key) in names:
            return labels[key]
    for pool in pools:
        try:
            if _selector_matches(labels, placement(pool, platform)):
                return pool["name"]
        except Exception:  # a pool placement cannot be built for: no match
            continue
    return None


def node_driver(node, facts):
    if facts.get("driver_version"):
        return facts["driver_version"]
    labels = (node.get("metadata") or {}).get("labels") or {}
    if labels.get(GFD_DRIVER_LABEL):
        return labels[GFD_DRIVER_LABEL]
    parts = [labels.get(k) for k in GFD_DRIVER_PARTS]
    return ".".join(parts) if all(parts) else ""


def _window_hours(window):
    units = {"s": 1 / 3600.0, "m": 1 / 60.0, "h": 1.0, "d": 24.0, "w": 168.0}
    text = str(window or "").strip()
    if len(text) > 1 and text[-1] in units:
        try:
            return float(text[:-1]) * units[text[-1]]
        except ValueError:
            return None
    return None


# pending DRA GPU pods that no pool's claims name: they wait for any pool with allocation dra
ANY_DRA_POOL = object()


def _pending_dra_pool(pod, claim_pool, gpu_claims):
    """For an unscheduled pod that claims NVIDIA GPUs or MIG devices through DRA: the pool it waits for (its
    nodeSelector pin, else the pool whose claim or claim template it references, else ANY_DRA_POOL); None for any
    other pod. ``claim_pool``: {name of a claim or template gpufleet renders: DRA pool}; ``gpu_claims``:
    {(namespace, name)} of the ResourceClaims that ask the gpu.nvidia.com or mig.nvidia.com class."""
    spec = pod.get("spec") or {}
    refs = spec.get("resourceClaims") or []
    if not refs:
        return None
    ns = (pod.get("metadata") or {}).get("namespace")
    generated = {c.get("name"): c.get("resourceClaimName")
                 for c in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    pools, gpu = [], False
    for ref in refs:
        named = ref.get("resourceClaimTemplateName") or ref.get("resourceClaimName")
        if named in claim_pool:
            pools.append(claim_pool[named])
        claim = ref.get("resourceClaimName") or generated.get(ref.get("name"))
        gpu = gpu or named in claim_pool or (ns, claim) in gpu_claims
    if not gpu:
        return None
    pinned = (spec.get("nodeSelector") or {}).get(POOL_LABEL)
    return pinned or (sorted(pools)[0] if pools else ANY_DRA_POOL)


def _dra_per_node(pool):
    """GPU units one node of a pool with ``allocation: dra`` publishes (GPUs, or MIG devices of its profile)."""
    profile = (pool.get("sharing") or {}).get("mig_profile")
    per_gpu = instances_per_gpu(pool.get("gpu_type"), profile) if profile else None
    return sum(dra.expected_devices(pool, per_gpu).values())


def build_report(plan, groups=None, gpu_facts=None, nodes=None, pods=None, utilisation=None, idle_percent=10.0,
                 window="24h", prices=None, generated_at=None, utilisation_scale=100.0, slices=None, claims=None):
    """``slices`` (ResourceSlice objects) and ``claims`` (ResourceClaim objects): for the nodes of pools with
    ``allocation: dra``, the devices NVIDIA's DRA driver publishes there are their capacity and the devices
    allocated by claims their requested units (instead of extended resources and pod limits)."""
    dra_pool_names = {p["name"] for p in dra.dra_pools(plan["pools"])}
    devices = dra.node_devices(slices)
    allocated = dra.claim_allocations(claims)
    groups = groups or {}
    gpu_facts = gpu_facts or {}
    prices = prices or {}
    util = parse_utilisation(utilisation, utilisation_scale)
    live = nodes is not None
    platform = plan.get("platform")
    hours = _window_hours(window)
    node_pool, node_alloc, node_obj = {}, {}, {}
    unmatched = []
    for node in nodes or []:
        meta = node.get("metadata") or {}
        alloc = (node.get("status") or {}).get("allocatable") or {}
        gpu_units = sum(int(_num(v)) for k, v in alloc.items() if k.startswith(GPU_RESOURCE_PREFIXES))
        labels = meta.get("labels") or {}
        pool = node_pool_name(node, plan["pools"], platform)
        if pool in dra_pool_names:
            published = devices.get(meta["name"]) or {"gpu": 0, "mig": {}}
            gpu_units = published["gpu"] + sum(published["mig"].values())
        if pool:
            node_pool[meta["name"]] = pool
            node_alloc[meta["name"]] = gpu_units
            node_obj[meta["name"]] = node
        elif gpu_units or labels.get("nvidia.com/gpu.present") == "true":
            unmatched.append(meta["name"])
    requested, pending_gpu_pods = {}, {}
    claim_pool = {obj["metadata"]["name"]: pool["name"] for pool in dra.dra_pools(plan["pools"])
                  for obj in dra.claim_objects(pool, "")}
    gpu_claims = {((c.get("metadata") or {}).get("namespace"), (c.get("metadata") or {}).get("name"))
                  for c in claims or [] if dra.claims_gpus(c)}
    for pod in pods or []:
        if (pod.get("status") or {}).get("phase") not in ACTIVE_PHASES:
            continue
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_pool.get(node_name) in dra_pool_names:
            continue  # counted from the ResourceClaims' allocations below
        if node_name:
            requested[node_name] = requested.get(node_name, 0) + pod_gpu_requests(pod)
        elif pod_gpu_requests(pod):
            # not scheduled yet: a pod pinned to a pool counts for that pool, any other for every pool
            wanted = ((pod.get("spec") or {}).get("nodeSelector") or {}).get(POOL_LABEL)
            pending_gpu_pods[wanted] = pending_gpu_pods.get(wanted, 0) + 1
        else:
            # a pod that claims its GPUs through DRA requests no extended resource
            wanted = _pending_dra_pool(pod, claim_pool, gpu_claims)
            if wanted is not None:
                pending_gpu_pods[wanted] = pending_gpu_pods.get(wanted, 0) + 1

    for node_name, count in allocated.items():
        if node_pool.get(node_name) in dra_pool_names:
            requested[node_name] = requested.get(node_name, 0) + count
    pool_rows, node_rows, hints = [], [], []
    drivers_seen = {}
    for pool in plan["pools"]:
        per_node = _dra_per_node(pool) if pool["name"] in dra_pool_names else sum(expected_resources(pool).values())
        if live:
            members = sorted(n for n, p in node_pool.items() if p == pool["name"])
            planned_nodes = len(members)
        else:
            members = sorted(groups.get(pool.get("node_group") or "", []))
            planned_nodes = len(members) if members else (pool.get("min_nodes") or 0)
        max_nodes = pool.get("max_nodes")
        capacity = sum(node_alloc.get(n, 0) for n in members) if live else planned_nodes * per_node
        req = sum(requested.get(n, 0) for n in members)
        pool_util = [u for n in members for u in util.get(n, [])]
        mean = sum(pool_util) / len(pool_util) if pool_util else None
        avg = round(mean, 1) if mean is not None else None
        gpus = planned_nodes * pool["gpus_per_node"]
        idle_hours = cost = None
        if mean is not None and hours is not None:
            idle_hours = round(gpus * hours * (1 - mean / 100.0), 1)
            price = prices.get(pool["gpu_type"])
            if price is not None:
                cost = round(gpus * hours * (1 - mean / 100.0) * float(price), 2)
        pool_drivers = set()
        row = {
            "pool": pool["name"], "gpu_type": pool["gpu_type"], "gpus_per_node": pool["gpus_per_node"],
            "sharing": pool["sharing"]["mode"], "nodes": planned_nodes, "gpus": gpus,
            "max_nodes": max_nodes, "schedulable_per_node": per_node, "capacity": capacity,
            "max_capacity": (max_nodes * per_node) if max_nodes is not None else None,
            "max_gpus": (max_nodes * pool["gpus_per_node"]) if max_nodes is not None else None,
            "requested": req if live else None, "idle": (capacity - req) if live else None,
            "avg_utilisation": avg, "idle_gpu_hours": idle_hours, "idle_cost": cost,
        }
        pool_rows.append(row)
        # live, "at its max" needs a sign of demand: GPU pods waiting for a node, or the pool's GPU units
        # nearly all requested (a fully idle pool at its max gets the scale-down hints instead)
        pending_here = pending_gpu_pods.get(pool["name"], 0) + pending_gpu_pods.get(None, 0) + (
            pending_gpu_pods.get(ANY_DRA_POOL, 0) if pool["name"] in dra_pool_names else 0)
        row["pending_gpu_pods"] = pending_gpu_pods.get(pool["name"], 0) if live else None  # pinned here (fleet view)
        busy = capacity > 0 and req >= BUSY_SHARE * capacity
        if max_nodes is not None and planned_nodes >= max_nodes and max_nodes > 0 and (
                not live or pending_here or busy):
            hints.append("pool %s is %s its max (%d of %d nodes): raise max_nodes or expect pending GPU pods"
                         % (pool["name"], "at" if live else "planned at", planned_nodes, max_nodes))
        if live and planned_nodes and capacity == 0:
            hints.append("pool %s: %d node(s) but 0 schedulable GPUs: the device plugin is not running there or "
                         "MIG/sharing is not configured yet" % (pool["name"], planned_nodes))
        for name in members:
            node_util = util.get(name, [])
            node_avg = round(sum(node_util) / len(node_util), 1) if node_util else None
            facts = gpu_facts.get(name) or {}
            driver = node_driver(node_obj.get(name) or {}, facts)
            if driver:
                pool_drivers.add(driver)
                drivers_seen.setdefault(driver, []).append(name)
            row_n = {"node": name, "pool": pool["name"], "allocatable": node_alloc.get(name) if live else per_node,
                     "requested": requested.get(name, 0) if live else None, "avg_utilisation": node_avg,
                     "driver": driver, "gpus": len(facts.get("gpus") or [])}
            node_rows.append(row_n)
            if live and row_n["allocatable"] and row_n["requested"] == 0:
                hints.append("node %s: all %d GPU units idle (nothing requested): scale the pool down or lower "
                             "min_nodes" % (name, row_n["allocatable"]))
            elif node_avg is not None and row_n["requested"] and node_avg < idle_percent:
                hints.append("node %s: %d GPU unit(s) allocated but only %.1f%% utilised (< %.0f%%): right-size the "
                             "requests or share GPUs (time-slicing/MPS/MIG)" % (name, row_n["requested"], node_avg,
                                                                                idle_percent))
        row["drivers"] = sorted(pool_drivers)
        if len(pool_drivers) > 1:
            hints.append("pool %s: driver skew, nodes run %s: upgrade them to one version"
                         % (pool["name"], ", ".join(sorted(pool_drivers))))
    for name in sorted(unmatched):
        hints.append("node %s has GPUs but matches no pool of the inventory" % name)
    totals = {
        "pools": len(pool_rows), "nodes": sum(r["nodes"] for r in pool_rows),
        "gpus": sum(r["gpus"] for r in pool_rows),
        "capacity": sum(r["capacity"] for r in pool_rows),
        "requested": sum(r["requested"] or 0 for r in pool_rows) if live else None,
        "pending_gpu_pods": sum(pending_gpu_pods.values()) if live else None,  # pinned to a pool or not
        "idle_gpu_hours": round(sum(r["idle_gpu_hours"] or 0 for r in pool_rows), 1)
        if any(r["idle_gpu_hours"] is not None for r in pool_rows) else None,
        "idle_cost": round(sum(r["idle_cost"] or 0 for r in pool_rows), 2)
        if any(r["idle_cost"] is not None for r in pool_rows) else None,
    }
    report = {
        "cluster": plan.get("cluster_name"), "platform": platform,
        "source": "cluster" if live else "inventory (render mode)",
        "idle_percent": idle_percent, "window": window, "totals": totals, "pools": pool_rows, "nodes": node_rows,
        "hints": hints, "drivers": {k: sorted(v) for k, v in sorted(drivers_seen.items())},
        "unmatched_gpu_nodes": sorted(unmatched),
    }
    if generated_at:
        report["generated_at"] = generated_at
    return report
