# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The gpufleet inventory contract: platforms, add-on modes and the GPU pool spec.

One pool format is shared by provisioning (Karpenter, GKE, self-managed labels), the add-on
roles (device-plugin sharing config) and the report. ``normalize_pools`` fills defaults and
``validate_pools`` reports every problem with the variable path it concerns.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import difflib
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems, kind_of as _kind, one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import (
    GKE_PLATFORMS, GPU_TYPES, MIG_CAPABLE, gpu_type_names)
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.mig import MIG_PROFILES, instances_per_gpu
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.dra import DRA_TAINT, check_pool as dra_check_pool

PLATFORMS = ("eks", "gke", "gke-autopilot", "kubeadm", "k3s", "rke2", "k0s", "microk8s", "openshift")
CLOUD_PLATFORMS = ("eks", "gke", "gke-autopilot")
SELF_MANAGED_PLATFORMS = ("kubeadm", "k3s", "rke2", "k0s", "microk8s", "openshift")
ADDONS_MODES = ("standalone", "operator", "none")
SHARING_MODES = ("none", "time-slicing", "mps", "mig")
# Who partitions a standalone MIG pool's GPUs on the hosts: gpufleet's node stage (role gpu_mig).
MIG_MANAGERS = ("gpufleet",)
MIG_STRATEGIES = ("single", "mixed")
CAPACITY_TYPES = ("spot", "on-demand")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

POOLS_VAR = "gpufleet_gpu_pools"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DURATION = re.compile(r"^(Never|([0-9]+(s|m|h))+)$")

GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

POOL_DEFAULTS = {
    "gpus_per_node": 1,
    "node_group": None,
    "capacity_types": ["on-demand"],
    "zones": [],
    "min_nodes": 0,
    "max_nodes": None,
    "max_gpus": None,
    "labels": {},
    "disk_size_gb": 100,
    "max_pods": 110,
    "consolidate_after": "30m",
    "sharing": {"mode": "none"},
    # provisioning (issue 6): checked in pools_check.py
    "max_cpu": None,
    "max_memory_gb": None,
    "weight": None,
    "expire_after": "720h",
    "compute_class": False,
    "ami_selector_terms": None,
    # Karpenter v1 disruption (issue 14 item 5): NodePool spec.disruption.budgets, and the
    # karpenter.sh/do-not-disrupt pod annotation through the placement fragment
    "disruption_budgets": [],
    "do_not_disrupt": False,
    # issue 28: device-plugin (nvidia.com/gpu extended resources) or dra (ResourceClaims, dra.py)
    "allocation": "device-plugin",
    "dra": {},
}


# Every key a pool may have (the defaults above, and the keys without a default).
POOL_KEYS = tuple(sorted(set(POOL_DEFAULTS) | {"name", "gpu_type", "taints"}))
# Keys a pool cannot do without: a misspelling of one is named with the key it was meant to be.
REQUIRED_POOL_KEYS = ("name", "gpu_type")


def closest_key(key, known):
    """The known key ``key`` most likely misspells (``gpu_tpye`` -> ``gpu_type``), or None."""
    if not isinstance(key, str):
        return None
    matches = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    return matches[0] if matches else None


def normalize_pool(pool):
    """Return a copy of ``pool`` with every optional key filled in."""
    out = copy.deepcopy(POOL_DEFAULTS)
    out.update(copy.deepcopy(pool))
    if out.get("taints") is None:
        out["taints"] = [dict(DEFAULT_GPU_TAINT)]
    if out.get("allocation") == "dra" and isinstance(out["taints"], list) and not any(
            isinstance(t, dict) and t.get("key") == DRA_TAINT["key"] for t in out["taints"]):
        # keeps plain nvidia.com/gpu pods off a DRA pool's nodes (dra.DRA_TAINT)
        out["taints"] = out["taints"] + [dict(DRA_TAINT)]
    # a sharing that is not a mapping stays as given: validate_pools names the variable and the form
    if isinstance(out.get("sharing") or {}, dict):
        sharing = dict(out.get("sharing") or {"mode": "none"})
        sharing.setdefault("mode", "none")
        # a DRA pool shares through the driver's GpuConfig: the device plugin's defaults do not apply
        plugin = out.get("allocation") != "dra"
        if sharing["mode"] in ("time-slicing", "mps") and plugin:
            sharing.setdefault("replicas", 2)
        if sharing["mode"] == "mig" and plugin:
            sharing.setdefault("mig_strategy", "single")
        out["sharing"] = sharing
    if out.get("node_group") is None and isinstance(out.get("name"), str):
        out["node_group"] = "gpu_pool_" + out["name"].replace("-", "_")
    return out


def normalize_pools(pools):
    return [normalize_pool(p) if isinstance(p, dict) else p for p in (pools or [])]


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def pool_gpu_limit(pool):
    """The most GPUs a pool may hold: max_gpus, else max_nodes x gpus_per_node; None: unbounded."""
    if pool.get("max_gpus") is not None:
        return pool["max_gpus"]
    if pool.get("max_nodes") is not None:
        return pool["max_nodes"] * pool["gpus_per_node"]
    return None


def advertised_resources(pool):
    """{extended resource: count} one node of ``pool`` advertises once the NVIDIA device plugin runs with
    gpufleet's config: ``nvidia.com/gpu`` = GPUs; time-slicing / MPS with N replicas: GPUs x N
    (``nvidia.com/gpu.shared`` when ``rename_by_default``); MIG single with a profile: ``nvidia.com/gpu`` = GPUs x
    instances of the profile; MIG mixed: ``nvidia.com/mig-<profile>`` = GPUs x instances. A DRA pool advertises
    none (its GPUs are ResourceSlice devices)."""
    if pool.get("allocation") == "dra":
        return {}
    gpus = int(pool.get("gpus_per_node") or 1)
    sharing = pool.get("sharing") or {"mode": "none"}
    mode = sharing.get("mode", "none")
    if mode in ("time-slicing", "mps"):
        name = GPU_RESOURCE + ".shared" if sharing.get("rename_by_default") else GPU_RESOURCE
        return {name: gpus * int(sharing["replicas"])}
    if mode == "mig" and sharing.get("mig_profile"):
        per_gpu = instances_per_gpu(pool.get("gpu_type"), sharing["mig_profile"])
        if per_gpu:
            if sharing.get("mig_strategy", "single") == "mixed":
                return {"nvidia.com/mig-" + sharing["mig_profile"]: gpus * per_gpu}
            return {GPU_RESOURCE: gpus * per_gpu}
    return {GPU_RESOURCE: gpus}


def validate_platform(platform, problems):
    if platform is None:
        problems.error("gpufleet_platform", "is not set; use %s (in the inventory's group_vars/all, or -e "
                       "gpufleet_platform=...)" % one_of(PLATFORMS))
        return False
    if platform not in PLATFORMS:
        problems.error("gpufleet_platform", "%r is not a supported platform; use %s" % (platform, one_of(PLATFORMS)))
        return False
    return True


def validate_addons_mode(mode, problems):
    if mode not in ADDONS_MODES:
        problems.error("gpufleet_addons_mode", "%r is not allowed; use %s" % (mode, one_of(ADDONS_MODES)))


def _validate_sharing(var, pool, problems, platform=None):
    sharing = pool.get("sharing")
    if not isinstance(sharing, dict):
        problems.error(var, "must be a mapping with a 'mode' key (%s)" % one_of(SHARING_MODES))
        return
    mode = sharing.get("mode")
    if mode not in SHARING_MODES:
        problems.error(var + ".mode", "%r is not allowed; use %s" % (mode, one_of(SHARING_MODES)))
        return
    if pool.get("allocation") == "dra":
        # dra.check_pool names what the DRA driver does not take; MIG-capable type and profile below
        if mode == "mig" and isinstance(pool.get("gpu_type"), str) and pool.get("gpu_type") in GPU_TYPES \
                and pool.get("gpu_type") not in MIG_CAPABLE:
            problems.error(var + ".mode", "MIG is not available on gpu_type %r; MIG-capable types are %s"
                           % (pool.get("gpu_type"), one_of(MIG_CAPABLE)))
        profile = sharing.get("mig_profile")
        profiles = MIG_PROFILES.get(pool.get("gpu_type"))
        if mode == "mig" and profile is not None and profiles and profile not in profiles:
            problems.error(var + ".mig_profile", "%r is not a MIG profile of gpu_type %s; use %s"
                           % (profile, pool.get("gpu_type"), one_of(sorted(profiles))))
        return
    if mode in ("time-slicing", "mps"):
        replicas = sharing.get("replicas")
        if not _is_int(replicas) or replicas < 2:
            problems.error(var + ".replicas", "%r is not allowed for %s; use an integer >= 2" % (replicas, mode))
    if mode == "mig":
        if isinstance(pool.get("gpu_type"), str) and pool.get("gpu_type") in GPU_TYPES \
                and pool.get("gpu_type") not in MIG_CAPABLE:
            problems.error(var + ".mode", "MIG is not available on gpu_type %r; MIG-capable types are %s"
                           % (pool.get("gpu_type"), one_of(MIG_CAPABLE)))
        strategy = sharing.get("mig_strategy")
        if strategy not in MIG_STRATEGIES:
            problems.error(var + ".mig_strategy", "%r is not allowed; use %s" % (strategy, one_of(MIG_STRATEGIES)))
        profile = sharing.get("mig_profile")
        profiles = MIG_PROFILES.get(pool.get("gpu_type"))
        if profile is not None and profiles and profile not in profiles:
            problems.error(var + ".mig_profile", "%r is not a MIG profile of gpu_type %s; use %s"
                           % (profile, pool.get("gpu_type"), one_of(sorted(profiles))))
        elif strategy == "mixed" and not profile and platform not in GKE_PLATFORMS:
            # GKE refuses mixed itself (gpu_access), with its own reason
            problems.error(var + ".mig_profile", "is required with mig_strategy mixed: each MIG device is "
                           "advertised as nvidia.com/mig-<profile>, which pods and the example Jobs ask for; "
                           "use %s" % (one_of(sorted(profiles)) if profiles else "a MIG profile such as 1g.10gb"))
        if "mig_preconfigured" in sharing and not isinstance(sharing["mig_preconfigured"], bool):
            problems.error(var + ".mig_preconfigured", "%r is not a boolean; use one of: true, false"
                           % (sharing["mig_preconfigured"],))
        # issue 28: gpufleet's node stage partitions the GPUs (role gpu_mig); gpu_access checks the mode
        manager = sharing.get("mig_manager")
        if "mig_manager" in sharing and manager not in MIG_MANAGERS:
            problems.error(var + ".mig_manager", "%r is not allowed; use %s, or drop it" % (manager, one_of(MIG_MANAGERS)))
        elif manager is not None and sharing.get("mig_preconfigured") is True:
            problems.error(var + ".mig_manager", "%s with mig_preconfigured: true: the GPUs are partitioned either by "
                           "you or by gpufleet; use one of: mig_manager: %s, mig_preconfigured: true" % (manager, manager))
    else:
        for key in ("mig_preconfigured", "mig_manager"):
            if key in sharing:
                problems.error(var + "." + key, "is only used with mode mig; use one of: mode mig, or drop it")
    unknown = sorted(set(sharing) - {"mode", "replicas", "mig_strategy", "mig_profile", "rename_by_default",
                                     "fail_requests_greater_than_one", "mig_preconfigured", "mig_manager"})
    if unknown:
        problems.error(var, "unknown key(s) %s" % ", ".join(unknown))


def _validate_pools_shape(pools, problems):
    """False (after naming the problem) when ``pools`` is not a non-empty list of pools."""
    if isinstance(pools, list) and pools:
        return True
    if isinstance(pools, dict):
        problems.error(POOLS_VAR, "must be a list of GPU pools, got a mapping (keys: %s); use a list with one item "
                       "per pool ('- name: ...'), e.g. [{name: infer-l4, gpu_type: l4}]"
                       % ", ".join(sorted(str(k) for k in pools)))
    elif isinstance(pools, str) and pools.strip():
        problems.error(POOLS_VAR, "must be a list of GPU pools, got a string (%r); a JSON or YAML text is not read "
                       "as pools: use a list, e.g. -e '{\"%s\": [{\"name\": \"p\", \"gpu_type\": \"l4\"}]}' "
                       "or -e @pools.yml" % (pools[:60] + ("..." if len(pools) > 60 else ""), POOLS_VAR))
    else:
        problems.error(POOLS_VAR, "must be a non-empty list of GPU pools (each with name, gpu_type, gpus_per_node)")
    return False


def _unknown_pool_keys(var, pool, problems):
    """Unknown keys, each with the known key it probably misspells; a misspelt required key is reported
    where that key is reported missing. Returns {required key: the misspelling found}."""
    unknown = sorted((k for k in pool if k not in POOL_KEYS), key=str)
    typos = {}
    plain = []
    for key in unknown:
        meant = closest_key(key, POOL_KEYS)
        if meant in REQUIRED_POOL_KEYS and meant not in pool:
            typos[meant] = key
        elif meant:
            plain.append("%s (did you mean %s?)" % (key, meant))
        else:
            plain.append(str(key))
    if plain:
        problems.error(var, "unknown key(s) %s; use %s" % (", ".join(plain), one_of(POOL_KEYS)))
    return typos


def validate_pools(pools, platform, problems):
    """Check a list of pools (already normalized). Adds to ``problems``."""
    if not _validate_pools_shape(pools, problems):
        return
    seen = set()
    for i, pool in enumerate(pools):
        var = "%s[%d]" % (POOLS_VAR, i)
        if not isinstance(pool, dict):
            problems.error(var, "must be a mapping with name, gpu_type, gpus_per_node, ...; got %r" % (pool,))
            continue
        typos = _unknown_pool_keys(var, pool, problems)
        name = pool.get("name")
        if name is None and "name" in typos:
            problems.error(var + ".name", "is required; the pool has the unknown key %r instead: rename it to name "
                           "(use a DNS label: lower-case letters, digits and '-')" % typos["name"])
        elif not isinstance(name, str) or not DNS_LABEL.match(name):
            problems.error(var + ".name", "%r is not a valid pool name; use a DNS label (lower-case letters, "
                           "digits and '-', at most 63 characters)" % (name,))
        elif name in seen:
            problems.error(var + ".name", "pool name %r is used twice; pool names must be unique" % name)
        else:
            seen.add(name)
        gpu_type = pool.get("gpu_type")
        if gpu_type is None and "gpu_type" in typos:
            problems.error(var + ".gpu_type", "is required; the pool has the unknown key %r instead: rename it to "
                           "gpu_type; use %s" % (typos["gpu_type"], one_of(gpu_type_names())))
        elif gpu_type is None:
            problems.error(var + ".gpu_type", "is required; use %s" % one_of(gpu_type_names()))
        elif not isinstance(gpu_type, str) or gpu_type not in GPU_TYPES:
            problems.error(var + ".gpu_type", "%r is not a known GPU type; use %s" % (gpu_type, one_of(gpu_type_names())))
        gpn = pool.get("gpus_per_node")
        if not _is_int(gpn) or not 1 <= gpn <= 16:
            problems.error(var + ".gpus_per_node", "%r is not allowed; use an integer from 1 to 16" % (gpn,))
        caps = pool.get("capacity_types")
        if not isinstance(caps, list) or not caps or any(c not in CAPACITY_TYPES for c in caps):
            problems.error(var + ".capacity_types", "%r is not allowed; use a non-empty list of %s"
                           % (caps, one_of(CAPACITY_TYPES)))
        else:
            _no_repeats(var + ".capacity_types", caps, "capacity type", problems)
        zones = pool.get("zones")
        if zones is not None and not isinstance(zones, list):
            problems.error(var + ".zones", "must be a list of zone names in preference order, got %s (%r); use e.g. "
                           "[%s]" % (_kind(zones), zones, zones if isinstance(zones, str) and zones.strip()
                                     else "us-east-1a, us-east-1b"))
        for key in ("min_nodes", "max_nodes", "max_gpus"):
            val = pool.get(key)
            if val is not None and (not _is_int(val) or val < 0):
                problems.error(var + "." + key, "%r is not allowed; use an integer >= 0" % (val,))
        mn, mx = pool.get("min_nodes"), pool.get("max_nodes")
        if _is_int(mn) and _is_int(mx) and mx < mn:
            problems.error(var + ".max_nodes", "%d is below min_nodes %d" % (mx, mn))
        taints = pool.get("taints")
        if not isinstance(taints, list):
            problems.error(var + ".taints", "must be a list of {key, value, effect}")
        else:
            for j, taint in enumerate(taints):
                tvar = "%s.taints[%d]" % (var, j)
                if not isinstance(taint, dict) or not taint.get("key"):
                    problems.error(tvar, "must be a mapping with at least 'key' and 'effect'")
                elif taint.get("effect") not in TAINT_EFFECTS:
                    problems.error(tvar + ".effect", "%r is not allowed; use %s" % (taint.get("effect"), one_of(TAINT_EFFECTS)))
        if not isinstance(pool.get("labels"), dict):
            problems.error(var + ".labels", "must be a mapping of label name to value")
        ca = pool.get("consolidate_after")
        if not isinstance(ca, str) or not DURATION.match(ca):
            problems.error(var + ".consolidate_after", "%r is not a duration; use e.g. 30s, 10m, 1h or Never" % (ca,))
        _validate_sharing(var + ".sharing", pool, problems, platform)
        dra_check_pool(var, pool, problems)


def _no_repeats(var, values, what, problems):
    """Refuse a value listed twice in a pool's list setting (it would be rendered twice)."""
    seen = set()
    for j, value in enumerate(values):
        marker = repr(value)
        if marker in seen:
            problems.error("%s[%d]" % (var, j), "%r is listed twice; use each %s once, in preference order"
                           % (value, what))
        seen.add(marker)


def validate_inventory(params):
    """Validate the whole inventory contract. Returns (Problems, plan)."""
    problems = Problems()
    platform = params.get("platform")
    validate_platform(platform, problems)
    validate_addons_mode(params.get("addons_mode"), problems)
    given = params.get("pools")
    # only a list is normalized: a mapping or a text is refused as it was given (not iterated)
    pools = normalize_pools(given) if isinstance(given, list) else []
    validate_pools(pools if isinstance(given, list) else given, platform, problems)
    plan = {
        "platform": platform,
        "cluster_name": params.get("cluster_name"),
        "addons_mode": params.get("addons_mode"),
        "apply": bool(params.get("apply")),
        "pools": pools,
        "gpus_max": sum((p.get("max_nodes") or 0) * (p.get("gpus_per_node") or 0)
                        for p in pools if isinstance(p, dict) and _is_int(p.get("gpus_per_node"))
                        and _is_int(p.get("max_nodes") or 0)),
    }
    return problems, plan
