"""A pool in MPS mode through the cluster stage on a real control plane (tests/helpers/controlplane.py).

Defect (issue 30): the MPS control daemon was rendered with hostPID and shareProcessNamespace; the API
server refuses that pair ("ShareProcessNamespace and HostPID cannot both be enabled"), so cluster.yml
with an MPS pool failed after the device plugin and GFD were applied. Here the example inventory's L4
pool shares its GPUs with MPS (4 clients per GPU); provision labels the nodes, the cluster stage applies
server-side, the MPS control daemon's pods run on exactly the pool's nodes (KWOK stands in for the
kubelets), and a re-run changes nothing.

Issue 38 item 2: the fix for that dropped hostPID and kept shareProcessNamespace, the reverse of the
device plugin's chart v0.20.0 (mps.enableHostPID: true; the MPS server finds its own PID through
/proc/self), so the daemon could not start on a real node. The daemon now runs in the host's PID namespace
without a shared one, and the API server must accept that too.
"""
import json

import pytest

from controlplane import shared_crds_or_skip
from ansible_run import recap, run_site

L4 = ["l4-node-01.example.internal", "l4-node-02.example.internal", "l4-node-03.example.internal"]
A100 = ["a100-node-01.example.internal", "a100-node-02.example.internal"]
MPS_DAEMON = "nvidia-device-plugin-mps-control-daemon"
POOLS = {"gpufleet_gpu_pools": [
    {"name": "train-a100", "gpu_type": "a100-80gb", "gpus_per_node": 8, "node_group": "gpu_pool_train_a100",
     "min_nodes": 2, "max_nodes": 2, "sharing": {"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.10gb",
                                                 "mig_preconfigured": True}},
    {"name": "infer-l4", "gpu_type": "l4", "gpus_per_node": 1, "node_group": "gpu_pool_infer_l4",
     "min_nodes": 3, "max_nodes": 3, "sharing": {"mode": "mps", "replicas": 4}},
]}


@pytest.fixture(scope="module")
def applied(control_plane, tmp_path_factory):
    shared_crds_or_skip(pytest)
    cp = control_plane
    cp.install_crds(["monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_podmonitors.yaml",
                     "monitoring.coreos.com_prometheusrules.yaml"])
    for name in A100:
        cp.add_node(name, gpu=56)
    for name in L4:
        cp.add_node(name, gpu=4)
    tmp = tmp_path_factory.mktemp("mps")
    pools = tmp / "pools.json"
    pools.write_text(json.dumps(POOLS))
    runs = {}
    for playbook in ("playbooks/provision.yml", "playbooks/cluster.yml"):
        runs[playbook] = stage(cp, tmp, playbook, pools)
    return cp, tmp, pools, runs


def stage(cp, tmp, playbook, pools):
    return run_site(tmp / "build", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                    "-e", "@%s" % pools, playbook=playbook)


def daemon_pods(cp, name):
    return sorted((p["spec"].get("nodeName"), any(c["type"] == "Ready" and c["status"] == "True"
                                                  for c in p["status"].get("conditions") or []))
                  for p in cp.items("/api/v1/namespaces/nvidia-device-plugin/pods")
                  if any(r["kind"] == "DaemonSet" and r["name"] == name
                         for r in p["metadata"].get("ownerReferences") or []))


def test_the_cluster_stage_with_an_mps_pool_is_accepted(applied):
    _, _, _, runs = applied
    for playbook, (rc, out) in runs.items():
        assert rc == 0, (playbook, out[-5000:])
    assert "cannot both be enabled" not in runs["playbooks/cluster.yml"][1]


def test_the_mps_control_daemon_runs_on_exactly_the_mps_pool_nodes(applied):
    cp = applied[0]
    ds = cp.get("/apis/apps/v1/namespaces/nvidia-device-plugin/daemonsets/" + MPS_DAEMON)
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostPID"] is True and not pod.get("shareProcessNamespace")
    want = [(n, True) for n in L4]
    cp.wait(lambda: daemon_pods(cp, MPS_DAEMON) == want, 90, "the MPS control daemon Ready on the three L4 nodes")
    # the pool's device plugin config (selected by the node label provision sets) shares by MPS
    assert cp.node(L4[0])["metadata"]["labels"]["nvidia.com/device-plugin.config"] == "infer-l4"
    config = cp.get("/api/v1/namespaces/nvidia-device-plugin/configmaps/nvidia-device-plugin-configs")["data"]
    assert "mps:" in config["infer-l4"] and "replicas: 4" in config["infer-l4"]


def test_a_rerun_changes_nothing(applied):
    cp, tmp, pools, _ = applied
    rc, out = stage(cp, tmp, "playbooks/cluster.yml", pools)
    assert rc == 0 and recap(out)["changed"] == 0, out[-4000:]
