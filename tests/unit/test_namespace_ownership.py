"""Issue 30 item 5: gpufleet labels, relaxes and deletes only namespaces it created
(module_utils/model/namespace_ownership.py). Tables over (rendered objects, live Namespace, state) -> (what is
applied or deleted, what the run says); the preflight refusal of system namespaces per variable.
The real control plane runs the same decisions in tests/integration/test_cp_namespace_ownership.py."""
import copy

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.model import namespace_ownership as nso
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.addons import namespace
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight

COMPONENT = "cluster/dcgm-exporter"
NS = namespace("team-a")  # what the add-on roles render: privileged Pod Security, managed-by gpufleet
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team-a"}}
DS = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "namespace": "team-a"}}


def live(annotations=None, labels=None, managers=("gpufleet",)):
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team-a", "annotations": dict(annotations or {}),
                         "labels": dict({"kubernetes.io/metadata.name": "team-a"}, **(labels or {})),
                         "managedFields": [{"manager": m, "operation": "Apply" if m == "gpufleet" else "Update"}
                                           for m in managers]}}


OURS = live({nso.CREATED_BY: COMPONENT})
OTHER = live({nso.CREATED_BY: "cluster/device-plugin"})
LEGACY = live(labels={"app.kubernetes.io/managed-by": "gpufleet"})
# a user's namespace that an older gpufleet relabelled: the creator's entry is still there
RELABELLED = live(labels={"app.kubernetes.io/managed-by": "gpufleet"}, managers=("gpufleet", "kubectl-create"))
USERS = live(managers=("kubectl-create",))
USERS_PRIVILEGED = live(labels={"pod-security.kubernetes.io/enforce": "privileged",
                                "pod-security.kubernetes.io/audit": "privileged",
                                "pod-security.kubernetes.io/warn": "privileged"}, managers=("kubectl-create",))
# created by someone with gpufleet's label by hand, but not by gpufleet's field manager
LABELLED_BY_HAND = live(labels={"app.kubernetes.io/managed-by": "gpufleet"}, managers=("kubectl-client-side-apply",))


@pytest.mark.parametrize("case, live_ns, status", [
    ("does not exist", None, nso.NEW),
    ("created by this component", OURS, nso.OURS),
    ("created by another component", OTHER, nso.OTHER),
    ("an older gpufleet's (label, only gpufleet's field manager)", LEGACY, nso.LEGACY),
    ("a user's namespace an older gpufleet relabelled", RELABELLED, nso.FOREIGN),
    ("a user's namespace", USERS, nso.FOREIGN),
    ("gpufleet's label set by hand", LABELLED_BY_HAND, nso.FOREIGN),
    ("only gpufleet's field manager but no gpufleet label", live(), nso.FOREIGN),
])
def test_owner(case, live_ns, status):
    assert nso.owner(live_ns, COMPONENT)[0] == status, case


def annotated_ns():
    out = copy.deepcopy(NS)
    out["metadata"]["annotations"] = {nso.CREATED_BY: COMPONENT}
    return out


# (case, live Namespace, state, objects that go on, a fragment of each warning)
DECISIONS = [
    ("apply, new: created and annotated", None, "present", [annotated_ns(), CM, DS], []),
    ("apply, ours: annotation kept", OURS, "present", [annotated_ns(), CM, DS], []),
    ("apply, older gpufleet's: adopted", LEGACY, "present", [annotated_ns(), CM, DS], []),
    ("apply, another component's: left alone", OTHER, "present", [CM, DS],
     ["Namespace team-a was created by gpufleet's cluster/device-plugin, not cluster/dcgm-exporter: left as it is"]),
    ("apply, a user's: not labelled, labels named", USERS, "present", [CM, DS],
     ["Namespace team-a was not created by gpufleet (no annotation gpufleet.io/created-by): gpufleet does not label "
      "it and will not delete it. cluster/dcgm-exporter applied only its objects there. Its Pod Security labels are "
      "your responsibility: cluster/dcgm-exporter needs pod-security.kubernetes.io/audit=privileged, "
      "pod-security.kubernetes.io/enforce=privileged, pod-security.kubernetes.io/warn=privileged on it"]),
    ("apply, a user's with the labels already there: nothing to ask", USERS_PRIVILEGED, "present", [CM, DS],
     ["cluster/dcgm-exporter applied only its objects there."]),
    ("apply, relabelled by an older gpufleet: still the user's", RELABELLED, "present", [CM, DS],
     ["Namespace team-a was not created by gpufleet"]),
    ("delete, ours: deleted, said", OURS, "absent", [NS, CM, DS],
     ["Namespace team-a is deleted with everything in it: gpufleet created it (annotation gpufleet.io/created-by: "
      "cluster/dcgm-exporter)"]),
    ("delete, older gpufleet's: deleted, said", LEGACY, "absent", [NS, CM, DS],
     ["Namespace team-a is deleted with everything in it: gpufleet created it (an earlier gpufleet version"]),
    ("delete, missing: nothing to say", None, "absent", [NS, CM, DS], []),
    ("delete, a user's: kept, only gpufleet's objects", USERS, "absent", [CM, DS],
     ["Namespace team-a is kept with everything else in it: gpufleet did not create it (no annotation "
      "gpufleet.io/created-by); only cluster/dcgm-exporter's objects there are removed"]),
    ("delete, relabelled by an older gpufleet: kept", RELABELLED, "absent", [CM, DS],
     ["Namespace team-a is kept with everything else in it"]),
    ("delete, another component's: kept", OTHER, "absent", [CM, DS],
     ["Namespace team-a is kept with everything else in it: gpufleet's cluster/device-plugin created it"]),
]


@pytest.mark.parametrize("case, live_ns, state, objects, notes", DECISIONS, ids=[d[0] for d in DECISIONS])
def test_decide(case, live_ns, state, objects, notes):
    rendered = [NS, CM, DS]
    before = copy.deepcopy(rendered)
    out, said = nso.decide(rendered, {"team-a": live_ns}, COMPONENT, state)
    assert out == objects
    assert len(said) == len(notes), said
    for fragment, note in zip(notes, said):
        assert fragment in note
    assert rendered == before  # the rendered objects are never changed in place


def test_a_user_namespace_with_the_labels_gets_no_label_request():
    _, said = nso.decide([NS, CM], {"team-a": USERS_PRIVILEGED}, COMPONENT, "present")
    assert "needs" not in said[0]


def test_guard_reads_each_rendered_namespace_once_and_errors_propagate():
    asked = []

    def get(path):
        asked.append(path)
        return USERS

    out, _ = nso.guard(get, COMPONENT, [NS, CM, copy.deepcopy(NS)], "present")
    assert asked == ["/api/v1/namespaces/team-a"]
    assert out == [CM]

    def down(path):
        raise RuntimeError("connection refused")
    with pytest.raises(RuntimeError):
        nso.guard(down, COMPONENT, [NS, CM], "absent")


def test_guard_reads_nothing_without_a_namespace_object():
    def get(path):
        raise AssertionError("read " + path)
    assert nso.guard(get, COMPONENT, [CM, DS], "absent") == ([CM, DS], [])


def test_prune_keeps_namespaces_this_component_did_not_create():
    candidates = [OURS, OTHER, USERS, RELABELLED, LEGACY, CM]
    assert nso.prunable(candidates, COMPONENT) == [OURS, LEGACY, CM]


# ------------------------------------------------------------------------------------------------
# Preflight: system namespaces refused per variable, naming it and what to use
# ------------------------------------------------------------------------------------------------

SYSTEM = ["kube-system", "kube-public", "kube-node-lease", "default", "kube-anything", "openshift",
          "openshift-operators", "openshift-monitoring", "openshift-nfd", "gpufleet-system"]


def params(platform="kubeadm", mode="standalone", **extra):
    return {"platform": platform, "cluster_name": "c1", "addons_mode": mode, "apply": False,
            "pools": [{"name": "p", "gpu_type": "l4", "max_nodes": 1}], "extra": extra}


@pytest.mark.parametrize("var, example", [
    ("nvidia_device_plugin_namespace", "nvidia-device-plugin"),
    ("dcgm_exporter_namespace", "nvidia-dcgm-exporter"),
    ("gpu_operator_namespace", "gpu-operator"),
    ("gpu_monitoring_namespace", "gpufleet-monitoring"),
    ("gpu_validate_namespace", "gpufleet-validate"),
])
@pytest.mark.parametrize("name", SYSTEM)
def test_preflight_refuses_a_system_namespace(var, example, name):
    mode = "operator" if var == "gpu_operator_namespace" else "standalone"
    errors = run_preflight(params(mode=mode, **{var: name}))[0]
    mine = [e for e in errors if e.startswith(var + ": ")]
    assert len(mine) == 1, errors
    assert mine[0].startswith("%s: %r is " % (var, name))
    assert "use a namespace of its own that gpufleet creates and owns (e.g. %s), not default, kube-*, openshift, " \
           "openshift-* or gpufleet-system" % example in mine[0]


@pytest.mark.parametrize("var", nso.NAMESPACE_VARS)
@pytest.mark.parametrize("name", ["team-a", "monitoring", "kubeflow", "openshiftish", "my-kube-system"])
def test_preflight_accepts_other_namespaces(var, name):
    mode = "operator" if var == "gpu_operator_namespace" else "standalone"
    errors = run_preflight(params(mode=mode, **{var: name}))[0]
    assert not [e for e in errors if e.startswith(var + ": ")], errors


def test_openshift_preset_namespaces_are_accepted():
    """gpufleet's own OpenShift choices (nvidia-gpu-operator, openshift-nfd) are not inputs: auto passes."""
    errors = run_preflight(params(platform="openshift", mode="operator"))[0]
    assert not [e for e in errors if "namespace" in e], errors


def test_exporter_namespace_to_probe_may_be_a_system_one():
    """gpu_validate_exporter_namespace names where an exporter already runs: read only, never created."""
    errors = run_preflight(params(gpu_validate_exporter_namespace="kube-system"))[0]
    assert not [e for e in errors if e.startswith("gpu_validate_exporter_namespace")], errors
def test_records_namespace_is_the_apply_tree_parent_namespace():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.apply_tree import PARENT_NAMESPACE
    assert nso.RECORDS_NAMESPACE == PARENT_NAMESPACE


# ------------------------------------------------------------------------------------------------
# The hook in the tree apply (module_utils/kube/apply_run.py run_tree): what reaches the API server
# ------------------------------------------------------------------------------------------------

class FakeServer(object):
    """Just enough of apply_run.Server for run_tree without prune: live objects by path, requests recorded."""

    PATHS = {"Namespace": "/api/v1/namespaces", "ConfigMap": "/api/v1/namespaces/%s/configmaps"}

    def __init__(self, live):
        self.live = dict(live)
        self.calls = []

    def collection(self, group_version, kind, namespace=None):
        path = self.PATHS[kind]
        return path % namespace if "%s" in path else path

    def get(self, path, query=None):
        return copy.deepcopy(self.live.get(path))

    def request(self, method, path, body=None, query=None, content_type=None):
        self.calls.append((method, path, copy.deepcopy(body)))
        if method == "DELETE":
            return self.live.pop(path, None) or {}
        answer = copy.deepcopy(body)
        answer.setdefault("metadata", {})["resourceVersion"] = str(len(self.calls))
        self.live[path] = answer
        return answer


def run_tree_on(live_ns, state):
    from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.apply_run import run_tree
    server = FakeServer({"/api/v1/namespaces/team-a": live_ns} if live_ns else {})
    out = run_tree(server, COMPONENT, [NS, CM], state=state, prune=False, workers=1)
    return out, [(method, path) for method, path, _ in server.calls], server


def test_tree_apply_never_writes_a_users_namespace_and_says_so():
    out, calls, _ = run_tree_on(USERS, "present")
    assert not out.get("failed"), out
    assert calls == [("PATCH", "/api/v1/namespaces/team-a/configmaps/c")]
    assert "Namespace team-a was not created by gpufleet" in out["warnings"][0]


def test_tree_delete_keeps_a_users_namespace_and_removes_gpufleets_objects():
    out, calls, server = run_tree_on(USERS, "absent")
    assert not out.get("failed"), out
    assert calls == []  # the ConfigMap was not there; above all, no DELETE of the Namespace
    assert "/api/v1/namespaces/team-a" in server.live
    assert "is kept with everything else in it" in out["warnings"][0]


def test_tree_apply_creates_the_namespace_with_its_creator_and_deletes_it_on_absent():
    out, calls, server = run_tree_on(None, "present")
    assert calls[0][0:2] == ("PATCH", "/api/v1/namespaces/team-a")
    assert server.live["/api/v1/namespaces/team-a"]["metadata"]["annotations"] == {nso.CREATED_BY: COMPONENT}
    assert "warnings" not in out
    from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.apply_run import run_tree
    out = run_tree(server, COMPONENT, [NS, CM], state="absent", prune=False, workers=1)
    assert ("DELETE", "/api/v1/namespaces/team-a", None) in server.calls
    assert "is deleted with everything in it" in out["warnings"][0]


# ------------------------------------------------------------------------------------------------
# The validate stage's own namespace: created and deleted by the stage, so never one it did not create
# ------------------------------------------------------------------------------------------------

VALIDATE = "validate/gpu-validate"


@pytest.mark.parametrize("case, live_ns, refused", [
    ("does not exist", None, ""),
    ("left by an earlier run of the stage", live({nso.CREATED_BY: VALIDATE}), ""),
    ("a user's namespace", USERS, "gpufleet did not create it (no annotation gpufleet.io/created-by: "
                                  "validate/gpu-validate)"),
    ("an add-on's namespace", OURS, "gpufleet's cluster/dcgm-exporter created it"),
    ("relabelled by an older gpufleet", RELABELLED, "gpufleet did not create it"),
    ("an older gpufleet's apply", LEGACY, "gpufleet did not create it"),
])
def test_transient_namespace(case, live_ns, refused):
    problem = nso.transient_problem("gpu_validate_namespace", live_ns, VALIDATE)
    if not refused:
        assert problem == "", case
        return
    assert problem.startswith("gpu_validate_namespace: namespace 'team-a' exists and " + refused), problem
    assert "use a name that does not exist (e.g. the default gpufleet-validate)" in problem
    assert "kubectl delete namespace team-a" in problem


def test_transient_filter_reads_k8s_info_resources():
    from ansible_collections.gpufleet.k8s.plugins.filter.namespace_ownership import namespace_transient_problem
    assert namespace_transient_problem([], "gpu_validate_namespace", VALIDATE) == ""
    assert "exists and gpufleet did not create it" in namespace_transient_problem(
        [USERS], "gpu_validate_namespace", VALIDATE)


# ------------------------------------------------------------------------------------------------
# A gpufleet namespace two components share: deleted with the last component that has objects there
# ------------------------------------------------------------------------------------------------

def parent(component, namespaces):
    """An ApplySet parent Secret as module_utils/kube/apply_tree.py writes it."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.apply_tree import parent_object
    return parent_object(component, [("", "ConfigMap")], namespaces)


MONITORING = "cluster/gpu-monitoring"
CREATED_BY_MONITORING = live({nso.CREATED_BY: MONITORING})

SHARED = [
    # (case, live Namespace, the parents in gpufleet-system, Namespace deleted?, a fragment of the warning)
    ("ours, another component still has objects there", OURS,
     [parent(COMPONENT, ["team-a"]), parent(MONITORING, ["team-a"])], False,
     "Namespace team-a is kept: gpufleet's cluster/gpu-monitoring still has objects there (the namespace goes with "
     "the last of them); only cluster/dcgm-exporter's objects there are removed"),
    ("ours, the other component uses other namespaces", OURS,
     [parent(COMPONENT, ["team-a"]), parent(MONITORING, ["team-b"])], True,
     "Namespace team-a is deleted with everything in it: gpufleet created it (annotation"),
    ("ours, no records at all", OURS, [], True, "is deleted with everything in it"),
    ("another component's, which still uses it", CREATED_BY_MONITORING,
     [parent(COMPONENT, ["team-a"]), parent(MONITORING, ["team-a"])], False,
     "Namespace team-a is kept: gpufleet's cluster/gpu-monitoring still has objects there"),
    ("another component's, which no longer uses it: the last user deletes it", CREATED_BY_MONITORING,
     [parent(COMPONENT, ["team-a"])], True,
     "Namespace team-a is deleted with everything in it: gpufleet created it (gpufleet's cluster/gpu-monitoring, "
     "which no longer uses it)"),
    ("a user's, whatever the records say", USERS, [parent(COMPONENT, ["team-a"])], False,
     "gpufleet did not create it"),
]


@pytest.mark.parametrize("case, live_ns, parents, deleted, fragment", SHARED, ids=[c[0] for c in SHARED])
def test_shared_namespace_goes_with_its_last_user(case, live_ns, parents, deleted, fragment):
    out, said = nso.decide([NS, CM], {"team-a": live_ns}, COMPONENT, "absent", nso.namespace_users(parents))
    assert (NS in out) is deleted
    assert len(said) == 1 and fragment in said[0], said


def test_guard_reads_the_records_only_to_delete_a_gpufleet_namespace():
    asked = []

    def get(path, query=None):
        asked.append((path, query))
        if path.endswith("/secrets"):
            return {"items": [parent(MONITORING, ["team-a"])]}
        return OURS
    out, said = nso.guard(get, COMPONENT, [NS, CM], "absent")
    assert asked == [("/api/v1/namespaces/team-a", None),
                     ("/api/v1/namespaces/gpufleet-system/secrets",
                      {"labelSelector": "applyset.kubernetes.io/id,app.kubernetes.io/managed-by=gpufleet"})]
    assert out == [CM] and "still has objects there" in said[0]
    asked[:] = []
    nso.guard(get, COMPONENT, [NS, CM], "present")
    assert asked == [("/api/v1/namespaces/team-a", None)]


def test_prune_keeps_a_namespace_another_component_still_uses():
    def get(path, query=None):
        assert path == "/api/v1/namespaces/gpufleet-system/secrets"
        return {"items": [parent(COMPONENT, ["team-a"]), parent(MONITORING, ["team-a"])]}
    assert nso.prunable([OURS, CM], COMPONENT, get) == [CM]

    def unused(path, query=None):
        return {"items": [parent(COMPONENT, ["team-a"]), parent(MONITORING, ["team-b"])]}
    assert nso.prunable([OURS, CM], COMPONENT, unused) == [OURS, CM]

    def never(path, query=None):
        raise AssertionError("no Namespace of its own among the candidates: nothing to read")
    assert nso.prunable([USERS, CM], COMPONENT, never) == [CM]


def test_tree_apply_waits_for_a_namespace_being_deleted_then_creates_it_again():
    """An earlier run pruned the namespace and the namespace controller is still emptying it: the API server
    refuses new objects in it ("unable to create new content in namespace ... because it is being terminated",
    seen on the real control plane when a disabled add-on was enabled again at once). The apply waits until the
    namespace is gone, then creates it and its objects; without the wait the ConfigMap would be refused."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.apply_run import TreeApply

    class Terminating(FakeServer):
        def __init__(self, live, reads_until_gone):
            FakeServer.__init__(self, live)
            self.reads_until_gone = reads_until_gone

        def get(self, path, query=None):
            if path == "/api/v1/namespaces/team-a" and path in self.live:
                self.reads_until_gone -= 1
                if self.reads_until_gone <= 0:
                    del self.live[path]  # the namespace controller finished
            return FakeServer.get(self, path, query)

        def request(self, method, path, body=None, query=None, content_type=None):
            ns = "/api/v1/namespaces/team-a"
            dying = (self.live.get(ns) or {}).get("metadata", {}).get("deletionTimestamp")
            if method == "PATCH" and path.startswith(ns + "/") and dying:
                from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.api_server import ApiError
                raise ApiError(403, "unable to create new content in namespace team-a because it is being terminated")
            answer = FakeServer.request(self, method, path, body, query, content_type)
            if path == ns and dying:  # an apply cannot take a deletion back
                answer["metadata"]["deletionTimestamp"] = dying
            return answer

    dying = {"metadata": {"name": "team-a", "annotations": {nso.CREATED_BY: COMPONENT},
                          "deletionTimestamp": "2026-12-03T01:00:00Z"}}
    server = Terminating({"/api/v1/namespaces/team-a": dying}, reads_until_gone=3)
    results = TreeApply(server, COMPONENT, workers=1, poll=0).apply([NS, CM])
    assert [r.get("msg") for r in results] == [None, None], results
    assert [(m, p) for m, p, _ in server.calls] == [("PATCH", "/api/v1/namespaces/team-a"),
                                                  ("PATCH", "/api/v1/namespaces/team-a/configmaps/c")]
    assert "deletionTimestamp" not in server.live["/api/v1/namespaces/team-a"]["metadata"]

    # still being deleted when the wait ends: the namespace is named, with what to do
    server = Terminating({"/api/v1/namespaces/team-a": dying}, reads_until_gone=10 ** 6)
    results = TreeApply(server, COMPONENT, workers=1, poll=0, namespace_timeout=0).apply([NS, CM])
    assert "Namespace team-a is still being deleted after 0 s" in results[0]["msg"]
    assert server.calls == [] or all(p != "/api/v1/namespaces/team-a" for _, p, _ in server.calls)
