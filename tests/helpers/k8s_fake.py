"""An in-memory Node store for the unit tests of module_utils/pools/node_ownership.py, kept for one fault the
real API server cannot be made to produce on cue: a concurrent writer changing a Node between gpufleet's
read and its patch (``Store.before_patch``), which the 409 Conflict re-read/re-plan path must survive.
Everything else that talks to Kubernetes is tested on the real control plane (tests/helpers/controlplane.py).

These reproduce the documented behaviour that matters here,
nothing more: JSON merge patch (RFC 7386: null removes a key, a list replaces the whole list; a
strategic merge patch is taken only where it means the same: maps without a taint list) and
the resourceVersion precondition (a patch carrying metadata.resourceVersion that differs from the
stored one is refused with 409 Conflict; every write bumps the resourceVersion). Nodes are served
in the shape the v1.28 API returns them (tests/fixtures/k8s/nodes.json: managedFields, kubelet
labels, the controller-manager's taints with timeAdded).
"""
import copy
import json
import threading


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
        from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.node_ownership import Conflict
        self.store.requests.append(("PATCH", name, copy.deepcopy(patch)))
        code, _body = self.store.patch(name, json.loads(json.dumps(patch)))
        if code == 409:
            raise Conflict(name)
        assert code == 200, _body
