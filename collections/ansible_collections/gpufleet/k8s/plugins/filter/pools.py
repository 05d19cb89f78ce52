# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Jinja2 filters: provisioning objects of the GPU pools (Karpenter v1, GKE NAP / ComputeClass)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.gke import (
    AUTOPILOT_NOTE, compute_classes, nap_command, nap_config, sharing_notes)
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.karpenter import karpenter_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.pools_check import nap_enabled, resolve_settings
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import plain
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import comment, dump_yaml


def _plain(value):
    """Ansible's tagged strings and lazy containers -> plain JSON types (for yaml.safe_dump)."""
    return json.loads(json.dumps(value))


def gpu_pools_settings(values):
    """gpu_pools_* variables ({name: value}) -> settings with every default filled in."""
    return resolve_settings(_plain(values))


def gpu_pools_migrated_stale(folder, files):
    """The folders under ``folder`` (provision/karpenter-migrated) that belong to none of the Provisioner ``files``
    (their base names without extension name the folders); [] when ``folder`` does not exist. Symbolic links are
    listed too (removed as links, never followed)."""
    if not os.path.isdir(folder) or os.path.islink(folder):
        return []
    keep = set(os.path.splitext(os.path.basename(str(f)))[0] for f in files or [])
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if name not in keep and (os.path.isdir(os.path.join(folder, name))
                                           or os.path.islink(os.path.join(folder, name))))


def gpu_pools_karpenter(plan, values):
    plan = plain(plan)
    return karpenter_objects(plan["pools"], resolve_settings(plain(values)), plan["cluster_name"])


def gpu_pools_compute_classes(plan, values):
    return compute_classes(plain(plan["pools"]), resolve_settings(plain(values)))


def gpu_pools_nap_enabled(plan, values):
    return nap_enabled(str(plan["platform"]), resolve_settings(plain(values)))


def gpu_pools_nap_yaml(plan, values):
    """The NAP config file's text (deterministic YAML)."""
    plan = plain(plan)
    return comment("Rendered by gpufleet for cluster %s; do not edit by hand." % plan["cluster_name"]) + \
        dump_yaml(_plain(nap_config(plan["pools"], resolve_settings(plain(values)), plan["platform"])))


def gpu_pools_nap_command(plan, values, config_path):
    plan = plain(plan)
    return nap_command(plan["cluster_name"], str(config_path), plan, resolve_settings(plain(values)))


def _sharing_text(plan, settings):
    """GKE: where the GPU sharing of each ComputeClass pool is rendered (ComputeClass gpuSharing or pod
    selectors only), from the cluster's gpu_pools_gke_version."""
    notes = sharing_notes(plan["pools"], settings)
    return ". GPU sharing: " + "; ".join(notes) if notes else ""


def gpu_pools_summary(plan, values):
    """One line per platform saying what the provision stage manages."""
    plan = plain(plan)
    platform = plan["platform"]
    settings = resolve_settings(plain(values))
    if platform == "gke-autopilot":
        return AUTOPILOT_NOTE + _sharing_text(plan, settings)
    if platform == "eks":
        return ("EKS: Karpenter v1 EC2NodeClass + NodePool per pool (%s), AMI from %s" % (
            ", ".join(p["name"] for p in plan["pools"]),
            "the pool/inventory amiSelectorTerms" if settings["eks_ami_selector_terms"]
            else "the AL2023 NVIDIA SSM parameter for Kubernetes %s" % settings["eks_kubernetes_version"]))
    if platform == "gke":
        classes = [p["name"] for p in plan["pools"] if p.get("compute_class")]
        return "GKE Standard: %s; ComputeClass for: %s%s" % (
            "node auto-provisioning config file" if nap_enabled(platform, settings)
            else "no node auto-provisioning file (gpu_pools_gke_nap: disabled)", ", ".join(classes) or "none",
            _sharing_text(plan, settings))
    return ("%s (self-managed): labels gpufleet.io/pool + nvidia.com/device-plugin.config and the pool taints "
            "on the nodes of each pool's inventory group, by server-side apply (field manager gpufleet)"
            % platform)


class FilterModule(object):
    def filters(self):
        return {
            "gpu_pools_settings": gpu_pools_settings,
            "gpu_pools_karpenter": gpu_pools_karpenter,
            "gpu_pools_migrated_stale": gpu_pools_migrated_stale,
            "gpu_pools_compute_classes": gpu_pools_compute_classes,
            "gpu_pools_nap_enabled": gpu_pools_nap_enabled,
            "gpu_pools_nap_yaml": gpu_pools_nap_yaml,
            "gpu_pools_nap_command": gpu_pools_nap_command,
            "gpu_pools_summary": gpu_pools_summary,
        }
