"""The example inventory in apply mode on a real control plane (tests/helpers/controlplane.py).

kube-apiserver, kube-controller-manager, kube-scheduler and etcd are real; KWOK stands in for the
kubelets of five simulated GPU nodes (the names of inventories/example) and one CPU node. Each GPU node
advertises what the NVIDIA device plugin would: 8 A100s split by MIG single 1g.10gb = 56 nvidia.com/gpu,
one L4 time-sliced 4 ways = 4 nvidia.com/gpu. The stages run as a user runs them, one playbook each:
provision -> cluster -> validate -> report, then each again (changed=0).
"""
import json
import os
import re

import pytest

from controlplane import shared_crds_or_skip
from ansible_run import recap, run_site

A100 = ["a100-node-01.example.internal", "a100-node-02.example.internal"]
L4 = ["l4-node-01.example.internal", "l4-node-02.example.internal", "l4-node-03.example.internal"]
ADDON_DAEMONSETS = ["nvidia-device-plugin", "gpu-feature-discovery", "dcgm-exporter"]


@pytest.fixture(scope="module")
def cluster(control_plane):
    shared_crds_or_skip(pytest)
    control_plane.install_crds(["monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_podmonitors.yaml",
                                "monitoring.coreos.com_prometheusrules.yaml"])
    for name in A100:
        control_plane.add_node(name, gpu=56)
    for name in L4:
        control_plane.add_node(name, gpu=4)
    control_plane.add_node("cpu-1")
    return control_plane


def stage(cp, tmp, playbook, *extra):
    return run_site(tmp / "build", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                    *extra, playbook=playbook)


def daemonset_pods(cp):
    """{DaemonSet name: sorted [(node, Ready)]} for gpufleet's add-on DaemonSets."""
    out = {}
    for pod in cp.items("/api/v1/pods"):
        owners = pod["metadata"].get("ownerReferences") or []
        for ref in owners:
            if ref["kind"] == "DaemonSet":
                ready = any(c["type"] == "Ready" and c["status"] == "True"
                            for c in pod["status"].get("conditions") or [])
                out.setdefault(ref["name"], []).append((pod["spec"].get("nodeName"), ready))
    return {k: sorted(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def converged(cluster, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("example")
    runs = {}
    for playbook in ("playbooks/provision.yml", "playbooks/cluster.yml"):
        rc, out = stage(cluster, tmp, playbook)
        assert rc == 0, out[-5000:]
        runs[playbook] = out
    return cluster, tmp, runs


def test_provision_labels_and_taints_the_gpu_nodes(converged):
    cp, _, _ = converged
    for name in A100 + L4:
        node = cp.node(name)
        assert node["metadata"]["labels"]["gpufleet.io/pool"] == ("train-a100" if name in A100 else "infer-l4")
        assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in node["spec"]["taints"]
    assert "gpufleet.io/pool" not in cp.node("cpu-1")["metadata"]["labels"]


def test_addon_daemonsets_run_on_exactly_the_gpu_nodes_and_are_ready(converged):
    cp, _, _ = converged

    def settled():
        pods = daemonset_pods(cp)
        want = sorted((n, True) for n in A100 + L4)
        return pods if all(pods.get(ds) == want for ds in ADDON_DAEMONSETS) else None
    try:
        cp.wait(settled, 90, "the add-on DaemonSets Ready on the five GPU nodes")
    except TimeoutError:
        pytest.fail("DaemonSet pods: %s" % json.dumps(daemonset_pods(cp), indent=1))
    for ds in cp.items("/apis/apps/v1/daemonsets"):
        if ds["metadata"]["name"] in ADDON_DAEMONSETS:
            st = ds["status"]
            assert st["desiredNumberScheduled"] == 5 and st["numberReady"] == 5, (ds["metadata"]["name"], st)


def test_validate_passes_with_completed_smoke_jobs(converged):
    cp, tmp, _ = converged
    cp.wait(lambda: all(all(r for _, r in v) for v in daemonset_pods(cp).values()) and daemonset_pods(cp), 90,
            "add-on pods Ready")
    rc, out = stage(cp, tmp, "playbooks/validate.yml")
    assert rc == 0, out[-5000:]
    text = re.sub(r"\s+", " ", out)
    for name in A100 + L4:
        assert name in text
    assert "GPU validation failed" not in text
    assert recap(out)["changed"] == 0  # its namespace and Jobs are transient
    # the validation namespace and its Jobs are gone when the stage ends
    assert not cp.exists("/api/v1/namespaces/gpufleet-validate")
    jobs = [j["metadata"]["name"] for j in cp.items("/apis/batch/v1/jobs")]
    assert not [j for j in jobs if j.startswith("gpufleet-")], jobs


def test_report_alone_with_only_the_kubeconfig_variable_reads_the_real_cluster(converged):
    """Defect: report.yml with gpufleet_k8s_kubeconfig and no KUBECONFIG failed with 'Invalid kube-config'."""
    cp, tmp, _ = converged
    # a user's GPU pod, scheduled by the real scheduler onto an L4 node (tolerating the pool's taint)
    cp.create("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "inference"},
        "spec": {"nodeSelector": {"gpufleet.io/pool": "infer-l4"},
                 "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                 "containers": [{"name": "srv", "image": "registry.example/srv:1",
                                 "resources": {"limits": {"nvidia.com/gpu": "3"}}}]}})
    pod = cp.wait(lambda: cp.get("/api/v1/namespaces/default/pods/inference")["status"].get("phase") == "Running"
                  and cp.get("/api/v1/namespaces/default/pods/inference"), 30, "the inference pod Running")
    env_before = os.environ.pop("KUBECONFIG", None)
    try:
        rc, out = stage(cp, tmp, "playbooks/report.yml")
    finally:
        if env_before is not None:
            os.environ["KUBECONFIG"] = env_before
    assert rc == 0, out[-5000:]
    with open(tmp / "build" / "report" / "fleet.json") as f:
        report = json.load(f)
    assert report["source"] == "cluster"
    nodes = {n["node"]: n for n in report["nodes"]}
    assert {n: nodes[n]["allocatable"] for n in A100 + L4} == dict([(n, 56) for n in A100] + [(n, 4) for n in L4])
    assert {n: nodes[n]["requested"] for n in A100 + L4 if nodes[n]["requested"]} == {pod["spec"]["nodeName"]: 3}
    train, infer = report["pools"]
    assert (train["capacity"], infer["capacity"], infer["requested"]) == (112, 12, 3)
    # no GPU pod runs and nothing waits: both pools idle, at their max, yet no "raise max_nodes" hint
    assert not any("is at its max" in h for h in report["hints"]), report["hints"]
    assert any("all 56 GPU units idle" in h for h in report["hints"])


def test_every_stage_rerun_changes_nothing(converged):
    cp, tmp, _ = converged
    for playbook in ("playbooks/provision.yml", "playbooks/cluster.yml", "playbooks/validate.yml",
                     "playbooks/report.yml"):
        rc, out = stage(cp, tmp, playbook)
        assert rc == 0 and recap(out)["changed"] == 0, (playbook, out[-4000:])


def test_switch_to_operator_refuses_while_the_standalone_daemonsets_run(converged):
    """Operator mode asked for while gpufleet's standalone add-ons run: refused before anything changes."""
    cp, tmp, _ = converged
    before = {(d["metadata"]["namespace"], d["metadata"]["name"]): d["metadata"]["resourceVersion"]
              for d in cp.items("/apis/apps/v1/daemonsets")}
    rc, out = stage(cp, tmp, "playbooks/cluster.yml", "-e", "gpufleet_addons_mode=operator",
                    "-e", "gpufleet_helm_binary=/bin/true")
    text = re.sub(r"\s+", " ", out)
    assert rc == 2, out[-3000:]
    assert ("gpufleet_addons_mode is operator, but the standalone add-ons gpufleet deployed still run "
            "(DaemonSet nvidia-dcgm-exporter/dcgm-exporter, nvidia-device-plugin/gpu-feature-discovery, "
            "nvidia-device-plugin/nvidia-device-plugin)") in text, text[-2000:]
    assert "-e gpufleet_addons_mode=standalone -e nvidia_device_plugin_state=absent -e dcgm_exporter_state=absent" in text
    after = {(d["metadata"]["namespace"], d["metadata"]["name"]): d["metadata"]["resourceVersion"]
             for d in cp.items("/apis/apps/v1/daemonsets")}
    assert after == before and not cp.exists("/api/v1/namespaces/gpu-operator")


def test_handing_the_objects_to_kubectl_server_side_apply(converged):
    """Issue 39 / docs/gitops-and-report.md "Handing the objects over": the rendered DaemonSet applied server-side
    under another field manager (what `kubectl apply --server-side` does) conflicts with gpufleet's fields; under
    gpufleet's own field manager (`--field-manager=gpufleet`) it applies cleanly and changes nothing; with
    --force-conflicts the new manager takes the fields over."""
    from controlplane import ApiError
    cp, tmp, _ = converged
    folder = tmp / "build" / "cluster" / "device-plugin"
    path = next(p for p in sorted(os.listdir(str(folder))) if "-daemonset-nvidia-device-plugin" in p)
    with open(str(folder / path)) as handle:
        obj = next(d for d in __import__("yaml").safe_load_all(handle) if d)
    url = "/apis/apps/v1/namespaces/%s/daemonsets/%s" % (obj["metadata"]["namespace"], obj["metadata"]["name"])
    generation = cp.get(url)["metadata"]["generation"]
    changed = json.loads(json.dumps(obj))
    changed["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "600Mi"
    with pytest.raises(ApiError) as conflict:
        cp.apply(url, changed, manager="kubectl", force=False)
    assert conflict.value.code == 409 and "conflict" in conflict.value.body.lower(), conflict.value.body
    cp.apply(url, obj, manager="gpufleet", force=False)
    assert cp.get(url)["metadata"]["generation"] == generation
    taken = cp.apply(url, changed, manager="kubectl", force=True)
    managers = {e["manager"] for e in taken["metadata"]["managedFields"]}
    assert "kubectl" in managers
    cp.apply(url, obj, manager="gpufleet", force=True)  # leave the module's cluster as gpufleet made it
