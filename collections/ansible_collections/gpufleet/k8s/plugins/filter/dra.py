# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Jinja2 filters for pools with ``allocation: dra``: the DRA driver's Helm values and the claims."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.model.dra import claims_for_pools
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dra_driver import chart, chart_crds, driver_values, settings
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import plain
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pool


def gpu_dra_driver_values(plan, extra):
    """Helm values of the DRA driver release (module_utils/addons/dra_driver.py driver_values)."""
    try:
        return driver_values(plain(plan), plain(extra) or {})
    except GpufleetError as exc:
        raise AnsibleFilterError(exc.msg)


def gpu_dra_claims(pools, namespaces, compute_domains=True):
    """ResourceClaimTemplates (and shared ResourceClaims) of every DRA pool in each namespace, and the
    ComputeDomain of a pool with dra.compute_domain (unless ``compute_domains`` is false)."""
    if isinstance(namespaces, str):
        namespaces = [namespaces]
    try:
        return claims_for_pools([normalize_pool(p) for p in plain(pools)], [str(n) for n in plain(namespaces)],
                                compute_domains=bool(compute_domains))
    except GpufleetError as exc:
        raise AnsibleFilterError(exc.msg)


def gpu_dra_chart(extra, chart_dir=""):
    """{name, repo_url, version, path} of the DRA driver chart: pinned unless nvidia_dra_driver_chart_* say
    otherwise; ``chart_dir`` (gpufleet_mirror_chart_path) holds <name>-<version>.tgz for air-gapped installs."""
    s = settings(plain(extra) or {})
    out = chart(s)
    if chart_dir and not out["path"]:
        out["path"] = "%s/%s-%s.tgz" % (str(chart_dir).rstrip("/"), out["name"], out["version"])
    return out


def gpu_dra_crds(manifest):
    """The CustomResourceDefinitions in the output of ``helm show crds`` of the DRA driver chart."""
    try:
        return chart_crds(manifest)
    except GpufleetError as exc:
        raise AnsibleFilterError(exc.msg)


class FilterModule(object):
    def filters(self):
        return {
            "gpu_dra_driver_values": gpu_dra_driver_values,
            "gpu_dra_claims": gpu_dra_claims,
            "gpu_dra_chart": gpu_dra_chart,
            "gpu_dra_crds": gpu_dra_crds,
        }
