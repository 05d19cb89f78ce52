"""No credential in any log, build file, job artifact or report (issue 30, item 3).

The stages run as an AWX job at verbosity 3 would run them: ``-vvv``, the custom stats (AWX job
artifacts) printed, and every task result also written as JSON by the ``community.general.log_plays``
callback (the whole result, invocation included, as a job-event store keeps it). The cluster is
reached with ``gpufleet_k8s_host`` + ``gpufleet_k8s_api_key`` only: the API key is a SENTINEL token
the real kube-apiserver accepts (its token file lists it), so apply mode really runs with it. A Pod
whose spec carries a second sentinel as an inline env value is running when the report stage reads
the Pods. Neither sentinel may appear in the output, the build directories, the job-event logs or
the reports; the onboarding playbook (same connection pattern) is held to the same rule.
"""
import json
import os
import re
import secrets

import pytest

from ansible_run import ansible_env, run_playbook
from controlplane import ControlPlane, shared_crds_or_skip

TOKEN = "gpufleet-sentinel-token-" + secrets.token_hex(12)
ENV_SECRET = "gpufleet-sentinel-env-" + secrets.token_hex(12)
SENTINELS = (TOKEN, ENV_SECRET)
A100 = ["a100-node-01.example.internal", "a100-node-02.example.internal"]
L4 = ["l4-node-01.example.internal", "l4-node-02.example.internal", "l4-node-03.example.internal"]
APPLY_STAGES = ("playbooks/provision.yml", "playbooks/cluster.yml", "playbooks/validate.yml", "playbooks/report.yml")


class SentinelControlPlane(ControlPlane):
    """The test control plane, with one more admin whose bearer token is the sentinel."""
    TOKENS = dict(ControlPlane.TOKENS, sentinel=(TOKEN, "sentinel-admin", "system:masters"))


@pytest.fixture(scope="module")
def cp(tmp_path_factory):
    shared_crds_or_skip(pytest)
    plane = SentinelControlPlane(str(tmp_path_factory.mktemp("controlplane")))
    try:
        plane.start()
        plane.install_crds(["monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_podmonitors.yaml",
                            "monitoring.coreos.com_prometheusrules.yaml"])
        for name in A100:
            plane.add_node(name, gpu=56)
        for name in L4:
            plane.add_node(name, gpu=4)
        plane.add_node("cpu-1")  # the metrics check Job runs on an untainted node
    except Exception:
        plane.stop()
        raise
    yield plane
    plane.stop()


def leaks(text):
    return [s for s in SENTINELS if s in text]


def leaks_in_tree(top):
    """[(path, sentinel)] for every file under ``top`` holding a sentinel (file names included)."""
    found = []
    for dirpath, _dirs, files in os.walk(top):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                data = f.read().decode("utf-8", "replace")
            found += [(path, s) for s in leaks(data + path)]
    return found


def run(tmp, playbook, *extra, inventory="inventories/example"):
    env = ansible_env(KUBECONFIG=None,  # the token must be the only credential
                      HOME=str(tmp / "home"), ANSIBLE_SHOW_CUSTOM_STATS="1", ANSIBLE_LOG_FOLDER=str(tmp / "job-events"),
                      ANSIBLE_CALLBACKS_ENABLED="gpufleet.k8s.preload_filters,community.general.log_plays")
    os.makedirs(env["HOME"], exist_ok=True)
    os.makedirs(tmp / "build", exist_ok=True)
    rc, out = run_playbook(playbook, "-i", inventory, "-vvv", *extra, env=env)
    os.makedirs(tmp / "output", exist_ok=True)
    with open(tmp / "output" / (os.path.basename(playbook) + ".log"), "a") as f:  # to read when a run fails
        f.write(out)
    return rc, out


def connection(cp):
    return ["-e", "gpufleet_k8s_host=%s" % cp.url, "-e", "gpufleet_k8s_api_key=%s" % TOKEN,
            "-e", "gpufleet_k8s_ca_cert=%s" % cp.path("ca.crt")]


def assert_no_leak(playbook, rc, out):
    assert rc == 0, (playbook, out[-5000:])
    assert "task path:" in out, "not a -vvv log"
    hits = leaks(out)
    lines = [line for line in out.splitlines() if leaks(line)]
    assert not hits, "%s printed %s:\n%s" % (playbook, hits, "\n".join(lines[:20]))


def add_on_pods_ready(cp):
    pods = [p for p in cp.items("/api/v1/pods")
            if any(r["kind"] == "DaemonSet" for r in p["metadata"].get("ownerReferences") or [])]
    return pods and all(any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])
                        for p in pods)


def test_render_mode_at_vvv_prints_and_writes_no_token(tmp_path):
    build = tmp_path / "build" / "example"
    rc, out = run(tmp_path, "site.yml", "-e", "gpufleet_build_dir=%s" % build,
                  "-e", "gpufleet_k8s_host=https://127.0.0.1:6443", "-e", "gpufleet_k8s_api_key=%s" % TOKEN)
    assert_no_leak("site.yml (render mode)", rc, out)
    assert "CUSTOM STATS" in out and os.path.isfile(build / "report" / "fleet.json")
    assert os.listdir(tmp_path / "job-events")
    assert not leaks_in_tree(tmp_path)


def test_apply_mode_stages_at_vvv_print_and_write_no_token_or_pod_secret(cp, tmp_path):
    build = tmp_path / "build" / "example"
    for playbook in APPLY_STAGES:
        if playbook == "playbooks/validate.yml":
            cp.wait(lambda: add_on_pods_ready(cp), 120, "the add-on DaemonSet pods Ready")
        if playbook == "playbooks/report.yml":
            # a user's Pod with an inline env value (as people do put secrets there): running on an L4 node
            cp.create("/api/v1/namespaces/default/pods", {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "inference"},
                "spec": {"nodeSelector": {"gpufleet.io/pool": "infer-l4"},
                         "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                         "containers": [{"name": "srv", "image": "registry.example/srv:1",
                                         "env": [{"name": "DB_PASSWORD", "value": ENV_SECRET}],
                                         "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
            cp.wait(lambda: cp.get("/api/v1/namespaces/default/pods/inference")["status"].get("phase") == "Running",
                    30, "the inference pod Running")
        rc, out = run(tmp_path, playbook, "-e", "gpufleet_apply=true", "-e", "gpufleet_build_dir=%s" % build,
                      *connection(cp))
        assert_no_leak(playbook, rc, out)
    # the runs really reached the cluster with the token, and the report read the Pod
    assert cp.node(A100[0])["metadata"]["labels"].get("gpufleet.io/pool") == "train-a100"
    with open(build / "report" / "fleet.json") as f:
        report = json.load(f)
    assert report["source"] == "cluster"
    assert sum(n["requested"] or 0 for n in report["nodes"]) == 1
    events = (tmp_path / "job-events" / "localhost").read_text()
    assert re.search(r"Read Nodes and Pods", events)
    assert not leaks_in_tree(tmp_path)


def test_onboarding_a_live_cluster_at_vvv_prints_and_writes_no_token(cp, tmp_path):
    dest = tmp_path / "onboarded"
    rc, out = run(tmp_path, "playbooks/onboard.yml", "-e", "onboard_cluster_name=sentinel",
                  "-e", "onboard_dest=%s" % dest, *connection(cp))
    assert_no_leak("playbooks/onboard.yml", rc, out)
    assert os.path.isfile(dest / "hosts.yml") and A100[0] in (dest / "hosts.yml").read_text()
    assert not leaks_in_tree(tmp_path)


@pytest.mark.parametrize("playbook,extra,said", [
    ("playbooks/cluster.yml", ("-e", "gpufleet_apply=true"), "a file the connection names is not there"),
    ("playbooks/onboard.yml", ("-e", "onboard_cluster_name=sentinel"), "a file the connection names is not there"),
    ("playbooks/report.yml", ("-e", "gpufleet_apply=true"), "the report could not read the cluster (Node, Pod: "),
])
def test_a_missing_ca_file_fails_with_a_message_and_no_token(cp, tmp_path, playbook, extra, said):
    """A kubernetes.core module that crashes (here on a CA file that is not there) gets its task arguments,
    api_key included, copied unmasked into the result by the collection's action plugin. The stages and
    onboarding reach the cluster first with gpufleet's own cluster_access (an AnsibleModule, which masks
    no_log values) and stop there; the report's read runs without a log and its error is said after it."""
    missing = str(tmp_path / "no-such-ca.crt")
    rc, out = run(tmp_path, playbook, *extra, "-e", "gpufleet_build_dir=%s" % (tmp_path / "build" / "example"),
                  "-e", "onboard_dest=%s" % (tmp_path / "onboarded"), "-e", "gpufleet_k8s_host=%s" % cp.url,
                  "-e", "gpufleet_k8s_api_key=%s" % TOKEN, "-e", "gpufleet_k8s_ca_cert=%s" % missing)
    assert rc != 0 and "task path:" in out
    assert not leaks(out), [line for line in out.splitlines() if leaks(line)][:10]
    assert not leaks_in_tree(tmp_path)
    assert missing in out and said in out
