# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""EKS: Karpenter v1 NodePool + EC2NodeClass per GPU pool (the v1alpha5 -> v1 migration is in karpenter_v1alpha5).

API facts (Karpenter v1, karpenter.sh/v1 and karpenter.k8s.aws/v1): NodePool
``spec.template.spec.{requirements, nodeClassRef{group,kind,name}, taints, expireAfter}``,
``spec.disruption.{consolidationPolicy, consolidateAfter}``, ``spec.limits``, ``spec.weight``;
EC2NodeClass ``role``, ``amiFamily``, ``amiSelectorTerms`` (required), ``subnetSelectorTerms``,
``securityGroupSelectorTerms``, ``kubelet`` (maxPods moved here from the NodePool),
``blockDeviceMappings``. GPU pools get the AL2023 NVIDIA AMI through its public SSM parameter;
the standard AL2023 AMI has no NVIDIA driver. The NodePool's ``kubernetes.io/arch`` requirement and the
SSM parameter follow the pool's GPU type's CPU architecture (gpu_catalog ``cpu_arch``; one GPU type per
pool, so a pool never mixes): EKS's "Retrieve recommended Amazon Linux AMI IDs" names
``amazon-linux-2023/x86_64/nvidia`` and ``amazon-linux-2023/arm64/nvidia``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_MANUFACTURER, GPU_TYPES, cpu_arch
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.selfmanaged import pool_node_labels, pool_taints
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import (
    GPU_RESOURCE, advertised_resources, pool_gpu_limit)

NODEPOOL_API = "karpenter.sh/v1"
NODEOVERLAY_API = "karpenter.sh/v1alpha1"
NODECLASS_API = "karpenter.k8s.aws/v1"
NODECLASS_GROUP = "karpenter.k8s.aws"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpufleet"}
NVIDIA_AL2023_SSM_ARCH = "/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/nvidia/recommended/image_id"
# kubernetes.io/arch -> the architecture part of the EKS AMI's SSM parameter path
SSM_ARCH = {"amd64": "x86_64", "arm64": "arm64"}
NVIDIA_AL2023_SSM = NVIDIA_AL2023_SSM_ARCH % ("%s", SSM_ARCH["amd64"])
ROOT_DEVICE = {"AL2023": "/dev/xvda", "Bottlerocket": "/dev/xvdb"}


def nvidia_ami_terms(kubernetes_version, arch="amd64"):
    return [{"ssmParameter": NVIDIA_AL2023_SSM_ARCH % (kubernetes_version, SSM_ARCH[arch])}]


def discovery_terms(cluster):
    return [{"tags": {"karpenter.sh/discovery": cluster}}]


def nodepool(pool):
    facts = GPU_TYPES[pool["gpu_type"]]
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(pool["capacity_types"])},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(pool["zones"])},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": list(facts["eks_families"])},
        {"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "In", "values": [GPU_MANUFACTURER]},
        {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": [facts["eks_gpu_name"]]},
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": [str(pool["gpus_per_node"])]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": [cpu_arch(pool["gpu_type"])]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    ]
    limits = {}
    gpu_limit = pool_gpu_limit(pool)
    if gpu_limit is not None:
        limits.update(advertised_limits(pool, gpu_limit))
    if pool.get("max_cpu"):
        limits["cpu"] = str(pool["max_cpu"])
    if pool.get("max_memory_gb"):
        limits["memory"] = "%dG" % pool["max_memory_gb"]
    template_spec = {
        "nodeClassRef": {"group": NODECLASS_GROUP, "kind": "EC2NodeClass", "name": pool["name"]},
        "requirements": requirements,
        "expireAfter": pool["expire_after"],
    }
    taints = pool_taints(pool)
    if taints:
        template_spec["taints"] = taints
    spec = {
        "template": {"metadata": {"labels": pool_node_labels(pool)}, "spec": template_spec},
        # GPU nodes are expensive and slow to start: remove them only once empty
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": pool["consolidate_after"]},
        "limits": limits,
    }
    if pool.get("disruption_budgets"):
        spec["disruption"]["budgets"] = nodepool_budgets(pool["disruption_budgets"])
    if pool.get("weight") is not None:
        spec["weight"] = pool["weight"]
    return {"apiVersion": NODEPOOL_API, "kind": "NodePool",
            "metadata": {"name": pool["name"], "labels": dict(MANAGED_BY)}, "spec": spec}


def _advertised(pool):
    """What one node advertises (model.spec.advertised_resources); a DRA pool's physical GPUs."""
    return advertised_resources(pool) or {GPU_RESOURCE: pool["gpus_per_node"]}


def advertised_limits(pool, gpu_limit):
    """The NodePool limits for ``gpu_limit`` physical GPUs, in the unit the nodes advertise. Karpenter counts a
    pool's usage from its nodes' capacity, which the device plugin sets: a time-sliced node with 1 GPU and 4
    replicas counts 4 ``nvidia.com/gpu``, so a limit in physical GPUs would stop the pool at a quarter of
    ``max_nodes``."""
    per_gpu = dict((name, count // pool["gpus_per_node"]) for name, count in _advertised(pool).items())
    return dict((name, str(gpu_limit * n)) for name, n in sorted(per_gpu.items()))


def shares_gpus(pool):
    """Whether the pool's nodes advertise something other than their physical GPUs (sharing, MIG)."""
    return _advertised(pool) != {GPU_RESOURCE: pool["gpus_per_node"]}


def nodeoverlay(pool):
    """A NodeOverlay (karpenter.sh/v1alpha1 in the pinned v1.15 line; alpha: Karpenter applies it only with its
    ``NodeOverlay`` feature gate on, otherwise the limit above still holds the pool to max_nodes) giving the
    pool's instance types the capacity the device plugin will advertise, so that Karpenter plans shared and MIG
    nodes with it (4 pending 1-slice pods of a 4-replica pool fit one node, not four). It selects the pool's
    instance types by the NodePool's own label ``karpenter.sh/nodepool``."""
    return {"apiVersion": NODEOVERLAY_API, "kind": "NodeOverlay",
            "metadata": {"name": pool["name"], "labels": dict(MANAGED_BY)},
            "spec": {"requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": [pool["name"]]}],
                     "capacity": dict((k, str(v)) for k, v in sorted(_advertised(pool).items()))}}


def nodepool_budgets(budgets):
    """The pool's ``disruption_budgets`` as NodePool ``spec.disruption.budgets`` (validated in
    pools_check): ``nodes`` ("N" or "N%"), optional ``schedule`` + ``duration``, ``reasons``."""
    out = []
    for budget in budgets:
        item = {"nodes": budget["nodes"]}
        for key in ("schedule", "duration"):
            if budget.get(key) is not None:
                item[key] = budget[key]
        if budget.get("reasons"):
            item["reasons"] = list(budget["reasons"])
        out.append(item)
    return out


def default_ami_terms(settings, arch="amd64"):
    """A pinned AL2023 release (``gpu_pools_eks_ami_version``) as Karpenter's alias, which resolves
    the NVIDIA variant per GPU instance type and architecture; otherwise the recommended NVIDIA AMI's
    SSM parameter for ``arch``, which moves with every AMI release (Karpenter then drifts every GPU node
    onto it)."""
    if settings.get("eks_ami_version"):
        return [{"alias": "al2023@%s" % settings["eks_ami_version"]}]
    return nvidia_ami_terms(settings["eks_kubernetes_version"], arch)


def ec2nodeclass(pool, settings, cluster):
    family = settings["eks_ami_family"]
    terms = pool.get("ami_selector_terms") or settings["eks_ami_selector_terms"] or default_ami_terms(settings, cpu_arch(pool["gpu_type"]))
    spec = {
        "role": settings["eks_node_role"] or "KarpenterNodeRole-%s" % cluster,
        "amiFamily": family,
        "amiSelectorTerms": copy.deepcopy(terms),
        "subnetSelectorTerms": copy.deepcopy(settings["eks_subnet_selector_terms"]) or discovery_terms(cluster),
        "securityGroupSelectorTerms": copy.deepcopy(settings["eks_security_group_selector_terms"])
        or discovery_terms(cluster),
        "kubelet": {"maxPods": pool["max_pods"]},
        "blockDeviceMappings": [{
            "deviceName": ROOT_DEVICE.get(family, "/dev/xvda"),
            "ebs": {"volumeSize": "%dGi" % pool["disk_size_gb"], "volumeType": settings["eks_volume_type"],
                    "encrypted": True, "deleteOnTermination": True},
        }],
        "metadataOptions": {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                            "httpPutResponseHopLimit": 1, "httpTokens": "required"},
        "tags": {"gpufleet.io/pool": pool["name"], "gpufleet.io/cluster": cluster},
    }
    if any("alias" in t for t in terms):
        del spec["amiFamily"]  # an alias term names the family itself
    return {"apiVersion": NODECLASS_API, "kind": "EC2NodeClass",
            "metadata": {"name": pool["name"], "labels": dict(MANAGED_BY)}, "spec": spec}


def karpenter_objects(pools, settings, cluster):
    """EC2NodeClass then NodePool for every pool (node classes first: a NodePool refers to one), then a
    NodeOverlay for every pool whose nodes share or partition their GPUs."""
    out = []
    for pool in pools:
        out.append(ec2nodeclass(pool, settings, cluster))
        out.append(nodepool(pool))
    out.extend(nodeoverlay(pool) for pool in pools if shares_gpus(pool))
    return out
