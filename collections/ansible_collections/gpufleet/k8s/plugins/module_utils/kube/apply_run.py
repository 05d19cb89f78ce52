# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""A whole tree of objects applied with one API client: server-side apply (or delete) level by level
(module_utils/kube/apply_tree.py decides the order), the objects of one level in parallel, then the prune of
what an earlier run applied and this render no longer names.

Requests go through api_server.Server (the kubernetes client's ApiClient, raw JSON); ``TreeApply``
returns per-object results in the shape :func:`cluster_access.apply_problem` reads, so a
failed apply is told as it always was: what was applied, what the server refused and why, what was not
applied because the cluster stopped answering.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube import apply_tree as tree
from ansible_collections.gpufleet.k8s.plugins.module_utils.model import namespace_ownership
from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.api_server import APPLY_TYPE, ApiError, Lost
from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.cluster_access import apply_problem, lost_problem


class TreeApply(object):
    """Applies (or deletes) one component's objects; see the module gpufleet.k8s.k8s_apply_tree."""

    def __init__(self, server, component, check_mode=False, diff=False, workers=8, crd_timeout=60, poll=0.2,
                 namespace_timeout=180):
        self.server = server
        self.component = component
        self.check = check_mode
        self.want_diff = diff
        self.workers = workers
        self.crd_timeout = crd_timeout
        self.namespace_timeout = namespace_timeout
        self.poll = poll
        self.lost = None
        self.diffs = []
        self.pending_namespaces = set()
        self.pending_kinds = set()

    # one object ------------------------------------------------------------------------------------
    def _path(self, obj):
        meta = obj.get("metadata") or {}
        api_version, kind = obj.get("apiVersion") or "", obj.get("kind") or ""
        collection = self.server.collection(api_version, kind, meta.get("namespace"))
        if collection is None:
            return None
        return "%s/%s" % (collection, meta.get("name"))

    def _apply_one(self, obj, body):
        if self.lost:
            raise Lost(self.lost)
        path = self._path(obj)
        if path is None:
            if self.check and (obj.get("apiVersion"), obj.get("kind")) in self.pending_kinds:
                return self._would_create(obj, body)  # its CRD is in this tree and not created in check mode
            raise ApiError(404, "the cluster serves no %s in %s" % (obj.get("kind"), obj.get("apiVersion")))
        live = self.server.get(path)
        if live and not self.check and tree.group_kind(obj) == ("", "Namespace") \
                and (live.get("metadata") or {}).get("deletionTimestamp"):
            live = self._until_gone(path, obj)
        query = {"fieldManager": tree.FIELD_MANAGER, "force": "false"}
        if self.check:
            query["dryRun"] = "All"
        try:
            answer = self.server.request("PATCH", path, body, query, APPLY_TYPE)
        except ApiError as exc:
            namespace = (obj.get("metadata") or {}).get("namespace")
            if self.check and exc.status == 404 and namespace in self.pending_namespaces:
                return self._would_create(obj, body)  # its namespace is in this tree and not created in check mode
            raise
        if self.check:
            changed = tree.differs(live, answer)
        else:
            changed = live is None or (live.get("metadata") or {}).get("resourceVersion") != \
                (answer.get("metadata") or {}).get("resourceVersion")
        if changed and self.want_diff:
            self._diff(obj, tree.comparable(live) or {}, tree.comparable(answer))
        return dict(changed=changed, result=answer if not self.check else {}, method="apply")

    def _until_gone(self, path, obj):
        """A Namespace that is being deleted (an earlier run pruned it, or someone deleted it) refuses every new
        object until the namespace controller has emptied and removed it: wait for that (bounded), then it is
        created again like any missing namespace."""
        deadline = time.time() + self.namespace_timeout
        while True:
            live = self.server.get(path)
            if live is None or not (live.get("metadata") or {}).get("deletionTimestamp"):
                return live
            if time.time() > deadline:
                raise ApiError(409, "Namespace %s is still being deleted after %d s (the namespace controller removes "
                                    "its contents first); run the same command again once it is gone"
                               % ((obj.get("metadata") or {}).get("name"), self.namespace_timeout))
            time.sleep(self.poll)

    def _would_create(self, obj, body):
        if self.want_diff:
            self._diff(obj, {}, body)
        return dict(changed=True, result={}, method="apply")

    def _diff(self, obj, before, after, what=None):
        what = what or ("server dry-run" if self.check else "applied")
        self.diffs.append(dict(before=before, after=after, before_header="%s (live)" % tree.label(obj),
                               after_header="%s (%s)" % (tree.label(obj), what)))

    def _delete_one(self, obj):
        if self.lost:
            raise Lost(self.lost)
        path = self._path(obj)
        live = self.server.get(path) if path else None
        if live is None:
            return dict(changed=False, result={}, method="delete")
        if not self.check:
            try:
                self.server.request("DELETE", path)
            except ApiError as exc:
                if exc.status != 404:
                    raise
                return dict(changed=False, result={}, method="delete")
        if self.want_diff:
            self._diff(obj, tree.comparable(live), {}, "would be deleted" if self.check else "deleted")
        return dict(changed=True, result={}, method="delete")

    def _guarded(self, work, obj, *args):
        try:
            out = work(obj, *args)
        except ApiError as exc:
            return dict(item=obj, msg=exc.message)
        except Lost as exc:
            self.lost = self.lost or str(exc)
            return dict(item=obj, msg=self.lost)
        out["item"] = obj
        return out

    def _level(self, work, pairs):
        """Run ``work`` over (object, extra args...) tuples in parallel; results in the given order."""
        if len(pairs) == 1 or self.workers <= 1:
            return [self._guarded(work, *p) for p in pairs]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(pairs))) as pool:
            return list(pool.map(lambda p: self._guarded(work, *p), pairs))

    # CRDs ------------------------------------------------------------------------------------------
    def _established(self, crd_results):
        """Wait until each applied CRD is Established (then its kind is served); a CRD that is not in time
        becomes a failed result naming why."""
        for result in crd_results:
            if "msg" in result:
                continue
            crd = result["item"]
            name = (crd.get("metadata") or {}).get("name")
            spec = crd.get("spec") or {}
            for version in spec.get("versions") or []:
                self.pending_kinds.add(("%s/%s" % (spec.get("group"), version.get("name")),
                                        (spec.get("names") or {}).get("kind")))
            if self.check:
                continue
            deadline = time.time() + self.crd_timeout
            while True:
                try:
                    live = self.server.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/%s" % name)
                except (ApiError, Lost) as exc:
                    if isinstance(exc, Lost):
                        self.lost = self.lost or str(exc)
                    result.pop("result", None)
                    result["msg"] = self.lost if isinstance(exc, Lost) else exc.message
                    break
                conditions = ((live or {}).get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    self.server.learn(live)
                    break
                if time.time() > deadline:
                    result.pop("result", None)
                    result["msg"] = "not Established within %d s, so no object of its kind was applied" \
                        % self.crd_timeout
                    break
                time.sleep(self.poll)

    # the tree --------------------------------------------------------------------------------------
    def apply(self, objects, set_id=None):
        """Server-side apply every object, level by level; returns the per-object results in apply order."""
        results = []
        self.pending_namespaces = set((o.get("metadata") or {}).get("name") for o in objects
                                      if tree.group_kind(o) == ("", "Namespace"))
        for level in tree.levels(objects):
            pairs = [(o, tree.with_part_of(o, set_id) if set_id else o) for o in level]
            level_results = self._level(self._apply_one, pairs)
            if tree.is_crd(level[0]):
                self._established(level_results)
            results += level_results
        return results

    def delete(self, objects):
        results = []
        for level in tree.delete_levels(objects):
            results += self._level(self._delete_one, [(o,) for o in level])
        return results

    def ordered_diffs(self, results):
        """The diffs in the order the objects were given (the threads finish in any order), prunes last."""
        order = dict((tree.label(r["item"]), i) for i, r in enumerate(results))
        return sorted(self.diffs, key=lambda d: order.get(d["before_header"].rsplit(" (", 1)[0], len(order)))

    def problem(self, results):
        return apply_problem(results, self.component)

    # readiness (wait) ------------------------------------------------------------------------------
    def wait_ready(self, objects, timeout):
        """Wait until each applied Deployment, DaemonSet and StatefulSet has rolled out; the ones that did
        not in ``timeout`` seconds, named."""
        waiting = [o for o in objects if tree.group_kind(o) in tree.ROLLOUT]
        deadline = time.time() + timeout
        while waiting and not self.check:
            waiting = [o for o in waiting if not tree.rolled_out(self.server.get(self._path(o)))]
            if not waiting or time.time() > deadline:
                break
            time.sleep(1)
        return ["%s did not become ready within %d s" % (tree.label(o), timeout) for o in waiting]


def _members(server, gks, namespaces, set_id, workers):
    """The live objects labelled part-of ``set_id`` of the group-kinds ``gks`` (namespaced kinds in
    ``namespaces`` only), each with its apiVersion and kind (a list's items carry neither)."""
    queries = []
    for group, kind in gks:
        gv = server.preferred_version(group)
        if not gv or kind not in server.resources(gv):
            continue  # no longer served (its CRD is gone): nothing of it can be left
        for namespace in (namespaces if server.namespaced(gv, kind) else [None]):
            queries.append((gv, kind, server.collection(gv, kind, namespace)))

    def one(query):
        gv, kind, path = query
        items = (server.get(path, {"labelSelector": "%s=%s" % (tree.PART_OF, set_id)}) or {}).get("items") or []
        return [dict(item, apiVersion=gv, kind=kind) for item in items]
    if not queries:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(queries)))) as pool:
        return [item for found in pool.map(one, queries) for item in found]


def _failed(out, msg):
    out.update(failed=True, msg=msg)
    return out


def run_tree(server, component, objects, state="present", check_mode=False, diff=False, prune=True,
             parent_namespace=tree.PARENT_NAMESPACE, workers=8, wait=False, wait_timeout=300):
    """Apply (``state`` present) or delete (absent) one component's objects and prune the set's members the
    render no longer names; the module's result (``failed`` and ``msg`` when something went wrong)."""
    job = TreeApply(server, component, check_mode, diff, workers)
    out = dict(changed=False, changed_objects=[], pruned=[])
    name = tree.parent_name(component)
    set_id = tree.applyset_id(name, parent_namespace)
    parent_path = "/api/v1/namespaces/%s/secrets/%s" % (parent_namespace, name)
    parent = None
    try:
        # only a Namespace gpufleet created is labelled or deleted (module_utils/model/namespace_ownership.py)
        objects, notes = namespace_ownership.guard(server.get, component, objects, state)
        if notes:
            out["warnings"] = notes
        if prune:
            parent = server.get(parent_path)
            why = tree.foreign_parent(parent)
            if why:
                return _failed(out, "Secret %s/%s cannot record %s's objects: %s. Nothing was applied."
                               % (parent_namespace, name, component, why))
        if prune and state == "present" and objects and not check_mode:
            if parent is None:
                server.request("PATCH", "/api/v1/namespaces/%s" % parent_namespace, _namespace(parent_namespace),
                               {"fieldManager": tree.FIELD_MANAGER, "force": "false"}, APPLY_TYPE)
            # record the union first: a run that stops part-way still lists what it may have applied
            gks, namespaces = tree.union_scope(parent, objects, parent_namespace)
            _write_parent(server, parent_path, component, gks, namespaces, parent_namespace)
    except (ApiError, Lost) as exc:
        lost = isinstance(exc, Lost)
        if lost and not objects:  # a prune-only run: nothing rendered, the record could not be read
            return _failed(out, lost_problem(component, exc, "reading what an earlier run applied (Secret %s/%s)"
                                             % (parent_namespace, name)))
        results = [dict(item=o, msg=str(exc) if lost else exc.message) for o in objects]
        return _failed(out, job.problem(results) or "%s: %s" % (component, exc))
    results = job.apply(objects, set_id if prune else None) if state == "present" else job.delete(objects)
    problem = job.problem(results)
    if not problem and wait and state == "present":
        problem = "; ".join(job.wait_ready(objects, wait_timeout))
    out["changed_objects"] = [tree.label(r["item"]) for r in results if r.get("changed")]
    out["changed"] = bool(out["changed_objects"])
    if problem:
        return _failed(dict(out, diff=job.diffs), problem)
    keep = objects if state == "present" else []
    if prune and (parent is not None or (keep and not check_mode)):
        try:
            gks, namespaces = tree.union_scope(parent, keep, parent_namespace)
            listed = _members(server, gks, sorted(set(namespaces) | {parent_namespace}), set_id, workers)
            # the namespace that holds every component's ApplySet record is never deleted by a prune
            candidates = [c for c in tree.prune_candidates(listed, keep, set_id)
                          if tree.group_kind(c) != ("", "Namespace")
                          or (c.get("metadata") or {}).get("name") != parent_namespace]
            kept_notes = []
            doomed = namespace_ownership.prunable(candidates, component, server.get, kept_notes)
            if kept_notes:
                out.setdefault("warnings", []).extend(kept_notes)
            pruned = job.delete(doomed)
            problem = apply_problem(pruned, component + " (prune)")
            if problem:
                return _failed(dict(out, diff=job.diffs), problem)
            out["pruned"] = [tree.label(r["item"]) for r in pruned if r.get("changed")]
            out["changed"] = out["changed"] or bool(out["pruned"])
            if out["pruned"]:  # said without --diff too: a deletion is never silent
                out.setdefault("warnings", []).append("%s %s applied by gpufleet earlier and no longer rendered: %s" % (
                    "check mode: would delete what" if check_mode else "deleted what", component,
                    ", ".join(out["pruned"])))
            if not check_mode:
                if keep:
                    gks, namespaces = tree.scope(keep, parent_namespace)
                    _write_parent(server, parent_path, component, gks, namespaces, parent_namespace)
                elif parent is not None:
                    server.request("DELETE", parent_path)
        except (ApiError, Lost) as exc:
            # told as the apply's own failures are: the set's record (and the prune) is what is left undone
            record = dict(item={"kind": "ApplySet", "metadata": {"name": "%s (record and prune)" % name}},
                          msg=str(exc) if isinstance(exc, Lost) else exc.message)
            return _failed(dict(out, diff=job.diffs), job.problem(results + [record]))
    if diff:
        out["diff"] = job.ordered_diffs(results)
    return out


def _namespace(name):
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpufleet"}}}


def _write_parent(server, path, component, gks, namespaces, parent_namespace):
    server.request("PATCH", path, tree.parent_object(component, gks, namespaces, parent_namespace),
                   {"fieldManager": tree.FIELD_MANAGER, "force": "false"}, APPLY_TYPE)
