"""The decisions of the whole-tree apply (module_utils/kube/apply_tree.py): dependency order, what a dry-run answer
changes, and the ApplySet bookkeeping that scopes the prune. The requests themselves run against a real
kube-apiserver in tests/integration/test_cp_apply_tree.py."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube import apply_tree as t
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError


def obj(api_version, kind, name, namespace=None, **extra):
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return dict({"apiVersion": api_version, "kind": kind, "metadata": meta}, **extra)


CRD = obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "nodefeaturerules.nfd.k8s-sigs.io")
NS = obj("v1", "Namespace", "nvidia-device-plugin")
SA = obj("v1", "ServiceAccount", "nvidia-device-plugin", "nvidia-device-plugin")
DS = obj("apps/v1", "DaemonSet", "nvidia-device-plugin", "nvidia-device-plugin")
CR = obj("rbac.authorization.k8s.io/v1", "ClusterRole", "gfd")
RULE = obj("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule", "gpu")
NS2 = obj("v1", "Namespace", "nvidia-dcgm-exporter")


def names(levels):
    return [[o["kind"] for o in level] for level in levels]


@pytest.mark.parametrize("given, applied", [
    ([DS, NS, SA], [["Namespace"], ["DaemonSet", "ServiceAccount"]]),
    ([RULE, DS, NS, CRD], [["CustomResourceDefinition"], ["Namespace"], ["NodeFeatureRule", "DaemonSet"]]),
    ([CR], [["ClusterRole"]]),
    ([NS2, NS], [["Namespace", "Namespace"]]),
    ([], []),
])
def test_levels_put_crds_then_namespaces_then_the_rest_keeping_the_given_order(given, applied):
    assert names(t.levels(given)) == applied


def test_delete_order_is_the_apply_order_reversed():
    assert names(t.delete_levels([RULE, DS, NS, CRD, SA])) == [
        ["ServiceAccount", "DaemonSet", "NodeFeatureRule"], ["Namespace"], ["CustomResourceDefinition"]]


LIVE = dict(DS, metadata=dict(DS["metadata"], resourceVersion="41", generation=3, uid="u-1",
                              creationTimestamp="2026-12-01T10:00:00Z",
                              managedFields=[{"manager": "gpufleet", "time": "2026-12-01T10:00:00Z"}]),
            spec={"template": {"spec": {"containers": [{"name": "p", "image": "plugin:0.17.0"}]}}})


@pytest.mark.parametrize("answer, changed", [
    # the server moved only what it moves on every write
    (dict(LIVE, metadata=dict(LIVE["metadata"], resourceVersion="42", generation=4,
                              managedFields=[{"manager": "gpufleet", "time": "2026-12-02T10:00:00Z"}])), False),
    (LIVE, False),
    (dict(LIVE, spec={"template": {"spec": {"containers": [{"name": "p", "image": "plugin:0.17.1"}]}}}), True),
    (dict(LIVE, metadata=dict(LIVE["metadata"], labels={t.PART_OF: "applyset-x-v1"})), True),
])
def test_a_dry_run_answer_changes_only_what_the_server_does_not_rewrite_anyway(answer, changed):
    assert t.differs(LIVE, answer) is changed


def test_nothing_live_is_always_a_change_and_comparable_does_not_touch_its_input():
    assert t.differs(None, LIVE) is True
    assert t.comparable(None) is None
    stripped = t.comparable(LIVE)
    assert "managedFields" not in stripped["metadata"] and "resourceVersion" not in stripped["metadata"]
    assert LIVE["metadata"]["resourceVersion"] == "41"


def test_applyset_id_is_the_kep_3659_formula():
    # the value kubectl's own test records for a Secret parent my-set in namespace test
    assert t.applyset_id("my-set", "test") == "applyset-0eFHV8ySqp7XoShsGvyWFQD3s96yqwHmzc4e0HR1dsY-v1"
    assert t.applyset_id("my-set", "other") != t.applyset_id("my-set", "test")
    assert t.applyset_id("my-set", "test", "ConfigMap") != t.applyset_id("my-set", "test")


@pytest.mark.parametrize("component, name", [
    ("cluster/device-plugin", "gpufleet-cluster-device-plugin"),
    ("provision/karpenter", "gpufleet-provision-karpenter"),
    ("cluster/gpu-operator-policy", "gpufleet-cluster-gpu-operator-policy"),
])
def test_one_parent_per_component(component, name):
    assert t.parent_name(component) == name


def test_parent_records_group_kinds_and_namespaces_as_kubectl_writes_them():
    parent = t.parent_object("cluster/device-plugin", [("apps", "DaemonSet"), ("", "Namespace"), ("apps", "DaemonSet"),
                                                        ("rbac.authorization.k8s.io", "ClusterRole")],
                             ["nvidia-device-plugin", "gpufleet-system", "a-ns"])
    meta = parent["metadata"]
    assert parent["kind"] == "Secret" and meta["namespace"] == "gpufleet-system"
    assert meta["labels"][t.ID_LABEL] == t.applyset_id("gpufleet-cluster-device-plugin", "gpufleet-system")
    assert meta["annotations"][t.GROUP_KINDS] == "ClusterRole.rbac.authorization.k8s.io,DaemonSet.apps,Namespace"
    assert meta["annotations"][t.NAMESPACES] == "a-ns,nvidia-device-plugin"
    assert meta["annotations"][t.TOOLING_ANNOTATION] == "gpufleet/v1"
    assert t.recorded_scope(parent) == ([("rbac.authorization.k8s.io", "ClusterRole"), ("apps", "DaemonSet"),
                                         ("", "Namespace")], ["a-ns", "nvidia-device-plugin"])


def test_prune_scope_is_what_the_parent_recorded_plus_this_render():
    parent = t.parent_object("cluster/x", [("karpenter.sh", "NodePool")], ["old-ns"])
    gks, namespaces = t.union_scope(parent, [DS, NS])
    assert gks == [("apps", "DaemonSet"), ("", "Namespace"), ("karpenter.sh", "NodePool")]
    assert namespaces == ["nvidia-device-plugin", "old-ns"]
    assert t.union_scope(None, []) == ([], [])


def member(o, set_id="applyset-a-v1", **meta):
    return dict(o, metadata=dict(o["metadata"], labels={t.PART_OF: set_id, "app.kubernetes.io/managed-by": "gpufleet"},
                                 **meta))


@pytest.mark.parametrize("listed, render, pruned", [
    # a member the render still names stays
    ([member(DS)], [DS], []),
    # a member the render dropped goes
    ([member(DS), member(CR)], [DS], ["ClusterRole/gfd"]),
    # gpufleet's labels without the part-of label: never a candidate
    ([dict(CR, metadata=dict(CR["metadata"], labels={"app.kubernetes.io/managed-by": "gpufleet"}))], [], []),
    # another set's member
    ([member(CR, "applyset-b-v1")], [], []),
    # already being deleted
    ([member(CR, deletionTimestamp="2026-12-02T10:00:00Z")], [], []),
    # listed twice (two namespaces' lists overlap for nothing, but twice is once)
    ([member(SA), member(SA)], [], ["ServiceAccount/nvidia-device-plugin/nvidia-device-plugin"]),
    # the same name in another namespace is another object
    ([member(obj("v1", "ServiceAccount", "nvidia-device-plugin", "elsewhere"))], [SA],
     ["ServiceAccount/elsewhere/nvidia-device-plugin"]),
])
def test_prune_candidates(listed, render, pruned):
    assert [t.label(o) for o in t.prune_candidates(listed, render, "applyset-a-v1")] == pruned


def test_member_label_is_added_to_a_copy_only():
    labelled = t.with_part_of(DS, "applyset-a-v1")
    assert labelled["metadata"]["labels"] == {t.PART_OF: "applyset-a-v1"}
    assert "labels" not in DS["metadata"]


def test_a_parent_of_another_tool_is_refused():
    theirs = t.parent_object("cluster/x", [], [])
    theirs["metadata"]["annotations"][t.TOOLING_ANNOTATION] = "kubectl/v1.37.0"
    assert "managed by kubectl/v1.37.0" in t.foreign_parent(theirs)
    assert t.foreign_parent(t.parent_object("cluster/x", [], [])) == ""
    assert t.foreign_parent(None) == ""


@pytest.mark.parametrize("text, error", [("[1]", "must hold a list of objects"), ("{", "is not JSON"),
                                         ('{"a": 1}', "must hold a list of objects")])
def test_objects_json_refusals(text, error):
    from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import objects_from_json
    with pytest.raises(GpufleetError, match=error):
        objects_from_json(text)
    assert objects_from_json('[{"kind": "A"}]') == [{"kind": "A"}]
    # ansible-core 2.18 hands the decoded list when the JSON text reads as a Python literal
    assert objects_from_json([{"kind": "A"}]) == [{"kind": "A"}]
    with pytest.raises(GpufleetError, match="must hold a list of objects"):
        objects_from_json([1])


@pytest.mark.parametrize("live, ready", [
    (None, False),
    ({"kind": "DaemonSet", "metadata": {"generation": 2},
      "status": {"observedGeneration": 1, "desiredNumberScheduled": 1, "updatedNumberScheduled": 1,
                 "numberAvailable": 1}}, False),
    ({"kind": "DaemonSet", "metadata": {"generation": 2},
      "status": {"observedGeneration": 2, "desiredNumberScheduled": 5, "updatedNumberScheduled": 5,
                 "numberAvailable": 4}}, False),
    ({"kind": "DaemonSet", "metadata": {"generation": 2},
      "status": {"observedGeneration": 2, "desiredNumberScheduled": 5, "updatedNumberScheduled": 5,
                 "numberAvailable": 5}}, True),
    ({"kind": "Deployment", "metadata": {"generation": 1}, "spec": {"replicas": 2},
      "status": {"observedGeneration": 1, "updatedReplicas": 2, "availableReplicas": 1}}, False),
    ({"kind": "Deployment", "metadata": {"generation": 1}, "spec": {"replicas": 2},
      "status": {"observedGeneration": 1, "updatedReplicas": 2, "availableReplicas": 2}}, True),
])
def test_rolled_out(live, ready):
    assert t.rolled_out(live) is ready
