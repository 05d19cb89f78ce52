"""Self-managed node labels/taints and the per-pool device-plugin configs, schema-checked."""
import yaml

from ansible_collections.gpufleet.k8s.plugins.filter.nodes import pool_node_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import plugin_configs, pool_plugin_config
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from k8s_schema import assert_valid

POOLS = normalize_pools([
    {"name": "train", "gpu_type": "a100-80gb", "gpus_per_node": 8, "labels": {"team": "ml"},
     "sharing": {"mode": "mig", "mig_strategy": "mixed"}},
    {"name": "infer", "gpu_type": "l4", "taints": [], "sharing": {"mode": "time-slicing", "replicas": 4}},
    {"name": "mps", "gpu_type": "t4", "sharing": {"mode": "mps", "replicas": 3}},
])
GROUPS = {"gpu_pool_train": ["n2", "n1"], "gpu_pool_infer": ["i1"]}


def test_node_objects_per_host_with_pool_labels_and_taints():
    objs = pool_node_objects(POOLS, GROUPS)
    assert [o["metadata"]["name"] for o in objs] == ["n1", "n2", "i1"]
    assert objs[0]["metadata"]["labels"] == {"gpufleet.io/pool": "train", "nvidia.com/device-plugin.config": "train",
                                             "team": "ml"}
    assert objs[0]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert "spec" not in objs[2]  # pool without taints sets none
    for obj in objs:
        assert_valid(obj)


def test_sharing_modes_map_to_plugin_config():
    assert pool_plugin_config(POOLS[0])["flags"]["migStrategy"] == "mixed"
    assert "sharing" not in pool_plugin_config(POOLS[0])
    ts = pool_plugin_config(POOLS[1])
    assert ts["sharing"] == {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}
    assert ts["flags"]["migStrategy"] == "none"
    assert pool_plugin_config(POOLS[2])["sharing"] == {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 3}]}}


def test_plugin_configs_named_per_pool_plus_default():
    configs = plugin_configs(POOLS)
    assert sorted(configs) == ["default", "infer", "mps", "train"]
    assert yaml.safe_load(configs["default"]) == {"version": "v1", "flags": {"migStrategy": "none", "failOnInitError": True}}
