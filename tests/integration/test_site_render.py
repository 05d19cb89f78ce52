"""The main job for real: ansible-playbook site.yml on the example inventory in render mode."""
import json
import os
import re

import pytest
import yaml

from ansible_run import manifests, recap, run_site
from k8s_schema import assert_valid
from render_cache import private_copy, rendered_site


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    rc, out, build = rendered_site(tmp_path_factory)
    assert rc == 0, out[-3000:]
    return build, out


def test_render_writes_schema_valid_manifests_per_component(rendered):
    build, out = rendered
    files = manifests(build)
    components = {os.path.relpath(os.path.dirname(f), build) for f in files}
    assert {"provision/nodes", "cluster/device-plugin"} <= components
    for path in files:
        with open(path) as handle:
            for obj in yaml.safe_load_all(handle):
                if obj and "apiVersion" in obj and obj["apiVersion"] in ("v1", "apps/v1", "node.k8s.io/v1",
                                                                         "scheduling.k8s.io/v1", "rbac.authorization.k8s.io/v1"):
                    assert_valid(obj)
    assert "render mode" in out and "Node bootstrap skipped" in out
    assert os.path.isfile(build / "plan.md")


def test_second_run_changes_nothing_and_is_byte_identical(rendered, tmp_path_factory):
    build = private_copy(rendered[0], tmp_path_factory)
    before = {p: open(p, "rb").read() for p in manifests(build)}
    rc, out = run_site(build)
    assert rc == 0, out[-3000:]
    assert recap(out)["changed"] == 0
    assert {p: open(p, "rb").read() for p in manifests(build)} == before


def test_check_mode_on_a_fresh_dir_writes_nothing(tmp_path):
    build = tmp_path / "example"
    rc, out = run_site(build, "--check", "--diff")
    assert rc == 0, out[-3000:]
    assert recap(out)["changed"] > 0
    assert not build.exists()


@pytest.mark.parametrize("extra,fragment", [
    ({"gpufleet_platform": "aks"}, "value of gpufleet_platform must be one of: eks, gke, gke-autopilot"),
    ({"gpufleet_gpu_pools": [{"name": "p1", "gpus_per_node": 1}]}, "gpufleet_gpu_pools[0].gpu_type: is required; use one of:"),
    ({"gpufleet_gpu_pools": [{"name": "p1", "gpu_type": "l4", "sharing": {"mode": "time-slicing", "replicas": 0}}]},
     "gpufleet_gpu_pools[0].sharing.replicas"),
])
def test_bad_input_fails_in_preflight_before_anything_is_written(tmp_path, extra, fragment):
    build = tmp_path / "example"
    rc, out = run_site(build, "-e", json.dumps(extra))
    assert rc != 0
    assert fragment in re.sub(r"\s+", " ", out), out[-3000:]
    assert "Preflight" in out
    assert not build.exists()
