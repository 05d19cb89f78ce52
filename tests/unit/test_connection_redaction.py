"""Connection values never reach a message (issue 39, item 1): one redaction point, module_utils/kube/redact.py.

An inline kubeconfig (a mapping, its one-line JSON, or the Python text a ``type: path`` option makes of a mapping)
used to be printed whole, token included, in "gpufleet cannot reach the Kubernetes cluster (kubeconfig {...})".
Every message that names a connection now goes through ``redact.describe`` and ``redact.scrub``; preflight refuses
an inline kubeconfig, naming the variable and the allowed form, without quoting it."""
import json

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems
from ansible_collections.gpufleet.k8s.plugins.module_utils.kube import cluster_access, redact
from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.cluster_access import access_problem, task_problem
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import secret_values

TOKEN = "sentinel-kubeconfig-token-7f3e9a"
KEY = "c2VudGluZWwta2V5LWRhdGEtOWQ4Yw=="
PASSWORD = "sentinel-proxy-pass-41"
KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "prod",
    "clusters": [{"name": "prod", "cluster": {"server": "https://127.0.0.1:1"}}],
    "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "admin"}}],
    "users": [{"name": "admin", "user": {"token": TOKEN, "client-key-data": KEY}}],
}
INLINE = [KUBECONFIG, json.dumps(KUBECONFIG), str(KUBECONFIG)]
INLINE_IDS = ["mapping", "json", "python-text"]


def assert_clean(text):
    for secret in (TOKEN, KEY, PASSWORD):
        assert secret not in text, text


@pytest.mark.parametrize("kubeconfig", INLINE, ids=INLINE_IDS)
def test_cannot_reach_message_names_an_inline_kubeconfig_without_its_secrets(kubeconfig):
    # the client's error quotes what it was given, as kubernetes' loader does for a path it cannot open
    error = "Invalid kube-config file. No configuration found at %s (token %s)" % (kubeconfig, TOKEN)
    msg = access_problem(error, {"kubeconfig": kubeconfig, "context": "prod"})
    assert_clean(msg)
    assert msg.startswith("gpufleet cannot reach the Kubernetes cluster (an inline kubeconfig (not shown), "
                          "context prod): no usable kubeconfig was found"), msg


@pytest.mark.parametrize("conn,shown", [
    ({"host": "https://admin:%s@api.example:6443" % PASSWORD, "api_key": TOKEN},
     "API server https://********@api.example:6443"),
    ({"kubeconfig": "/etc/k/admin.conf", "context": "c1", "api_key": TOKEN},
     "kubeconfig /etc/k/admin.conf, context c1"),
    ({"context": "c1"}, "context c1 of the default kubeconfig"),
    ({}, "the client's default"),
])
def test_cannot_reach_message_names_the_target_and_masks_credentials(conn, shown):
    error = ("HTTPSConnectionPool(host='api.example'): Max retries exceeded; Authorization: Bearer %s; "
             "proxy http://u:%s@proxy:3128 refused" % (TOKEN, PASSWORD))
    msg = access_problem(error, conn)
    assert_clean(msg)
    assert "(%s" % shown in msg, msg


@pytest.mark.parametrize("kubeconfig", INLINE, ids=INLINE_IDS)
def test_a_failed_task_message_masks_an_inline_kubeconfig(kubeconfig):
    result = {"failed": True, "msg": "could not load %s" % (kubeconfig,)}
    text = task_problem(result, "Reading the nodes", {"kubeconfig": kubeconfig})
    assert_clean(text)
    assert text.startswith("Reading the nodes failed: could not load ********")


@pytest.mark.parametrize("kubeconfig", INLINE + ["apiVersion: v1\nusers:\n- user: {token: %s}\n" % TOKEN],
                         ids=INLINE_IDS + ["yaml-text"])
def test_preflight_refuses_an_inline_kubeconfig_naming_the_variable_and_the_allowed_form(kubeconfig):
    problems = Problems()
    cluster_access.check({"extra": {"gpufleet_k8s_kubeconfig": kubeconfig}}, {}, problems)
    assert len(problems.errors) == 1
    text = problems.errors[0]
    assert text.startswith("gpufleet_k8s_kubeconfig: is an inline kubeconfig"), text
    assert "allowed: the path of a kubeconfig file on the controller" in text
    assert_clean(text)
    # and its secrets are masked in preflight's own result (printed at -vvv with the module's arguments)
    masked = secret_values({"extra": {"gpufleet_k8s_kubeconfig": kubeconfig}})
    assert TOKEN in masked or any(TOKEN in m for m in masked)


@pytest.mark.parametrize("path", ["", None, "/home/me/.kube/config", "~/.kube/prod.yaml", "relative/kubeconfig"])
def test_preflight_accepts_a_kubeconfig_path(path):
    problems = Problems()
    cluster_access.check({"extra": {"gpufleet_k8s_kubeconfig": path}}, {}, problems)
    assert problems.errors == []


def test_scrub_masks_the_longest_secret_first_and_leaves_short_values():
    conn = {"api_key": "abc", "kubeconfig": {"users": [{"user": {"token": TOKEN, "password": TOKEN + "-x"}}]}}
    assert redact.scrub("t=%s-x p=%s abc" % (TOKEN, TOKEN), conn) == "t=******** p=******** abc"


def test_cluster_access_module_message_with_the_real_client(monkeypatch):
    """The module itself, with the real kubernetes client: a mapping reaches it as text (its ``kubeconfig`` option is
    ``type: path``), the client fails to load it, and the message names no secret."""
    pytest.importorskip("kubernetes")
    from ansible_collections.gpufleet.k8s.plugins.modules import cluster_access as module_file

    class Failed(Exception):
        pass

    class Module:
        params = {"kubeconfig": str(KUBECONFIG), "context": None, "host": None, "api_key": None,
                  "validate_certs": None, "ca_cert": None, "client_cert": None, "client_key": None,
                  "find": {}, "api_versions": False}

        def fail_json(self, msg, **kwargs):
            raise Failed(msg)

        def exit_json(self, **kwargs):
            raise AssertionError("reached a cluster: %s" % kwargs)

    for var in ("K8S_AUTH_KUBECONFIG", "KUBECONFIG", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(Failed) as caught:
        module_file.run(Module())
    assert_clean(str(caught.value))
    assert "gpufleet cannot reach the Kubernetes cluster (an inline kubeconfig (not shown)" in str(caught.value)


def test_apply_and_helm_messages_mask_credentials_the_client_quotes():
    results = [{"failed": True, "item": {"kind": "DaemonSet", "metadata": {"name": "dp"}},
                "msg": "Failed to apply via https://admin:%s@api:6443 (Authorization: Bearer %s)" % (PASSWORD, TOKEN)}]
    text = cluster_access.apply_problem(results, "the device plugin")
    assert_clean(text)
    assert "https://********@api:6443" in text and "Bearer ********" in text
    helm = cluster_access.helm_problem({"failed": True, "msg": "proxy http://u:%s@proxy:3128 refused" % PASSWORD},
                                       "helm")
    assert_clean(helm)
