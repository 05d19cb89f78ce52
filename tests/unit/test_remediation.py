"""GPU health remediation decisions (module_utils/fleet/remediation.py, remediation_metrics.py,
remediation_run.py) as tables: which XID means what, which node is unhealthy and why, which limit holds
a node, what each patch writes and what the way back undoes. The real API server, drain and Prometheus
are exercised in tests/integration/test_cp_remediation.py."""
import json

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation as rem
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation_metrics as metrics
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation_run as run
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.node_ownership import Conflict

POOLS = [{"name": "train", "min_nodes": 2}, {"name": "infer", "min_nodes": 0}]
KEY = b"k" * 32   # the records' MAC key (the Secret gpufleet-system/gpufleet-remediation-key)


def node(name, pool="train", gpus=8, alloc=None, taints=None, unschedulable=False, record=None, rv="1", forged=False,
         uid=None):
    """A GPU Node; ``record`` is signed with KEY as gpufleet signs it, unless ``forged`` (written as it is)."""
    meta = {"name": name, "uid": uid or "uid-" + name}
    if record is not None and not forged:
        record = rem.signed(record, {"metadata": meta}, KEY)
    ann = {rem.RECORD_ANNOTATION: json.dumps(record)} if record is not None else {}
    return {"metadata": {"name": name, "uid": meta["uid"], "labels": {"gpufleet.io/pool": pool} if pool else {},
                         "annotations": ann, "resourceVersion": rv},
            "spec": dict({"taints": taints or []}, **({"unschedulable": True} if unschedulable else {})),
            "status": {"capacity": {"cpu": "64", "nvidia.com/gpu": str(gpus)},
                       "allocatable": {"cpu": "64", "nvidia.com/gpu": str(gpus if alloc is None else alloc)}}}


def policy(**kw):
    return rem.validate_policy(dict({"dry_run": False}, **kw))


# --- the XID table (NVIDIA's XID catalog) -------------------------------------------------------

@pytest.mark.parametrize("code, verdict", [
    (13, "application"), (31, "application"), (43, "application"), (45, "application"),
    (48, "unhealthy"),     # double-bit ECC: reset
    (63, "unhealthy"), (64, "unhealthy"),   # row remapping pending / failed
    (74, "unhealthy"),     # NVLink
    (79, "unhealthy"),     # fallen off the bus
    (92, "watch"),         # high single-bit rate, corrected
    (94, "watch"),         # contained ECC: only the application that hit it
    (95, "unhealthy"),     # uncontained ECC
    (119, "unhealthy"), (120, "unhealthy"),  # GSP
    (999, "watch"),        # unknown: reported, never acted on alone
])
def test_xid_verdicts(code, verdict):
    assert rem.xid_verdict(code)[0] == verdict


def test_xid_override_wins_and_says_so():
    verdict, meaning = rem.xid_verdict(94, {94: "unhealthy"})
    assert verdict == "unhealthy" and "gpu_remediation_xid_overrides" in meaning


# --- the policy: refused before anything is read ------------------------------------------------

@pytest.mark.parametrize("raw, message", [
    ({"actions": ["restart"]}, "gpu_remediation_actions: ['restart'] is not allowed; use a list of one of: taint, cordon, "
                                "drain, replace, reset, reboot"),
    ({"actions": ["reboot"]}, "gpu_remediation_actions: reboot needs drain too"),
    ({"actions": ["taint", "cordon", "reset"]}, "gpu_remediation_actions: reset needs drain too"),
    ({"actions": ["drain"]}, "gpu_remediation_actions: drain needs cordon too"),
    ({"max_nodes": 0}, "gpu_remediation_max_nodes: 0 is not allowed; use an integer >= 1"),
    ({"max_nodes": True}, "gpu_remediation_max_nodes: True is not allowed"),
    ({"max_percent": 0}, "gpu_remediation_max_percent: 0 is not allowed; use a number above 0 and at most 100"),
    ({"hosts_at_once": 0}, "gpu_remediation_hosts_at_once: 0 is not allowed; use an integer >= 1 (hosts reset or "
                           "rebooted at the same time)"),
    ({"hosts_at_once": True}, "gpu_remediation_hosts_at_once: True is not allowed"),
    ({"max_percent": 150}, "gpu_remediation_max_percent: 150 is not allowed"),
    ({"dry_run": "yes"}, "gpu_remediation_dry_run: 'yes' (a string) is not allowed; use true or false"),
    ({"prometheus_url": "prometheus:9090"}, "gpu_remediation_prometheus_url: 'prometheus:9090' is not allowed; use an http(s):// base URL"),
    ({"window": "15 minutes"}, "gpu_remediation_window: '15 minutes' is not allowed; use a PromQL duration"),
    ({"thresholds": {"ecc": 1}}, "gpu_remediation_thresholds: 'ecc' is not a threshold"),
    ({"thresholds": {"ecc_dbe": -1}}, "gpu_remediation_thresholds: ecc_dbe: -1 is not allowed"),
    ({"xid_overrides": {94: "drain"}}, "gpu_remediation_xid_overrides: 94: 'drain' is not allowed; use one of: application, watch, unhealthy"),
    ({"xid_overrides": {"x": "watch"}}, "gpu_remediation_xid_overrides: 'x' is not an XID code"),
    ({"drain_timeout": "10m"}, "gpu_remediation_drain_timeout: '10m' is not allowed; use an integer >= 1"),
])
def test_bad_policy_is_refused_naming_the_variable(raw, message):
    with pytest.raises(GpufleetError) as err:
        rem.validate_policy(raw)
    assert message in err.value.msg and err.value.msg.endswith(". Nothing was changed.")


def test_defaults_are_a_dry_run_and_string_xid_codes_are_read():
    p = rem.validate_policy({"xid_overrides": {"94": "unhealthy"}})
    assert p["dry_run"] is True and p["xid_overrides"] == {94: "unhealthy"}
    assert p["thresholds"]["retired_pages"] is None


# --- what a node says -------------------------------------------------------------------------

@pytest.mark.parametrize("cap, alloc, unhealthy", [
    ({"nvidia.com/gpu": "8"}, {"nvidia.com/gpu": "8"}, []),
    ({"nvidia.com/gpu": "8"}, {"nvidia.com/gpu": "7"}, ["nvidia.com/gpu allocatable 7 of capacity 8"]),
    ({"nvidia.com/gpu": "8"}, {}, ["nvidia.com/gpu allocatable 0 of capacity 8"]),
    ({"nvidia.com/mig-1g.10gb": "56"}, {"nvidia.com/mig-1g.10gb": "49"}, ["nvidia.com/mig-1g.10gb allocatable 49 of capacity 56"]),
    ({"cpu": "64"}, {"cpu": "60"}, []),  # not a GPU resource
])
def test_allocatable_below_capacity(cap, alloc, unhealthy):
    n = {"metadata": {"name": "n"}, "status": {"capacity": cap, "allocatable": alloc}}
    got = [f["why"] for f in rem.allocatable_findings(n)]
    assert len(got) == len(unhealthy) and all(g.startswith(u) for g, u in zip(got, unhealthy))


def vector(*series):
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": labels, "value": [1764720000.0, str(value)]} for labels, value in series]}}


def test_metric_findings_table():
    responses = {
        "xid": vector(({"Hostname": "a", "gpu": "0"}, 79), ({"Hostname": "b", "gpu": "1"}, 13),
                      ({"kubernetes_node": "c", "Hostname": "pod-x", "gpu": "2"}, 94), ({"Hostname": "d", "gpu": "0"}, 0)),
        "ecc_dbe": vector(({"Hostname": "e", "gpu": "3"}, 2), ({"Hostname": "f", "gpu": "0"}, 0)),
        "retired_pending": vector(({"Hostname": "g", "gpu": "0"}, 1)),
        "row_remap_failure": vector(({"Hostname": "h", "gpu": "5"}, 1), ({"Hostname": "i", "gpu": "5"}, 0)),
        "nvlink_errors": vector(({"instance": "j:9400", "gpu": "0"}, 3)),
    }
    thresholds = rem.validate_policy({})["thresholds"]
    got = metrics.findings(responses, thresholds, rem.xid_verdict)
    flat = dict((n, [(f["source"], f["verdict"]) for f in fs]) for n, fs in got.items())
    assert flat == {
        "a": [("xid", "unhealthy")], "b": [("xid", "application")], "c": [("xid", "watch")],
        "e": [("ecc_dbe", "unhealthy")], "g": [("retired_pending", "unhealthy")],
        "h": [("row_remap_failure", "unhealthy")], "j": [("nvlink_errors", "unhealthy")]}
    assert got["a"][0]["why"].startswith("GPU 0: XID 79 (GPU has fallen off the bus")


# The node label of each exporter version (tests/fixtures/dcgm/): hostname from 4.6.0-4.8.3 (pinned), Hostname
# before it, only kubernetes_node with --no-hostname; gpufleet's scrape job's kubernetes_node wins.
@pytest.mark.parametrize("labels, expected", [
    ({"hostname": "gpu-h4", "gpu": "0"}, "gpu-h4"),
    ({"Hostname": "gpu-h5", "gpu": "0"}, "gpu-h5"),
    ({"kubernetes_node": "gpu-h7", "gpu": "0"}, "gpu-h7"),
    ({"kubernetes_node": "gpu-h8", "hostname": "dcgm-exporter-x2v9q", "gpu": "0"}, "gpu-h8"),
    ({"hostname": "gpu-h9", "Hostname": "stale", "gpu": "0"}, "gpu-h9"),
])
def test_xid_79_counts_whichever_label_names_the_node(labels, expected):
    found = metrics.findings({"xid": vector((labels, 79))}, {}, rem.xid_verdict)
    assert list(found) == [expected] and found[expected][0]["verdict"] == "unhealthy"


def test_a_node_still_showing_xid_79_on_the_pinned_exporter_is_not_restored():
    """The defect: with the exporter's hostname label the XID was dropped and a node remediation had taken out
    was planned for a restore while its GPU was still off the bus."""
    out = node("gpu-h4", record={"tainted": True, "cordoned": True}, taints=[rem.TAINT], unschedulable=True)
    found = metrics.findings({"xid": vector(({"hostname": "gpu-h4", "gpu": "0", "UUID": "GPU-8b2e"}, 79)),
                              "row_remap_failure": vector(({"hostname": "gpu-h4", "gpu": "0"}, 0))},
                             rem.validate_policy({})["thresholds"], rem.xid_verdict)
    got = decisions([out, node("t2"), node("t3")], policy(), found)
    assert got["gpu-h4"][0] == "continue"
    assert decisions([out, node("t2"), node("t3")], policy(), {})["gpu-h4"][0] == "restore"


def test_refused_query_is_an_error_not_an_empty_answer():
    with pytest.raises(GpufleetError) as err:
        metrics.findings({"xid": {"status": "error", "errorType": "bad_data", "error": "parse error"}}, {}, rem.xid_verdict)
    assert "Prometheus refused the query xid" in err.value.msg and "parse error" in err.value.msg


def test_queries_skip_unset_thresholds():
    asked = []

    class Resp:
        def read(self):
            return json.dumps(vector()).encode()

    def opener(url, **kw):
        asked.append(url)
        return Resp()
    out = metrics.read_all("http://prom:9090/", "15m", {"ecc_dbe": 0, "retired_pending": None,
                                                        "retired_pages": None, "nvlink_errors": None}, opener=opener)
    assert sorted(out) == ["ecc_dbe", "row_remap_failure", "xid"]
    assert all(u.startswith("http://prom:9090/api/v1/query?query=") for u in asked)
    assert any("max_over_time%28DCGM_FI_DEV_XID_ERRORS%5B15m%5D%29" in u for u in asked)


# --- the limits ---------------------------------------------------------------------------------

def decisions(nodes, pol, found=None, platform="kubeadm", claims=None):
    return dict((e["name"], (e["decision"], e["held_because"]))
                for e in rem.plan(nodes, POOLS, platform, found or {}, pol, claims, key=KEY))


@pytest.mark.parametrize("nodes, kw, expected", [
    # one unhealthy node, room everywhere: act
    ([node("t1", alloc=7), node("t2"), node("t3"), node("t4")], {"max_percent": 25}, {"t1": "act"}),
    # max_nodes 1: the worse one (XID before allocatable) goes first, the other is held
    ([node("t1", alloc=7), node("t2"), node("t3"), node("t4", alloc=7)], {"max_percent": 50}, {"t1": "act", "t4": "held"}),
    ([node("t1", alloc=7), node("t2"), node("t3"), node("t4", alloc=7)], {"max_nodes": 2, "max_percent": 50},
     {"t1": "act", "t4": "act"}),
    # 25% of 4 = 1 at once, even with max_nodes 3
    ([node("t1", alloc=7), node("t2"), node("t3"), node("t4", alloc=7)], {"max_nodes": 3}, {"t1": "act", "t4": "held"}),
    # min_nodes 2 of 3: one may go; of 2: none
    ([node("t1", alloc=7), node("t2", alloc=6), node("t3")], {"max_nodes": 3, "max_percent": 100}, {"t1": "act", "t2": "held"}),
    ([node("t1", alloc=7), node("t2")], {"max_percent": 100}, {"t1": "held"}),
    # an earlier run's node still unhealthy counts against max_nodes
    ([node("t1", alloc=7, record={"since": "x"}, taints=[rem.TAINT], unschedulable=True), node("t2", alloc=7),
      node("t3"), node("t4"), node("t5")], {"max_percent": 100}, {"t1": "continue", "t2": "held"}),
    # healthy again: restored; with restore off: left as is
    ([node("t1", record={"tainted": True, "cordoned": True}, taints=[rem.TAINT], unschedulable=True), node("t2"), node("t3")],
     {}, {"t1": "restore"}),
    ([node("t1", record={"tainted": True}, taints=[rem.TAINT]), node("t2"), node("t3")], {"restore": False}, {"t1": "none"}),
    # a node outside every pool is left alone
    ([node("x1", pool=None, alloc=3)], {}, {"x1": "left_alone"}),
])
def test_limits(nodes, kw, expected):
    got = decisions(nodes, policy(**kw))
    assert dict((k, v[0]) for k, v in got.items() if v[0] != "none" or k in expected) == expected


def test_held_reasons_name_the_limit():
    nodes = [node("t1", alloc=7), node("t2", alloc=7), node("t3"), node("t4"), node("t5")]
    got = decisions(nodes, policy())
    assert got["t2"][1] == "at most 1 node(s) at once in the cluster (gpu_remediation_max_nodes); 1 under remediation"
    got = decisions(nodes, policy(max_nodes=5, max_percent=20))
    assert got["t2"][1] == "at most 20% of pool train at once (gpu_remediation_max_percent): 1 of its 5 node(s), 1 under remediation"
    got = decisions([node("t1", alloc=7), node("t2")], policy(max_percent=100))
    assert got["t1"][1] == "pool train would drop below its minimum of 2 schedulable node(s) (min_nodes); 2 schedulable now"


def test_a_node_someone_else_cordoned_does_not_count_twice_against_the_minimum():
    # t1 already cordoned by an operator: taking it out leaves the two schedulable nodes
    got = decisions([node("t1", alloc=7, unschedulable=True), node("t2"), node("t3")], policy(max_percent=100))
    assert got["t1"][0] == "act"


def test_xid_findings_make_a_node_unhealthy_and_application_xids_do_not():
    found = {"t1": [{"source": "xid", "verdict": "application", "why": "XID 13", "gpu": "0", "value": 13}],
             "t2": [{"source": "xid", "verdict": "unhealthy", "why": "XID 48", "gpu": "0", "value": 48}]}
    entries = dict((e["name"], e) for e in rem.plan([node("t1"), node("t2"), node("t3"), node("t4")], POOLS, "kubeadm",
                                                     found, policy(max_percent=100), key=KEY))
    assert entries["t1"]["state"] == "watch" and entries["t1"]["decision"] == "none"
    assert entries["t2"]["state"] == "unhealthy" and entries["t2"]["decision"] == "act"


@pytest.mark.parametrize("platform, claims, step", [
    ("eks", [{"metadata": {"name": "gpu-abc"}, "status": {"nodeName": "t1"}}], "delete NodeClaim gpu-abc"),
    ("eks", [{"metadata": {"name": "gpu-abc"}, "status": {"nodeName": "other"}}], "no Karpenter NodeClaim names Node t1"),
    ("gke", [], "left to GKE node auto-repair"),
    ("kubeadm", [], "planned only: reset the GPU (nvidia-smi --gpu-reset) or reboot the host"),
])
def test_replacement_per_platform(platform, claims, step):
    entries = rem.plan([node("t1", alloc=7), node("t2"), node("t3")], POOLS, platform, {}, policy(), claims, key=KEY)
    assert entries[0]["steps"][:4] == ["record why in annotation gpufleet.io/gpu-remediation",
                                       "taint gpufleet.io/gpu-unhealthy:NoSchedule", "cordon",
                                       "drain (evictions respect PodDisruptionBudgets)"]
    assert entries[0]["steps"][4].startswith(step)


# --- the patches and the way back -------------------------------------------------------------

def test_act_patch_keeps_others_taints_and_records_what_it_did():
    other = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    n = node("t1", alloc=7, taints=[other], rv="42")
    entry = rem.plan([n, node("t2"), node("t3")], POOLS, "kubeadm", {}, policy(), key=KEY)[0]
    patch = run.act_patch(n, entry, ["taint", "cordon"], "2026-12-03T00:00:00Z", KEY)
    assert patch["spec"] == {"taints": [other, rem.TAINT], "unschedulable": True}
    assert patch["metadata"]["resourceVersion"] == "42"
    record = json.loads(patch["metadata"]["annotations"][rem.RECORD_ANNOTATION])
    assert record["tainted"] and record["cordoned"] and record["since"] == "2026-12-03T00:00:00Z"
    assert record["reasons"] == ["nvidia.com/gpu allocatable 7 of capacity 8: the device plugin marked 1 unhealthy"]


def test_taint_and_cordon_someone_else_set_are_not_claimed_and_not_undone():
    n = node("t1", alloc=7, taints=[rem.TAINT], unschedulable=True)
    entry = rem.plan([n, node("t2"), node("t3")], POOLS, "kubeadm", {}, policy(), key=KEY)[0]
    patch = run.act_patch(n, entry, ["taint", "cordon"], "now", KEY)
    assert "spec" not in patch
    record = json.loads(patch["metadata"]["annotations"][rem.RECORD_ANNOTATION])
    assert record["tainted"] is False and record["cordoned"] is False
    healed = node("t1", taints=[rem.TAINT], unschedulable=True, record=record)
    assert run.restore_patch(healed, KEY) == {"metadata": {"annotations": {rem.RECORD_ANNOTATION: None},
                                                      "resourceVersion": "1"}}


def test_second_run_on_a_remediated_node_writes_nothing():
    n = node("t1", alloc=7)
    entry = rem.plan([n, node("t2"), node("t3")], POOLS, "kubeadm", {}, policy(), key=KEY)[0]
    patch = run.act_patch(n, entry, ["taint", "cordon"], "t0", KEY)
    after = node("t1", alloc=7, taints=patch["spec"]["taints"], unschedulable=True,
                 record=json.loads(patch["metadata"]["annotations"][rem.RECORD_ANNOTATION]))
    entry2 = rem.plan([after, node("t2"), node("t3")], POOLS, "kubeadm", {}, policy(), key=KEY)[0]
    assert entry2["decision"] == "continue"
    assert run.act_patch(after, entry2, ["taint", "cordon"], "t1", KEY) is None


def test_restore_removes_only_its_own_taint_and_cordon():
    other = {"key": "example.com/maintenance", "effect": "NoSchedule"}
    n = node("t1", taints=[other, rem.TAINT], unschedulable=True, record={"tainted": True, "cordoned": True})
    patch = run.restore_patch(n, KEY)
    assert patch["spec"] == {"taints": [other], "unschedulable": None}
    assert patch["metadata"]["annotations"] == {rem.RECORD_ANNOTATION: None}


class FakeApi:
    """Only for the conflict retry: the Node changes once between read and write."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.patches = []
        self.conflicts = 1

    def get_node(self, name):
        return self.nodes[name]

    def patch_node(self, name, patch):
        if self.conflicts:
            self.conflicts -= 1
            self.nodes[name] = dict(self.nodes[name], metadata=dict(self.nodes[name]["metadata"], resourceVersion="2"))
            raise Conflict(name)
        self.patches.append(patch)
        return True

    def list_pods(self, name):
        return []


def test_conflict_reads_again_and_writes_with_the_new_version():
    nodes = {"t1": node("t1", alloc=7), "t2": node("t2"), "t3": node("t3")}
    entries = rem.plan(list(nodes.values()), POOLS, "kubeadm", {}, policy(actions=["taint", "cordon", "drain"]),
                       key=KEY)
    api = FakeApi(nodes)
    run.execute(api, entries, policy(actions=["taint", "cordon", "drain"]), "kubeadm", [], "now", key=KEY)
    assert [p["metadata"]["resourceVersion"] for p in api.patches] == ["2"]
    assert entries[0]["errors"] == [] and entries[0]["done"][:3] == [
        "record why in annotation gpufleet.io/gpu-remediation", "taint gpufleet.io/gpu-unhealthy:NoSchedule", "cordon"]


def test_dry_run_writes_nothing_and_reports_what_it_would_do():
    nodes = {"t1": node("t1", alloc=7), "t2": node("t2"), "t3": node("t3")}
    pol = rem.validate_policy({})
    entries = rem.plan(list(nodes.values()), POOLS, "kubeadm", {}, pol, key=KEY)
    api = FakeApi(nodes)
    run.execute(api, entries, pol, "kubeadm", [], "now", key=KEY)
    assert api.patches == [] and api.conflicts == 1
    rep = run.report(entries, pol, "kubeadm", "c1")
    assert rep["mode"] == "dry run (nothing changed)" and rep["decisions"] == {"act": 1, "none": 2}
    md = run.markdown(rep)
    assert "| t1 | train | unhealthy | act | nvidia.com/gpu allocatable 7 of capacity 8" in md


# --- nvidia-smi on reachable hosts ----------------------------------------------------------------

def smi(index=0, **health):
    base = {"ecc_dbe_volatile": 0, "remapped_row_pending": False, "remapped_row_failure": False,
            "retired_pages_pending": None}
    base.update(health)
    return {"index": index, "health": base}


@pytest.mark.parametrize("facts, expected", [
    ({"gpus": [smi()]}, []),
    ({"gpus": [smi(), smi(1, ecc_dbe_volatile=3)]}, [("ecc_dbe", "unhealthy", "GPU 1 (nvidia-smi): 3 double-bit ECC")]),
    ({"gpus": [smi(remapped_row_pending=True)]}, [("row_remap_pending", "unhealthy", "GPU 0 (nvidia-smi): a row remapping waits")]),
    ({"gpus": [smi(remapped_row_failure=True)]}, [("row_remap_failure", "unhealthy", "GPU 0 (nvidia-smi): row remapping failed")]),
    ({"gpus": [smi(retired_pages_pending=True)]}, [("retired_pending", "unhealthy", "GPU 0 (nvidia-smi): pages wait")]),
    ({"gpus": [smi(ecc_dbe_volatile=None)]}, []),  # not reported: nothing
    ({"gpus": [], "nvidia_smi_failure": "device-handle-error", "nvidia_smi_error": "Unable to determine the device handle for GPU0000:18:00.0: Unknown Error"},
     [("nvidia_smi", "unhealthy", "nvidia-smi on the host failed (device-handle-error)")]),
    ({"gpus": [], "nvidia_smi_failure": "driver-not-loaded", "nvidia_smi_error": "NVIDIA-SMI has failed"},
     [("nvidia_smi", "watch", "nvidia-smi on the host failed (driver-not-loaded)")]),
    ({"unreachable": True, "msg": "ssh: connect to host"}, []),
    ({"failed": True, "msg": "boom"}, []),
])
def test_host_findings(facts, expected):
    got = rem.host_findings({"t1": facts}, rem.validate_policy({})["thresholds"]).get("t1", [])
    assert [(f["source"], f["verdict"]) for f in got] == [e[:2] for e in expected]
    assert all(f["why"].startswith(e[2]) for f, e in zip(got, expected))


def test_host_and_metric_findings_add_up_and_make_the_node_unhealthy():
    found = rem.merge_findings({"t1": [{"source": "xid", "verdict": "application", "why": "XID 13", "gpu": "0", "value": 13}]},
                               rem.host_findings({"t1": {"gpus": [smi(remapped_row_pending=True)]}}, {}))
    entry = rem.plan([node("t1"), node("t2"), node("t3")], POOLS, "kubeadm", found, policy(), key=KEY)[0]
    assert [f["source"] for f in entry["findings"]] == ["xid", "row_remap_pending"]
    assert entry["state"] == "unhealthy" and entry["decision"] == "act"


def test_prometheus_credentials_in_the_url_never_reach_a_message():
    url = "https://gpufleet:s3cret@prometheus.example:9090/prom"

    def unreachable(full, **_kw):
        raise OSError("<urlopen error [Errno 111] Connection refused> for %s" % url)

    with pytest.raises(GpufleetError) as err:
        metrics.query(url, "up", opener=unreachable)
    assert "s3cret" not in str(err.value) and "gpufleet:" not in str(err.value)
    assert "https://***@prometheus.example:9090/prom" in str(err.value)
    assert metrics.shown("http://prometheus.monitoring:9090") == "http://prometheus.monitoring:9090"
    assert metrics.shown("prom:9090/x@y") == "prom:9090/x@y"  # an @ in the path is not userinfo
