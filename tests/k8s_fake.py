"""Stand-ins for the parts of a kube-apiserver that gpufleet's Node writes touch.

No API server can run on this machine. These reproduce the documented behaviour that matters here,
nothing more: JSON merge patch (RFC 7386: null removes a key, a list replaces the whole list; a
strategic merge patch is taken only where it means the same: maps without a taint list) and
the resourceVersion precondition (a patch carrying metadata.resourceVersion that differs from the
stored one is refused with 409 Conflict; every write bumps the resourceVersion). Nodes are served
in the shape the v1.28 API returns them (tests/fixtures/k8s/nodes.json: managedFields, kubelet
labels, the controller-manager's taints with timeAdded).
"""
import copy
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


class Store:
    """Nodes by name, with the write rules above. ``before_patch`` may change a Node to simulate a
    concurrent writer (e.g. kube-controller-manager adding the cordon taint)."""

    def __init__(self, nodes):
        self.nodes = {n["metadata"]["name"]: copy.deepcopy(n) for n in nodes}
        self.requests = []
        self.before_patch = None
        self.lock = threading.Lock()

    def bump(self, name):
        meta = self.nodes[name]["metadata"]
        meta["resourceVersion"] = str(int(meta.get("resourceVersion") or "0") + 1)

    def patch(self, name, patch):
        """Returns (status, body)."""
        with self.lock:
            if self.before_patch:
                hook, self.before_patch = self.before_patch, None
                hook(self)
            if name not in self.nodes:
                return 404, status(404, "NotFound", 'nodes "%s" not found' % name)
            current = self.nodes[name]
            wanted_rv = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted_rv is not None and wanted_rv != current["metadata"].get("resourceVersion"):
                return 409, status(409, "Conflict", 'Operation cannot be fulfilled on nodes "%s": the object has '
                                   "been modified; please apply your changes to the latest version and try again" % name)
            new = merge_patch(current, patch)
            new["metadata"]["resourceVersion"] = current["metadata"].get("resourceVersion")
            self.nodes[name] = new
            self.bump(name)
            return 200, new


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class FakeNodeApi:
    """The ``api`` interface of node_ownership.converge over a Store (unit tests)."""

    def __init__(self, store):
        self.store = store

    def list_nodes(self):
        self.store.requests.append(("LIST", None))
        return [copy.deepcopy(n) for n in self.store.nodes.values()]

    def get_node(self, name):
        self.store.requests.append(("GET", name))
        return copy.deepcopy(self.store.nodes[name])

    def patch_node(self, name, patch):
        from ansible_collections.gpufleet.k8s.plugins.module_utils.node_ownership import Conflict
        self.store.requests.append(("PATCH", name, copy.deepcopy(patch)))
        code, _body = self.store.patch(name, json.loads(json.dumps(patch)))
        if code == 409:
            raise Conflict(name)
        assert code == 200, _body


DISCOVERY = {
    "/version": {"major": "1", "minor": "28", "gitVersion": "v1.28.15", "gitCommit": "841856557ef0f6a399096c42635d114d6f2cf7f4",
                 "gitTreeState": "clean", "buildDate": "2024-10-22T20:28:14Z", "goVersion": "go1.22.8", "compiler": "gc",
                 "platform": "linux/amd64"},
    "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
         "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}},
        {"name": "batch", "versions": [{"groupVersion": "batch/v1", "version": "v1"}],
         "preferredVersion": {"groupVersion": "batch/v1", "version": "v1"}}]},
    "/apis/batch/v1": {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "batch/v1", "resources": [
        {"name": "jobs", "singularName": "job", "namespaced": True, "kind": "Job",
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}]},
    "/apis/apps/v1": {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1", "resources": [
        {"name": "daemonsets", "singularName": "daemonset", "namespaced": True, "kind": "DaemonSet",
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["ds"]}]},
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
         "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
         "shortNames": ["no"]},
        {"name": "namespaces", "singularName": "namespace", "namespaced": False, "kind": "Namespace",
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["ns"]},
        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["po"]},
        {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event",
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["ev"]}]},
}


class FakeApiServer:
    """A tiny HTTP server on 127.0.0.1 serving discovery and /api/v1/nodes from a Store, recording
    every request (method, path, content type, body). A stand-in: it is not a kube-apiserver."""

    def __init__(self, nodes, daemonsets=(), admission=None):
        """``admission(job) -> (pods, events, job_status)``: what the cluster does with a created Job
        (the tests decide: e.g. a Pod Security check, an image that cannot be pulled)."""
        self.store = Store(nodes)
        store = self.store
        daemonsets = [copy.deepcopy(d) for d in daemonsets]
        objects = self.objects = {}  # (kind plural, namespace, name) -> object

        def collection(path):
            m = re.match(r"^/api/v1/namespaces(?:/([^/]+))?$", path)
            if m:
                return ("namespaces", None, m.group(1))
            m = re.match(r"^/api/v1/namespaces/([^/]+)/(pods|events)(?:/([^/]+))?$", path)
            if m:
                return (m.group(2), m.group(1), m.group(3))
            m = re.match(r"^/apis/batch/v1/namespaces/([^/]+)/jobs(?:/([^/]+))?$", path)
            if m:
                return ("jobs", m.group(1), m.group(2))
            return None

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args):
                pass

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _record(self, body=None):
                store.requests.append({"method": self.command, "path": self.path,
                                       "content_type": self.headers.get("Content-Type"), "body": body})

            def do_GET(self):
                self._record()
                path = self.path.split("?")[0]
                if path != "/" and path.endswith("/"):
                    path = path[:-1]
                if path in DISCOVERY:
                    return self._send(200, DISCOVERY[path])
                coll = collection(path)
                if coll and coll[2]:
                    obj = objects.get(coll)
                    if obj is None:
                        return self._send(404, status(404, "NotFound", '%s "%s" not found' % (coll[0], coll[2])))
                    return self._send(200, obj)
                if coll:
                    query = self.path.partition("?")[2]
                    items = [o for (k, ns, _n), o in sorted(objects.items()) if k == coll[0] and ns == coll[1]]
                    if "labelSelector=gpufleet.io%2Fvalidate" in query or "labelSelector=gpufleet.io/validate" in query:
                        items = [o for o in items if "gpufleet.io/validate" in (o["metadata"].get("labels") or {})]
                    return self._send(200, {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items})
                if path == "/api/v1/pods":  # drain lists the pods of a node: the stand-in runs none
                    return self._send(200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []})
                if path == "/apis/apps/v1/daemonsets":
                    query = self.path.partition("?")[2]
                    items = [d for d in daemonsets
                             if "managed-by%3Dgpufleet" not in query and "managed-by=gpufleet" not in query
                             or (d["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "gpufleet"]
                    return self._send(200, {"kind": "DaemonSetList", "apiVersion": "apps/v1",
                                            "metadata": {"resourceVersion": "999"}, "items": items})
                if path == "/api/v1/nodes":
                    with store.lock:
                        items = [copy.deepcopy(n) for n in store.nodes.values()]
                    return self._send(200, {"kind": "NodeList", "apiVersion": "v1",
                                            "metadata": {"resourceVersion": "999"}, "items": items})
                match = re.match(r"^/api/v1/nodes/([^/]+)$", path)
                if match and match.group(1) in store.nodes:
                    return self._send(200, store.nodes[match.group(1)])
                return self._send(404, status(404, "NotFound", "the server could not find the requested resource"))

            def do_PATCH(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"null")
                self._record(body)
                match = re.match(r"^/api/v1/nodes/([^/?]+)", self.path)
                if not match:
                    return self._send(404, status(404, "NotFound", "not found"))
                ctype = self.headers.get("Content-Type")
                if ctype == "application/strategic-merge-patch+json" and not (body.get("spec") or {}).get("taints"):
                    pass  # same as a merge patch for maps (cordon, annotations); a taint list would merge by key
                elif ctype != "application/merge-patch+json":
                    return self._send(415, status(415, "UnsupportedMediaType", "stand-in: %s not served" % ctype))
                code, out = store.patch(match.group(1), body)
                return self._send(code, out)

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw or b"null")
                self._record(body)
                coll = collection(self.path.split("?")[0])
                if not coll or coll[2] or coll[0] not in ("namespaces", "jobs"):
                    return self._send(405, status(405, "MethodNotAllowed", "stand-in refuses this POST"))
                name = body["metadata"]["name"]
                key = (coll[0], coll[1], name)
                if key in objects:
                    return self._send(409, status(409, "AlreadyExists", '%s "%s" already exists' % (coll[0], name)))
                obj = copy.deepcopy(body)
                obj["metadata"].update({"resourceVersion": "1", "uid": "uid-" + name})
                if coll[1]:
                    obj["metadata"]["namespace"] = coll[1]
                objects[key] = obj
                if coll[0] == "jobs" and admission:
                    pods, events, job_status = admission(obj, objects.get(("namespaces", None, coll[1])))
                    obj["status"] = job_status
                    for pod in pods:
                        objects[("pods", coll[1], pod["metadata"]["name"])] = pod
                    for ev in events:
                        objects[("events", coll[1], ev["metadata"]["name"])] = ev
                return self._send(201, obj)

            def do_DELETE(self):
                self._record()
                coll = collection(self.path.split("?")[0])
                if not coll or not coll[2] or coll not in objects:
                    return self._send(404 if coll else 405, status(404, "NotFound", "not found"))
                obj = objects.pop(coll)
                if coll[0] == "namespaces":  # the namespace takes its objects with it
                    for key in [k for k in objects if k[1] == coll[2]]:
                        objects.pop(key)
                return self._send(200, obj)

            def _refuse(self):
                self._record()
                self._send(405, status(405, "MethodNotAllowed", "stand-in refuses %s" % self.command))

            do_PUT = _refuse

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *_exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def writes(self):
        return [r for r in self.store.requests if isinstance(r, dict) and r["method"] not in ("GET",)]
