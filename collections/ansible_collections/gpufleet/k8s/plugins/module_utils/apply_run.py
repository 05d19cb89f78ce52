# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""A whole tree of objects applied with one API client: server-side apply (or delete) level by level
(module_utils/apply_tree.py decides the order), the objects of one level in parallel, then the prune of
what an earlier run applied and this render no longer names.

``Server`` is the only part that makes requests (through the kubernetes client's ApiClient, raw JSON);
``TreeApply`` returns per-object results in the shape :func:`cluster_access.apply_problem` reads, so a
failed apply is told as it always was: what was applied, what the server refused and why, what was not
applied because the cluster stopped answering.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpufleet.k8s.plugins.module_utils import apply_tree as tree
from ansible_collections.gpufleet.k8s.plugins.module_utils import namespace_ownership
from ansible_collections.gpufleet.k8s.plugins.module_utils.cluster_access import apply_problem

APPLY_TYPE = "application/apply-patch+yaml"  # JSON is YAML: the body goes as JSON


class ApiError(Exception):
    """An answer of the API server that is not a success: ``status`` and the server's own message."""

    def __init__(self, status, message):
        super(ApiError, self).__init__(message)
        self.status = status
        self.message = message


class Lost(Exception):
    """The cluster stopped answering (connection refused, timed out): nothing after this is tried."""


def _server_words(body, fallback):
    try:
        status = json.loads(body)
    except (TypeError, ValueError):
        return fallback
    return status.get("message") or fallback if isinstance(status, dict) else fallback


class Server(object):
    """Raw JSON requests on a kubernetes ``ApiClient``, and discovery cached per group-version."""

    def __init__(self, api_client, timeout=60):
        # imported here, not with this file: render mode loads the module that imports it and never applies
        from kubernetes.client.rest import ApiException
        from urllib3.exceptions import HTTPError
        self._errors = (ApiException, HTTPError)
        self.client = api_client
        self.timeout = timeout
        self.retry_delay = 0.5
        self._resources = {}
        self._preferred = {}
        self._lock = threading.Lock()

    def request(self, method, path, body=None, query=None, content_type="application/json"):
        """The decoded JSON answer; ApiError for an error status, Lost when the server cannot be reached.
        A connection that broke is tried once more (every request here is idempotent: GET, server-side apply,
        DELETE): a glitch then costs nothing, and a server that is gone is named by the second error
        (connection refused) rather than by the half-read answer of the first."""
        try:
            return self._request(method, path, body, query, content_type)
        except Lost:
            time.sleep(self.retry_delay)
            return self._request(method, path, body, query, content_type)

    def _request(self, method, path, body, query, content_type):
        headers = {"Accept": "application/json", "Content-Type": content_type}
        api_exception, http_error = self._errors
        try:
            if hasattr(self.client, "param_serialize"):  # kubernetes >= 33: requests built, status not checked
                method, url, headers, body, _post_params = self.client.param_serialize(
                    method=method, resource_path=path, query_params=list((query or {}).items()),
                    header_params=headers, body=body, auth_settings=["BearerToken"])
                response = self.client.rest_client.request(method, url, headers=headers, body=body,
                                                           _request_timeout=self.timeout)
                status, data = response.status, response.read()
            else:  # older clients raise ApiException for an error status themselves
                data = self.client.call_api(
                    path, method, query_params=list((query or {}).items()), header_params=headers, body=body,
                    auth_settings=["BearerToken"], _preload_content=False, _return_http_data_only=True,
                    _request_timeout=self.timeout).data
                status = 200
        except api_exception as exc:
            if not exc.status:
                raise Lost(str(exc.reason))
            raise ApiError(exc.status, _server_words(exc.body, "%s %s" % (exc.status, exc.reason)))
        except (http_error, OSError) as exc:  # urllib3's connection errors
            raise Lost(str(exc))
        if not 200 <= status < 300:
            raise ApiError(status, _server_words(data, "HTTP %s" % status))
        return json.loads(data) if data else {}

    def get(self, path, query=None):
        try:
            return self.request("GET", path, query=query)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    # discovery -------------------------------------------------------------------------------------
    def resources(self, group_version):
        """{kind: (plural, namespaced)} the server serves in ``group_version`` ({} when none)."""
        with self._lock:
            if group_version in self._resources:
                return self._resources[group_version]
        path = "/api/v1" if group_version == "v1" else "/apis/%s" % group_version
        found = {}
        for res in (self.get(path) or {}).get("resources") or []:
            if "/" not in res["name"]:
                found[res["kind"]] = (res["name"], bool(res.get("namespaced")))
        with self._lock:
            self._resources.setdefault(group_version, {}).update(found)
            return self._resources[group_version]

    def learn(self, crd):
        """What an Established CustomResourceDefinition serves, without asking discovery again."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        with self._lock:
            for version in spec.get("versions") or []:
                if version.get("served", True):
                    gv = "%s/%s" % (spec.get("group"), version.get("name"))
                    self._resources.setdefault(gv, {})[names.get("kind")] = (
                        names.get("plural"), spec.get("scope") == "Namespaced")

    def preferred_version(self, group):
        if not group:
            return "v1"
        with self._lock:
            if group in self._preferred:
                return self._preferred[group]
        found = ((self.get("/apis/%s" % group) or {}).get("preferredVersion") or {}).get("groupVersion")
        with self._lock:
            self._preferred[group] = found
        return found

    def collection(self, group_version, kind, namespace=None):
        """The URL path of a kind's collection (in ``namespace`` when namespaced), or None if not served."""
        found = self.resources(group_version).get(kind)
        if not found:
            return None
        plural, namespaced = found
        prefix = "/api/v1" if group_version == "v1" else "/apis/%s" % group_version
        if namespaced:
            return "%s/namespaces/%s/%s" % (prefix, namespace or "default", plural)
        return "%s/%s" % (prefix, plural)

    def namespaced(self, group_version, kind):
        return self.resources(group_version).get(kind, (None, False))[1]


class TreeApply(object):
    """Applies (or deletes) one component's objects; see the module gpufleet.k8s.k8s_apply_tree."""

    def __init__(self, server, component, check_mode=False, diff=False, workers=8, crd_timeout=60, poll=0.2):
        self.server = server
        self.component = component
        self.check = check_mode
        self.want_diff = diff
        self.workers = workers
        self.crd_timeout = crd_timeout
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


def served_api_versions(server):
    """Every group/version the API server serves ("v1", "apps/v1", "monitoring.coreos.com/v1", ...), sorted:
    the keys of kubernetes.core.k8s_cluster_info's ``apis``, from two requests (/api and /apis)."""
    out = set("%s" % v for v in (server.get("/api") or {}).get("versions") or [])
    for group in (server.get("/apis") or {}).get("groups") or []:
        out.update(v.get("groupVersion") for v in group.get("versions") or [] if v.get("groupVersion"))
    return sorted(out)


def list_objects(server, api_version, kind, label_selectors=None, namespace=None):
    """The live objects of a kind (all namespaces unless ``namespace``), each with its apiVersion and kind;
    [] when the server does not serve the kind (e.g. its CRD is not installed), as kubernetes.core.k8s_info
    answers then."""
    found = server.resources(api_version).get(kind)
    if not found:
        return []
    plural, namespaced = found
    prefix = "/api/v1" if api_version == "v1" else "/apis/%s" % api_version
    path = "%s/namespaces/%s/%s" % (prefix, namespace, plural) if namespaced and namespace else \
        "%s/%s" % (prefix, plural)
    query = {"labelSelector": ",".join(label_selectors)} if label_selectors else None
    items = (server.get(path, query) or {}).get("items") or []
    return [dict(item, apiVersion=api_version, kind=kind) for item in items]


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
        # only a Namespace gpufleet created is labelled or deleted (module_utils/namespace_ownership.py)
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
            doomed = namespace_ownership.prunable(candidates, component, server.get)
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
