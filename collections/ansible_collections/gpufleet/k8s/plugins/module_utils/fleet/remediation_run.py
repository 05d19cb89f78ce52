# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Carry out a remediation plan (remediation.plan) against the API server, and write its report.

The unhealthy taint and the cordon are owned through the Node's record annotation
``gpufleet.io/gpu-remediation`` (JSON: since, reasons, tainted, cordoned, replaced), as gpufleet owns its
other taints through ``gpufleet.io/owned``: only what the record says gpufleet did is ever undone, so a
``gpufleet.io/gpu-unhealthy`` taint or a cordon someone else set stays. The taint is not written into
``gpufleet.io/owned``, so the pools stage (which converges that record) never lifts it.
Every write is a JSON merge patch carrying the ``resourceVersion`` it was computed from; on 409 Conflict
the Node is read again and the patch computed again.

``api``: ``get_node``, ``patch_node`` (raises node_ownership.Conflict on 409; returns False on 404),
``delete_nodeclaim`` (False when gone), and drain.drain's ``list_pods``/``evict``/``get_pod``/``list_pdbs``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.drain import DrainError, drain
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.node_ownership import Conflict
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.remediation import (
    RECORD_ANNOTATION, TAINT, TAINT_KEY, has_taint, reasons, record_of, replace_step)
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.remediation_host import record_host_steps

RETRIES = 5


def _dump(record):
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def act_patch(node, entry, actions, now):
    """The merge patch that records why, taints and cordons (what the policy's actions ask and the Node
    lacks); None when the Node already is so."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    old = record_of(node) or {}
    record = {"since": old.get("since") or now, "reasons": reasons(entry), "by": "gpufleet remediate.yml",
              "tainted": bool(old.get("tainted")), "cordoned": bool(old.get("cordoned")),
              "replaced": old.get("replaced") or ""}
    if old.get("host_steps"):
        record["host_steps"] = old["host_steps"]
    patch = {}
    if "taint" in actions and not has_taint(node):
        patch["spec"] = {"taints": list(spec.get("taints") or []) + [dict(TAINT)]}
        record["tainted"] = True
    if "cordon" in actions and not spec.get("unschedulable"):
        patch.setdefault("spec", {})["unschedulable"] = True
        record["cordoned"] = True
    if record != old:
        patch["metadata"] = {"annotations": {RECORD_ANNOTATION: _dump(record)}}
    if not patch:
        return None
    patch.setdefault("metadata", {})["resourceVersion"] = meta.get("resourceVersion")
    return patch


def restore_patch(node):
    """Undo what the record says gpufleet did (its taint, its cordon) and drop the record."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    record = record_of(node)
    if record is None:
        return None
    patch = {"metadata": {"annotations": {RECORD_ANNOTATION: None}, "resourceVersion": meta.get("resourceVersion")}}
    if record.get("tainted") and has_taint(node):
        left = [t for t in spec.get("taints") or [] if not (t.get("key") == TAINT_KEY and t.get("effect") == "NoSchedule")]
        patch["spec"] = {"taints": left or None}
    if record.get("cordoned") and spec.get("unschedulable"):
        patch.setdefault("spec", {})["unschedulable"] = None
    return patch


def _write(api, name, compute):
    """Patch ``name`` with ``compute(node)``, reading again on 409; returns True when written."""
    node = api.get_node(name)
    for _attempt in range(RETRIES + 1):
        if node is None:
            return False
        patch = compute(node)
        if patch is None:
            return False
        try:
            return api.patch_node(name, patch) is not False
        except Conflict:
            node = api.get_node(name)
    raise RuntimeError("Node %s kept changing while gpufleet wrote it (%d conflicts); run again" % (name, RETRIES + 1))


def _drain_message(msg):
    # drain.py names the driver upgrade's variables; remediation has its own
    return (msg.replace("gpufleet_upgrade_delete_emptydir_data", "gpu_remediation_delete_emptydir_data")
            .replace("gpufleet_upgrade_drain_force", "gpu_remediation_drain_force")
            .replace("gpufleet_upgrade_drain_timeout", "gpu_remediation_drain_timeout"))


def execute(api, entries, policy, platform, nodeclaims, now, check_mode=False, drain_poll=5.0):
    """Carry out the decisions; every entry gets ``done`` (steps that changed something, or would in
    check mode / dry run) and ``errors``. One node's failure does not stop the others. A drained node whose
    host step (remediation.host_step) is to be done gets ``host_action`` ({"step", "gpus", "fallback"}): the
    play on the host does it, and record_host_results writes what happened."""
    dry = check_mode or policy["dry_run"]
    actions = policy["actions"]
    for entry in entries:
        entry["done"], entry["errors"], entry["host_action"] = [], [], None
        host = entry.get("host_step") or {}
        name = entry["name"]
        if entry["decision"] not in ("act", "continue", "restore"):
            continue
        try:
            if entry["decision"] == "restore":
                if dry:
                    entry["done"] = list(entry["steps"])
                elif _write(api, name, restore_patch):
                    entry["done"] = list(entry["steps"])
                continue
            if dry:
                info = host["text"] if host and not host["step"] else None
                entry["done"] = [s for s in entry["steps"] if s != info and not s.startswith(("planned only", "left to GKE"))]
                continue
            if _write(api, name, lambda node: act_patch(node, entry, actions, now)):
                entry["done"] += [s for s in entry["steps"] if s.startswith(("record why", "taint ", "cordon"))]
            if "drain" in actions:
                result = drain(api, name, ignore_daemonsets=True, delete_emptydir_data=policy["delete_emptydir_data"],
                               force=policy["drain_force"], timeout=policy["drain_timeout"], poll=drain_poll)
                if result["evicted"]:
                    entry["done"].append("drained: evicted %s" % ", ".join(result["evicted"]))
                if host.get("step"):   # drained: nothing uses the GPUs any more
                    entry["host_action"] = {"step": host["step"], "gpus": list(host["gpus"]),
                                            "fallback": host["fallback"]}
            if "replace" in actions:
                kind, text, claim = replace_step(platform, entry["node"], nodeclaims)
                if kind == "nodeclaim":
                    if api.delete_nodeclaim(claim):
                        entry["done"].append(text)

                    def mark(node, claim=claim):
                        record = record_of(node) or {}
                        if record.get("replaced") == claim:
                            return None
                        record["replaced"] = claim
                        return {"metadata": {"annotations": {RECORD_ANNOTATION: _dump(record)},
                                             "resourceVersion": node["metadata"].get("resourceVersion")}}
                    _write(api, name, mark)
        except DrainError as exc:
            entry["errors"].append(_drain_message(str(exc)))
        except Exception as exc:  # the client's errors, a Node that keeps changing: named per node
            entry["errors"].append("Node %s: %s" % (name, exc))
    return entries


def record_host_results(api, nodes, results, now, plugin_selector=None):
    """Write what the host plays did (``results``: {Node name: [{"step", "ok", "message", "gpus"}]}) into each
    Node's record and into the report's ``nodes`` (their ``done`` and ``errors``). After a successful reset
    the device plugin's pods on the node (``plugin_selector``) are deleted so that their DaemonSet starts them
    again: the plugin never marks a GPU healthy again by itself. Returns True when something was written."""
    changed = False
    by_name = dict((n["name"], n) for n in nodes)
    for name, steps in sorted((results or {}).items()):
        if not steps:
            continue
        node = by_name.get(name)
        if node is None:   # not in the report given: added, so that nothing done goes unreported
            node = by_name[name] = {"name": name, "pool": None, "state": "-", "decision": "-", "held_because": None,
                                    "findings": [], "steps": [], "done": [], "errors": []}
            nodes.append(node)
        try:
            if _write(api, name, lambda obj, steps=steps: _host_patch(obj, steps, now)):
                changed = True
            for i, step in enumerate(steps):
                text = "%s: %s" % (step["step"], step.get("message") or ("done" if step["ok"] else "failed"))
                if step["ok"]:
                    node["done"].append(text)
                elif i + 1 < len(steps) and steps[-1]["ok"]:   # a refused reset the reboot after it made good
                    node["done"].append(text + " (then: %s)" % steps[-1]["step"])
                else:
                    node["errors"].append("Node %s: %s" % (name, text))
            if plugin_selector and any(s["step"] == "reset" and s["ok"] for s in steps) \
                    and not any(s["step"] == "reboot" for s in steps):
                restarted = []
                for pod in api.list_pods_selected(name, plugin_selector):
                    meta = pod["metadata"]
                    if api.delete_pod(meta["namespace"], meta["name"]):
                        restarted.append("%s/%s" % (meta["namespace"], meta["name"]))
                if restarted:
                    changed = True
                    node["done"].append("device plugin restarted (pod %s deleted; its DaemonSet starts it again)"
                                        % ", ".join(restarted))
        except Exception as exc:  # the client's errors, a Node that keeps changing: named per node
            node["errors"].append("Node %s: recording the host steps failed: %s" % (name, exc))
    return changed


def _host_patch(node, steps, now):
    record = record_of(node)
    if record is None:   # the record is gone (someone restored the node by hand): nothing to add to
        return None
    new = record_host_steps(record, steps, now)
    return {"metadata": {"annotations": {RECORD_ANNOTATION: _dump(new)},
                         "resourceVersion": node["metadata"].get("resourceVersion")}}


# --- the report -----------------------------------------------------------------------------------

def report(entries, policy, platform, cluster, check_mode=False):
    """The report (what the role writes as report.json): no time of the run, so that a run that changes
    nothing writes the same file; each node under remediation carries the time it began (``since``)."""
    dry = check_mode or policy["dry_run"]
    nodes = []
    for e in entries:
        nodes.append({"name": e["name"], "pool": e["pool"], "state": e["state"], "decision": e["decision"],
                      "held_because": e["held_because"], "findings": e["findings"], "steps": e["steps"],
                      "done": e.get("done", []), "errors": e.get("errors", []),
                      "since": (e["record"] or {}).get("since"),
                      "host_steps_before": (e["record"] or {}).get("host_steps") or [],
                      "host_action": e.get("host_action")})
    counts = {}
    for n in nodes:
        counts[n["decision"]] = counts.get(n["decision"], 0) + 1
    return {"cluster": cluster, "platform": platform,
            "mode": "dry run (nothing changed)" if dry else "applied",
            "policy": dict((k, v) for k, v in policy.items() if k != "prometheus_url"),
            "metrics": bool(policy["prometheus_url"]), "decisions": counts, "nodes": nodes}


def markdown(rep):
    lines = ["# GPU health remediation: cluster %s (%s)" % (rep["cluster"], rep["platform"]), "",
             "%s. Policy: actions %s; at most %d node(s) at once, %g%% of a pool; metrics %s." % (
                 rep["mode"].capitalize(), ", ".join(rep["policy"]["actions"]) or "none",
                 rep["policy"]["max_nodes"], rep["policy"]["max_percent"],
                 "from Prometheus" if rep["metrics"] else "not read (no gpu_remediation_prometheus_url)"), "",
             "| node | pool | state | decision | why | steps |", "|---|---|---|---|---|---|"]
    for n in rep["nodes"]:
        why = "; ".join(f["why"] + ("" if f["verdict"] == "unhealthy" else " (%s)" % f["verdict"]) for f in n["findings"])
        steps = n["held_because"] or "; ".join(n["done"] or n["steps"]) or "-"
        if n["errors"]:
            steps += " **failed:** " + "; ".join(n["errors"])
        lines.append("| %s | %s | %s | %s | %s | %s |" % (n["name"], n["pool"] or "-", n["state"], n["decision"],
                                                          (why or "-").replace("|", "/"), steps.replace("|", "/")))
    if not rep["nodes"]:
        lines.append("| - | - | - | - | no GPU node found | - |")
    return "\n".join(lines) + "\n"
