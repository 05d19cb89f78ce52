"""Faults with real parts (tests/helpers/controlplane.py): the kube-apiserver stopped in the middle of a cluster
apply, and an admission rule of the real server (a ValidatingAdmissionPolicy, CEL, evaluated in the API
server as a webhook would be) that rejects one object.
"""
import re

import pytest

from ansible_run import ansible_env, flat, popen, recap, run_site

A100 = ["a100-node-01.example.internal", "a100-node-02.example.internal"]
L4 = ["l4-node-01.example.internal", "l4-node-02.example.internal", "l4-node-03.example.internal"]


@pytest.fixture(scope="module")
def cluster(control_plane, tmp_path_factory):
    for name in A100:
        control_plane.add_node(name, gpu=56)
    for name in L4:
        control_plane.add_node(name, gpu=4)
    tmp = tmp_path_factory.mktemp("faults")
    rc, out = stage(control_plane, tmp, "playbooks/provision.yml")
    assert rc == 0, out[-3000:]
    return control_plane, tmp


def stage(cp, tmp, playbook, *extra):
    # no ServiceMonitor/PrometheusRule: this cluster serves no Prometheus operator CRDs
    return run_site(tmp / "build", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                    "-e", "dcgm_exporter_service_monitor=false", *extra, playbook=playbook)


def test_api_server_stopped_mid_apply_stops_clearly_and_a_rerun_converges(cluster):
    cp, tmp = cluster
    proc = popen("ansible-playbook", "playbooks/cluster.yml", "-i", "inventories/example",
                 "-e", "gpufleet_build_dir=%s" % (tmp / "build"), "-e", "gpufleet_apply=true",
                 "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig, "-e", "dcgm_exporter_service_monitor=false",
                 env=ansible_env(inherit=False))
    try:
        # the first add-on object written: stop the API server there
        cp.wait(lambda: cp.exists("/api/v1/namespaces/nvidia-device-plugin"), 180, "the first add-on object")
        cp.stop_apiserver()
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        if "kube-apiserver" not in cp.procs:
            cp.restart_apiserver()
    text = flat(out)
    assert proc.returncode == 2, out[-4000:]
    # one message: what was applied, what was not because the server stopped answering, and what to do. Where
    # the stop lands depends on the machine's speed: inside a component's apply (part-way), or between two
    # components, at the read of the next one's record (before anything of it)
    part_way = re.search(r"Applying cluster/[a-z-]+ stopped part-way: \d+ of \d+ object\(s\) applied", text)
    before = re.search(r"cluster/[a-z-]+ stopped before anything was applied or deleted: the cluster stopped "
                       r"answering \(the connection was refused", text)
    assert part_way or before, text[-3000:]
    if part_way:
        assert "not applied because the cluster stopped answering (the connection was refused" in text
    assert "run the same command again; it applies what is missing and changes nothing else" in text
    assert "Traceback" not in text and "Max retries exceeded" not in text[(part_way or before).start():]
    # the API server is back: the same command converges, and the one after changes nothing
    rc, out = stage(cp, tmp, "playbooks/cluster.yml")
    assert rc == 0, out[-4000:]
    names = {d["metadata"]["name"] for d in cp.items("/apis/apps/v1/daemonsets")}
    assert {"nvidia-device-plugin", "gpu-feature-discovery", "dcgm-exporter"} <= names
    rc, out = stage(cp, tmp, "playbooks/cluster.yml")
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]


def test_admission_rejecting_one_object_is_named(cluster):
    cp, tmp = cluster
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": "no-hostpath-exporters"},
              "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [{
                  "apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                  "resources": ["daemonsets"]}]},
                  "validations": [{"expression": "object.metadata.name != 'dcgm-exporter'",
                                   "message": "site policy: dcgm-exporter needs a security review"}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": "no-hostpath-exporters"},
               "spec": {"policyName": "no-hostpath-exporters", "validationActions": ["Deny"]}}
    cp.create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", policy)
    cp.create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", binding)
    try:
        if cp.exists("/apis/apps/v1/namespaces/nvidia-dcgm-exporter/daemonsets/dcgm-exporter"):
            cp.delete("/apis/apps/v1/namespaces/nvidia-dcgm-exporter/daemonsets/dcgm-exporter")

        def enforced():  # the policy is compiled and enforced a moment after it is created
            try:
                cp.apply("/apis/apps/v1/namespaces/default/daemonsets/dcgm-exporter", {
                    "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "dcgm-exporter"},
                    "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                        "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
                    dry_run=True)
                return False
            except Exception as exc:  # noqa: BLE001 - the refusal is what we wait for
                return "security review" in str(exc)
        cp.wait(enforced, 30, "the admission policy enforced")
        rc, out = stage(cp, tmp, "playbooks/cluster.yml")
        text = flat(out)
        assert rc == 2, out[-4000:]
        # the run names the refused object with the server's reason, and what was applied beside it
        assert re.search(r"Applying cluster/dcgm-exporter stopped part-way: \d+ of \d+ object\(s\) applied or "
                         r"already as rendered \(Namespace/nvidia-dcgm-exporter", text), text[-3000:]
        assert re.search(r"refused by the API server: DaemonSet/dcgm-exporter: [^;]*site policy: dcgm-exporter needs "
                         r"a security review", text), text[-3000:]
    finally:
        cp.delete("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/no-hostpath-exporters")
        cp.delete("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/no-hostpath-exporters")
