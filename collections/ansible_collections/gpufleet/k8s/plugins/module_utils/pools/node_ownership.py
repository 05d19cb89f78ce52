# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Which labels and taints gpufleet owns on a Node, and the patch that moves a Node to what the
inventory wants without touching anything that belongs to someone else.

Why not server-side apply: ``Node.spec.taints`` is an atomic list (``x-kubernetes-list-type:
atomic`` in the Kubernetes OpenAPI), so a manager owns the whole list. A cordon
(``node.kubernetes.io/unschedulable``, from kube-controller-manager), a NotReady taint or a
``kubectl taint`` makes the next apply of gpufleet's taints a conflict, and forcing it would wipe
their taints. So gpufleet reads the Node, computes the new list (others' taints kept, in place),
and writes it with a JSON merge patch that carries the ``resourceVersion`` it read: the API server
refuses the write with 409 Conflict if anyone changed the Node in between, and gpufleet reads again.

What gpufleet owns is recorded on the Node itself, in the annotation ``gpufleet.io/owned``
(``{"labels": {key: value}, "taints": ["key:effect"]}``), and only what gpufleet itself wrote: a label or
taint that is already on the Node exactly as a pool wants it (set by hand, or by another tool, before
gpufleet's first write) stays its setter's, is not recorded and is never removed by gpufleet (the run notes
it). Only what is recorded there is ever removed: when a pool's taints change, when a host leaves the inventory, or with
``gpu_pools_state: absent``. When gpufleet owns nothing on a Node any more the annotation goes too, so
a full removal leaves nothing of gpufleet's behind. Nodes labelled by gpufleet versions that used
server-side apply carry no annotation; their ownership is read from ``metadata.managedFields``
(manager ``gpufleet``, operation ``Apply``); on such a Node an empty annotation stays, because
without it that old entry would be read as ownership again.
gpufleet never creates or deletes a Node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.node_names import NODE_NAME_VAR

OWNED_ANNOTATION = "gpufleet.io/owned"
FIELD_MANAGER = "gpufleet"


def taint_id(taint):
    """A taint's identity on a Node: the API server allows one taint per key and effect."""
    return "%s:%s" % (taint.get("key"), taint.get("effect"))


def _same_taint(a, b):
    return (a.get("key"), a.get("value") or "", a.get("effect")) == (b.get("key"), b.get("value") or "", b.get("effect"))


# --- ownership -----------------------------------------------------------------------------------

def _fields_keys(fields, *path):
    """Keys under a managedFields fieldsV1 path, without their ``f:`` prefix."""
    node = fields or {}
    for step in path:
        node = node.get("f:" + step)
        if not isinstance(node, dict):
            return []
    return [k[2:] for k in node if k.startswith("f:")]


def owned(node):
    """What gpufleet owns on ``node`` (a Node as the API returns it):
    ``{"labels": {key: value}, "taints": ["key:effect", ...]}``."""
    meta = node.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(OWNED_ANNOTATION)
    if raw:
        try:
            data = json.loads(raw)
            return {"labels": {str(k): str(v) for k, v in (data.get("labels") or {}).items()},
                    "taints": sorted(str(t) for t in data.get("taints") or [])}
        except (ValueError, AttributeError):
            raise GpufleetError("Node %s: annotation %s is not gpufleet's JSON (%r); remove it or fix it by hand"
                                % (meta.get("name"), OWNED_ANNOTATION, raw))
    # No annotation: a Node gpufleet labelled with server-side apply (field manager gpufleet).
    labels = meta.get("labels") or {}
    taints = (node.get("spec") or {}).get("taints") or []
    out = {"labels": {}, "taints": []}
    for entry in meta.get("managedFields") or []:
        # older versions used server-side apply (operation Apply); this module writes with Update and
        # always leaves the annotation, so an Update entry never stands for ownership here
        if entry.get("manager") != FIELD_MANAGER or entry.get("operation") != "Apply":
            continue
        fields = entry.get("fieldsV1") or {}
        for key in _fields_keys(fields, "metadata", "labels"):
            if key in labels:
                out["labels"][key] = labels[key]
        if "f:taints" in ((fields.get("f:spec") or {})):
            # an atomic list is owned whole: while gpufleet still owns it, every taint in it is gpufleet's
            out["taints"] = sorted(set(out["taints"]) | set(taint_id(t) for t in taints))
    return out


def _old_apply_entry(node):
    """Whether a server-side apply entry of older gpufleet versions is in the Node's managedFields."""
    return any(e.get("manager") == FIELD_MANAGER and e.get("operation") == "Apply"
               for e in (node.get("metadata") or {}).get("managedFields") or [])


def record(labels, taints, node=None):
    """The annotation value recording what gpufleet set; None (no annotation) when gpufleet owns
    nothing, unless ``node`` carries an old server-side apply entry of gpufleet's: there an empty
    record stays, so that entry is never read as ownership again."""
    if not labels and not taints and not (node is not None and _old_apply_entry(node)):
        return None
    return json.dumps({"labels": dict(sorted(labels.items())), "taints": sorted(taint_id(t) for t in taints)},
                      sort_keys=True, separators=(",", ":"))


# --- the change of one Node ----------------------------------------------------------------------

def plan_node(node, labels, taints, force=False):
    """What must change on ``node`` so that gpufleet's labels are ``labels`` and its taints ``taints``
    (both empty: gpufleet removes everything it owns there), keeping every other label and taint.

    Returns ``{"changed", "patch", "before", "after", "conflicts", "notes"}``: ``patch`` is a JSON
    merge patch with ``metadata.resourceVersion`` as precondition (None when nothing changes);
    ``before``/``after`` are the labels, taints and ownership record (for the diff); ``conflicts``
    name labels/taints someone else set to another value (nothing is written while there are any,
    unless ``force``); ``notes`` say what gpufleet no longer claims because someone else changed it.
    """
    meta = node.get("metadata") or {}
    name = meta.get("name")
    cur_labels = dict(meta.get("labels") or {})
    cur_taints = [dict(t) for t in (node.get("spec") or {}).get("taints") or []]
    mine = owned(node)
    want_labels = {str(k): str(v) for k, v in (labels or {}).items()}
    want_taints = [dict(t) for t in taints or []]
    want_ids = [taint_id(t) for t in want_taints]
    conflicts, notes = [], []

    new_labels = dict(cur_labels)
    for key, value in sorted(mine["labels"].items()):
        if key in want_labels:
            continue
        if cur_labels.get(key) == value:
            del new_labels[key]
        elif key in cur_labels:
            notes.append("Node %s: label %s is now %r (set by someone else), left in place"
                         % (name, key, cur_labels[key]))
    for key, value in sorted(want_labels.items()):
        current = cur_labels.get(key)
        if current is not None and current != value:
            ours = key in mine["labels"] and mine["labels"][key] == current
            if not ours and not force:
                conflicts.append("Node %s: label %s=%r was set by someone else; gpufleet wants %r"
                                 % (name, key, current, value))
        new_labels[key] = value

    new_taints, placed = [], set()
    for taint in cur_taints:
        tid = taint_id(taint)
        if tid in want_ids:
            want = want_taints[want_ids.index(tid)]
            if not _same_taint(taint, want) and tid not in mine["taints"] and not force:
                conflicts.append("Node %s: taint %s=%s:%s was set by someone else; gpufleet wants value %r"
                                 % (name, taint.get("key"), taint.get("value") or "", taint.get("effect"),
                                    want.get("value") or ""))
            new_taints.append(taint if _same_taint(taint, want) else want)
            placed.add(tid)
        elif tid in mine["taints"]:
            continue
        else:
            new_taints.append(taint)
    new_taints.extend(t for t in want_taints if taint_id(t) not in placed)

    # gpufleet owns what it owned already and what it writes now; a wanted label or taint that is already
    # there as wanted and not gpufleet's stays its setter's (a user's hand-set taint is never deleted by absent)
    own_labels = dict((k, v) for k, v in want_labels.items() if k in mine["labels"] or cur_labels.get(k) != v)
    own_taints = [t for t in want_taints
                  if taint_id(t) in mine["taints"] or not any(_same_taint(c, t) for c in cur_taints)]
    for key in sorted(set(want_labels) - set(own_labels)):
        notes.append("Node %s: label %s=%s was there before gpufleet set it: it stays yours (not recorded as "
                     "gpufleet's, not removed by gpufleet)" % (name, key, want_labels[key]))
    for taint in want_taints:
        if not any(taint is t for t in own_taints):
            notes.append("Node %s: taint %s=%s:%s was there before gpufleet set it: it stays yours (not recorded "
                         "as gpufleet's, not removed by gpufleet)"
                         % (name, taint.get("key"), taint.get("value") or "", taint.get("effect")))
    cur_record = (meta.get("annotations") or {}).get(OWNED_ANNOTATION)
    new_record = record(own_labels, own_taints, node)

    patch_meta = {}
    label_patch = {k: v for k, v in new_labels.items() if cur_labels.get(k) != v}
    label_patch.update({k: None for k in cur_labels if k not in new_labels})
    if label_patch:
        patch_meta["labels"] = label_patch
    if cur_record != new_record:
        patch_meta["annotations"] = {OWNED_ANNOTATION: new_record}
    patch = {}
    if patch_meta:
        patch["metadata"] = patch_meta
    if new_taints != cur_taints:
        patch["spec"] = {"taints": new_taints or None}
    changed = bool(patch)
    if changed:
        patch.setdefault("metadata", {})["resourceVersion"] = meta.get("resourceVersion")
    return {
        "name": name,
        "changed": changed,
        "patch": patch if changed else None,
        "before": {"labels": cur_labels, "taints": cur_taints, "owned": cur_record},
        "after": {"labels": new_labels, "taints": new_taints, "owned": new_record},
        "conflicts": conflicts,
        "notes": notes,
    }


def plan_nodes(nodes, desired, prune=True, force=False):
    """Plans for every Node: ``desired`` is a list of ``{"name", "host", "labels", "taints"}``;
    ``nodes`` every Node of the cluster (a NodeList's items). With ``prune``, Nodes outside
    ``desired`` lose what gpufleet owns there (hosts or pools dropped from the inventory).

    Raises GpufleetError naming each host whose Node does not exist: gpufleet never creates one (an
    apply would make a phantom Node that goes NotReady and collects unreachable taints)."""
    by_name = {(n.get("metadata") or {}).get("name"): n for n in nodes}
    missing = [d for d in desired if d["name"] not in by_name]
    if missing:
        msgs = ["host %s: no Node named %r in the cluster" % (d.get("host") or d["name"], d["name"]) for d in missing]
        raise GpufleetError(
            "%s. gpufleet labels existing Nodes only and never creates one; set %s on the host to its "
            "Node name (kubectl get nodes), or join the host to the cluster first. Nothing was changed."
            % ("; ".join(msgs), NODE_NAME_VAR), missing=[d["name"] for d in missing])
    plans = []
    wanted = set()
    for d in desired:
        wanted.add(d["name"])
        plan = plan_node(by_name[d["name"]], d.get("labels"), d.get("taints"), force=force)
        plan["host"] = d.get("host")
        plans.append(plan)
    if prune:
        for name in sorted(n for n in by_name if n not in wanted):
            mine = owned(by_name[name])
            if mine["labels"] or mine["taints"]:
                plan = plan_node(by_name[name], {}, [], force=force)
                plan["host"] = None
                plans.append(plan)
    return plans


def diff_text(state):
    """Stable YAML-like text of one side of a Node diff."""
    lines = ["labels:"]
    lines += ["  %s: %s" % (k, json.dumps(v)) for k, v in sorted(state["labels"].items())]
    lines.append("taints:")
    lines += ["  - %s=%s:%s" % (t.get("key"), t.get("value") or "", t.get("effect")) for t in state["taints"]]
    lines.append("%s: %s" % (OWNED_ANNOTATION, state["owned"] or "(none)"))
    return "\n".join(lines) + "\n"


def plan_diff(plan):
    return {"before_header": "Node/%s" % plan["name"], "after_header": "Node/%s" % plan["name"],
            "before": diff_text(plan["before"]), "after": diff_text(plan["after"])}


# --- the read-modify-write loop (the API is injected: the module passes the kubernetes client) ---

class Conflict(Exception):
    """The Node changed since it was read (HTTP 409)."""


def _write(api, plan, want, force, retries):
    """Patch one Node to its plan; on 409 Conflict read it again, plan again and retry (``retries`` times).
    Returns the plan as written; raises GpufleetError naming the Node."""
    attempt = 0
    while plan["changed"]:
        try:
            api.patch_node(plan["name"], plan["patch"])
            break
        except Conflict:
            attempt += 1
            if attempt > retries:
                raise GpufleetError("Node %s kept changing while gpufleet wrote it (%d conflicts); run again"
                                    % (plan["name"], attempt))
            host = plan.get("host")
            plan = plan_node(api.get_node(plan["name"]), want.get("labels"), want.get("taints"), force=force)
            plan["host"] = host
            if plan["conflicts"]:
                raise GpufleetError("; ".join(plan["conflicts"]), conflicts=plan["conflicts"])
    return plan


def converge(api, desired, prune=True, force=False, check_mode=False, retries=5, workers=8):
    """Read every Node once (one list), refuse before writing if a Node is missing or a conflict exists,
    then patch the Nodes that must change, ``workers`` at a time, re-reading and re-planning a Node on
    409 Conflict (``retries`` times, then an error naming it).

    ``api`` has ``list_nodes() -> [node]``, ``get_node(name) -> node`` and
    ``patch_node(name, merge_patch)`` (raising ``Conflict`` on 409); it must allow calls from several
    threads. Returns the plans (as written), in the order planned. When a Node cannot be written, the
    other writes still finish and the error names every Node that failed and how many were written."""
    plans = plan_nodes(api.list_nodes(), desired, prune=prune, force=force)
    conflicts = [c for p in plans for c in p["conflicts"]]
    if conflicts:
        raise GpufleetError("%s. Nothing was changed; remove or change those labels/taints, or change the pool's "
                            "labels/taints in the inventory." % "; ".join(conflicts), conflicts=conflicts)
    if check_mode:
        return plans
    wants = {d["name"]: d for d in desired}
    todo = [i for i, p in enumerate(plans) if p["changed"]]

    def one(index):
        plan = plans[index]
        try:
            return _write(api, plan, wants.get(plan["name"]) or {}, force, retries), None
        except GpufleetError as exc:
            return plan, exc
        except Exception as exc:  # the client's own errors (connection, auth, API status) for this Node
            return plan, GpufleetError("Node %s: %s" % (plan["name"], exc))

    if len(todo) > 1 and workers > 1:
        with ThreadPoolExecutor(max_workers=min(workers, len(todo))) as pool:
            written = list(pool.map(one, todo))
    else:
        written = [one(i) for i in todo]
    out = list(plans)
    errors = []
    for index, (plan, exc) in zip(todo, written):
        if exc is None:
            out[index] = plan
        else:
            errors.append(exc)
    if errors:
        raise GpufleetError("%s. %d of %d Nodes to change were written; run again once that is fixed"
                            % ("; ".join(e.msg for e in errors), len(todo) - len(errors), len(todo)),
                            failed=[e.msg for e in errors])
    return out
