"""GPU health remediation on self-managed hosts (issue 29 section 3): which host step a drained node gets
(reset, reboot, nothing), the escalation kept in the node's record, and the GPU reset's nvidia-smi calls and
how its answers are read.

The nvidia-smi texts below are nvidia-smi's documented/observed formats (the refusal and success lines as
reported in NVIDIA/NVSentinel#1690 and NVIDIA/gpu-operator#118), WRITTEN BY HAND: no GPU machine here."""
import json

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation as rem
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation_host as host
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation_run as run
from ansible_collections.gpufleet.k8s.plugins.module_utils.node import gpu_reset

POOLS = [{"name": "train", "min_nodes": 0}]
BUS = ["00000000:18:00.0", "00000000:19:00.0"]
KEY = b"h" * 32   # the records' MAC key


def node(name, alloc=2, record=None):
    if record is not None:
        record = rem.signed(record, {"metadata": {"name": name, "uid": "uid-" + name}}, KEY)
    ann = {rem.RECORD_ANNOTATION: json.dumps(record)} if record is not None else {}
    return {"metadata": {"name": name, "uid": "uid-" + name, "labels": {"gpufleet.io/pool": "train"},
                         "annotations": ann, "resourceVersion": "1"},
            "spec": {"taints": []},
            "status": {"capacity": {"nvidia.com/gpu": "2"}, "allocatable": {"nvidia.com/gpu": str(alloc)}}}


def facts(**gpu1_health):
    health = {"ecc_dbe_volatile": 0, "remapped_row_pending": False, "remapped_row_failure": False,
              "retired_pages_pending": None}
    return {"gpus": [{"index": 0, "uuid": "GPU-a", "pci_bus_id": BUS[0], "health": dict(health)},
                     {"index": 1, "uuid": "GPU-b", "pci_bus_id": BUS[1], "health": dict(health, **gpu1_health)}]}


ALL = ["taint", "cordon", "drain", "reset", "reboot"]


def step_of(actions, gpu_facts, platform="kubeadm", metric=None, record=None, alloc=2):
    pol = rem.validate_policy({"dry_run": False, "actions": actions}, platform)
    found = rem.merge_findings(metric or {}, rem.host_findings(gpu_facts, pol["thresholds"]))
    entry = rem.plan([node("n1", alloc=alloc, record=record)], POOLS, platform, found, pol, gpu_facts=gpu_facts,
                     key=KEY)[0]
    return entry


# (actions, facts of n1, metric findings, record's host steps) -> (step, gpus, fallback, text starts with)
CASES = [
    # a row remapping pending on GPU 1: reset that GPU, a reboot only if the reset is refused
    (ALL, facts(remapped_row_pending=True), None, None, ("reset", [BUS[1]], "reboot", "reset GPU 00000000:19:00.0")),
    (["taint", "cordon", "drain", "reset"], facts(ecc_dbe_volatile=2), None, None, ("reset", [BUS[1]], None, "reset GPU")),
    # an XID on GPU 0 from DCGM (its gpu label is the index)
    (ALL, facts(), {"n1": [{"source": "xid", "gpu": "0", "value": 48, "verdict": "unhealthy", "why": "XID 48"}]}, None,
     ("reset", [BUS[0]], "reboot", "reset GPU 00000000:18:00.0")),
    # allocatable below capacity names no GPU: every GPU
    (ALL, facts(), None, None, ("reset", [], "reboot", "reset every GPU")),
    # a lost GPU (nvidia-smi cannot reach it) or XID 79: straight to a reboot
    (ALL, {"gpus": [], "nvidia_smi_failure": "device-handle-error", "nvidia_smi_error": "Unable to determine the device handle"},
     None, None, ("reboot", [], None, "reboot the host: a GPU is lost")),
    (ALL, facts(), {"n1": [{"source": "xid", "gpu": "1", "value": 79, "verdict": "unhealthy", "why": "XID 79"}]}, None,
     ("reboot", [], None, "reboot the host: a GPU is lost")),
    # escalation from the record
    (ALL, facts(remapped_row_pending=True), None, [{"step": "reset", "ok": True}],
     ("reboot", [], None, "reboot the host: still unhealthy after the GPU reset")),
    (ALL, facts(remapped_row_pending=True), None, [{"step": "reset", "ok": False}],
     ("reboot", [], None, "reboot the host: the GPU reset was refused")),
    (ALL, facts(remapped_row_pending=True), None, [{"step": "reset", "ok": True}, {"step": "reboot", "ok": True}],
     (None, [], None, "still unhealthy after the host was rebooted")),
    (["taint", "cordon", "drain", "reset"], facts(remapped_row_pending=True), None, [{"step": "reset", "ok": True}],
     (None, [], None, "needs a reboot (still unhealthy after the GPU reset), and reboot is not in gpu_remediation_actions")),
    # reboot alone
    (["taint", "cordon", "drain", "reboot"], facts(remapped_row_pending=True), None, None,
     ("reboot", [], None, "reboot the host")),
    # the host did not answer: nothing on it
    (ALL, {"unreachable": True, "msg": "ssh: connect to host n1"}, None, None,
     (None, [], None, "reset or reboot not done: the host of Node n1 did not answer")),
]


@pytest.mark.parametrize("actions, gpu_facts, metric, history, expected", CASES)
def test_host_step_table(actions, gpu_facts, metric, history, expected):
    record = {"since": "t0", "reasons": [], "tainted": True, "cordoned": True, "host_steps": history} if history else None
    # no finding from nvidia-smi or the metrics: the device plugin's allocatable drop is the evidence
    unhealthy = metric or rem.host_findings({"n1": gpu_facts}, rem.POLICY_DEFAULTS["thresholds"])
    entry = step_of(actions, {"n1": gpu_facts}, metric=metric, record=record, alloc=2 if unhealthy else 1)
    hs = entry["host_step"]
    assert (hs["step"], hs["gpus"], hs["fallback"]) == expected[:3], hs
    assert hs["text"].startswith(expected[3]), hs["text"]
    assert hs["text"] in entry["steps"]


def test_no_host_step_on_cloud_platforms_and_without_host_actions():
    assert step_of(["taint", "cordon", "drain", "replace"], {"n1": facts()}, alloc=1)["host_step"] is None
    entry = step_of(["taint", "cordon", "drain", "replace"], {"n1": facts()}, platform="eks", alloc=1)
    assert entry["host_step"] is None


@pytest.mark.parametrize("platform, words", [
    ("eks", "reset and reboot act on the hosts of self-managed clusters"),
    ("gke", "on platform gke use replace (GKE node auto-repair)"),
])
def test_host_actions_are_refused_on_cloud_platforms(platform, words):
    with pytest.raises(GpufleetError) as err:
        rem.validate_policy({"actions": ALL}, platform)
    assert "gpu_remediation_actions: " in err.value.msg and words in err.value.msg


class Api(object):
    """Records the calls (the logic under test decides them; the API server's part is tested in
    tests/integration/test_cp_remediation_host.py)."""

    def __init__(self, nodes, plugin_pods=()):
        self.nodes = nodes
        self.patches, self.deleted = [], []
        self.plugin_pods = list(plugin_pods)

    def get_node(self, name):
        return self.nodes.get(name)

    def patch_node(self, name, patch):
        self.patches.append((name, patch))
        return True

    def list_pods(self, name):
        return []

    def list_pods_selected(self, name, selector):
        return [p for p in self.plugin_pods if p["spec"]["nodeName"] == name]

    def delete_pod(self, namespace, name):
        self.deleted.append("%s/%s" % (namespace, name))
        return True


def test_execute_hands_the_step_to_the_host_only_after_the_drain():
    pol = rem.validate_policy({"dry_run": False, "actions": ALL}, "kubeadm")
    gpu_facts = {"n1": facts(remapped_row_pending=True)}
    found = rem.host_findings(gpu_facts, pol["thresholds"])
    entries = rem.plan([node("n1")], POOLS, "kubeadm", found, pol, gpu_facts=gpu_facts, key=KEY)
    run.execute(Api({"n1": node("n1")}), entries, pol, "kubeadm", [], "now", drain_poll=0, key=KEY)
    assert entries[0]["host_action"] == {"step": "reset", "gpus": [BUS[1]], "fallback": "reboot"}
    # a dry run plans it and hands nothing over
    dry = rem.validate_policy({"actions": ALL}, "kubeadm")
    entries = rem.plan([node("n1")], POOLS, "kubeadm", found, dry, gpu_facts=gpu_facts, key=KEY)
    run.execute(Api({"n1": node("n1")}), entries, dry, "kubeadm", [], "now")
    assert entries[0]["host_action"] is None
    assert entries[0]["done"][-1].startswith("reset GPU 00000000:19:00.0")


def test_host_results_go_into_the_record_and_restart_the_plugin_after_a_reset():
    record = {"since": "t0", "reasons": ["r"], "tainted": True, "cordoned": True, "replaced": ""}
    api = Api({"n1": node("n1", record=record)},
              plugin_pods=[{"metadata": {"namespace": "gpu", "name": "nvdp-x"}, "spec": {"nodeName": "n1"}}])
    nodes = [{"name": "n1", "done": [], "errors": []}]
    changed = run.record_host_results(api, nodes, {"n1": [{"step": "reset", "ok": True, "message": "reset " + BUS[1]}]},
                                      "t1", plugin_selector="app.kubernetes.io/name=nvidia-device-plugin", key=KEY)
    assert changed and api.deleted == ["gpu/nvdp-x"]
    written = json.loads(api.patches[0][1]["metadata"]["annotations"][rem.RECORD_ANNOTATION])
    assert written["host_steps"] == [{"step": "reset", "ok": True, "at": "t1", "message": "reset " + BUS[1]}]
    assert written["tainted"] and written["reasons"] == ["r"]          # the rest of the record kept
    assert nodes[0]["done"][0] == "reset: reset " + BUS[1] and "device plugin restarted" in nodes[0]["done"][1]


def test_a_refused_reset_then_a_reboot_are_both_recorded_and_only_a_failed_last_step_is_an_error():
    api = Api({"n1": node("n1", record={"since": "t0"})})
    nodes = [{"name": "n1", "done": [], "errors": []}]
    run.record_host_results(api, nodes, {"n1": [
        {"step": "reset", "ok": False, "message": "nvidia-smi refused the reset (rc 255): %s: In use by another client" % BUS[0]},
        {"step": "reboot", "ok": True, "message": "rebooted"}]}, "t1", plugin_selector="x", key=KEY)
    written = json.loads(api.patches[0][1]["metadata"]["annotations"][rem.RECORD_ANNOTATION])
    assert [(s["step"], s["ok"]) for s in written["host_steps"]] == [("reset", False), ("reboot", True)]
    assert api.deleted == []    # the reboot restarted the plugin with the host
    assert nodes[0]["errors"] == [] and nodes[0]["done"][0].endswith("In use by another client (then: reboot)")
    # the same refusal without a reboot after it fails the run, naming the node
    nodes = [{"name": "n1", "done": [], "errors": []}]
    run.record_host_results(api, nodes, {"n1": [{"step": "reset", "ok": False, "message": "refused"}]}, "t2", key=KEY)
    assert nodes[0]["errors"] == ["Node n1: reset: refused"]


def test_the_agents_tolerate_the_remediation_taint():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import addons
    assert addons.UNHEALTHY_TOLERATION["key"] == rem.TAINT_KEY
    assert addons.UNHEALTHY_TOLERATION in addons.gpu_tolerations({"pools": []})


def test_the_record_keeps_the_last_host_steps_only():
    record = host.record_host_steps({"host_steps": [{"step": "reset", "ok": False}] * 6}, [{"step": "reboot", "ok": True}], "t")
    assert len(record["host_steps"]) == host.HOST_HISTORY and record["host_steps"][-1]["step"] == "reboot"


def test_a_node_restored_by_hand_meanwhile_gets_no_record_back():
    api = Api({"n1": node("n1")})
    nodes = [{"name": "n1", "done": [], "errors": []}]
    assert run.record_host_results(api, nodes, {"n1": [{"step": "reboot", "ok": True}]}, "t", key=KEY) is False
    assert api.patches == []


# --- the reset's nvidia-smi calls -----------------------------------------------------------------

QUERY = "0, 00000000:18:00.0, GPU-a, Enabled\n1, 00000000:19:00.0, GPU-b, Disabled\n"


def test_query_and_selection():
    gpus = gpu_reset.parse_query(QUERY)
    assert [(g["index"], g["persistence"]) for g in gpus] == [(0, True), (1, False)]
    assert [g["index"] for g in gpu_reset.select(gpus, [])] == [0, 1]
    assert [g["index"] for g in gpu_reset.select(gpus, ["0000:19:00.0"])] == [1]     # 4-digit domain
    assert [g["index"] for g in gpu_reset.select(gpus, ["GPU-a", "0"])] == [0]
    with pytest.raises(GpufleetError) as err:
        gpu_reset.select(gpus, ["7"])
    assert "gpus: 7 not on this host; it has 0 (00000000:18:00.0), 1 (00000000:19:00.0)" in err.value.msg
    with pytest.raises(GpufleetError):
        gpu_reset.parse_query("No devices were found\n")


def test_persistence_is_turned_off_only_where_it_is_on_and_back_after():
    gpus = gpu_reset.parse_query(QUERY)
    before, reset, after = gpu_reset.plan_calls(gpus)
    assert before == ["-pm", "0", "-i", "00000000:18:00.0"] and after == ["-pm", "1", "-i", "00000000:18:00.0"]
    assert reset == ["--gpu-reset", "-i", "00000000:18:00.0,00000000:19:00.0"]
    assert gpu_reset.plan_calls(gpus[1:])[0] is None


REFUSED = """The following GPUs could not be reset:
  GPU 00000000:18:00.0: In use by another client

1 device is currently being used by one or more other processes (e.g. Fabric Manager, CUDA application, graphics
application such as an X server, or a monitoring application such as another instance of nvidia-smi). Please first
kill all processes using this device and all compute applications running in the system.
"""
OLD_REFUSED = """GPU 00000000:18:00.0 is currently in use by another process.

1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA application, graphics
application such as an X server, or a monitoring application such as another instance of nvidia-smi).
"""


@pytest.mark.parametrize("rc, text, ok, reset, refused, words", [
    (0, "GPU 00000000:18:00.0 was successfully reset.\nGPU 00000000:19:00.0 was successfully reset.\nAll done.\n",
     True, BUS, {}, "reset 00000000:18:00.0, 00000000:19:00.0"),
    (0, "GPU 00000000:18:00.0 was successfully reset.\n", False, BUS[:1], {},      # one GPU not said: not ok
     "exited 0 but did not say it reset 00000000:19:00.0"),
    (255, REFUSED, False, [], {BUS[0]: "In use by another client"},
     "nvidia-smi refused the reset (rc 255): 00000000:18:00.0: In use by another client"),
    (255, OLD_REFUSED, False, [], {BUS[0]: "In use by another client"}, "refused the reset (rc 255)"),
    (3, "GPU Reset couldn't run because GPU 00000000:18:00.0 is the primary GPU.\n", False, [], {},
     "nvidia-smi --gpu-reset failed (rc 3): GPU Reset couldn't run because GPU 00000000:18:00.0 is the primary GPU."),
])
def test_reset_answers(rc, text, ok, reset, refused, words):
    targets = gpu_reset.parse_query(QUERY)
    got = gpu_reset.parse_reset(rc, text, targets)
    assert (got["ok"], got["reset"], got["refused"]) == (ok, reset, refused)
    assert words in got["message"], got["message"]
