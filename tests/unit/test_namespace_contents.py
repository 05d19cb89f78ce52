"""A namespace gpufleet created is deleted only while it holds nothing gpufleet did not create (issue 39):
disabling monitoring deleted gpufleet-monitoring with a user's ConfigMap in it. Both ways a namespace goes -
the component's delete (``*_state: absent``, namespace_ownership.guard) and the ApplySet prune (monitoring off,
namespace_ownership.prunable) - read what the namespace holds first (every listable namespaced resource the
server's discovery names) and keep it, naming up to ten objects, when something there is not gpufleet's.
The API server is a table of paths here; tests/integration/test_cp_namespace_ownership.py runs the real one."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.model import namespace_ownership as nso

NS_NAME = "gpufleet-monitoring"
COMPONENT = "cluster/gpu-monitoring"
GF = {"app.kubernetes.io/managed-by": "gpufleet"}
NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS_NAME, "labels": dict(GF)}}
LIVE_NS = {"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": NS_NAME, "labels": dict(GF), "annotations": {nso.CREATED_BY: COMPONENT}}}
DASHBOARD = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gpufleet-gpu-dashboard",
                                                                  "namespace": NS_NAME, "labels": dict(GF)}}

CORE = {"resources": [
    {"name": "configmaps", "kind": "ConfigMap", "namespaced": True, "verbs": ["list", "get"]},
    {"name": "secrets", "kind": "Secret", "namespaced": True, "verbs": ["list"]},
    {"name": "serviceaccounts", "kind": "ServiceAccount", "namespaced": True, "verbs": ["list"]},
    {"name": "pods", "kind": "Pod", "namespaced": True, "verbs": ["list"]},
    {"name": "pods/log", "kind": "Pod", "namespaced": True, "verbs": ["get"]},
    {"name": "events", "kind": "Event", "namespaced": True, "verbs": ["list"]},
    {"name": "endpoints", "kind": "Endpoints", "namespaced": True, "verbs": ["list"]},
    {"name": "bindings", "kind": "Binding", "namespaced": True, "verbs": ["create"]},
    {"name": "nodes", "kind": "Node", "namespaced": False, "verbs": ["list"]}]}
GROUPS = {"groups": [
    {"name": "apps", "preferredVersion": {"groupVersion": "apps/v1"}},
    {"name": "monitoring.coreos.com", "preferredVersion": {"groupVersion": "monitoring.coreos.com/v1"}},
    {"name": "metrics.k8s.io", "preferredVersion": {"groupVersion": "metrics.k8s.io/v1beta1"}}]}
APPS = {"resources": [{"name": "deployments", "kind": "Deployment", "namespaced": True, "verbs": ["list"]}]}
MON = {"resources": [{"name": "prometheusrules", "kind": "PrometheusRule", "namespaced": True, "verbs": ["list"]}]}


def obj(kind, name, labels=None, **extra):
    return dict({"kind": kind, "metadata": dict({"name": name, "namespace": NS_NAME, "labels": labels or {}},
                                                 **extra.pop("meta", {}))}, **extra)


# what Kubernetes and gpufleet put there: none of it makes the namespace someone else's
BASELINE = {
    "configmaps": [obj("ConfigMap", "kube-root-ca.crt"), obj("ConfigMap", "gpufleet-gpu-dashboard", GF)],
    "serviceaccounts": [obj("ServiceAccount", "default")],
    "secrets": [obj("Secret", "default-token-x", type="kubernetes.io/service-account-token",
                    meta={"annotations": {"kubernetes.io/service-account.name": "default"}})],
    "pods": [obj("Pod", "grafana-7c9-abc", meta={"ownerReferences": [{"kind": "ReplicaSet", "name": "grafana-7c9"}]})],
    "events": [obj("Event", "x.1")], "endpoints": [obj("Endpoints", "svc")],
    "deployments": [], "prometheusrules": [obj("PrometheusRule", "gpufleet-gpu-alerts", GF)],
}


def server(extra=None, failing=()):
    """A ``get`` over discovery and the lists of NS_NAME; ``extra`` adds objects per resource; ``failing``
    names paths that answer with an error. Records the paths asked."""
    lists = dict((k, list(v)) for k, v in BASELINE.items())
    for res, items in (extra or {}).items():
        lists[res] = lists.get(res, []) + items
    asked = []

    def get(path, query=None):
        asked.append(path)
        if path in failing:
            raise RuntimeError("403 Forbidden")
        if path == "/api/v1/namespaces/" + NS_NAME:
            return LIVE_NS
        if path.endswith("/secrets") and "gpufleet-system" in path:
            return {"items": []}
        docs = {"/api/v1": CORE, "/apis": GROUPS, "/apis/apps/v1": APPS, "/apis/monitoring.coreos.com/v1": MON}
        if path in docs:
            return docs[path]
        if "metrics.k8s.io" in path:
            raise AssertionError("metrics.k8s.io is a view of the pods: never listed")
        prefix = "/namespaces/%s/" % NS_NAME
        assert prefix in path, path
        return {"items": lists[path.split(prefix)[1]]}
    get.asked = asked
    return get


USERS_CM = obj("ConfigMap", "user-settings")
MANY = [obj("ConfigMap", "user-%02d" % i) for i in range(12)]

CASES = [
    # (case, extra objects, failing paths, deleted?, fragment of the warning)
    ("only gpufleet's and Kubernetes' objects", {}, (), True, "is deleted with everything in it"),
    ("a user's ConfigMap", {"configmaps": [USERS_CM]}, (), False,
     "Namespace gpufleet-monitoring is kept although gpufleet created it: it holds objects gpufleet did not create: "
     "ConfigMap/user-settings. Only cluster/gpu-monitoring's objects there are removed; delete the namespace yourself "
     "once those can go (kubectl delete namespace gpufleet-monitoring)"),
    ("a user's Deployment (its pods have an owner: the Deployment is named)",
     {"deployments": [obj("Deployment", "grafana")]}, (), False, "did not create: Deployment/grafana."),
    ("a user's custom resource", {"prometheusrules": [obj("PrometheusRule", "my-rules")]}, (), False,
     "PrometheusRule/my-rules"),
    ("twelve of the user's objects: ten named", {"configmaps": MANY}, (), False,
     "ConfigMap/user-09 and 2 more."),
    ("a resource that cannot be listed", {}, ("/apis/apps/v1/namespaces/gpufleet-monitoring/deployments",), False,
     "what it holds could not all be read (deployments.apps (403 Forbidden))"),
    ("a group whose discovery fails", {}, ("/apis/monitoring.coreos.com/v1",), False,
     "/apis/monitoring.coreos.com/v1 (403 Forbidden)"),
]


@pytest.mark.parametrize("case, extra, failing, deleted, fragment", CASES, ids=[c[0] for c in CASES])
def test_delete_keeps_a_namespace_holding_what_gpufleet_did_not_create(case, extra, failing, deleted, fragment):
    out, said = nso.guard(server(extra, failing), COMPONENT, [NS, DASHBOARD], "absent")
    assert (NS in out) is deleted
    assert DASHBOARD in out    # gpufleet's own objects there go either way
    assert len(said) == 1 and fragment in said[0], said


@pytest.mark.parametrize("case, extra, failing, deleted, fragment", CASES, ids=[c[0] for c in CASES])
def test_prune_keeps_it_the_same_way(case, extra, failing, deleted, fragment):
    live_dashboard = dict(DASHBOARD, metadata=dict(DASHBOARD["metadata"]))
    notes = []
    doomed = nso.prunable([LIVE_NS, live_dashboard], COMPONENT, server(extra, failing), notes)
    assert (LIVE_NS in doomed) is deleted and live_dashboard in doomed
    assert bool(notes) is not deleted
    if not deleted:
        assert fragment in notes[0]


def test_the_contents_are_read_only_to_delete_a_namespace():
    get = server({"configmaps": [USERS_CM]})
    out, said = nso.guard(get, COMPONENT, [NS, DASHBOARD], "present")
    assert get.asked == ["/api/v1/namespaces/" + NS_NAME]


@pytest.mark.parametrize("item, kind, group, theirs", [
    (obj("ConfigMap", "kube-root-ca.crt"), "ConfigMap", "", True),
    (obj("ConfigMap", "openshift-service-ca.crt"), "ConfigMap", "", True),
    (obj("ServiceAccount", "default"), "ServiceAccount", "", True),
    (obj("ServiceAccount", "mine"), "ServiceAccount", "", False),
    (obj("Secret", "t", type="kubernetes.io/service-account-token"), "Secret", "", False),  # no SA named
    (obj("Secret", "t", type="Opaque", meta={"annotations": {"kubernetes.io/service-account.name": "x"}}),
     "Secret", "", False),
    (obj("Lease", "leader"), "Lease", "coordination.k8s.io", True),
    (obj("ClusterServiceVersion", "gpu-operator.v25", {"operators.coreos.com/gpu-operator.nvidia-gpu-operator": ""}),
     "ClusterServiceVersion", "operators.coreos.com", True),
    (obj("ConfigMap", "mine", {"app.kubernetes.io/managed-by": "Helm"}), "ConfigMap", "", False),
])
def test_what_counts_as_gpufleets_or_kubernetes(item, kind, group, theirs):
    assert nso.gpufleets(item, group, kind) is theirs
