"""Rolling driver upgrade: what a stopped run leaves on the Nodes, how the next run names it, the
drain options gpufleet exposes, and instructions that name gpufleet's own variables."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.upgrade_plan import (
    FAILED_ANNOTATION, IN_PROGRESS_ANNOTATION, check, failure_note, leftover_nodes, plan_upgrade)


def node(name, annotations=None, cordoned=True):
    return {"metadata": {"name": name, "annotations": annotations or {}}, "spec": {"unschedulable": cordoned}}


def test_leftovers_name_nodes_and_why():
    lines = leftover_nodes([
        node("n2", {IN_PROGRESS_ANNOTATION: "driver 580.95.05 from host h2, started 2026-12-01T03:00:00Z"}),
        node("n1", {FAILED_ANNOTATION: "Drain the node: too many pods"}),
        node("n3", {"other": "x"}, cordoned=False),
    ])
    assert lines == [
        "Node n1 (cordoned): an earlier upgrade failed at Drain the node: too many pods",
        "Node n2 (cordoned): an earlier upgrade run stopped while upgrading it (driver 580.95.05 from host h2, "
        "started 2026-12-01T03:00:00Z) - its host became unreachable or the run was interrupted; this run resumes it",
    ]


@pytest.mark.parametrize("reason,hint", [
    ("cannot delete Pods not managed by ReplicationController, ReplicaSet, Job, DaemonSet or StatefulSet "
     "(use option force set to yes): default/bare", "set gpufleet_upgrade_drain_force=true"),
    ("cannot delete Pods with local storage: emptyDir", "set gpufleet_upgrade_delete_emptydir_data=true"),
    ("host became unreachable (last error: ssh: connect to host 10.0.0.5 port 22: Connection timed out)",
     "Host h1 became unreachable"),
])
def test_failure_note_names_gpufleets_own_options(reason, hint):
    _value, lines = failure_note("n1", "Drain the node", reason, host="h1")
    assert any(hint in line for line in lines), lines
    assert not any("use option force" in line for line in lines[1:])
    assert any("--limit localhost,h1" in line for line in lines)


@pytest.mark.parametrize("extra,error", [
    ({"gpufleet_upgrade_drain_force": "maybe"}, "gpufleet_upgrade_drain_force: 'maybe' is not allowed; use true or false"),
    ({"gpufleet_upgrade_drain_grace_period": "-1"}, "gpufleet_upgrade_drain_grace_period: '-1' is not allowed"),
    ({"gpufleet_upgrade_drain_pod_selectors": "app=x"}, "gpufleet_upgrade_drain_pod_selectors: 'app=x' is not allowed"),
    ({"gpufleet_upgrade_drain_force": True, "gpufleet_upgrade_drain_grace_period": 30,
      "gpufleet_upgrade_drain_pod_selectors": ["app=training"]}, None),
])
def test_drain_options_are_checked_in_preflight(extra, error):
    problems = Problems()
    check({"extra": extra}, {}, problems)
    if error:
        assert any(error in e for e in problems.errors), problems.errors
    else:
        assert problems.errors == []


def test_plan_reads_labels_by_node_name():
    plan = plan_upgrade(["h1.example", "h2.example"], 1, node_labels={"n1": {"nvidia.com/gpu.deploy.driver": "true"}},
                        node_names={"h1.example": "n1"})
    assert plan["operator_managed"] == ["h1.example"]
