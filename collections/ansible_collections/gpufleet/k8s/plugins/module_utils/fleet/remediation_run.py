# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Carry out a remediation plan (remediation.plan) against the API server, and write its report.

The unhealthy taint and the cordon are owned through the Node's record annotation
``gpufleet.io/gpu-remediation`` (JSON: since, reasons, tainted, cordoned, replaced), as gpufleet owns its
other taints through ``gpufleet.io/owned``: only what the record says gpufleet did is ever undone, so a
``gpufleet.io/gpu-unhealthy`` taint or a cordon someone else set stays. The taint is not written into
``gpufleet.io/owned``, so the pools stage (which converges that record) never lifts it. The record is signed
(remediation.signed: HMAC-SHA256 keyed by the Secret gpufleet-system/gpufleet-remediation-key, remediation_key);
one without gpufleet's MAC for its Node is never read as gpufleet's, and a cordon someone else wrote after
gpufleet's (managedFields) is never lifted.
Every write is a JSON merge patch carrying the ``resourceVersion`` it was computed from; on 409 Conflict
the Node is read again and the patch computed again.

``api``: ``get_node``, ``patch_node`` (raises node_ownership.Conflict on 409; returns False on 404),
``delete_nodeclaim`` (False when gone), and drain.drain's ``list_pods``/``evict``/``get_pod``/``list_pdbs``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os

from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.drain import DrainError, drain
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.node_ownership import Conflict
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.remediation import (
    MAC_KEY, RECORD_ANNOTATION, RECORD_KEY_NAMESPACE, RECORD_KEY_SECRET, TAINT, TAINT_KEY, gpufleet_cordoned,
    has_taint, reasons, replace_step, signed, trusted_record)
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.remediation_host import record_host_steps

RETRIES = 5
KEY_FIELD = "key"


def _dump(record):
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def _signed_dump(record, node, key):
    return _dump(signed(record, node, key))


def act_patch(node, entry, actions, now, key):
    """The merge patch that records why, taints and cordons (what the policy's actions ask and the Node
    lacks); None when the Node already is so. The record is signed with ``key`` for this Node; a record
    already there counts only when its MAC is gpufleet's (remediation.trusted_record): a forged one is
    replaced, and nothing it claims (a cordon, a taint, host steps) is carried over."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    old = dict(trusted_record(node, key)[0] or {})
    old.pop(MAC_KEY, None)
    stale = record_present(node) and not old
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
    if record != old or stale:
        patch["metadata"] = {"annotations": {RECORD_ANNOTATION: _signed_dump(record, node, key)}}
    if not patch:
        return None
    patch.setdefault("metadata", {})["resourceVersion"] = meta.get("resourceVersion")
    return patch


def record_present(node):
    return bool(((node.get("metadata") or {}).get("annotations") or {}).get(RECORD_ANNOTATION))


def restore_patch(node, key):
    """Undo what the record (only one gpufleet signed for this Node) says gpufleet did - its taint, its cordon
    when no one else has set the cordon since - and drop the record."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    record = trusted_record(node, key)[0]
    if record is None:
        return None
    patch = {"metadata": {"annotations": {RECORD_ANNOTATION: None}, "resourceVersion": meta.get("resourceVersion")}}
    if record.get("tainted") and has_taint(node):
        left = [t for t in spec.get("taints") or [] if not (t.get("key") == TAINT_KEY and t.get("effect") == "NoSchedule")]
        patch["spec"] = {"taints": left or None}
    if gpufleet_cordoned(node, record):
        patch.setdefault("spec", {})["unschedulable"] = None
    return patch


def remediation_key(api, create):
    """The records' MAC key (bytes) from the Secret RECORD_KEY_SECRET in RECORD_KEY_NAMESPACE (gpufleet-system,
    where gpufleet keeps its other records); None when there is none and ``create`` is false (a dry run: no
    record can be gpufleet's then). With ``create`` the Secret is made with 32 random bytes (its namespace too
    when missing); a Secret another run created in between is read. ``api``: ``read_secret(namespace, name)``
    (None on 404), ``create_namespace(body)``, ``create_secret(namespace, body)`` (False on 409)."""
    for _attempt in range(2):
        secret = api.read_secret(RECORD_KEY_NAMESPACE, RECORD_KEY_SECRET)
        if secret is not None:
            try:
                key = base64.b64decode(((secret.get("data") or {}).get(KEY_FIELD) or "").encode("ascii"))
            except (TypeError, ValueError):
                key = b""
            if len(key) < 32:
                raise RuntimeError("Secret %s/%s holds no usable remediation key (data.%s: 32 bytes or more, "
                                   "base64); delete it and run again: gpufleet creates a new one, and the records "
                                   "signed with the old key are then ignored" % (
                                       RECORD_KEY_NAMESPACE, RECORD_KEY_SECRET, KEY_FIELD))
            return key
        if not create:
            return None
        api.create_namespace({"apiVersion": "v1", "kind": "Namespace",
                              "metadata": {"name": RECORD_KEY_NAMESPACE,
                                           "labels": {"app.kubernetes.io/managed-by": "gpufleet"}}})
        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": RECORD_KEY_SECRET, "namespace": RECORD_KEY_NAMESPACE,
                             "labels": {"app.kubernetes.io/managed-by": "gpufleet"}},
                "data": {KEY_FIELD: base64.b64encode(os.urandom(32)).decode("ascii")}}
        if api.create_secret(RECORD_KEY_NAMESPACE, body) is not False:
            return base64.b64decode(body["data"][KEY_FIELD])
    raise RuntimeError("Secret %s/%s could not be read or created" % (RECORD_KEY_NAMESPACE, RECORD_KEY_SECRET))


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


def execute(api, entries, policy, platform, nodeclaims, now, check_mode=False, drain_poll=5.0, key=None):
    """Carry out the decisions; every entry gets ``done`` (steps that changed something, or would in
    check mode / dry run) and ``errors``. One node's failure does not stop the others. A drained node whose
    host step (remediation.host_step) is to be done gets ``host_action`` ({"step", "gpus", "fallback"}): the
    play on the host does it, and record_host_results writes what happened. ``key``: the records' MAC key
    (needed unless a dry run)."""
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
                elif _write(api, name, lambda node: restore_patch(node, key)):
                    entry["done"] = list(entry["steps"])
                continue
            if dry:
                info = host["text"] if host and not host["step"] else None
                entry["done"] = [s for s in entry["steps"] if s != info and not s.startswith(("planned only", "left to GKE"))]
                continue
            if _write(api, name, lambda node: act_patch(node, entry, actions, now, key)):
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
                        record = dict(trusted_record(node, key)[0] or {})
                        if record.get("replaced") == claim:
                            return None
                        record["replaced"] = claim
                        return {"metadata": {"annotations": {RECORD_ANNOTATION: _signed_dump(record, node, key)},
                                             "resourceVersion": node["metadata"].get("resourceVersion")}}
                    _write(api, name, mark)
        except DrainError as exc:
            entry["errors"].append(_drain_message(str(exc)))
        except Exception as exc:  # the client's errors, a Node that keeps changing: named per node
            entry["errors"].append("Node %s: %s" % (name, exc))
    return entries


def record_host_results(api, nodes, results, now, plugin_selector=None, key=None):
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
            if _write(api, name, lambda obj, steps=steps: _host_patch(obj, steps, now, key)):
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


def _host_patch(node, steps, now, key):
    record = trusted_record(node, key)[0]
    if record is None:   # the record is gone (someone restored the node by hand) or not gpufleet's: nothing to add to
        return None
    new = record_host_steps(record, steps, now)
    return {"metadata": {"annotations": {RECORD_ANNOTATION: _signed_dump(new, node, key)},
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
                      "host_action": e.get("host_action"), "notes": e.get("notes") or []})
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
        if n.get("notes"):
            steps += " (%s)" % "; ".join(n["notes"])
        if n["errors"]:
            steps += " **failed:** " + "; ".join(n["errors"])
        lines.append("| %s | %s | %s | %s | %s | %s |" % (n["name"], n["pool"] or "-", n["state"], n["decision"],
                                                          (why or "-").replace("|", "/"), steps.replace("|", "/")))
    if not rep["nodes"]:
        lines.append("| - | - | - | - | no GPU node found | - |")
    return "\n".join(lines) + "\n"
