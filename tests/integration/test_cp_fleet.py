"""A fleet of three clusters in ONE playbooks/fleet.yml run (issue 29 acceptance): a kubeadm cluster in apply mode
on the real test control plane (tests/helpers/controlplane.py: real kube-apiserver, controller-manager, scheduler;
KWOK stand-in kubelets for its two GPU Nodes) plus the shipped eks and gke inventories in render mode. Each
cluster runs site.yml in its own ansible-playbook process; the node and validate stages are skipped through the
fleet's extra arguments (the GPU hosts exist only as Nodes). Then the kubeadm cluster's API server is made
unreachable: the other two still finish and are reported, and the play fails at the end naming it."""
import json
import os
import re

import pytest
import yaml

from ansible_run import ROOT, flat, run_playbook
from controlplane import free_port
from cp_nodes import unreachable_pool

HOSTS = ("h1", "h2")
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def settings(cp):
    return ("gpufleet_platform: kubeadm\ngpufleet_cluster_name: fleet-lab\ngpufleet_addons_mode: standalone\n"
            "gpufleet_apply: true\ngpufleet_k8s_kubeconfig: %s\n"
            "gpufleet_gpu_pools:\n  - {name: train, gpu_type: l4, gpus_per_node: 2, node_group: gpu_pool_train, "
            "min_nodes: 2, max_nodes: 2}\n" % cp.kubeconfig)


@pytest.fixture(scope="module")
def lab(control_plane, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fleet")
    inv = unreachable_pool(control_plane, tmp / "onprem", settings(control_plane), "gpu_pool_train", HOSTS, gpu=2)
    return control_plane, tmp, inv


def fleet(tmp, inv, name, onprem_vars=None):
    """The fleet inventory tmp/<name>: the kubeadm cluster on the control plane and the shipped eks and gke
    inventories, each building under tmp/<name>-build-<cluster>."""
    folder = tmp / name
    (folder / "group_vars" / "all").mkdir(parents=True)
    (folder / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"gpufleet_controller": {"hosts": {
        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}}}))
    clusters = [
        {"name": "onprem-lab", "inventory": inv, "platform": "kubeadm", "cloud": "onprem", "region": "lab1",
         "tags": ["prod"], "vars": dict(onprem_vars or {})},
        {"name": "eks-use1", "inventory": os.path.join(ROOT, "inventories", "eks"), "platform": "eks", "cloud": "aws", "region": "us-east-1", "tags": ["prod"]},
        {"name": "gke-usc1", "inventory": os.path.join(ROOT, "inventories", "gke"), "platform": "gke", "cloud": "gcp",
         "region": "us-central1", "tags": ["research"]},
    ]
    for cluster in clusters:
        cluster.setdefault("vars", {})["gpufleet_build_dir"] = str(tmp / ("%s-build-%s" % (name, cluster["name"])))
    (folder / "group_vars" / "all" / "fleet.yml").write_text(yaml.safe_dump({
        "fleet_run_name": name, "fleet_run_clusters": clusters, "fleet_run_stage": "site",
        "fleet_run_extra_args": ["--skip-tags=nodes,validate"], "fleet_run_parallel": 3,
        "fleet_run_run_dir": str(tmp / (name + "-run"))}))
    return str(folder)


def run_fleet(tmp, folder, name):
    return run_playbook("playbooks/fleet.yml", "-i", folder, "-e", "fleet_overview_dir=%s" % (tmp / (name + "-report")),
                        timeout=600)


def overview(tmp, name):
    with open(str(tmp / (name + "-report") / "report.json")) as handle:
        return dict((c["name"], c) for c in json.load(handle)["clusters"])


@pytest.fixture(scope="module")
def converged(lab):
    cp, tmp, inv = lab
    rc, out = run_fleet(tmp, fleet(tmp, inv, "all-ok"), "all-ok")
    return cp, tmp, rc, out


def test_three_clusters_in_one_run_all_done(converged):
    cp, tmp, rc, out = converged
    assert rc == 0, out[-6000:]
    for name in ("onprem-lab", "eks-use1", "gke-usc1"):
        assert re.search(r"%s: ok \(rc 0, [\d.]+ s, changed \d+\)" % name, out), out[-4000:]
    # the kubeadm cluster's objects are on the API server: its Nodes labelled and tainted, the add-ons applied
    for host in HOSTS:
        node = cp.node("gpu-" + host)
        assert node["metadata"]["labels"]["gpufleet.io/pool"] == "train"
        assert TAINT in node["spec"]["taints"]
    daemonsets = {d["metadata"]["name"] for d in cp.items("/apis/apps/v1/daemonsets")}
    assert "nvidia-device-plugin" in daemonsets, daemonsets
    # the two render-mode clusters left their build trees, each from its own inventory
    eks, gke = tmp / "all-ok-build-eks-use1", tmp / "all-ok-build-gke-usc1"
    assert any(f.startswith("00-nodepool") or "nodepool" in f for f in os.listdir(str(eks / "provision" / "karpenter")))
    assert (gke / "provision" / "gke" / "autoprovisioning.yaml").is_file()
    assert not (eks / "provision" / "gke").exists() and not (gke / "provision" / "karpenter").exists()
    for build in (eks, gke, tmp / "all-ok-build-onprem-lab"):
        assert (build / "report" / "fleet.json").is_file(), build
    # the fleet report lists every cluster from its own report
    clusters = overview(tmp, "all-ok")
    assert sorted(clusters) == ["eks-use1", "gke-usc1", "onprem-lab"]
    assert all(c["state"] == "ok" for c in clusters.values()), clusters
    assert clusters["onprem-lab"]["gpus"] == 4, clusters["onprem-lab"]


def test_one_unreachable_cluster_leaves_the_others_done_and_reported(lab, converged):
    cp, tmp, inv = lab
    closed = str(tmp / "closed.kubeconfig")
    with open(cp.kubeconfig) as handle:
        text = handle.read()
    with open(closed, "w") as handle:
        handle.write(re.sub(r"https://127\.0\.0\.1:\d+", "https://127.0.0.1:%d" % free_port(), text))
    rc, out = run_fleet(tmp, fleet(tmp, inv, "one-down", {"gpufleet_k8s_kubeconfig": closed}), "one-down")
    assert rc != 0
    text = flat(out)
    assert "3 cluster(s): 2 ok, 1 failed, 0 skipped; failed: onprem-lab (ansible-playbook ended with rc 2)" in text, \
        out[-4000:]
    assert re.search(r"eks-use1: ok \(rc 0", out) and re.search(r"gke-usc1: ok \(rc 0", out)
    assert "Logs: %s" % (tmp / "one-down-run" / "onprem-lab" / "site.log") in text
    log = (tmp / "one-down-run" / "onprem-lab" / "site.log").read_text()
    assert "127.0.0.1" in log and "failed=1" in log
    for name in ("eks-use1", "gke-usc1"):
        assert (tmp / ("one-down-build-" + name) / "report" / "fleet.json").is_file()
    clusters = overview(tmp, "one-down")
    assert clusters["eks-use1"]["state"] == "ok" and clusters["gke-usc1"]["state"] == "ok"
    assert clusters["onprem-lab"]["state"] == "failed", clusters["onprem-lab"]
    # the reachable clusters were not held back by the failed one, and the failure came at the end
    assert out.rindex("fleet_overview") < out.rindex("Fail naming the clusters whose run failed")
