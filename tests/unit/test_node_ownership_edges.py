"""Node ownership (module_utils/pools/node_ownership.py): what mutation testing (scripts/mutation.sh) showed no
test would notice. Taints after a dropped one stay (others' and gpufleet's); a value gpufleet owns changes
without a conflict, one someone else changed is a conflict; repeated 409s end in an error after the
retries, not a loop; a malformed ownership record is refused naming the Node; ``force`` reaches the patch,
also after a re-read; every bad host is reported, not the first.

The Nodes here are built by hand in the API's shape (metadata.labels/annotations/resourceVersion/
managedFields, spec.taints); tests/helpers/k8s_fake.py applies the merge patches as the API server does and
refuses a stale resourceVersion with 409."""
import json

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.model import node_names as nn
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools import node_ownership as no
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from k8s_fake import FakeNodeApi, Store, merge_patch

GPU = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
MIG = {"key": "example.com/mig", "value": "on", "effect": "NoSchedule"}
THEIRS = {"key": "team.example.com/dedicated", "value": "ml", "effect": "NoExecute",
          "timeAdded": "2026-12-01T00:00:00Z"}
CORDON = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-12-01T01:00:00Z"}


def mk(name="n1", labels=None, taints=None, owned=None, managed=None, rv="7"):
    meta = {"name": name, "resourceVersion": rv, "labels": dict(labels or {"kubernetes.io/hostname": name}),
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"}}
    if owned is not None:
        meta["annotations"][no.OWNED_ANNOTATION] = owned if isinstance(owned, str) else json.dumps(owned)
    if managed is not None:
        meta["managedFields"] = managed
    node = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": {}}
    if taints is not None:
        node["spec"]["taints"] = [dict(t) for t in taints]
    return node


def owned_by_gpufleet(labels, taints):
    return {"labels": labels, "taints": ["%s:%s" % (t["key"], t["effect"]) for t in taints]}


def after(node, plan):
    return merge_patch(node, plan["patch"]) if plan["patch"] else node


def test_dropping_one_of_gpufleets_taints_keeps_every_taint_after_it():
    n = mk(taints=[MIG, THEIRS, GPU, CORDON], owned=owned_by_gpufleet({}, [MIG, GPU]))
    plan = no.plan_node(n, {}, [GPU])
    assert plan["patch"]["spec"]["taints"] == [THEIRS, GPU, CORDON]
    assert plan["after"]["taints"] == [THEIRS, GPU, CORDON] and not plan["conflicts"]
    assert json.loads(after(n, plan)["metadata"]["annotations"][no.OWNED_ANNOTATION]) == {
        "labels": {}, "taints": ["nvidia.com/gpu:NoSchedule"]}


def test_dropping_every_taint_of_gpufleets_keeps_the_others_in_order():
    n = mk(taints=[GPU, THEIRS, MIG, CORDON], owned=owned_by_gpufleet({"gpufleet.io/pool": "a"}, [GPU, MIG]),
           labels={"gpufleet.io/pool": "a", "team": "x"})
    plan = no.plan_node(n, {}, [])
    assert plan["patch"]["spec"]["taints"] == [THEIRS, CORDON]
    assert plan["patch"]["metadata"] == {"labels": {"gpufleet.io/pool": None},
                                         "annotations": {no.OWNED_ANNOTATION: None}, "resourceVersion": "7"}


def test_changing_the_value_of_a_label_and_taint_gpufleet_owns_is_no_conflict():
    n = mk(labels={"gpufleet.io/pool": "train", "h": "1"}, taints=[CORDON, GPU],
           owned=owned_by_gpufleet({"gpufleet.io/pool": "train"}, [GPU]))
    plan = no.plan_node(n, {"gpufleet.io/pool": "infer"}, [dict(GPU, value="a100")])
    assert plan["conflicts"] == [] and plan["notes"] == []
    assert plan["patch"] == {
        "metadata": {"labels": {"gpufleet.io/pool": "infer"},
                     "annotations": {no.OWNED_ANNOTATION: '{"labels":{"gpufleet.io/pool":"infer"},'
                                                          '"taints":["nvidia.com/gpu:NoSchedule"]}'},
                     "resourceVersion": "7"},
        "spec": {"taints": [CORDON, dict(GPU, value="a100")]}}


def test_a_label_gpufleet_owned_that_someone_else_changed_is_a_conflict():
    n = mk(labels={"gpufleet.io/pool": "theirs"}, owned=owned_by_gpufleet({"gpufleet.io/pool": "train"}, []))
    plan = no.plan_node(n, {"gpufleet.io/pool": "infer"}, [])
    assert plan["conflicts"] == ["Node n1: label gpufleet.io/pool='theirs' was set by someone else; gpufleet wants "
                                 "'infer'"]
    forced = no.plan_node(n, {"gpufleet.io/pool": "infer"}, [], force=True)
    assert forced["conflicts"] == [] and forced["patch"]["metadata"]["labels"] == {"gpufleet.io/pool": "infer"}


def test_a_taint_someone_else_set_to_another_value_is_a_conflict_naming_both_values():
    n = mk(taints=[dict(GPU, value="theirs")])
    assert no.plan_node(n, {}, [GPU])["conflicts"] == [
        "Node n1: taint nvidia.com/gpu=theirs:NoSchedule was set by someone else; gpufleet wants value 'present'"]
    n = mk(taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])
    assert no.plan_node(n, {}, [GPU])["conflicts"] == [
        "Node n1: taint nvidia.com/gpu=:NoSchedule was set by someone else; gpufleet wants value 'present'"]
    assert no.plan_node(mk(taints=[GPU]), {}, [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])["conflicts"] == [
        "Node n1: taint nvidia.com/gpu=present:NoSchedule was set by someone else; gpufleet wants value ''"]


@pytest.mark.parametrize("existing,wanted", [
    (dict(GPU, timeAdded="2026-12-01T00:00:00Z"), GPU),          # the same taint, someone else's timeAdded kept
    ({"key": "k.example.com/x", "effect": "NoSchedule"},          # no value and an empty value are the same
     {"key": "k.example.com/x", "value": "", "effect": "NoSchedule"}),
    ({"key": "k.example.com/x", "value": "", "effect": "NoSchedule"},
     {"key": "k.example.com/x", "effect": "NoSchedule"}),
])
def test_a_taint_already_there_as_wanted_is_kept_as_it_is(existing, wanted):
    n = mk(taints=[existing])
    plan = no.plan_node(n, {}, [wanted])
    assert plan["conflicts"] == []
    assert plan["after"]["taints"] == [existing]
    # already there as wanted, before gpufleet wrote anything: it stays its setter's, nothing is written or recorded
    assert plan["patch"] is None and plan["after"]["owned"] is None
    assert "stays yours" in plan["notes"][0]


def test_same_key_other_effect_is_another_taint():
    n = mk(taints=[dict(GPU, effect="NoExecute")])
    plan = no.plan_node(n, {}, [GPU])
    assert plan["conflicts"] == [] and plan["after"]["taints"] == [dict(GPU, effect="NoExecute"), GPU]


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", "\"text\"", "{\"labels\": [1]}"])
def test_a_malformed_ownership_annotation_is_refused_naming_the_node(raw):
    with pytest.raises(GpufleetError) as err:
        no.owned(mk(name="gpu-9", owned=raw))
    assert err.value.msg == ("Node gpu-9: annotation gpufleet.io/owned is not gpufleet's JSON (%r); remove it or fix "
                             "it by hand" % raw)
    with pytest.raises(GpufleetError):
        no.plan_nodes([mk(name="gpu-9", owned=raw)], [], prune=True)


def test_an_empty_annotation_falls_back_to_the_managed_fields():
    apply = {"manager": "gpufleet", "operation": "Apply", "fieldsV1": {"f:metadata": {"f:labels": {"f:team": {}}}}}
    n = mk(labels={"team": "ml", "other": "x"}, owned="", managed=[apply])
    assert no.owned(n) == {"labels": {"team": "ml"}, "taints": []}


def test_only_gpufleets_own_apply_entry_counts():
    for entry in ({"manager": "kubectl", "operation": "Apply"}, {"manager": "gpufleet", "operation": "Update"}):
        n = mk(labels={"team": "ml"}, owned=owned_by_gpufleet({"team": "ml"}, []), managed=[entry])
        plan = no.plan_node(n, {}, [])
        assert plan["patch"]["metadata"]["annotations"] == {no.OWNED_ANNOTATION: None}
        assert plan["after"]["owned"] is None


def test_the_record_is_compact_sorted_json():
    assert no.record({"b": "2", "a": "1"}, [MIG, GPU]) == \
        '{"labels":{"a":"1","b":"2"},"taints":["example.com/mig:NoSchedule","nvidia.com/gpu:NoSchedule"]}'
    assert no.record({}, []) is None
    assert no.record({}, [], mk(managed=[{"manager": "gpufleet", "operation": "Apply"}])) == '{"labels":{},"taints":[]}'


def test_plan_nodes_prunes_by_default_and_keeps_the_host():
    nodes = [mk("a"), mk("b", taints=[GPU], owned=owned_by_gpufleet({}, [GPU])), mk("c", owned={"labels": {}})]
    plans = no.plan_nodes(nodes, [{"name": "a", "host": "host-a", "labels": {"x": "1"}, "taints": []}])
    assert [(p["name"], p["host"]) for p in plans] == [("a", "host-a"), ("b", None)]
    assert plans[1]["patch"]["spec"] == {"taints": None}
    assert plans[1]["after"] == {"labels": {"kubernetes.io/hostname": "b"}, "taints": [], "owned": None}
    assert [p["name"] for p in no.plan_nodes(nodes, [], prune=False)] == []


def test_plan_nodes_passes_force_to_every_plan():
    theirs = mk("a", labels={"gpufleet.io/pool": "x"}, taints=[dict(GPU, value="x")])
    desired = [{"name": "a", "host": "h", "labels": {"gpufleet.io/pool": "y"}, "taints": [GPU]}]
    assert len(no.plan_nodes([theirs], desired)[0]["conflicts"]) == 2
    assert no.plan_nodes([theirs], desired, force=True)[0]["conflicts"] == []


def test_missing_nodes_are_all_named_with_the_host_or_the_name():
    with pytest.raises(GpufleetError) as err:
        no.plan_nodes([mk("a")], [{"name": "b", "host": "host-b"}, {"name": "c"}, {"name": "a"}])
    assert err.value.msg.startswith("host host-b: no Node named 'b' in the cluster; host c: no Node named 'c' in the "
                                    "cluster. gpufleet labels existing Nodes only")
    assert err.value.details == {"missing": ["b", "c"]}


@pytest.mark.parametrize("name,ok", [("a" * 253, True), ("a" * 254, False), ("a." * 126 + "b", True)])
def test_node_name_length_limit(name, ok):
    hostvars = {"h": {no.NODE_NAME_VAR: name}}
    if ok:
        assert nn.node_names(["h"], hostvars) == {"h": name}
    else:
        with pytest.raises(GpufleetError):
            nn.node_names(["h"], hostvars)


def test_every_bad_host_is_reported():
    hostvars = {"Bad_1": {}, "b": {no.NODE_NAME_VAR: "Bad_2"}, "c": {no.NODE_NAME_VAR: "n"},
                "d": {no.NODE_NAME_VAR: "n"}, "e": {no.NODE_NAME_VAR: "n"}, "f": {no.NODE_NAME_VAR: ""}, "ok": None}
    with pytest.raises(GpufleetError) as err:
        nn.node_names(["Bad_1", "b", "c", "d", "e", "f", "ok"], hostvars)
    expected = [
        "gpufleet_node_name (host Bad_1): 'Bad_1' is not a Kubernetes Node name (lowercase RFC 1123 DNS subdomain); "
        "set gpufleet_node_name to the host's Node name (kubectl get nodes)",
        "gpufleet_node_name (host b): 'Bad_2' is not a Kubernetes Node name (lowercase RFC 1123 DNS subdomain)",
        "gpufleet_node_name (host d): Node 'n' is already the Node of host c; each host needs its own Node",
        "gpufleet_node_name (host e): Node 'n' is already the Node of host c; each host needs its own Node",
    ]
    assert err.value.details == {"errors": expected} and err.value.msg == "; ".join(expected)
    assert nn.node_names(["f", "ok"], hostvars) == {"f": "f", "ok": "ok"}  # empty: the inventory name
    assert nn.node_names(["x"], {"x": {no.NODE_NAME_VAR: 10}}) == {"x": "10"}


def test_diff_text_lists_labels_taints_and_the_record():
    n = mk(labels={"b": "2", "a": "1"}, taints=[CORDON, GPU], owned=owned_by_gpufleet({"a": "1"}, [GPU]))
    plan = no.plan_node(n, {}, [])
    diff = no.plan_diff(plan)
    assert diff == {
        "before_header": "Node/n1", "after_header": "Node/n1",
        "before": "labels:\n  a: \"1\"\n  b: \"2\"\ntaints:\n  - node.kubernetes.io/unschedulable=:NoSchedule\n"
                  "  - nvidia.com/gpu=present:NoSchedule\ngpufleet.io/owned: "
                  "{\"labels\": {\"a\": \"1\"}, \"taints\": [\"nvidia.com/gpu:NoSchedule\"]}\n",
        "after": "labels:\n  b: \"2\"\ntaints:\n  - node.kubernetes.io/unschedulable=:NoSchedule\n"
                 "gpufleet.io/owned: (none)\n"}


# --- converge: the writes ------------------------------------------------------------------------

def always_conflicting(name):
    """A writer that changes the Node before every patch of gpufleet's (a 409 each time)."""
    def hook(store):
        store.bump(name)
        store.before_patch = hook
    return hook


@pytest.mark.parametrize("retries,patches", [(None, 6), (0, 1), (2, 3)])
def test_repeated_conflicts_end_in_an_error_after_the_retries(retries, patches):
    store = Store([mk("a")])
    store.before_patch = always_conflicting("a")
    kwargs = {} if retries is None else {"retries": retries}
    with pytest.raises(GpufleetError) as err:
        no.converge(FakeNodeApi(store), [{"name": "a", "host": "h", "labels": {"x": "1"}, "taints": []}], **kwargs)
    assert err.value.msg == ("Node a kept changing while gpufleet wrote it (%d conflicts); run again. 0 of 1 Nodes to "
                             "change were written; run again once that is fixed" % patches)
    assert [r[0] for r in store.requests] == ["LIST"] + ["PATCH", "GET"] * (patches - 1) + ["PATCH"]
    assert err.value.details["failed"] == [err.value.msg.split(". 0 of")[0]]


def test_after_a_conflict_the_replan_keeps_host_labels_and_force():
    store = Store([mk("a", labels={"gpufleet.io/pool": "theirs"}), mk("b")])
    store.before_patch = lambda s: s.bump("a")   # one 409 on the first patch
    desired = [{"name": "a", "host": "host-a", "labels": {"gpufleet.io/pool": "p", "y": "2"}, "taints": [GPU]},
               {"name": "b", "host": "host-b", "labels": {"gpufleet.io/pool": "p"}, "taints": []}]
    plans = no.converge(FakeNodeApi(store), desired, force=True, workers=1)
    assert [(p["name"], p["host"]) for p in plans] == [("a", "host-a"), ("b", "host-b")]
    a = store.nodes["a"]
    assert a["metadata"]["labels"] == {"gpufleet.io/pool": "p", "y": "2"}
    assert a["spec"]["taints"] == [GPU]
    assert [r[:2] for r in store.requests] == [("LIST", None), ("PATCH", "a"), ("GET", "a"), ("PATCH", "a"),
                                              ("PATCH", "b")]


def test_a_conflict_found_on_the_reread_stops_that_node():
    store = Store([mk("a"), mk("b")])

    def theirs_meanwhile(s):
        s.nodes["a"]["metadata"]["labels"]["gpufleet.io/pool"] = "theirs"
        s.bump("a")
    store.before_patch = theirs_meanwhile
    desired = [{"name": "a", "host": "h", "labels": {"gpufleet.io/pool": "p"}, "taints": []},
               {"name": "b", "host": "h2", "labels": {"gpufleet.io/pool": "p"}, "taints": []}]
    with pytest.raises(GpufleetError) as err:
        no.converge(FakeNodeApi(store), desired, workers=1)
    assert err.value.msg == ("Node a: label gpufleet.io/pool='theirs' was set by someone else; gpufleet wants 'p'. "
                             "1 of 2 Nodes to change were written; run again once that is fixed")
    assert store.nodes["b"]["metadata"]["labels"]["gpufleet.io/pool"] == "p"   # the other Node was still written


def test_conflicts_found_before_writing_are_all_named():
    store = Store([mk("a", labels={"l": "x"}), mk("b", taints=[dict(GPU, value="x")])])
    desired = [{"name": "a", "labels": {"l": "y"}, "taints": []}, {"name": "b", "labels": {}, "taints": [GPU]}]
    with pytest.raises(GpufleetError) as err:
        no.converge(FakeNodeApi(store), desired)
    assert err.value.details == {"conflicts": [
        "Node a: label l='x' was set by someone else; gpufleet wants 'y'",
        "Node b: taint nvidia.com/gpu=x:NoSchedule was set by someone else; gpufleet wants value 'present'"]}
    assert err.value.msg == "; ".join(err.value.details["conflicts"]) + (
        ". Nothing was changed; remove or change those labels/taints, or change the pool's labels/taints in the "
        "inventory.")
    # force: the same inputs are written
    assert [p["changed"] for p in no.converge(FakeNodeApi(store), desired, force=True)] == [True, True]
    assert store.nodes["a"]["metadata"]["labels"]["l"] == "y" and store.nodes["b"]["spec"]["taints"] == [GPU]


class BrokenApi(FakeNodeApi):
    def patch_node(self, name, patch):
        if name == "b":
            self.store.requests.append(("PATCH", name, patch))
            raise RuntimeError("connection reset")
        return FakeNodeApi.patch_node(self, name, patch)


@pytest.mark.parametrize("workers", [1, 8])
def test_a_client_error_names_the_node_and_the_others_are_written(workers):
    store = Store([mk("a"), mk("b"), mk("c")])
    desired = [{"name": n, "labels": {"x": "1"}, "taints": []} for n in ("a", "b", "c")]
    with pytest.raises(GpufleetError) as err:
        no.converge(BrokenApi(store), desired, workers=workers)
    assert err.value.msg == ("Node b: connection reset. 2 of 3 Nodes to change were written; run again once that is "
                             "fixed")
    assert err.value.details == {"failed": ["Node b: connection reset"]}
    assert store.nodes["a"]["metadata"]["labels"]["x"] == "1" and store.nodes["c"]["metadata"]["labels"]["x"] == "1"


def test_check_mode_and_unchanged_nodes_write_nothing():
    store = Store([mk("a", labels={"x": "1", "kubernetes.io/hostname": "a"}, owned=no.record({"x": "1"}, []))])
    desired = [{"name": "a", "labels": {"x": "1"}, "taints": []}]
    assert [p["changed"] for p in no.converge(FakeNodeApi(store), desired)] == [False]
    assert [p["changed"] for p in no.converge(FakeNodeApi(store), [{"name": "a", "labels": {"x": "2"}}],
                                              check_mode=True)] == [True]
    assert [r[0] for r in store.requests] == ["LIST", "LIST"]


def test_a_taint_value_change_alone_still_carries_the_resource_version():
    """The record holds taint ids (key:effect), so a new value changes only spec.taints: the patch must
    still carry metadata.resourceVersion, or a concurrent change would be overwritten."""
    n = mk(taints=[GPU], owned=no.record({}, [GPU]))
    plan = no.plan_node(n, {}, [dict(GPU, value="a100")])
    assert plan["patch"] == {"spec": {"taints": [dict(GPU, value="a100")]}, "metadata": {"resourceVersion": "7"}}


def test_a_label_someone_else_changed_is_noted_in_full():
    n = mk(labels={"team": "research"}, owned=no.record({"team": "ml"}, []))
    plan = no.plan_node(n, {}, [])
    assert plan["notes"] == ["Node n1: label team is now 'research' (set by someone else), left in place"]
    assert plan["patch"]["metadata"] == {"annotations": {no.OWNED_ANNOTATION: None}, "resourceVersion": "7"}
