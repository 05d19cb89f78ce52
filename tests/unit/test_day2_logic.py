"""Validation expectations per sharing mode, per-node verdicts, and rolling-upgrade plans."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.expected import expected_resources, format_table, validate_nodes
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.upgrade_plan import (
    batch_size, failure_note, plan_upgrade)


@pytest.mark.parametrize("pool,expected", [
    ({"gpu_type": "l4", "gpus_per_node": 1}, {"nvidia.com/gpu": 1}),
    ({"gpu_type": "h100-80gb", "gpus_per_node": 8}, {"nvidia.com/gpu": 8}),
    ({"gpu_type": "l4", "gpus_per_node": 1, "sharing": {"mode": "time-slicing", "replicas": 4}}, {"nvidia.com/gpu": 4}),
    ({"gpu_type": "t4", "gpus_per_node": 2, "sharing": {"mode": "time-slicing", "replicas": 4, "rename_by_default": True}},
     {"nvidia.com/gpu.shared": 8}),
    ({"gpu_type": "t4", "gpus_per_node": 2, "sharing": {"mode": "mps", "replicas": 3}}, {"nvidia.com/gpu": 6}),
    ({"gpu_type": "a100-80gb", "gpus_per_node": 8, "sharing": {"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.10gb"}},
     {"nvidia.com/gpu": 56}),
    ({"gpu_type": "a100-40gb", "gpus_per_node": 2, "sharing": {"mode": "mig", "mig_strategy": "mixed", "mig_profile": "3g.20gb"}},
     {"nvidia.com/mig-3g.20gb": 4}),
    ({"gpu_type": "h100-80gb", "gpus_per_node": 1, "sharing": {"mode": "mig", "mig_strategy": "single"}}, {"nvidia.com/gpu": 1}),
])
def test_expected_resources_per_sharing_mode(pool, expected):
    assert expected_resources(pool) == expected


POOLS = normalize_pools([
    {"name": "infer", "gpu_type": "l4", "gpus_per_node": 1, "min_nodes": 1, "sharing": {"mode": "time-slicing", "replicas": 4}},
    {"name": "train", "gpu_type": "a100-80gb", "gpus_per_node": 8, "min_nodes": 1},
])


def node(name, pool, allocatable, ready=True, driver="580.95.05"):
    return {"metadata": {"name": name, "labels": {"gpufleet.io/pool": pool, "nvidia.com/cuda.driver-version.full": driver}},
            "status": {"allocatable": allocatable,
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def test_healthy_nodes_pass_and_table_has_one_line_per_node():
    nodes = [node("i1", "infer", {"nvidia.com/gpu": "4"}), node("t1", "train", {"nvidia.com/gpu": "8"}),
             {"metadata": {"name": "cpu1", "labels": {}}, "status": {}}]
    rows, failures = validate_nodes(POOLS, nodes, {"infer": "passed", "train": "passed"}, {"i1": True})
    assert failures == []
    assert [r["node"] for r in rows] == ["i1", "t1"]
    assert rows[0]["metrics"] == "ok" and rows[1]["metrics"] == "not checked" and rows[0]["driver"] == "580.95.05"
    table = format_table(rows)
    assert len(table) == 3 and table[0].startswith("node") and "nvidia.com/gpu=4" in table[1]


def test_failures_name_the_nodes_and_reasons():
    nodes = [node("i1", "infer", {"nvidia.com/gpu": "1"}), node("t1", "train", {"nvidia.com/gpu": "8"}, ready=False)]
    rows, failures = validate_nodes(POOLS, nodes, {"infer": "failed: timeout after 300 s"}, {"t1": False})
    assert len(failures) == 2
    assert failures[0] == "i1 (pool infer): nvidia.com/gpu allocatable 1, expected 4; smoke job failed: timeout after 300 s"
    assert failures[1] == "t1 (pool train): node not Ready; DCGM_FI_DEV_GPU_UTIL not served"
    assert [r["ok"] for r in rows] == [False, False]


def test_pool_without_nodes_fails_when_it_should_have_some():
    _, failures = validate_nodes(POOLS, [node("i1", "infer", {"nvidia.com/gpu": "4"})])
    assert failures == ["pool train: no node carries gpufleet.io/pool=train (min_nodes 1)"]


@pytest.mark.parametrize("serial,total,size", [(1, 5, 1), (2, 5, 2), ("3", 5, 3), (10, 5, 5), ("25%", 8, 2),
                                               ("25%", 3, 1), ("100%", 4, 4), ("33.3%", 10, 3)])
def test_batch_size(serial, total, size):
    assert batch_size(serial, total) == size


@pytest.mark.parametrize("serial", [0, -1, "0", "0%", "150%", "abc", True, None, 1.5])
def test_bad_serial_is_refused_naming_the_variable(serial):
    with pytest.raises(GpufleetError, match="gpufleet_upgrade_serial"):
        batch_size(serial, 4)


def test_plan_batches_and_operator_managed_nodes():
    plan = plan_upgrade(["n1", "n2", "n3", "n4", "n5"], 2, node_labels={"n3": {"nvidia.com/gpu.deploy.driver": "true"}},
                        target="580.95.05")
    assert plan["batches"] == [["n1", "n2"], ["n4", "n5"]]
    assert plan["operator_managed"] == ["n3"]
    assert plan["summary"][0].startswith("batch 1/2: n1, n2 -> cordon -> drain -> driver and toolkit roles (pin 580.95.05)")
    assert "GPU Operator" in plan["summary"][-1]


def test_operator_mode_upgrades_no_host():
    plan = plan_upgrade(["n1", "n2"], 1, addons_mode="operator")
    assert plan["batches"] == [] and plan["operator_managed"] == ["n1", "n2"]


def test_failure_note_leaves_instructions():
    value, lines = failure_note("n1", "wait until GPUs are allocatable", "nvidia.com/gpu stayed 0 for 600 s")
    assert value == "wait until GPUs are allocatable: nvidia.com/gpu stayed 0 for 600 s"
    assert any("--limit localhost,n1" in line for line in lines) and any("kubectl uncordon n1" in line for line in lines)
