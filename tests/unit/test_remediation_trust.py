"""Remediation trusts only what it can check (issue 39): the record annotation gpufleet.io/gpu-remediation
counts only with gpufleet's MAC for its very Node (name and UID); the limits and the pools hold for nodes
already under remediation (``continue``) as for new ones (``act``); a cordon gpufleet did not set is never
lifted. Forged, copied, tampered and stale records below are written the way any agent that may patch Nodes
could write them."""
import base64
import json

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation as rem
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation_run as run

KEY = b"s" * 32
POOLS = [{"name": "train", "min_nodes": 0}]
FORGED = {"since": "2026-01-01T00:00:00Z", "reasons": ["forged"], "tainted": True, "cordoned": True, "replaced": ""}


def node(name, pool="train", alloc=8, record=None, sign_as=None, unschedulable=False, taints=None, uid=None,
         cordoned_by=None):
    """A GPU Node. ``record`` is written as given unless ``sign_as`` names the Node (name, uid) gpufleet signed
    it for; ``cordoned_by`` is the field manager that set spec.unschedulable (managedFields)."""
    uid = uid or "uid-" + name
    if record is not None and sign_as:
        record = rem.signed(record, {"metadata": {"name": sign_as[0], "uid": sign_as[1]}}, KEY)
    meta = {"name": name, "uid": uid, "labels": {"gpufleet.io/pool": pool} if pool else {}, "resourceVersion": "1",
            "annotations": {rem.RECORD_ANNOTATION: record if isinstance(record, str) else json.dumps(record)}
            if record is not None else {}}
    if cordoned_by:
        meta["managedFields"] = [{"manager": cordoned_by, "operation": "Update",
                                  "fieldsV1": {"f:spec": {"f:unschedulable": {}}}}]
    spec = dict({"taints": taints or []}, **({"unschedulable": True} if unschedulable else {}))
    return {"metadata": meta, "spec": spec,
            "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": str(alloc)}}}


def own(name, record=FORGED, **kw):
    """A Node whose record gpufleet signed for it."""
    return node(name, record=record, sign_as=(name, "uid-" + name), **kw)


def plan(nodes, key=KEY, **pol):
    policy = rem.validate_policy(dict({"dry_run": False, "max_percent": 100}, **pol))
    return dict((e["name"], e) for e in rem.plan(nodes, POOLS, "eks", {}, policy, [], key=key))


def under_way(entries):
    return sorted(n for n, e in entries.items() if e["decision"] in ("act", "continue"))


# --- the limits hold whatever the annotations say ----------------------------------------------------

@pytest.mark.parametrize("nodes, max_nodes, acted", [
    # six unhealthy nodes with forged records, max_nodes 1: one node, as without the records
    ([node("g%d" % i, alloc=7, record=FORGED, taints=[rem.TAINT], unschedulable=True) for i in range(6)], 1, 1),
    # gpufleet's own records (written when max_nodes was 6), max_nodes now 1: one goes on, five are held
    ([own("g%d" % i, alloc=7, taints=[rem.TAINT], unschedulable=True) for i in range(6)], 1, 1),
    ([own("g%d" % i, alloc=7, taints=[rem.TAINT], unschedulable=True) for i in range(6)], 2, 2),
    # a record that is not even JSON: ignored, not a failure of the whole run
    ([node("g0", alloc=7, record="{not json"), node("g1", alloc=7, record="[1]")], 1, 1),
])
def test_at_most_max_nodes_are_acted_on_whatever_the_records_say(nodes, max_nodes, acted):
    entries = plan(nodes, max_nodes=max_nodes)
    assert len(under_way(entries)) == acted
    held = [e for e in entries.values() if e["decision"] == "held"]
    assert len(held) == len(nodes) - acted
    assert all("gpu_remediation_max_nodes" in e["held_because"] for e in held)


def test_forged_records_are_ignored_and_reported():
    entries = plan([node("g%d" % i, alloc=7, record=FORGED) for i in range(3)])
    assert [e["state"] for e in entries.values()] == ["unhealthy"] * 3
    assert all("MAC is not gpufleet's" in e["record_ignored"] for e in entries.values())
    rep = run.report(list(entries.values()), rem.validate_policy({}), "eks", "c")
    assert "MAC is not gpufleet's" in run.markdown(rep)


@pytest.mark.parametrize("nodes", [
    [node("x1", pool=None, alloc=3, record=FORGED, taints=[rem.TAINT], unschedulable=True)],  # forged
    [own("x1", pool=None, alloc=3, taints=[rem.TAINT], unschedulable=True)],                 # gpufleet's, pool gone
    [node("x1", pool=None, alloc=3)],                                                        # no record
])
def test_a_node_outside_every_pool_is_left_alone(nodes):
    entry = plan(nodes, max_nodes=5)["x1"]
    assert entry["decision"] == "left_alone" and entry["steps"] == []


def test_the_pools_percent_holds_for_continue():
    # pool of 4 at 25%: one of the two nodes gpufleet already works on goes on
    nodes = [own("t%d" % i, alloc=7, taints=[rem.TAINT], unschedulable=True) for i in range(2)] + \
        [node("t2"), node("t3")]
    entries = plan(nodes, max_nodes=5, max_percent=25)
    assert under_way(entries) == ["t0"] and "gpu_remediation_max_percent" in entries["t1"]["held_because"]


# --- which record is gpufleet's ------------------------------------------------------------------

@pytest.mark.parametrize("record, sign_as, uid, trusted", [
    (FORGED, None, None, False),                          # written by hand or by an agent
    (FORGED, ("other", "uid-other"), None, False),        # copied from another Node
    (FORGED, ("n1", "uid-old"), "uid-new", False),        # the Node was deleted and recreated with the name
    (FORGED, ("n1", "uid-n1"), None, True),               # gpufleet's, for this Node
])
def test_a_record_counts_only_for_the_node_it_was_signed_for(record, sign_as, uid, trusted):
    n = node("n1", record=record, sign_as=sign_as, uid=uid)
    assert (rem.trusted_record(n, KEY)[0] is not None) is trusted


def test_a_tampered_record_or_another_key_is_not_gpufleets():
    n = own("n1")
    signed = json.loads(n["metadata"]["annotations"][rem.RECORD_ANNOTATION])
    assert rem.trusted_record(n, b"t" * 32)[0] is None
    n["metadata"]["annotations"][rem.RECORD_ANNOTATION] = json.dumps(dict(signed, cordoned=False))
    assert rem.trusted_record(n, KEY)[0] is None
    # without a key (a dry run before the first real one) no record is gpufleet's
    assert rem.trusted_record(own("n1"), None) == (None, rem.trusted_record(own("n1"), None)[1])
    assert "no remediation key yet" in rem.trusted_record(own("n1"), None)[1]


# --- a cordon gpufleet did not set stays ---------------------------------------------------------

def test_an_admin_cordoned_node_with_a_stale_forged_record_stays_cordoned():
    # healthy, cordoned by an admin; the forged record claims gpufleet cordoned and tainted it
    n = node("n1", record=FORGED, unschedulable=True, cordoned_by="kubectl-cordon")
    entry = plan([n])["n1"]
    assert entry["decision"] == "none" and entry["steps"] == []
    assert run.restore_patch(n, KEY) is None


def test_a_cordon_someone_set_after_gpufleet_is_not_lifted_on_the_way_back():
    # gpufleet cordoned it (its record says so); since then an admin uncordoned and cordoned it again
    n = own("n1", record=dict(FORGED, reasons=["r"]), unschedulable=True, taints=[rem.TAINT],
            cordoned_by="kubectl-cordon")
    entry = plan([n])["n1"]
    assert entry["decision"] == "restore" and "uncordon" not in entry["steps"]
    assert "the cordon stays: kubectl-cordon set it" in entry["notes"][0]
    patch = run.restore_patch(n, KEY)
    assert "unschedulable" not in patch["spec"] and patch["spec"]["taints"] is None
    # the cordon gpufleet set itself is lifted
    mine = own("n1", record=dict(FORGED, reasons=["r"]), unschedulable=True, cordoned_by="gpufleet")
    assert "uncordon" in plan([mine])["n1"]["steps"]
    assert run.restore_patch(mine, KEY)["spec"]["unschedulable"] is None


def test_acting_over_a_forged_record_claims_nothing_it_says():
    # admin-cordoned unhealthy node with a forged record (cordoned, a reboot's history): gpufleet acts on it as
    # on a new node, records that it did not cordon it, and keeps no forged host step
    forged = dict(FORGED, host_steps=[{"step": "reset", "ok": True, "at": "x", "message": ""}])
    n = node("n1", alloc=7, record=forged, unschedulable=True)
    entry = plan([n], actions=["taint", "cordon"])["n1"]
    assert entry["decision"] == "act" and entry["record"] is None
    patch = run.act_patch(n, entry, ["taint", "cordon"], "now", KEY)
    written = json.loads(patch["metadata"]["annotations"][rem.RECORD_ANNOTATION])
    assert written["cordoned"] is False and written["tainted"] is True and "host_steps" not in written
    assert written["since"] == "now"
    after = node("n1", alloc=7, record=written, unschedulable=True, taints=[rem.TAINT])
    assert rem.trusted_record(after, KEY)[0]["cordoned"] is False


# --- the key -------------------------------------------------------------------------------------

class SecretApi(object):
    def __init__(self, secret=None, race=None):
        self.secret, self.race, self.created = secret, race, []

    def read_secret(self, namespace, name):
        assert (namespace, name) == (rem.RECORD_KEY_NAMESPACE, rem.RECORD_KEY_SECRET)
        return self.secret

    def create_namespace(self, body):
        self.created.append(("Namespace", body["metadata"]["name"]))

    def create_secret(self, namespace, body):
        if self.race:   # another run created it first
            self.secret, self.race = self.race, None
            return False
        self.created.append(("Secret", body["metadata"]["name"]))
        self.secret = body
        return True


def _secret(key):
    return {"data": {"key": base64.b64encode(key).decode()}}


def test_the_key_is_read_created_on_first_use_and_never_made_up():
    assert run.remediation_key(SecretApi(), create=False) is None      # a dry run creates nothing
    api = SecretApi()
    key = run.remediation_key(api, create=True)
    assert len(key) == 32 and api.created == [("Namespace", "gpufleet-system"), ("Secret", "gpufleet-remediation-key")]
    assert run.remediation_key(api, create=True) == key                # read back, not made again
    assert run.remediation_key(SecretApi(race=_secret(b"r" * 32)), create=True) == b"r" * 32
    with pytest.raises(RuntimeError, match="no usable remediation key"):
        run.remediation_key(SecretApi(_secret(b"short")), create=True)
