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
import shutil
import subprocess
import time
import urllib.request
import warnings

import pytest

from ansible_run import ansible_env, flat, popen, run_playbook
from controlplane import ControlPlane, free_port, shared_crds_or_skip

TOKEN = "gpufleet-sentinel-token-" + secrets.token_hex(12)
ENV_SECRET = "gpufleet-sentinel-env-" + secrets.token_hex(12)
PROM_PASSWORD = "gpufleet-sentinel-prom-" + secrets.token_hex(12)
SENTINELS = (TOKEN, ENV_SECRET, PROM_PASSWORD)
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


def job_env(tmp):
    env = ansible_env(KUBECONFIG=None,  # the token must be the only credential
                      HOME=str(tmp / "home"), ANSIBLE_SHOW_CUSTOM_STATS="1", ANSIBLE_LOG_FOLDER=str(tmp / "job-events"),
                      ANSIBLE_CALLBACKS_ENABLED="gpufleet.k8s.preload_filters,community.general.log_plays")
    os.makedirs(env["HOME"], exist_ok=True)
    return env


def run(tmp, playbook, *extra, inventory="inventories/example"):
    env = job_env(tmp)
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


def test_api_server_stopped_mid_stage_at_vvv_prints_and_writes_no_token(cp, tmp_path):
    """The API server stops answering in the middle of the validate stage (the validation namespace is there, the
    Jobs and the wait for them next): the gpufleet modules and the kubernetes.core tasks that follow all fail on the
    dead connection, the namespace removal in the stage's ``always`` among them. A kubernetes.core module that
    crashes gets its task arguments, the token included, copied unmasked into its result by the collection's
    action plugin; gpufleet runs those tasks without a log and says their error itself (k8s_task_problem), and its
    own modules mask no_log values in the worker process too. The run fails naming the step and the refused
    connection, and no sentinel is anywhere."""
    build = tmp_path / "build" / "example"
    os.makedirs(build, exist_ok=True)
    proc = popen("ansible-playbook", "playbooks/validate.yml", "-i", "inventories/example", "-vvv",
                 "-e", "gpufleet_apply=true", "-e", "gpufleet_build_dir=%s" % build, "-e", "gpu_validate_timeout=120",
                 *connection(cp), env=job_env(tmp_path))
    try:
        cp.wait(lambda: cp.exists("/api/v1/namespaces/gpufleet-validate"), 240, "the validation namespace")
        cp.stop_apiserver()
        out, _ = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
        if "kube-apiserver" not in cp.procs:
            cp.restart_apiserver()
    with open(tmp_path / "validate-stopped.log", "w") as f:  # to read when the test fails
        f.write(out)
    text = flat(out)
    assert proc.returncode != 0 and "task path:" in out, out[-4000:]
    lines = [line for line in out.splitlines() if leaks(line)]
    assert not lines, "the stopped API server put a sentinel in the output:\n%s" % "\n".join(lines[:20])
    assert not leaks_in_tree(tmp_path)
    # said clearly: the namespace removal (a hidden kubernetes.core task) failed on the refused connection
    assert re.search(r"Removing the validation namespace failed: .*Connection refused", text), text[-4000:]
    if cp.exists("/api/v1/namespaces/gpufleet-validate"):  # left by the stopped run: not for the next test
        cp.delete("/api/v1/namespaces/gpufleet-validate")


def bcrypt_hash(password):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import crypt  # noqa: PLC0415 - the standard library's, gone in Python 3.13
        except ImportError:
            return None
        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """The real Prometheus (Debian's package) behind basic authentication (its web config, bcrypt hash): user
    gpufleet, password PROM_PASSWORD. Nothing is scraped: the queries answer an empty result."""
    binary = shutil.which("prometheus")
    hashed = bcrypt_hash(PROM_PASSWORD)
    if not binary or not hashed:
        pytest.skip("needs Debian's prometheus package (apt-get install prometheus) and crypt with bcrypt")
    tmp = tmp_path_factory.mktemp("prometheus")
    (tmp / "prometheus.yml").write_text("global: {scrape_interval: 15s}\n")
    (tmp / "web.yml").write_text("basic_auth_users:\n  gpufleet: '%s'\n" % hashed)
    port = free_port()
    log = open(str(tmp / "prometheus.log"), "wb")
    proc = subprocess.Popen([binary, "--config.file=%s" % (tmp / "prometheus.yml"), "--storage.tsdb.path=%s" % (tmp / "data"),
                             "--web.config.file=%s" % (tmp / "web.yml"), "--web.listen-address=127.0.0.1:%d" % port],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = "http://127.0.0.1:%d" % port
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/-/ready", timeout=5)
            except urllib.error.HTTPError as exc:
                if exc.code == 401:  # up, and asking for the credentials
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("Prometheus did not start: %s" % open(str(tmp / "prometheus.log")).read()[-2000:])
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


STAGES_WITH_PROMETHEUS = [("playbooks/report.yml", "fleet_report"), ("playbooks/remediate.yml", "gpu_remediation")]


def prom_run(cp, tmp, playbook, *extra):
    # remediation reads no host (the example inventory's hosts do not exist)
    return run(tmp, playbook, "-e", "gpufleet_apply=true", "-e", "gpufleet_build_dir=%s" % (tmp / "build" / "example"),
               "-e", "gpu_remediation_read_hosts=false", *connection(cp), *extra)


@pytest.mark.parametrize("playbook,prefix", STAGES_WITH_PROMETHEUS)
def test_prometheus_password_at_vvv_is_used_and_never_printed(cp, prometheus, tmp_path, playbook, prefix):
    rc, out = prom_run(cp, tmp_path, playbook, "-e", "%s_prometheus_url=%s" % (prefix, prometheus),
                       "-e", "%s_prometheus_username=gpufleet" % prefix,
                       "-e", "%s_prometheus_password=%s" % (prefix, PROM_PASSWORD))
    assert_no_leak(playbook, rc, out)
    assert not leaks_in_tree(tmp_path)
    # the password was what let the queries through: without it Prometheus refuses them, and the run says so
    rc, out = prom_run(cp, tmp_path, playbook, "-e", "%s_prometheus_url=%s" % (prefix, prometheus))
    assert rc != 0 and re.search(r"refused the (credentials|request \(HTTP 401\))", flat(out)), flat(out)[-3000:]


@pytest.mark.parametrize("playbook,prefix", STAGES_WITH_PROMETHEUS)
def test_a_bearer_token_prometheus_refuses_is_said_and_never_printed(cp, prometheus, tmp_path, playbook, prefix):
    rc, out = prom_run(cp, tmp_path, playbook, "-e", "%s_prometheus_url=%s" % (prefix, prometheus),
                       "-e", "%s_prometheus_bearer_token=%s" % (prefix, PROM_PASSWORD))
    assert rc != 0 and "task path:" in out
    assert re.search(r"refused the (credentials|request \(HTTP 401\))", flat(out)), flat(out)[-3000:]
    assert not leaks(out), [line for line in out.splitlines() if leaks(line)][:10]
    assert not leaks_in_tree(tmp_path)


@pytest.mark.parametrize("playbook,prefix", STAGES_WITH_PROMETHEUS)
def test_credentials_in_the_prometheus_url_are_refused_unprinted(cp, prometheus, tmp_path, playbook, prefix):
    url = prometheus.replace("http://", "http://gpufleet:%s@" % PROM_PASSWORD)
    rc, out = prom_run(cp, tmp_path, playbook, "-e", "%s_prometheus_url=%s" % (prefix, url))
    assert rc != 0 and "task path:" in out
    assert "%s_prometheus_url: credentials in the URL (user:password@) are refused" % prefix in flat(out), flat(out)[-3000:]
    assert not leaks(out), [line for line in out.splitlines() if leaks(line)][:10]
    assert not leaks_in_tree(tmp_path)
