# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Provisioning rules for GPU pools: what each platform can provision, and its settings.

``spec.validate_pools`` checks the shape of a pool; this module checks it against the platform
(GPU type offered on that cloud, GPUs per node the instance family offers, zones in one region,
spot where spot exists) and the cluster-wide ``gpu_pools_*`` settings (EKS node class, GKE node
auto-provisioning, Karpenter migration files). ``check`` is registered in preflight;
``resolve_settings`` gives the roles and filters the same defaults.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.ec2nodeclass_inputs import check_node_role, check_selector_tags
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import (
    GKE_PLATFORMS, gpu_counts_on, offered_on, types_on)
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.karpenter_v1alpha5 import load_v1alpha5, migrate
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import (
    CLOUD_PLATFORMS, DURATION, POOLS_VAR)

SETTINGS_PREFIX = "gpu_pools_"


def settings_defaults():
    """{key: default} of the cluster-wide settings (gpu_pools_<key>), from the gpu_pools argument spec."""
    return {name[len(SETTINGS_PREFIX):]: value
            for name, value in role_specs.defaults("gpu_pools", prefix=SETTINGS_PREFIX).items()}


GKE_NAP_MODES = ("auto", "enabled", "disabled")
# NAP imageType / diskType values documented for auto-provisioned node pools
GKE_IMAGE_TYPES = ("COS_CONTAINERD", "UBUNTU_CONTAINERD")
GKE_DISK_TYPES = ("pd-standard", "pd-balanced", "pd-ssd")
EKS_AMI_FAMILIES = ("AL2023", "Bottlerocket")
EKS_VOLUME_TYPES = ("gp3", "gp2", "io1", "io2")
AMI_TERM_KEYS = ("alias", "id", "name", "owner", "ssmParameter", "tags")
# AL2023 AMI release pinned through Karpenter's alias (resolves the NVIDIA variant per instance type).
AMI_VERSION = re.compile(r"^v[0-9]{8}$")
GPU_ALIAS = re.compile(r"^al2023@(latest|v[0-9]{8})$")
KARPENTER_VERSION = re.compile(r"^v?([0-9]+)\.([0-9]+)(\.[0-9]+)?$")
# amiSelectorTerms[].ssmParameter exists from karpenter-provider-aws v1.4.
SSM_PARAMETER_MIN_KARPENTER = (1, 4)
SELECTOR_TERM_KEYS = ("id", "name", "tags")
# GKE version strings: MAJOR.MINOR.PATCH-gke.BUILD (e.g. 1.35.2-gke.1485000), compared numerically
GKE_VERSION = re.compile(r"^v?([0-9]+)\.([0-9]+)\.([0-9]+)-gke\.([0-9]+)$")
# first GKE version whose ComputeClass has priorities[].gpu.gpuSharing (gke.py renders it)
GPU_SHARING_MIN_GKE = (1, 35, 2, 1485000)
GPU_SHARING_MIN_GKE_TEXT = "1.35.2-gke.1485000"

EKS_ZONE = re.compile(r"^(?P<region>[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+)(?P<zone>[a-z])$")
GKE_ZONE = re.compile(r"^(?P<region>[a-z]+-[a-z]+[0-9]+)-(?P<zone>[a-z])$")
EKS_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+$")
GKE_REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
K8S_MINOR = re.compile(r"^1\.[0-9]{2}$")
# Karpenter v1 NodePool spec.disruption.budgets[] (patterns as in the karpenter.sh_nodepools CRD)
BUDGET_KEYS = ("nodes", "schedule", "duration", "reasons")
BUDGET_REASONS = ("Underutilized", "Empty", "Drifted")
BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
BUDGET_SCHEDULE = re.compile(r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|\S+\s+\S+\s+\S+\s+\S+\s+\S+)$")
BUDGET_DURATION = re.compile(r"^(([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?$")
BUDGETS_MAX = 50


def resolve_settings(values):
    """Settings with defaults filled in. ``values``: {gpu_pools_<key> or <key>: value}."""
    out = settings_defaults()
    for key, value in (values or {}).items():
        short = key[len(SETTINGS_PREFIX):] if key.startswith(SETTINGS_PREFIX) else key
        if short in out:
            out[short] = copy.deepcopy(value)
    return out


def parse_gke_version(text):
    """'1.35.2-gke.1485000' -> (1, 35, 2, 1485000); None when ``text`` is not a GKE version."""
    match = GKE_VERSION.match(text.strip()) if isinstance(text, str) else None
    return tuple(int(part) for part in match.groups()) if match else None


def zone_region(zone, platform):
    """Region of a zone name, or None when the name is not a zone of that cloud."""
    pattern = EKS_ZONE if platform == "eks" else GKE_ZONE
    match = pattern.match(zone) if isinstance(zone, str) else None
    return match.group("region") if match else None


def spread_zones(pools):
    """Every zone of every pool, first preference first, without repeats."""
    out = []
    for pool in pools:
        for zone in pool.get("zones") or []:
            if zone not in out:
                out.append(zone)
    return out


def cluster_region(plan, settings):
    """The configured region, else the region of the first zone of the first pool."""
    if settings.get("region"):
        return settings["region"]
    for zone in spread_zones(plan.get("pools") or []):
        region = zone_region(zone, plan.get("platform"))
        if region:
            return region
    return ""


def nap_enabled(platform, settings):
    mode = settings.get("gke_nap")
    return platform == "gke" and mode in ("auto", "enabled")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _cloud_name(platform):
    return {"eks": "EKS", "gke": "GKE", "gke-autopilot": "GKE Autopilot"}.get(platform, platform)


def _check_terms(var, terms, keys, problems, gpu=False):
    if not isinstance(terms, list):
        problems.error(var, "must be a list of selector terms (mappings with %s)" % one_of(keys))
        return
    for i, term in enumerate(terms):
        tvar = "%s[%d]" % (var, i)
        if not isinstance(term, dict) or not term:
            problems.error(tvar, "must be a non-empty mapping with %s" % one_of(keys))
            continue
        unknown = sorted(set(term) - set(keys))
        if unknown:
            problems.error(tvar, "unknown key(s) %s; use %s" % (", ".join(unknown), one_of(keys)))
        if "tags" in term:
            check_selector_tags(tvar + ".tags", term["tags"], problems)
        if gpu and "alias" in term and not (isinstance(term["alias"], str) and GPU_ALIAS.match(term["alias"])):
            problems.error(tvar + ".alias", "%r is refused for GPU pools: only the AL2023 alias resolves the NVIDIA "
                           "variant per GPU instance type (Karpenter >= v1.0); AL2 is end of life and "
                           "gpufleet does not support Bottlerocket's NVIDIA variant; use one of: "
                           "al2023@vYYYYMMDD (pinned), al2023@latest, ssmParameter, id, name, tags"
                           % (term["alias"],))
        if gpu and isinstance(term.get("alias"), str) and term["alias"] == "al2023@latest":
            problems.warn(tvar + ".alias", "al2023@latest follows every AMI release: Karpenter drifts and replaces "
                          "every GPU node of the pool after each one; pin al2023@vYYYYMMDD")


def _check_zones(var, pool, platform, region, problems):
    zones = pool.get("zones")
    if not isinstance(zones, list) or not zones:
        problems.error(var + ".zones", "is empty; %s pools need at least one zone; use a list in preference order "
                       "(several zones spread the GPU quota), e.g. %s" % (
                           _cloud_name(platform),
                           "[us-east-1a, us-east-1b]" if platform == "eks" else "[us-central1-a, us-central1-b]"))
        return
    seen = set()
    for j, zone in enumerate(zones):
        zvar = "%s.zones[%d]" % (var, j)
        zr = zone_region(zone, platform)
        if zr is None:
            problems.error(zvar, "%r is not a %s zone name; use one of: %s" % (
                zone, _cloud_name(platform),
                "<region><letter> such as us-east-1a" if platform == "eks" else "<region>-<letter> such as us-central1-a"))
        elif region and zr != region:
            problems.error(zvar, "%r is not in region %s; use one of: zones of %s (a cluster lives in one region)"
                           % (zone, region, region))
        if zone in seen:
            problems.error(zvar, "%r is listed twice; use each zone once, in preference order" % (zone,))
        seen.add(zone)


def _check_pool(var, pool, platform, region, problems):
    # unknown keys: spec.validate_pools (with the key each probably misspells)
    gpu_type = pool["gpu_type"]
    gpn = pool["gpus_per_node"]
    if not offered_on(gpu_type, platform):
        problems.error(var + ".gpu_type", "%r is not offered on %s; use %s" % (
            gpu_type, _cloud_name(platform), one_of(types_on(platform))))
    else:
        counts = gpu_counts_on(gpu_type, platform)
        if counts is not None and gpn not in counts:
            problems.error(var + ".gpus_per_node", "%d is not offered for %s on %s; use %s" % (
                gpn, gpu_type, _cloud_name(platform), one_of(counts)))
    max_gpus = pool.get("max_gpus")
    if _is_int(max_gpus) and max_gpus < gpn:
        problems.error(var + ".max_gpus", "%d is below gpus_per_node %d, so no node could ever start; use an "
                       "integer >= %d" % (max_gpus, gpn, gpn))
    caps = pool["capacity_types"]
    if platform in CLOUD_PLATFORMS:
        _check_zones(var, pool, platform, region, problems)
        if pool.get("max_nodes") is None and max_gpus is None:
            problems.error(var + ".max_nodes", "a cloud pool needs max_nodes or max_gpus (the GPU limit of the "
                           "provisioner); use an integer >= 1")
    else:
        if caps == ["spot"]:
            problems.error(var + ".capacity_types", "%r: %s has no spot capacity; use one of: [on-demand]"
                           % (caps, platform))
        elif "spot" in caps:
            problems.warn(var + ".capacity_types", "spot is ignored on %s (self-managed nodes)" % platform)
        if pool.get("zones"):
            problems.warn(var + ".zones", "zones are ignored on %s (self-managed nodes)" % platform)
    weight = pool.get("weight")
    if weight is not None and (not _is_int(weight) or not 1 <= weight <= 100):
        problems.error(var + ".weight", "%r is not allowed; use an integer from 1 to 100 (Karpenter NodePool "
                       "weight; higher is tried first)" % (weight,))
    expire = pool.get("expire_after")
    if not isinstance(expire, str) or not DURATION.match(expire):
        problems.error(var + ".expire_after", "%r is not a duration; use e.g. 720h or Never" % (expire,))
    _check_disruption(var, pool, platform, problems)
    cc = pool.get("compute_class")
    if not isinstance(cc, bool):
        problems.error(var + ".compute_class", "%r is not allowed; use one of: true, false" % (cc,))
    elif cc and platform not in GKE_PLATFORMS:
        problems.error(var + ".compute_class", "true is only possible on GKE; use one of: false "
                       "(platform %s)" % platform)
    for key in ("max_cpu", "max_memory_gb"):
        val = pool.get(key)
        if val is not None and (not _is_int(val) or val < 1):
            problems.error(var + "." + key, "%r is not allowed; use an integer >= 1 or null" % (val,))
    disk = pool.get("disk_size_gb")
    if not _is_int(disk) or not 10 <= disk <= 65536:
        problems.error(var + ".disk_size_gb", "%r is not allowed; use an integer from 10 to 65536" % (disk,))
    max_pods = pool.get("max_pods")
    top = 256 if platform in GKE_PLATFORMS else 1000
    if not _is_int(max_pods) or not 1 <= max_pods <= top:
        problems.error(var + ".max_pods", "%r is not allowed; use an integer from 1 to %d" % (max_pods, top))
    if pool.get("ami_selector_terms") is not None:
        if platform != "eks":
            problems.error(var + ".ami_selector_terms", "is only used on eks; use one of: null")
        else:
            _check_terms(var + ".ami_selector_terms", pool["ami_selector_terms"], AMI_TERM_KEYS, problems, gpu=True)
    if platform == "eks" and caps == ["on-demand", "spot"]:
        problems.warn(var + ".capacity_types", "Karpenter tries spot first whenever a NodePool allows both; to "
                      "prefer on-demand, split the pool in two and give the on-demand one the higher weight")
    # (a DRA pool's node pool is created by the user, who is told to add the DRA taint: dra_driver.check)
    if platform in GKE_PLATFORMS and pool.get("taints") and pool.get("allocation") != "dra" and \
            any(t.get("key") != "nvidia.com/gpu" for t in pool["taints"] if isinstance(t, dict)):
        problems.warn(var + ".taints", "GKE puts its own nvidia.com/gpu taint on GPU nodes it creates; other "
                      "taints of the pool are not applied there (pods still get tolerations for them)")


def _check_budget(var, budget, problems):
    if not isinstance(budget, dict):
        problems.error(var, "%r is not a budget; use a mapping with nodes and optionally schedule, duration, "
                       "reasons" % (budget,))
        return
    unknown = sorted(set(budget) - set(BUDGET_KEYS))
    if unknown:
        problems.error(var, "unknown key(s) %s; use %s" % (", ".join(unknown), one_of(BUDGET_KEYS)))
    nodes = budget.get("nodes")
    if not isinstance(nodes, str) or not BUDGET_NODES.match(nodes):
        problems.error(var + ".nodes", "%r is not allowed; use a quoted node count or percentage such as \"1\", "
                       "\"0\" or \"10%%\"" % (nodes,))
    schedule, duration = budget.get("schedule"), budget.get("duration")
    if (schedule is None) != (duration is None):
        problems.error(var + "." + ("duration" if duration is None else "schedule"), "schedule and duration go "
                       "together; use both (e.g. schedule: \"0 9 * * mon-fri\", duration: 8h) or neither")
    if schedule is not None and (not isinstance(schedule, str) or not BUDGET_SCHEDULE.match(schedule)):
        problems.error(var + ".schedule", "%r is not a cron schedule; use five fields such as \"0 9 * * mon-fri\" "
                       "or one of: @yearly, @monthly, @weekly, @daily, @hourly" % (schedule,))
    if duration is not None and (not isinstance(duration, str) or not BUDGET_DURATION.match(duration)):
        problems.error(var + ".duration", "%r is not allowed; use hours and/or minutes such as 8h, 30m or 1h30m"
                       % (duration,))
    reasons = budget.get("reasons")
    if reasons is not None:
        if not isinstance(reasons, list) or not reasons or \
                [r for r in reasons if r not in BUDGET_REASONS] or len(set(map(str, reasons))) != len(reasons):
            problems.error(var + ".reasons", "%r is not allowed; use a list of distinct values from %s (or leave it "
                           "out: the budget then covers every reason)" % (reasons, one_of(BUDGET_REASONS)))


def _check_disruption(var, pool, platform, problems):
    """``disruption_budgets`` and ``do_not_disrupt``: Karpenter's, so EKS only."""
    budgets = pool.get("disruption_budgets")
    if not isinstance(budgets, list):
        problems.error(var + ".disruption_budgets", "%r is not allowed; use a list of budgets (nodes, optional "
                       "schedule + duration, reasons) or []" % (budgets,))
    elif budgets and platform != "eks":
        problems.error(var + ".disruption_budgets", "is a Karpenter NodePool setting, only used on eks; use one "
                       "of: [] (platform %s)" % platform)
    else:
        if len(budgets) > BUDGETS_MAX:
            problems.error(var + ".disruption_budgets", "%d budgets; use at most %d (Karpenter's limit)"
                           % (len(budgets), BUDGETS_MAX))
        for index, budget in enumerate(budgets):
            _check_budget("%s.disruption_budgets[%d]" % (var, index), budget, problems)
    dnd = pool.get("do_not_disrupt")
    if dnd is True and platform != "eks":
        problems.error(var + ".do_not_disrupt", "true sets Karpenter's karpenter.sh/do-not-disrupt pod annotation, "
                       "only used on eks; use one of: false (platform %s)" % platform)


def _check_settings(platform, settings, problems):
    mode = settings["gke_nap"]
    if mode not in GKE_NAP_MODES:
        problems.error("gpu_pools_gke_nap", "%r is not allowed; use %s" % (mode, one_of(GKE_NAP_MODES)))
    elif mode == "enabled" and platform == "gke-autopilot":
        problems.error("gpu_pools_gke_nap", "Autopilot has no node auto-provisioning config file (Google "
                       "manages its nodes); use one of: auto, disabled")
    elif mode == "enabled" and platform != "gke":
        problems.error("gpu_pools_gke_nap", "node auto-provisioning exists only on GKE Standard (platform %s); "
                       "use one of: auto, disabled" % platform)
    for key, allowed in (("gke_image_type", GKE_IMAGE_TYPES), ("gke_disk_type", GKE_DISK_TYPES),
                         ("eks_ami_family", EKS_AMI_FAMILIES), ("eks_volume_type", EKS_VOLUME_TYPES)):
        if settings[key] not in allowed:
            problems.error(SETTINGS_PREFIX + key, "%r is not allowed; use %s" % (settings[key], one_of(allowed)))
    for low, high in (("gke_nap_cpu_min", "gke_nap_cpu_max"), ("gke_nap_memory_gb_min", "gke_nap_memory_gb_max")):
        lo, hi = settings[low], settings[high]
        if not _is_int(lo) or lo < 0:
            problems.error(SETTINGS_PREFIX + low, "%r is not allowed; use an integer >= 0" % (lo,))
        if not _is_int(hi) or hi < 1:
            problems.error(SETTINGS_PREFIX + high, "%r is not allowed; use an integer >= 1" % (hi,))
        elif _is_int(lo) and hi < lo:
            problems.error(SETTINGS_PREFIX + high, "%d is below %s%s %d; use an integer >= %d"
                           % (hi, SETTINGS_PREFIX, low, lo, lo))
    for key in ("gke_auto_repair", "gke_auto_upgrade", "gke_secure_boot", "gke_integrity_monitoring", "examples"):
        if not isinstance(settings[key], bool):
            problems.error(SETTINGS_PREFIX + key, "%r is not allowed; use one of: true, false" % (settings[key],))
    version = settings["eks_kubernetes_version"]
    if platform == "eks" and (not isinstance(version, str) or not K8S_MINOR.match(version)):
        problems.error("gpu_pools_eks_kubernetes_version", "%r is not allowed; use a quoted minor version such "
                       "as \"1.33\" (it names the NVIDIA AMI's SSM parameter)" % (version,))
    region = settings["region"]
    if region and platform in CLOUD_PLATFORMS:
        pattern = EKS_REGION if platform == "eks" else GKE_REGION
        if not isinstance(region, str) or not pattern.match(region):
            problems.error("gpu_pools_region", "%r is not a %s region name; use one of: %s" % (
                region, _cloud_name(platform), "us-east-1, eu-west-1, ..." if platform == "eks"
                else "us-central1, europe-west4, ..."))
    _check_gke_version(platform, settings, problems)
    if platform == "eks":
        check_node_role(settings["eks_node_role"], problems)
        _check_eks_ami(settings, problems)
        _check_terms("gpu_pools_eks_ami_selector_terms", settings["eks_ami_selector_terms"], AMI_TERM_KEYS,
                     problems, gpu=True)
        _check_terms("gpu_pools_eks_subnet_selector_terms", settings["eks_subnet_selector_terms"],
                     SELECTOR_TERM_KEYS, problems)
        _check_terms("gpu_pools_eks_security_group_selector_terms",
                     settings["eks_security_group_selector_terms"], SELECTOR_TERM_KEYS, problems)
    image = settings["example_image"]
    if not isinstance(image, str) or ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest"):
        problems.error("gpu_pools_example_image", "%r is not pinned; use an image with a fixed tag or digest, "
                       "e.g. nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0" % (image,))


def _check_gke_version(platform, settings, problems):
    """gpu_pools_gke_version: a GKE version string (it decides ComputeClass gpuSharing), or empty."""
    version = settings["gke_version"]
    if version in ("", None):
        return
    if parse_gke_version(version) is None:
        problems.error("gpu_pools_gke_version", "%r is not a GKE version; use MAJOR.MINOR.PATCH-gke.BUILD as "
                       "GKE reports it (e.g. %s), or \"\" when unknown" % (version, GPU_SHARING_MIN_GKE_TEXT))
    elif platform not in GKE_PLATFORMS:
        problems.warn("gpu_pools_gke_version", "is only used on gke and gke-autopilot (platform %s)" % platform)


def _check_eks_ami(settings, problems):
    """EKS GPU AMIs: family, pinned release, and the Karpenter version the SSM parameter term needs."""
    if settings["eks_ami_family"] == "Bottlerocket":
        problems.error("gpu_pools_eks_ami_family", "'Bottlerocket' is refused for GPU pools: gpufleet renders the "
                       "AL2023 NVIDIA AMI and its own device plugin, while Bottlerocket's NVIDIA variant has a "
                       "different AMI parameter and a built-in device plugin (two plugins would fight over the "
                       "GPUs); use one of: AL2023")
    version = settings["eks_ami_version"]
    if version not in ("", None) and (not isinstance(version, str) or not AMI_VERSION.match(version)):
        problems.error("gpu_pools_eks_ami_version", "%r is not an AL2023 AMI release; use vYYYYMMDD (e.g. v20251103, "
                       "rendered as alias al2023@v20251103), or \"\" for the recommended SSM parameter" % (version,))
    karpenter = settings["eks_karpenter_version"]
    if karpenter in ("", None):
        return
    match = KARPENTER_VERSION.match(str(karpenter))
    if not match:
        problems.error("gpu_pools_eks_karpenter_version", "%r is not a version; use e.g. 1.6.3" % (karpenter,))
        return
    uses_ssm = not version and not settings["eks_ami_selector_terms"]
    if uses_ssm and (int(match.group(1)), int(match.group(2))) < SSM_PARAMETER_MIN_KARPENTER:
        problems.error("gpu_pools_eks_karpenter_version", "%s is below 1.4, the first karpenter-provider-aws "
                       "with amiSelectorTerms.ssmParameter (gpufleet's default AMI term); use one of: a Karpenter "
                       ">= 1.4, gpu_pools_eks_ami_version: vYYYYMMDD (alias term, Karpenter >= 1.0)" % (karpenter,))


def _check_migrate_files(platform, settings, problems):
    files = settings["karpenter_migrate_files"]
    if not isinstance(files, list):
        problems.error("gpu_pools_karpenter_migrate_files", "must be a list of paths to v1alpha5 Provisioner "
                       "YAML files")
        return
    if files and platform != "eks":
        problems.error("gpu_pools_karpenter_migrate_files", "Karpenter exists only on eks (platform %s); "
                       "use one of: []" % platform)
        return
    for i, path in enumerate(files):
        var = "gpu_pools_karpenter_migrate_files[%d]" % i
        if not isinstance(path, str) or not os.path.isfile(path):
            problems.error(var, "%r is not a readable file; use one of: paths to karpenter.sh/v1alpha5 "
                           "Provisioner YAML files" % (path,))
            continue
        try:
            migrate(load_v1alpha5(path))
        except GpufleetError as exc:
            problems.error(var, "%s: %s" % (path, exc.msg))


def check(params, plan, problems):
    """Preflight check: pools against their platform, and the gpu_pools_* settings."""
    platform = plan.get("platform")
    extra = params.get("extra") or {}
    settings = resolve_settings({k: v for k, v in extra.items() if k.startswith(SETTINGS_PREFIX)})
    _check_settings(platform, settings, problems)
    region = cluster_region(plan, settings) if platform in CLOUD_PLATFORMS else ""
    for i, pool in enumerate(plan.get("pools") or []):
        _check_pool("%s[%d]" % (POOLS_VAR, i), pool, platform, region, problems)
    _check_migrate_files(platform, settings, problems)
