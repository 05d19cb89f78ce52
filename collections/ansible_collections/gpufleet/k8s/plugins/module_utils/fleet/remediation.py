# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""GPU health remediation: which GPU nodes are unhealthy, why, and what may be done about them now.

Evidence, from what the cluster and the nodes already say:
- ``nvidia.com/gpu`` (or ``nvidia.com/mig-*``) allocatable below capacity: the device plugin marked
  GPUs unhealthy (it does on critical XIDs and when a GPU is lost);
- DCGM metrics through Prometheus (remediation_metrics.py): XIDs judged by ``XID_CATALOG``, double-bit
  ECC, pages pending retirement, retired pages, row-remap failure, NVLink recovery errors.

Verdicts: ``unhealthy`` (remediate), ``watch`` (reported, nothing done), ``application`` (the XID is the
application's fault: the GPU is fine; reported only).

The policy's limits, decided here before anything is written (``plan``):
- at most ``max_nodes`` nodes under remediation at once in the cluster, counting those an earlier run
  left tainted or cordoned that are still unhealthy;
- at most ``max_percent`` of a pool at once, rounded up (as Kubernetes rounds a PodDisruptionBudget's
  maxUnavailable percentage), so a pool of 3 at 25% allows 1;
- never below the pool's ``min_nodes`` schedulable nodes: a node is only taken out while the pool
  keeps at least that many schedulable nodes without the unhealthy taint.
A node that would break a limit is ``held`` and the report says which limit. Nodes outside every
gpufleet pool are reported and left alone.

On self-managed clusters the policy may also reset the GPUs (``reset``) or reboot the host (``reboot``) of a
drained node (``host_step``): a reset first, a reboot when the GPU is lost (nvidia-smi cannot reach it, XID
79), when the reset was refused or when the node is still unhealthy after a reset; after a reboot that did
not help, nothing more (a person replaces the GPU). The steps done are kept in the node's record.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, kind_of, one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import GPU_RESOURCE_PREFIXES, node_pool_name
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.remediation_host import (
    HOST_ACTIONS, LOST_GPU_FAILURES, host_step)
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import SELF_MANAGED_PLATFORMS
# the records gpufleet signs on the Nodes it acts on (remediation_records.py); the names stay importable from here
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.remediation_records import (  # noqa: F401 pylint: disable=unused-import
    FIELD_MANAGER, MAC_KEY, RECORD_ANNOTATION, RECORD_KEY_NAMESPACE, RECORD_KEY_SECRET, cordon_owner,
    gpufleet_cordoned, record_mac, record_of, signed, trusted_record)

TAINT_KEY = "gpufleet.io/gpu-unhealthy"
TAINT = {"key": TAINT_KEY, "effect": "NoSchedule"}
KARPENTER_PLATFORMS = ("eks",)
GKE_PLATFORMS = ("gke", "gke-autopilot")

VERDICTS = ("application", "watch", "unhealthy")
ACTIONS = ("taint", "cordon", "drain", "replace") + HOST_ACTIONS

# XID code -> (verdict, meaning), after NVIDIA's XID catalog (Ampere and newer; the resolution bucket
# in brackets). Codes not listed are "watch": reported, never acted on by themselves.
XID_CATALOG = {
    13: ("application", "graphics engine exception, usually the application (out-of-range access, illegal "
                        "instruction) [RESTART_APP]"),
    31: ("application", "GPU memory page fault, usually an illegal address in the application [RESTART_APP]"),
    43: ("application", "GPU stopped processing the application's channel after a fault in the application; "
                        "the GPU stays healthy [RESTART_APP]"),
    45: ("application", "preemptive cleanup: the driver stopped an application's channels (killed, Ctrl-C, "
                        "or as a consequence of another error)"),
    48: ("unhealthy", "double-bit (uncorrectable) ECC error; a GPU reset or reboot clears it [RESET_GPU]"),
    61: ("unhealthy", "internal micro-controller breakpoint [RESET_GPU]"),
    62: ("unhealthy", "internal micro-controller halt [RESET_GPU]"),
    63: ("unhealthy", "ECC page retirement or row remapping recorded; it takes effect at the next GPU reset"),
    64: ("unhealthy", "ECC page retirement or row remapping failed [RESET_GPU, replace the GPU if it recurs]"),
    74: ("unhealthy", "NVLink error (this GPU or the device at the link's other end) [RESET_GPU]"),
    79: ("unhealthy", "GPU has fallen off the bus [RESET_GPU or reboot; replace the GPU if it recurs]"),
    92: ("watch", "high single-bit ECC error rate (corrected)"),
    94: ("watch", "contained uncorrectable ECC error: the affected application was stopped and the page offlined; "
                  "other work continues [RESTART_APP]"),
    95: ("unhealthy", "uncontained uncorrectable ECC error: every application on the GPU is affected [RESET_GPU]"),
    119: ("unhealthy", "GSP RPC timeout [RESET_GPU]"),
    120: ("unhealthy", "GSP error [RESET_GPU]"),
    154: ("unhealthy", "the driver changed the GPU's recovery action to a reset or reboot"),
}

POLICY_DEFAULTS = {
    "dry_run": True,
    "actions": ["taint", "cordon", "drain", "replace"],
    "max_nodes": 1,
    "max_percent": 25,
    "hosts_at_once": 1,
    "restore": True,
    "prometheus_url": "",
    "window": "15m",
    "thresholds": {"ecc_dbe": 0, "retired_pending": 0, "retired_pages": None, "nvlink_errors": 0},
    "xid_overrides": {},
    "drain_timeout": 600,
    "drain_force": False,
    "delete_emptydir_data": False,
}
PREFIX = "gpu_remediation_"
_DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")


def xid_verdict(code, overrides=None):
    """(verdict, meaning) of an XID code; ``overrides`` {code: verdict} from the policy win."""
    verdict, meaning = XID_CATALOG.get(code, ("watch", "not in gpufleet's table: look it up in NVIDIA's XID catalog"))
    override = (overrides or {}).get(code)
    if override:
        return override, meaning + " (verdict set by gpu_remediation_xid_overrides)"
    return verdict, meaning


# --- the policy ----------------------------------------------------------------------------------

def _int(value, low=None, high=None):
    return isinstance(value, int) and not isinstance(value, bool) and (low is None or value >= low) \
        and (high is None or value <= high)


def validate_policy(raw, platform=None):
    """The policy with defaults filled in; raises GpufleetError naming every bad variable and what is
    allowed, before anything is read or written. ``raw`` uses the keys of POLICY_DEFAULTS; ``platform``
    (gpufleet_platform), when given, is checked against the host actions (reset, reboot)."""
    p = dict(POLICY_DEFAULTS)
    p.update(dict((k, v) for k, v in (raw or {}).items() if v is not None))
    errors = []

    def bad(key, msg):
        errors.append("%s%s: %s" % (PREFIX, key, msg))

    for key in ("dry_run", "restore", "drain_force", "delete_emptydir_data"):
        if not isinstance(p[key], bool):
            bad(key, "%r (%s) is not allowed; use true or false" % (p[key], kind_of(p[key])))
    actions = p["actions"]
    if not isinstance(actions, list) or any(a not in ACTIONS for a in actions):
        bad("actions", "%r is not allowed; use a list of %s" % (actions, one_of(ACTIONS)))
    elif "drain" in actions and "cordon" not in actions:
        bad("actions", "drain needs cordon too (evicted pods would be scheduled back onto the node); add cordon")
    else:
        host = [a for a in actions if a in HOST_ACTIONS]
        if host and "drain" not in actions:
            bad("actions", "%s needs drain too (nothing may use the GPUs when they are reset or the host reboots); "
                "add cordon and drain" % " and ".join(host))
        elif host and platform is not None and platform not in SELF_MANAGED_PLATFORMS:
            bad("actions", "%s act on the hosts of self-managed clusters (%s); on platform %s use replace (%s)"
                % (" and ".join(host), ", ".join(SELF_MANAGED_PLATFORMS), platform,
                   "delete the Karpenter NodeClaim" if platform in KARPENTER_PLATFORMS else "GKE node auto-repair"))
    if not _int(p["max_nodes"], 1):
        bad("max_nodes", "%r is not allowed; use an integer >= 1 (nodes remediated at once in the cluster)"
            % (p["max_nodes"],))
    if not _int(p["hosts_at_once"], 1):
        bad("hosts_at_once", "%r is not allowed; use an integer >= 1 (hosts reset or rebooted at the same time)"
            % (p["hosts_at_once"],))
    pct = p["max_percent"]
    if isinstance(pct, bool) or not isinstance(pct, (int, float)) or not 0 < pct <= 100:
        bad("max_percent", "%s is not allowed; use a number above 0 and at most 100 (percent of a pool at once)"
            % ("%g" % pct if isinstance(pct, float) else repr(pct)))
    if not _int(p["drain_timeout"], 1):
        bad("drain_timeout", "%r is not allowed; use an integer >= 1 (seconds)" % (p["drain_timeout"],))
    url = p["prometheus_url"]
    if not isinstance(url, str) or (url and not re.match(r"^https?://[^\s/]+", url)):
        bad("prometheus_url", "%r is not allowed; use an http(s):// base URL of Prometheus, or \"\" for none" % (url,))
    if not isinstance(p["window"], str) or not _DURATION.match(p["window"]):
        bad("window", "%r is not allowed; use a PromQL duration like 15m or 1h" % (p["window"],))
    thresholds = dict(POLICY_DEFAULTS["thresholds"])
    if not isinstance(p["thresholds"], dict):
        bad("thresholds", "%r is not allowed; use a mapping of %s" % (p["thresholds"], one_of(sorted(thresholds))))
    else:
        for key, value in p["thresholds"].items():
            if key not in thresholds:
                bad("thresholds", "%r is not a threshold; use %s" % (key, one_of(sorted(thresholds))))
            elif value is not None and not _int(value, 0):
                bad("thresholds", "%s: %r is not allowed; use an integer >= 0 (a count above it is unhealthy) or null "
                    "(not checked)" % (key, value))
            else:
                thresholds[key] = value
    p["thresholds"] = thresholds
    overrides = {}
    if not isinstance(p["xid_overrides"], dict):
        bad("xid_overrides", "%r is not allowed; use a mapping of XID code to %s" % (p["xid_overrides"], one_of(VERDICTS)))
    else:
        for code, verdict in p["xid_overrides"].items():
            if not re.match(r"^[0-9]+$", str(code)) or isinstance(code, bool):
                bad("xid_overrides", "%r is not an XID code; use an integer like 94" % (code,))
            elif verdict not in VERDICTS:
                bad("xid_overrides", "%s: %r is not allowed; use %s" % (code, verdict, one_of(VERDICTS)))
            else:
                overrides[int(code)] = verdict
    p["xid_overrides"] = overrides
    if errors:
        raise GpufleetError("; ".join(errors) + ". Nothing was changed.", errors=errors)
    return p


# --- what one node says ---------------------------------------------------------------------------

def _qty(value):
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


def gpu_capacity(node):
    status = node.get("status") or {}
    return sum(_qty(v) for k, v in (status.get("capacity") or {}).items() if k.startswith(GPU_RESOURCE_PREFIXES))


def allocatable_findings(node):
    """A finding per GPU resource whose allocatable is below its capacity."""
    status = node.get("status") or {}
    cap, alloc = status.get("capacity") or {}, status.get("allocatable") or {}
    out = []
    for name in sorted(cap):
        if not name.startswith(GPU_RESOURCE_PREFIXES):
            continue
        have, can = _qty(alloc.get(name, 0)), _qty(cap[name])
        if have < can:
            out.append({"source": "allocatable", "gpu": name, "value": have, "verdict": "unhealthy",
                        "why": "%s allocatable %d of capacity %d: the device plugin marked %d unhealthy"
                               % (name, have, can, can - have)})
    return out


def host_findings(gpu_facts, thresholds):
    """{node: [finding]} from ``nvidia-smi -q -x`` on the reachable hosts (``gpu_facts``: {Node name: result
    of gpufleet.k8s.nvidia_gpu_info}); a host that did not answer, or whose read failed, adds nothing."""
    out = {}
    for node, facts in sorted((gpu_facts or {}).items()):
        if not isinstance(facts, dict) or facts.get("unreachable") or facts.get("failed") or facts.get("skipped"):
            continue
        failure = facts.get("nvidia_smi_failure")
        if failure:
            out.setdefault(node, []).append({
                "source": "nvidia_smi", "gpu": "-", "value": failure,
                "verdict": "unhealthy" if failure in LOST_GPU_FAILURES else "watch",
                "why": "nvidia-smi on the host failed (%s): %s" % (failure, (facts.get("nvidia_smi_error") or "")[:200])})
        for gpu in facts.get("gpus") or []:
            health = gpu.get("health") or {}
            name = "GPU %s (nvidia-smi)" % gpu.get("index")
            found = []
            dbe = health.get("ecc_dbe_volatile")
            if dbe is not None and thresholds.get("ecc_dbe") is not None and dbe > thresholds["ecc_dbe"]:
                found.append(("ecc_dbe", dbe, "%d double-bit ECC error(s) since the driver loaded" % dbe))
            if health.get("remapped_row_failure"):
                found.append(("row_remap_failure", 1, "row remapping failed (no spare memory rows left)"))
            if health.get("remapped_row_pending"):
                found.append(("row_remap_pending", 1, "a row remapping waits for a GPU reset"))
            if health.get("retired_pages_pending") and thresholds.get("retired_pending") is not None:
                found.append(("retired_pending", 1, "pages wait for a GPU reset to be retired"))
            for source, value, why in found:
                out.setdefault(node, []).append({"source": source, "gpu": str(gpu.get("index")), "value": value,
                                                 "verdict": "unhealthy", "why": "%s: %s" % (name, why)})
    return out


def merge_findings(*sets):
    out = {}
    for found in sets:
        for node, items in (found or {}).items():
            out.setdefault(node, []).extend(items)
    return out


def has_taint(node, key=TAINT_KEY, effect="NoSchedule"):
    return any(t.get("key") == key and t.get("effect") == effect for t in (node.get("spec") or {}).get("taints") or [])


def schedulable(node):
    return not (node.get("spec") or {}).get("unschedulable") and not has_taint(node)


def replace_step(platform, node, nodeclaims):
    """(kind, text, NodeClaim name) of the replacement step for ``node``: kind ``nodeclaim`` (delete it),
    ``gke`` (left to GKE's auto-repair), ``host`` (planned only) or ``none``."""
    name = (node.get("metadata") or {}).get("name")
    if platform in KARPENTER_PLATFORMS:
        for claim in nodeclaims or []:
            if (claim.get("status") or {}).get("nodeName") == name:
                claim_name = claim["metadata"]["name"]
                if (claim.get("metadata") or {}).get("deletionTimestamp"):
                    return "deleting", "NodeClaim %s is being deleted (Karpenter replaces the node)" % claim_name, claim_name
                return "nodeclaim", "delete NodeClaim %s (Karpenter replaces the node)" % claim_name, claim_name
        return "none", "no Karpenter NodeClaim names Node %s: not replaced (replace it through its node group)" % name, None
    if platform in GKE_PLATFORMS:
        return "gke", "left to GKE node auto-repair (GKE recreates a node that stays unhealthy)", None
    if platform in SELF_MANAGED_PLATFORMS:
        return "host", ("planned only: reset the GPU (nvidia-smi --gpu-reset) or reboot the host; add reset and/or "
                        "reboot to gpu_remediation_actions to have gpufleet do it, or do it on the host: the next run "
                        "restores the node once healthy"), None
    return "none", "no replacement on platform %s" % platform, None


# --- the decision for every node ------------------------------------------------------------------

_SEVERITY = {"xid": 3, "row_remap_failure": 3, "ecc_dbe": 3, "nvidia_smi": 3, "allocatable": 2, "row_remap_pending": 1,
             "retired_pending": 1,
             "retired_pages": 1, "nvlink_errors": 1}


def allowed_in_pool(size, percent):
    return int(math.ceil(size * float(percent) / 100.0)) if size else 0


def plan(nodes, pools, platform, metric_findings, policy, nodeclaims=None, gpu_facts=None, key=None):
    """One entry per GPU node (sorted by name):
    ``{"name", "pool", "findings", "state", "decision", "held_because", "steps", "record_ignored"}``.

    ``state``: healthy | watch | unhealthy | remediating (unhealthy, already recorded) | recovered
    (healthy, recorded). ``decision``: none | act | continue | held | restore | left_alone.
    ``steps``: the steps the decision takes, in order (texts for the report).

    Only a record whose MAC ``key`` confirms for its Node counts (:func:`trusted_record`); any other is
    ignored (``record_ignored`` says why) and its node decided as if it had none. The limits and the pools
    hold for ``continue`` as for ``act``: the nodes already under remediation are decided first, worst
    first, then the newly unhealthy ones."""
    metric_findings = metric_findings or {}
    pool_min = dict((p["name"], p.get("min_nodes") or 0) for p in pools)
    entries, by_pool = [], {}
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        found = allocatable_findings(node) + list(metric_findings.get(name, []))
        pool = node_pool_name(node, pools, platform)
        record, ignored = trusted_record(node, key)
        if not gpu_capacity(node) and not found and pool is None and not record:
            continue
        verdicts = set(f["verdict"] for f in found)
        if "unhealthy" in verdicts:
            state = "remediating" if record else "unhealthy"
        elif record:
            state = "recovered"
        else:
            state = "watch" if verdicts else "healthy"
        entry = {"name": name, "pool": pool, "findings": found, "state": state, "decision": "none",
                 "held_because": None, "steps": [], "record": record, "node": node, "host_step": None,
                 "record_ignored": ignored or None, "notes": [ignored] if ignored else []}
        entries.append(entry)
        if pool is not None:
            by_pool.setdefault(pool, []).append(entry)

    # every node under remediation counts against the limits, also one held or outside the pools now
    total = len([e for e in entries if e["state"] == "remediating"])
    pool_active = dict((p, len([e for e in es if e["state"] == "remediating"])) for p, es in by_pool.items())
    in_service = dict((p, len([e for e in es if schedulable(e["node"])])) for p, es in by_pool.items())
    takes_out = any(a in policy["actions"] for a in ("taint", "cordon", "drain", "replace"))

    def rank(entry):
        return (-max([_SEVERITY.get(f["source"], 0) for f in entry["findings"] if f["verdict"] == "unhealthy"] or [0]),
                entry["name"])

    def limit(entry, count, active):
        pool = entry["pool"]
        size = len(by_pool[pool])
        allowed = allowed_in_pool(size, policy["max_percent"])
        minimum = pool_min.get(pool, 0)
        if count >= policy["max_nodes"]:
            return ("at most %d node(s) at once in the cluster (gpu_remediation_max_nodes); %d under "
                    "remediation" % (policy["max_nodes"], count))
        if active >= allowed:
            return ("at most %g%% of pool %s at once (gpu_remediation_max_percent): %d of its %d "
                    "node(s), %d under remediation" % (policy["max_percent"], pool, allowed, size, active))
        if takes_out and schedulable(entry["node"]) and in_service[pool] - 1 < minimum:
            return ("pool %s would drop below its minimum of %d schedulable node(s) (min_nodes); "
                    "%d schedulable now" % (pool, minimum, in_service[pool]))
        return None

    # the nodes gpufleet already works on: within the limits, as if they were new
    granted, pool_granted = 0, dict((p, 0) for p in by_pool)
    for entry in sorted([e for e in entries if e["state"] == "remediating"], key=rank):
        pool = entry["pool"]
        if pool is None:
            entry["decision"] = "left_alone"
            entry["held_because"] = ("not in any gpufleet pool (gpufleet_gpu_pools) any more: left alone as it is "
                                     "(its taint and cordon stay; undo them by hand, docs/remediation.md)")
            continue
        entry["held_because"] = limit(entry, granted, pool_granted[pool])
        if entry["held_because"]:
            entry["decision"] = "held"
            continue
        entry["decision"] = "continue"
        granted += 1
        pool_granted[pool] += 1
        if schedulable(entry["node"]) and takes_out:
            in_service[pool] -= 1

    for entry in sorted([e for e in entries if e["state"] == "unhealthy"], key=rank):
        pool = entry["pool"]
        if pool is None:
            entry["decision"] = "left_alone"
            entry["held_because"] = "not in any gpufleet pool (gpufleet_gpu_pools): left alone"
            continue
        entry["held_because"] = limit(entry, total, pool_active[pool])
        if entry["held_because"]:
            entry["decision"] = "held"
            continue
        entry["decision"] = "act"
        total += 1
        pool_active[pool] += 1
        if schedulable(entry["node"]) and takes_out:
            in_service[pool] -= 1

    for entry in entries:
        if entry["state"] == "recovered":
            entry["decision"] = "restore" if policy["restore"] else "none"
        if entry["decision"] in ("act", "continue"):
            entry["host_step"] = host_step(entry, policy, platform, gpu_facts)
            entry["steps"] = action_steps(entry, policy, platform, nodeclaims)
        elif entry["decision"] == "restore":
            entry["steps"] = restore_steps(entry)
            node = entry["node"]
            if (node.get("spec") or {}).get("unschedulable") and not gpufleet_cordoned(node, entry["record"]):
                entry["notes"].append("the cordon stays: %s set it, not gpufleet" % (
                    cordon_owner(node) if entry["record"].get("cordoned") and cordon_owner(node) else "someone else"))
    return entries


def action_steps(entry, policy, platform, nodeclaims):
    node, record = entry["node"], entry["record"] or {}
    steps = []
    if "taint" in policy["actions"] and not has_taint(node):
        steps.append("taint %s:NoSchedule" % TAINT_KEY)
    if "cordon" in policy["actions"] and not (node.get("spec") or {}).get("unschedulable"):
        steps.append("cordon")
    if not record or record.get("reasons") != reasons(entry):
        steps.insert(0, "record why in annotation %s" % RECORD_ANNOTATION)
    if "drain" in policy["actions"]:
        steps.append("drain (evictions respect PodDisruptionBudgets)")
    if entry.get("host_step"):
        steps.append(entry["host_step"]["text"])
    elif "replace" in policy["actions"]:
        kind, text, _claim = replace_step(platform, node, nodeclaims)
        if kind != "none" or not record.get("replaced"):
            steps.append(text)
    return steps


def restore_steps(entry):
    node, record = entry["node"], entry["record"] or {}
    steps = []
    if record.get("tainted") and has_taint(node):
        steps.append("remove taint %s:NoSchedule" % TAINT_KEY)
    if gpufleet_cordoned(node, record):
        steps.append("uncordon")
    steps.append("remove annotation %s" % RECORD_ANNOTATION)
    return steps


def reasons(entry):
    return sorted(f["why"] for f in entry["findings"] if f["verdict"] == "unhealthy")[:20]
