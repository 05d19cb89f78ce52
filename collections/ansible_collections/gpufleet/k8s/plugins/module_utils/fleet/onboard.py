# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Onboarding an existing cluster: a starting inventory from its Node objects.

GPU nodes are those labelled ``nvidia.com/gpu.present=true`` (GPU feature discovery) or
``cloud.google.com/gke-accelerator``, or with ``nvidia.com/gpu*`` in their capacity or allocatable.
They are grouped into pools by the pool they already belong to
(``gpufleet.io/pool``, Karpenter's ``karpenter.sh/nodepool``, GKE's ``cloud.google.com/gke-nodepool``),
else by GPU type and count. The GPU type comes from GFD's ``nvidia.com/gpu.product``, Karpenter's
``karpenter.k8s.aws/instance-gpu-name`` or GKE's ``cloud.google.com/gke-accelerator``; the GPU count
from ``nvidia.com/gpu.count`` or the capacity; MIG from ``nvidia.com/mig.strategy`` and the product's
``-MIG-<profile>`` suffix. The installed drivers (GFD ``nvidia.com/cuda.driver-version.full``) give
the proposed pin: the version most nodes run, with the others listed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_TYPES
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.mig import instances_per_gpu
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import comment, comments, dump_yaml

PRODUCT_PATTERNS = (  # GFD nvidia.com/gpu.product, most specific first
    # GB200 before B200: GFD's product label for a GB200 (e.g. NVIDIA-GB200) contains "B200" too
    (r"H200", "h200-141gb"), (r"GB200", "gb200"), (r"B200", "b200"), (r"H100", "h100-80gb"),
    (r"A100.*80GB", "a100-80gb"), (r"A100", "a100-40gb"), (r"L40S", "l40s"), (r"\bL4\b|-L4($|-)", "l4"),
    (r"A10G", "a10g"), (r"V100", "v100"), (r"T4", "t4"),
)
EKS_NAMES = {facts["eks_gpu_name"]: name for name, facts in GPU_TYPES.items() if facts.get("eks_gpu_name")}
GKE_NAMES = {facts["gke_accelerator"]: name for name, facts in GPU_TYPES.items() if facts.get("gke_accelerator")}
GKE_NAMES.update({"nvidia-a100-80gb": "a100-80gb", "nvidia-h100-80gb": "h100-80gb", "nvidia-h100-mega-80gb": "h100-80gb",
                  "nvidia-h200-141gb": "h200-141gb", "nvidia-b200": "b200"})
POOL_LABELS = ("gpufleet.io/pool", "karpenter.sh/nodepool", "cloud.google.com/gke-nodepool")


def _int(value):
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


def gpu_units(node, field="allocatable"):
    alloc = (node.get("status") or {}).get(field) or {}
    return sum(_int(v) for k, v in alloc.items() if k.startswith(("nvidia.com/gpu", "nvidia.com/mig-")))


def is_gpu_node(node):
    labels = (node.get("metadata") or {}).get("labels") or {}
    return (labels.get("nvidia.com/gpu.present") == "true" or gpu_units(node) > 0 or gpu_units(node, "capacity") > 0
            or bool(labels.get("cloud.google.com/gke-accelerator")))


def gpu_type(labels):
    product = labels.get("nvidia.com/gpu.product") or ""
    for pattern, name in PRODUCT_PATTERNS:
        if product and re.search(pattern, product):
            return name
    if labels.get("karpenter.k8s.aws/instance-gpu-name") in EKS_NAMES:
        return EKS_NAMES[labels["karpenter.k8s.aws/instance-gpu-name"]]
    return GKE_NAMES.get(labels.get("cloud.google.com/gke-accelerator"))


def detect_platform(nodes):
    labels = [(n.get("metadata") or {}).get("labels") or {} for n in nodes]
    if any("cloud.google.com/gke-nodepool" in lab for lab in labels):
        return "gke"
    if any(k.startswith(("eks.amazonaws.com/", "karpenter.k8s.aws/")) for lab in labels for k in lab):
        return "eks"
    if any(k.startswith("node.openshift.io/") for lab in labels for k in lab):
        return "openshift"
    if any(lab.get("node.kubernetes.io/instance-type") == "k3s" for lab in labels):
        return "k3s"
    return "kubeadm"


def _pool_name(text):
    name = re.sub(r"[^a-z0-9-]+", "-", str(text).lower()).strip("-")[:50].strip("-")
    return name or "gpu"


def propose(nodes, cluster_name, platform=None):
    """{platform, pools, groups {group: [nodes]}, drivers {version: [nodes]}, pin, notes}."""
    gpu_nodes = sorted((n for n in nodes or [] if is_gpu_node(n)), key=lambda n: n["metadata"]["name"])
    platform = platform or detect_platform(nodes or [])
    self_managed = platform not in ("eks", "gke", "gke-autopilot")
    pools, groups, drivers, notes, order = {}, {}, {}, [], []
    for node in gpu_nodes:
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        kind = gpu_type(labels)
        capacity = (node.get("status") or {}).get("capacity") or {}
        count = _int(labels.get("nvidia.com/gpu.count")) or _int(capacity.get("nvidia.com/gpu")) or 1
        mig_strategy = labels.get("nvidia.com/mig.strategy")
        profile = re.search(r"-MIG-(\d+g\.\d+gb)", labels.get("nvidia.com/gpu.product") or "")
        replicas = _int(labels.get("nvidia.com/gpu.replicas"))
        if profile and kind and mig_strategy == "single":
            per_gpu = instances_per_gpu(kind, profile.group(1)) or 1
            count = max(1, count // per_gpu)          # MIG devices -> physical GPUs
        elif replicas > 1 and not labels.get("nvidia.com/gpu.count"):
            count = max(1, count // replicas)         # time-sliced units -> physical GPUs
        existing = next((labels[k] for k in POOL_LABELS if labels.get(k)), None)
        key = _pool_name(existing or "%s-x%d" % (kind or "unknown-gpu", count))
        if kind is None and key not in pools:
            notes.append("node %s: GPU type unknown (no nvidia.com/gpu.product, Karpenter or GKE accelerator label); "
                         "set gpu_type of pool %s by hand" % (name, key))
        if key not in pools:
            order.append(key)
            pool = {"name": key, "gpu_type": kind or "FIXME", "gpus_per_node": count}
            if self_managed:
                pool["node_group"] = "gpu_pool_" + key.replace("-", "_")
            else:
                pool["zones"] = []
                pool["max_nodes"] = 0
            if mig_strategy in ("single", "mixed"):
                # the live nodes already expose MIG devices: the hosts were partitioned outside
                # gpufleet, which standalone mode requires to be said (sharing.mig_preconfigured)
                pool["sharing"] = {"mode": "mig", "mig_strategy": mig_strategy, "mig_preconfigured": True}
                if profile:
                    pool["sharing"]["mig_profile"] = profile.group(1)
            elif replicas > 1:
                pool["sharing"] = {"mode": "time-slicing", "replicas": replicas}
            pools[key] = pool
        elif pools[key]["gpus_per_node"] != count:
            notes.append("pool %s: node %s has %d GPUs, others %d: split the pool"
                         % (key, name, count, pools[key]["gpus_per_node"]))
        if self_managed:
            groups.setdefault(pools[key]["node_group"], []).append(name)
        else:
            pools[key]["max_nodes"] += 1
        driver = labels.get("nvidia.com/cuda.driver-version.full")
        if driver:
            drivers.setdefault(driver, []).append(name)
    for key in order:
        if not self_managed:
            notes.append("pool %s: set zones and max_nodes (now the %d node(s) running)" % (key, pools[key]["max_nodes"]))
    pin = None
    if drivers:
        pin = sorted(drivers.items(), key=lambda kv: (-len(kv[1]), kv[0]))[0][0]
        if len(drivers) > 1:
            notes.append("driver skew: %s; the proposed pin is %s (most nodes)" % (
                "; ".join("%s on %s" % (v, ", ".join(sorted(ns))) for v, ns in sorted(drivers.items())), pin))
    elif gpu_nodes:
        notes.append("no GPU feature discovery driver labels: set nvidia_driver_version by hand")
    if not gpu_nodes:
        notes.append("no GPU node found (nvidia.com/gpu.present or allocatable nvidia.com/gpu)")
    return {"cluster_name": cluster_name, "platform": platform, "pools": [pools[k] for k in order],
            "groups": groups, "drivers": {k: sorted(v) for k, v in sorted(drivers.items())}, "pin": pin, "notes": notes}


def inventory_files(proposal):
    """{relative path: text} of the starting inventory directory."""
    header = comments("Starting inventory written by playbooks/onboard.yml from cluster %s; review it, then run"
                      % proposal["cluster_name"],
                      "  ansible-playbook site.yml -i <this directory>   (render mode until gpufleet_apply: true)")
    hosts = {"all": {"children": {"gpufleet_controller": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}}}
    if proposal["groups"]:
        hosts["all"]["children"]["gpu_nodes"] = {"children": {
            group: {"hosts": {n: None for n in members}} for group, members in sorted(proposal["groups"].items())}}
    values = {"gpufleet_platform": proposal["platform"], "gpufleet_cluster_name": proposal["cluster_name"],
              "gpufleet_apply": False, "gpufleet_addons_mode": "standalone", "gpufleet_gpu_pools": proposal["pools"]}
    if proposal["pin"]:
        values["nvidia_driver_version"] = proposal["pin"]
    notes = "".join(comment("NOTE: %s" % n) for n in proposal["notes"])
    drivers = "".join(comment("  %s: %s" % (v, ", ".join(ns))) for v, ns in proposal["drivers"].items())
    return {
        "hosts.yml": "---\n" + header + dump_yaml(hosts).replace(": null\n", ":\n"),
        "group_vars/all/gpufleet.yml": ("---\n" + header + notes
                                        + (comment("Installed drivers (GPU feature discovery):") + drivers if drivers else "")
                                        + dump_yaml(values)),
    }
