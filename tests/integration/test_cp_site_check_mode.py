"""``site.yml --check --diff`` in apply mode on a real control plane (issue 39: with ``--skip-tags nodes`` it showed
the right diff, then failed in validate with ``namespaces "gpufleet-validate" not found``, because check mode
does not create the stage's namespace and the stage then read objects inside it). KWOK stands in for the
kubelets (tests/helpers/controlplane.py).

Check mode now runs through validate without failing and without creating anything: the stage says what it
would check, and the API server holds no gpufleet object afterwards."""
import json

from ansible_run import flat, recap, run_site
from inventories import one_t4_pool


def namespaces(cp):
    return sorted(ns["metadata"]["name"] for ns in cp.items("/api/v1/namespaces"))


def test_check_mode_runs_through_validate_and_creates_nothing(control_plane, tmp_path):
    inv = tmp_path / "inv"
    one_t4_pool(inv)
    control_plane.add_node("gpu-a1", gpu=1, labels={"gpufleet.io/pool": "plain"})
    before = namespaces(control_plane)
    rc, out = run_site(tmp_path / "b", "--skip-tags", "nodes", "--check", "--diff",
                       "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % control_plane.kubeconfig,
                       "-e", json.dumps({"gpu_validate_timeout": 60, "gpu_validate_metrics": False}),
                       inventory=str(inv))
    assert rc == 0, out[-4000:]
    assert recap(out)["failed"] == 0
    # nothing was created: no namespace, no DaemonSet
    assert namespaces(control_plane) == before
    assert control_plane.items("/apis/apps/v1/daemonsets") == []
    assert "check mode" in flat(out).split("TASK [gpu_validate")[-1], out[-3000:]
