"""What an apply loop that failed part-way did and did not do (module_utils/kube/cluster_access.apply_problem),
over result shapes kubernetes.core.k8s returns; the real cases run in tests/integration/test_cp_faults.py."""
from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.cluster_access import apply_problem


def item(kind, name):
    return {"kind": kind, "metadata": {"name": name}}


OK = {"changed": True, "result": {}, "item": item("Namespace", "ns")}
REFUSED = {"failed": False, "failed_when_result": False, "item": item("DaemonSet", "dcgm-exporter"),
           "msg": 'Failed to apply object: {"kind":"Status","apiVersion":"v1","status":"Failure","message":'
                  '"daemonsets.apps \\"dcgm-exporter\\" is forbidden: exceeded quota: q","code":403}'}
LOST = {"failed": False, "item": item("Service", "dcgm-exporter"),
        "msg": "HTTPSConnectionPool(host='127.0.0.1', port=1): Max retries exceeded with url: /api/v1 (Caused by "
               "NewConnectionError('Failed to establish a new connection: [Errno 111] Connection refused'))"}


def test_nothing_failed_says_nothing():
    assert apply_problem([OK, dict(OK, changed=False)], "cluster/x") == ""
    assert apply_problem([], "cluster/x") == ""


def test_refused_and_lost_objects_are_named_with_the_servers_words():
    msg = apply_problem([OK, REFUSED, LOST], "cluster/dcgm-exporter")
    assert msg.startswith("Applying cluster/dcgm-exporter stopped part-way: 1 of 3 object(s) applied or already "
                          "as rendered (Namespace/ns)")
    assert 'refused by the API server: DaemonSet/dcgm-exporter: daemonsets.apps "dcgm-exporter" is forbidden: ' \
           "exceeded quota: q" in msg
    assert "not applied because the cluster stopped answering (the connection was refused" in msg
    assert "Service/dcgm-exporter" in msg and "Max retries" not in msg
    assert msg.endswith("run the same command again; it applies what is missing and changes nothing else.")


class _GoneServer(object):
    """A cluster that stopped answering: every request is refused (what api_server.Server raises then)."""

    def __init__(self):
        self.calls = []

    def get(self, path, query=None):
        from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.api_server import Lost
        self.calls.append(("GET", path))
        raise Lost("HTTPSConnectionPool(host='127.0.0.1', port=6443): Max retries exceeded with url: %s (Caused by "
                   "NewConnectionError(\"Failed to establish a new connection: [Errno 111] Connection refused\"))" % path)

    request = None  # nothing may be written


def test_a_prune_only_run_that_loses_the_cluster_says_so_clearly():
    """Nothing rendered for a component (its prune alone runs) and the cluster stops answering at the read of
    its record: one clear message, not the client's retry text (seen on the real control plane when the API
    server stopped between two components)."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.apply_run import run_tree
    server = _GoneServer()
    out = run_tree(server, "cluster/node-feature-discovery", [], state="present", workers=1)
    assert out["failed"] and not out["changed"] and out["pruned"] == []
    assert server.calls == [("GET", "/api/v1/namespaces/gpufleet-system/secrets/gpufleet-cluster-node-feature-discovery")]
    assert out["msg"].startswith("cluster/node-feature-discovery stopped before anything was applied or deleted: the "
                                 "cluster stopped answering (the connection was refused")
    assert "Secret gpufleet-system/gpufleet-cluster-node-feature-discovery" in out["msg"]
    assert "run the same command again" in out["msg"]
    assert "Max retries exceeded" not in out["msg"]
