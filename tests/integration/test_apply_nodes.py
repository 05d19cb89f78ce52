"""Apply mode against a cluster, through the real playbooks, the real kubernetes.core modules and
the real kubernetes Python client.

No kube-apiserver can run here. Two things stand in for it, and the tests say which:
- a closed port on 127.0.0.1 (nothing listens): the real "unreachable cluster" case;
- tests/k8s_fake.FakeApiServer, a tiny HTTP server on 127.0.0.1 that serves discovery and
  /api/v1/nodes with merge-patch + resourceVersion rules and records every request. It is a
  stand-in, not an API server: it proves what gpufleet sends (no DELETE, no POST, no create of a
  missing Node, patches with a precondition), not how a real server would store it.
"""
import copy
import json
import os
import re
import socket
import time

import pytest

from k8s_fake import FakeApiServer
from test_site_render import ROOT, recap, run_site

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "k8s", "nodes.json")
NODES = json.load(open(FIXTURE))["items"]


def closed_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there any more
    return port


def flat(out):
    return re.sub(r"\s+", " ", out)


def inventory(tmp_path, hosts):
    """The example cluster's pools; ``hosts`` {host: Node name or None} all in the train pool."""
    inv = tmp_path / "inv"
    (inv / "group_vars" / "all").mkdir(parents=True, exist_ok=True)
    src = open(os.path.join(ROOT, "inventories", "example", "group_vars", "all", "gpufleet.yml")).read()
    (inv / "group_vars" / "all" / "gpufleet.yml").write_text(src)
    lines = ["all:", "  children:", "    gpufleet_controller:", "      hosts:", "        localhost:",
             "          ansible_connection: local",
             "          ansible_python_interpreter: \"{{ ansible_playbook_python }}\"",
             "    gpu_nodes:", "      children:", "        gpu_pool_train_a100:", "          hosts:"]
    for host, name in hosts.items():
        lines.append("            %s:%s" % (host, "" if name is None else " {gpufleet_node_name: %s}" % name))
    lines += ["        gpu_pool_infer_l4:", "          hosts: {}"]
    (inv / "hosts.yml").write_text("\n".join(lines) + "\n")
    return str(inv)


def provision(tmp_path, server_url, inv, *extra):
    return run_site(tmp_path / "build", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_host=%s" % server_url,
                    "-e", "gpufleet_k8s_api_key=stand-in-token", "-e", '{"gpu_pools_examples": false}', *extra,
                    playbook="playbooks/provision.yml", inventory=inv)


@pytest.mark.parametrize("playbook", ["playbooks/provision.yml", "playbooks/cluster.yml", "playbooks/validate.yml"])
def test_unreachable_cluster_stops_with_a_clear_message_before_anything(tmp_path, playbook):
    """Real client, real closed port: the stage stops at its first step with what to change."""
    port = closed_port()
    build = tmp_path / "example"
    rc, out = run_site(build, "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_host=http://127.0.0.1:%d" % port,
                       "-e", "gpufleet_k8s_api_key=x", playbook=playbook)
    text = flat(out)
    assert rc == 2, out[-3000:]
    assert ("gpufleet cannot reach the Kubernetes cluster (API server http://127.0.0.1:%d): the connection was "
            "refused" % port) in text, text[-3000:]
    assert "Nothing was applied" in text and "Set gpufleet_k8s_kubeconfig" in text
    assert "TASK [gpufleet : Reach the Kubernetes cluster once before anything is applied]" in text
    assert "Max retries" not in text.split("gpufleet cannot reach")[0]  # no raw urllib3 error first
    assert not build.exists()  # not even a render: it stopped before the stage's roles ran


def test_missing_kubeconfig_names_the_file(tmp_path):
    rc, out = run_site(tmp_path / "example", "-e", "gpufleet_apply=true",
                       "-e", "gpufleet_k8s_kubeconfig=%s" % (tmp_path / "nope.yaml"), playbook="playbooks/cluster.yml")
    text = flat(out)
    assert rc == 2 and "(kubeconfig %s)" % (tmp_path / "nope.yaml") in text, text[-3000:]
    assert "Nothing was applied" in text


def test_retired_per_role_connection_variable_is_refused(tmp_path):
    rc, out = run_site(tmp_path / "example", "-e", "k8s_apply_kubeconfig=/root/.kube/config",
                       playbook="playbooks/cluster.yml")
    assert rc == 2 and "k8s_apply_kubeconfig: replaced by gpufleet_k8s_kubeconfig" in flat(out), out[-3000:]


def test_provision_labels_existing_nodes_keeps_others_taints_and_is_idempotent(tmp_path):
    inv = inventory(tmp_path, {"a1.example.internal": "gpu-a1", "a2.example.internal": "gpu-a2"})
    with FakeApiServer(NODES) as api:
        # check mode with diff: shows each Node change, writes nothing
        rc, out = provision(tmp_path, api.url, inv, "--check", "--diff")
        assert rc == 0, out[-4000:]
        assert api.writes() == []
        assert "+  - nvidia.com/gpu=present:NoSchedule" in out and "Node/gpu-a1" in out
        assert "-  gpufleet.io/pool: \"old-pool\"" in out  # gpu-b1: labelled by old gpufleet, not in inventory

        rc, out = provision(tmp_path, api.url, inv)
        assert rc == 0, out[-4000:]
        writes = api.writes()
        assert sorted(w["path"].split("?")[0] for w in writes) == [
            "/api/v1/nodes/gpu-a1", "/api/v1/nodes/gpu-a2", "/api/v1/nodes/gpu-b1"]
        assert all(w["method"] == "PATCH" and w["content_type"] == "application/merge-patch+json"
                   and w["body"]["metadata"]["resourceVersion"] and "fieldManager=gpufleet" in w["path"]
                   for w in writes), writes
        a1 = api.store.nodes["gpu-a1"]
        assert [t["key"] for t in a1["spec"]["taints"]] == ["node.kubernetes.io/unschedulable", "nvidia.com/gpu"]
        assert a1["metadata"]["labels"]["gpufleet.io/pool"] == "train-a100"
        assert a1["metadata"]["labels"]["gpufleet.io/workload"] == "training"
        assert "gpufleet.io/pool" not in api.store.nodes["gpu-b1"]["metadata"]["labels"]
        assert sorted(api.store.nodes) == ["cpu-1", "gpu-a1", "gpu-a2", "gpu-b1"]

        before = len(api.store.requests)
        rc, out = provision(tmp_path, api.url, inv)
        assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]
        assert [r for r in api.store.requests[before:] if r["method"] != "GET"] == []

        # the cluster cordons gpu-a2 (kube-controller-manager's taint) - gpufleet's run keeps it
        api.store.nodes["gpu-a2"]["spec"]["taints"].append(
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-12-01T03:00:00Z"})
        api.store.bump("gpu-a2")
        rc, out = provision(tmp_path, api.url, inv)
        assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]

        # absent: gpufleet's labels and taints go, every Node stays, no DELETE is ever sent
        rc, out = provision(tmp_path, api.url, inv, "-e", "gpu_pools_state=absent")
        assert rc == 0, out[-3000:]
        assert sorted(api.store.nodes) == ["cpu-1", "gpu-a1", "gpu-a2", "gpu-b1"]
        assert not [r for r in api.store.requests if r["method"] in ("DELETE", "POST", "PUT")]
        a2 = api.store.nodes["gpu-a2"]
        assert [t["key"] for t in a2["spec"]["taints"]] == [
            "node.kubernetes.io/not-ready", "node.kubernetes.io/not-ready", "node.kubernetes.io/unschedulable"]
        assert not any(k.startswith("gpufleet.io/") for k in a2["metadata"]["labels"])
        assert json.loads(a2["metadata"]["annotations"]["gpufleet.io/owned"]) == {"labels": {}, "taints": []}


def test_dropped_host_loses_gpufleets_labels(tmp_path):
    with FakeApiServer(NODES) as api:
        rc, out = provision(tmp_path, api.url, inventory(tmp_path, {"a1.example.internal": "gpu-a1",
                                                                    "a2.example.internal": "gpu-a2"}))
        assert rc == 0, out[-3000:]
        rc, out = provision(tmp_path, api.url, inventory(tmp_path, {"a1.example.internal": "gpu-a1"}))
        assert rc == 0, out[-3000:]
        a2 = api.store.nodes["gpu-a2"]
        assert "nvidia.com/device-plugin.config" not in a2["metadata"]["labels"]
        assert "nvidia.com/gpu" not in [t["key"] for t in a2["spec"]["taints"]]
        assert api.store.nodes["gpu-a1"]["metadata"]["labels"]["nvidia.com/device-plugin.config"] == "train-a100"


def test_host_without_a_node_is_refused_by_name_and_nothing_is_written(tmp_path):
    inv = inventory(tmp_path, {"a1.example.internal": "gpu-a1", "a100-node-09.example.internal": None})
    with FakeApiServer(NODES) as api:
        rc, out = provision(tmp_path, api.url, inv)
        text = flat(out)
        assert rc == 2, out[-3000:]
        assert ("host a100-node-09.example.internal: no Node named 'a100-node-09.example.internal' in the cluster"
                in text), text[-3000:]
        assert "set gpufleet_node_name on the host" in text
        assert api.writes() == []


def test_operator_mode_without_helm_stops_before_anything(tmp_path):
    """The cluster answers (stand-in), helm does not run: the cluster stage stops at its check."""
    with FakeApiServer(NODES) as api:
        rc, out = run_site(tmp_path / "example", "-e", "gpufleet_apply=true", "-e", "gpufleet_addons_mode=operator",
                           "-e", "gpufleet_k8s_host=%s" % api.url, "-e", "gpufleet_k8s_api_key=x",
                           "-e", "gpufleet_helm_binary=%s" % (tmp_path / "no-helm"), playbook="playbooks/cluster.yml")
        text = flat(out)
        assert rc == 2, out[-3000:]
        assert "the GPU Operator is installed with helm, but '%s' does not run" % (tmp_path / "no-helm") in text, text[-2000:]
        assert api.writes() == [] and not (tmp_path / "example").exists()


def test_switch_to_operator_refuses_while_standalone_daemonsets_run(tmp_path):
    """Stand-in serves one gpufleet-labelled device plugin DaemonSet: operator mode must refuse."""
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {
        "name": "nvidia-device-plugin", "namespace": "nvidia-device-plugin", "resourceVersion": "55",
        "labels": {"app.kubernetes.io/name": "nvidia-device-plugin", "app.kubernetes.io/managed-by": "gpufleet"}},
        "spec": {}, "status": {"desiredNumberScheduled": 2, "numberReady": 2}}
    with FakeApiServer(NODES, daemonsets=[ds]) as api:
        rc, out = run_site(tmp_path / "example", "-e", "gpufleet_apply=true", "-e", "gpufleet_addons_mode=operator",
                           "-e", "gpufleet_k8s_host=%s" % api.url, "-e", "gpufleet_k8s_api_key=x",
                           "-e", "gpufleet_helm_binary=/bin/true", playbook="playbooks/cluster.yml")
        text = flat(out)
        assert rc == 2, out[-3000:]
        assert ("gpufleet_addons_mode is operator, but the standalone add-ons gpufleet deployed still run "
                "(DaemonSet nvidia-device-plugin/nvidia-device-plugin)") in text, text[-2000:]
        assert ("-e gpufleet_addons_mode=standalone -e nvidia_device_plugin_state=absent -e dcgm_exporter_state=absent"
                in text)
        assert api.writes() == []


def test_upgrade_host_unreachable_mid_role_is_caught_and_explained(tmp_path):
    """Real SSH attempt to hosts that do not resolve (the example inventory's names): the driver role
    meets an unreachable host; the rollout must stop through rescue with what to do, not vanish."""
    rc, out = run_site(tmp_path / "example", "-e", "gpufleet_apply=true", "-e", "gpufleet_upgrade_drain=false",
                       "-e", "nvidia_driver_version=580.95.05", playbook="playbooks/upgrade_driver.yml")
    text = flat(out)
    assert rc == 2, out[-3000:]
    assert "The rollout stopped at node a100-node-01.example.internal" in text, text[-3000:]
    assert "host became unreachable (last error:" in text
    assert "Host a100-node-01.example.internal became unreachable: check it is up" in text
    assert "resume with ansible-playbook playbooks/upgrade_driver.yml --limit localhost,a100-node-01.example.internal" \
        in text
    assert re.search(r"a100-node-01\.example\.internal : ok=\d+ changed=0 unreachable=0 failed=1 skipped=\d+ rescued=1",
                     text), text[-1500:]


def _admission(job, namespace):
    """What the stand-in cluster does with a created Job: the restricted Pod Security check (the
    documented rules, tests/pod_security.py), an image that cannot be pulled, else it completes."""
    from pod_security import restricted_violations
    spec = job["spec"]["template"]["spec"]
    name = job["metadata"]["name"]
    ns = job["metadata"]["namespace"]
    enforce = (((namespace or {}).get("metadata") or {}).get("labels") or {}).get("pod-security.kubernetes.io/enforce")
    violations = restricted_violations(spec) if enforce == "restricted" else []
    if violations:
        msg = ('Error creating: pods "%s-x7k2p" is forbidden: violates PodSecurity "restricted:latest": %s'
               % (name, ", ".join(violations)))
        return [], [{"kind": "Event", "apiVersion": "v1", "metadata": {"name": name + ".1", "namespace": ns},
                     "involvedObject": {"kind": "Job", "name": name, "namespace": ns},
                     "reason": "FailedCreate", "message": msg, "type": "Warning"}], {"active": 0}
    if "missing" in spec["containers"][0]["image"]:
        pod = {"kind": "Pod", "apiVersion": "v1", "metadata": {
            "name": name + "-x7k2p", "namespace": ns, "labels": {"job-name": name},
            "ownerReferences": [{"kind": "Job", "name": name, "apiVersion": "batch/v1", "uid": "u"}]},
            "status": {"phase": "Pending", "containerStatuses": [{"name": spec["containers"][0]["name"], "state": {
                "waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "%s"'
                            % spec["containers"][0]["image"]}}}]}}
        return [pod], [], {"active": 1}
    return [], [], {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}


def _validate_inventory(tmp_path):
    inv = tmp_path / "vinv"
    (inv / "group_vars" / "all").mkdir(parents=True, exist_ok=True)
    (inv / "group_vars" / "all" / "gpufleet.yml").write_text(
        "gpufleet_platform: kubeadm\ngpufleet_cluster_name: t\ngpufleet_addons_mode: standalone\n"
        "gpufleet_gpu_pools:\n  - {name: plain, gpu_type: t4, gpus_per_node: 1, node_group: gpu_pool_plain, min_nodes: 1}\n")
    (inv / "hosts.yml").write_text(
        "all:\n  children:\n    gpufleet_controller:\n      hosts:\n        localhost:\n"
        "          ansible_connection: local\n          ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n"
        "    gpu_nodes:\n      children:\n        gpu_pool_plain:\n          hosts:\n"
        "            h1: {gpufleet_node_name: gpu-a1}\n")
    node = copy.deepcopy([n for n in NODES if n["metadata"]["name"] == "gpu-a1"][0])
    node["metadata"]["labels"]["gpufleet.io/pool"] = "plain"
    node["status"]["allocatable"] = {"nvidia.com/gpu": "1", "cpu": "8"}
    return str(inv), [node]


@pytest.mark.parametrize("image,expect_rc,expect", [
    (None, 0, None),
    ("registry.invalid/missing/cuda:1", 2, "smoke job failed: container cuda-vectoradd ImagePullBackOff"),
])
def test_validate_stage_runs_in_a_restricted_namespace_ends_fast_and_cleans_up(tmp_path, image, expect_rc, expect):
    inv, nodes = _validate_inventory(tmp_path)
    with FakeApiServer(nodes, admission=_admission) as api:
        extra = ["-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_host=%s" % api.url, "-e", "gpufleet_k8s_api_key=x",
                 "-e", '{"gpu_validate_timeout": 300}']
        if image:
            extra += ["-e", "gpu_validate_smoke_image=%s" % image]
        started = time.monotonic()
        rc, out = run_site(tmp_path / "b", *extra, playbook="playbooks/validate.yml", inventory=inv)
        assert time.monotonic() - started < 200  # the verdict came at once, not at the 300 s deadline
        text = flat(out)
        assert rc == expect_rc, out[-4000:]
        if expect:
            assert expect in text, text[-3000:]
        posts = [r for r in api.store.requests if isinstance(r, dict) and r["method"] == "POST"]
        jobs = {r["body"]["metadata"]["name"]: r["body"] for r in posts if r["path"].startswith("/apis/batch")}
        assert sorted(jobs) == ["gpufleet-metrics-check", "gpufleet-smoke-plain"]
        probe = " ".join(jobs["gpufleet-metrics-check"]["spec"]["template"]["spec"]["containers"][0]["command"])
        assert "http://dcgm-exporter.nvidia-dcgm-exporter.svc:9400/metrics" in probe
        # no FailedCreate: the restricted namespace admitted both pods
        assert not [o for (k, _ns, _n), o in api.objects.items() if k == "events"]
        deletes = [r["path"] for r in api.store.requests if isinstance(r, dict) and r["method"] == "DELETE"]
        assert deletes == ["/api/v1/namespaces/gpufleet-validate"]
        assert not api.objects  # namespace gone with its Jobs and pods
        assert "TASK [gpu_validate : Wait for every validation Job" in text


def test_openshift_without_olm_stops_before_applying_namespaces(tmp_path):
    """The stand-in serves no operators.coreos.com CRDs: the OpenShift preset must stop before it
    applies anything (today's code applied the namespaces, then failed on OperatorGroup)."""
    with FakeApiServer(NODES) as api:
        rc, out = run_site(tmp_path / "openshift", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_host=%s" % api.url,
                           "-e", "gpufleet_k8s_api_key=x", playbook="playbooks/cluster.yml",
                           inventory="inventories/openshift")
        text = flat(out)
        assert rc == 2, out[-3000:]
        assert "serves no operatorgroups.operators.coreos.com, subscriptions.operators.coreos.com (OLM is not " \
               "installed). Nothing was applied." in text, text[-3000:]
        assert api.writes() == []


def test_upgrade_records_the_node_state_and_the_next_run_names_it(tmp_path):
    """drain on: cordon and drain go to the stand-in, then the host (a closed SSH port) is
    unreachable in the driver role. The Node must keep its cordon with both annotations, and the
    next run (check mode) must say which Node was left cordoned and why."""
    inv = tmp_path / "uinv"
    (inv / "group_vars" / "all").mkdir(parents=True)
    (inv / "group_vars" / "all" / "gpufleet.yml").write_text(
        "gpufleet_platform: kubeadm\ngpufleet_cluster_name: t\n"
        "gpufleet_gpu_pools:\n  - {name: plain, gpu_type: t4, gpus_per_node: 1, node_group: gpu_pool_plain}\n")
    (inv / "hosts.yml").write_text(
        "all:\n  children:\n    gpufleet_controller:\n      hosts:\n        localhost:\n"
        "          ansible_connection: local\n          ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n"
        "    gpu_nodes:\n      children:\n        gpu_pool_plain:\n          hosts:\n"
        "            h1: {gpufleet_node_name: gpu-a2, ansible_host: 127.0.0.1, ansible_port: %d}\n" % closed_port())
    with FakeApiServer(NODES) as api:
        extra = ["-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_host=%s" % api.url, "-e", "gpufleet_k8s_api_key=x",
                 "-e", "nvidia_driver_version=580.95.05"]
        rc, out = run_site(tmp_path / "b", *extra, playbook="playbooks/upgrade_driver.yml", inventory=str(inv))
        text = flat(out)
        assert rc == 2, out[-4000:]
        node = api.store.nodes["gpu-a2"]
        assert node["spec"].get("unschedulable") is True, text[-3000:]
        ann = node["metadata"]["annotations"]
        assert ann["gpufleet.io/upgrade-in-progress"].startswith("driver 580.95.05 from host h1, started ")
        assert "host became unreachable" in ann["gpufleet.io/upgrade-failed"]
        assert "resume with ansible-playbook playbooks/upgrade_driver.yml --limit localhost,h1" in text
        # taints of others untouched by all this
        assert [t["key"] for t in node["spec"]["taints"]] == ["node.kubernetes.io/not-ready", "node.kubernetes.io/not-ready"]

        rc, out = run_site(tmp_path / "b", "--check", *extra, playbook="playbooks/upgrade_driver.yml", inventory=str(inv))
        text = flat(out)
        assert rc == 0, out[-3000:]
        assert "Node gpu-a2 (cordoned): an earlier upgrade failed at " in text, text[-3000:]
