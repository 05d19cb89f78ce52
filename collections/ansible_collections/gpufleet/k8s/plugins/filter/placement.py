# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Jinja2 filters: pod placement for a GPU pool, and example workloads per pool."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.placement import example_jobs, placement
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import plain
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.dra import claims_for_pools
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pool


def gpu_pod_placement(pool, platform, gpus=None, runtime_class=None):
    """Pod spec fragment {resources, affinity|nodeSelector, tolerations[, runtimeClassName]} for ``pool``
    on ``platform``.

    Example: ``{{ pool | gpufleet.k8s.gpu_pod_placement('gke') }}``; ``gpus`` overrides the count;
    ``runtime_class`` (``gpufleet_plan.gpu_access.runtime_class``) where nvidia is not the default runtime.
    """
    try:
        return placement(normalize_pool(pool), platform, gpus, runtime_class)
    except GpufleetError as exc:
        raise AnsibleFilterError(exc.msg)


def gpu_pool_examples(pools, platform, image, namespace, runtime_class=None):
    """A Namespace and one CUDA sample Job per pool, placed with ``gpu_pod_placement``."""
    try:
        jobs = example_jobs([normalize_pool(p) for p in plain(pools)], str(platform), str(image), str(namespace),
                            runtime_class)
    except GpufleetError as exc:
        raise AnsibleFilterError(exc.msg)
    # Pod Security "restricted" enforced: the Jobs are written to pass it, and so must what users copy.
    labels = {"app.kubernetes.io/managed-by": "gpufleet"}
    labels.update(("pod-security.kubernetes.io/%s" % mode, "restricted") for mode in ("enforce", "audit", "warn"))
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}}
    # DRA pools: the claim templates (or shared claim) their Jobs name, in the same namespace
    claims = claims_for_pools([normalize_pool(p) for p in plain(pools)], [str(namespace)], own=False)
    return [ns] + claims + jobs


class FilterModule(object):
    def filters(self):
        return {
            "gpu_pod_placement": gpu_pod_placement,
            "gpu_pool_examples": gpu_pool_examples,
        }
