"""Prometheus access settings are refused in preflight, before any stage runs (issue 30, item 3).

Every ``<role>_prometheus_url`` input (fleet_report, gpu_remediation: found from the argument specs) is checked
by the one rule, ``remediation_metrics.credentials_problems``, that the fleet_report role and the gpu_remediate
module still apply at run time: credentials in the URL, a URL that is not http(s), a bearer token together with
basic authentication, half of basic authentication. The passwords and tokens never reach preflight (no_log inputs
stay out of ``extra``); ``secrets_set`` names the ones given. No message quotes the URL, and preflight's result,
its arguments included (printed at -vvv when the module runs as a module), masks a URL with credentials."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation_metrics as metrics
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from ansible_run import ROOT
from frozen import TODAY

SECRET = "s3ntinel-prom-pw-41"
POOLS = [{"name": "a", "gpu_type": "l4", "gpus_per_node": 1, "node_group": "gpu_a"}]


def params(extra, secrets_set=()):
    return {"platform": "kubeadm", "cluster_name": "c1", "addons_mode": "standalone", "pools": POOLS,
            "apply": False, "extra": extra, "secrets_set": list(secrets_set), "today": TODAY,
            "inventory": {"groups": {"gpu_a": ["h1"]}, "node_names": {}, "name": "c1", "repo_root": ROOT}}


def test_every_prometheus_url_input_of_the_specs_is_checked():
    assert metrics.url_inputs() == {"fleet_report": "fleet_report_prometheus_url",
                                    "gpu_remediation": "gpu_remediation_prometheus_url"}


@pytest.mark.parametrize("url,info", [
    ("u:%s@prometheus:9090" % SECRET, "u:" + SECRET),   # no scheme: still user:password@
    ("token@prometheus", "token"),
    ("prometheus:9090/a@b", ""),                          # an @ in the path
    ("http://u:%s@p:9090/x" % SECRET, "u:" + SECRET),
    ("http://p:9090", ""),
])
def test_credentials_without_a_scheme_are_found(url, info):
    assert metrics.has_credentials(url) is bool(info)
    assert metrics.userinfo(url) == info


NOT_HTTP = "not an http:// or https:// URL; use the base URL of Prometheus"
IN_URL = "credentials in the URL (user:password@) are refused"


@pytest.mark.parametrize("extra,secrets_set,expected", [
    # allowed: nothing set, plain http(s), basic authentication, a bearer token
    ({}, (), []),
    ({"gpu_remediation_prometheus_url": ""}, (), []),
    ({"gpu_remediation_prometheus_url": "http://prometheus.monitoring:9090"}, (), []),
    ({"fleet_report_prometheus_url": "https://prom.example/prefix", "fleet_report_prometheus_username": "u"},
     ("fleet_report_prometheus_password",), []),
    ({"gpu_remediation_prometheus_url": "http://p:9090"}, ("gpu_remediation_prometheus_bearer_token",), []),
    # refused, each naming its variable
    ({"gpu_remediation_prometheus_url": "http://u:%s@prom:9090" % SECRET}, (),
     ["gpu_remediation_prometheus_url: " + IN_URL]),
    ({"fleet_report_prometheus_url": "https://%s@prom:9090/x" % SECRET}, (), ["fleet_report_prometheus_url: " + IN_URL]),
    ({"fleet_report_prometheus_url": "prometheus:9090"}, (), ["fleet_report_prometheus_url: " + NOT_HTTP]),
    ({"gpu_remediation_prometheus_url": "ftp://prom:9090"}, (), ["gpu_remediation_prometheus_url: " + NOT_HTTP]),
    ({"gpu_remediation_prometheus_url": "u:%s@prom:9090" % SECRET}, (),
     ["gpu_remediation_prometheus_url: " + NOT_HTTP, "gpu_remediation_prometheus_url: " + IN_URL]),
    ({"gpu_remediation_prometheus_url": "http://p:9090", "gpu_remediation_prometheus_username": "u"},
     ("gpu_remediation_prometheus_password", "gpu_remediation_prometheus_bearer_token"),
     ["gpu_remediation_prometheus_bearer_token: set either the bearer token or gpu_remediation_prometheus_username"]),
    ({"fleet_report_prometheus_url": "http://p:9090"},
     ("fleet_report_prometheus_password", "fleet_report_prometheus_bearer_token"),
     ["fleet_report_prometheus_bearer_token: set either the bearer token"]),
    ({"fleet_report_prometheus_url": "http://p:9090", "fleet_report_prometheus_username": "u"}, (),
     ["fleet_report_prometheus_password: basic authentication needs both"]),
    # a secret of one role does not count for the other
    ({"fleet_report_prometheus_url": "http://p:9090", "fleet_report_prometheus_username": "u"},
     ("gpu_remediation_prometheus_password",), ["fleet_report_prometheus_password: basic authentication needs both",
                                                "gpu_remediation_prometheus_username: basic authentication needs both"]),
    # both roles at once: every problem reported
    ({"fleet_report_prometheus_url": "http://a:%s@p:9090" % SECRET, "gpu_remediation_prometheus_url": "p:9090"}, (),
     ["fleet_report_prometheus_url: " + IN_URL, "gpu_remediation_prometheus_url: " + NOT_HTTP]),
])
def test_preflight_refuses_prometheus_settings_naming_the_variable(extra, secrets_set, expected):
    errors, _warnings, _plan = run_preflight(params(extra, secrets_set))
    assert len(errors) == len(expected) and all(e.startswith(x) for e, x in zip(errors, expected)), errors
    # what is allowed is said, the URL never quoted
    for error in errors:
        assert "http://prometheus.monitoring:9090" in error or "_prometheus_username" in error, error
        assert SECRET not in error and "@p" not in error and "@prom" not in error, error


def test_preflight_masks_a_url_with_credentials_in_its_result_and_arguments(tmp_path):
    """Run as a module (a task that does not target the controller), AnsibleModule prints its arguments with the
    result at -vvv: the refused URL is masked there as well."""
    url = "http://gpufleet:%s@prom:9090" % SECRET
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": params({"gpu_remediation_prometheus_url": url})}))
    proc = subprocess.run([sys.executable, "-c", "from ansible_collections.gpufleet.k8s.plugins.modules import "
                           "preflight; preflight.main()", str(args)], capture_output=True, text=True, timeout=120,
                          cwd=os.path.join(ROOT, "collections"),
                          env=dict(os.environ, GPUFLEET_ROLES_DIR=os.path.join(ROOT, "roles")))
    result = json.loads(proc.stdout)
    assert result["failed"] and result["errors"][0].startswith("gpu_remediation_prometheus_url: " + IN_URL)
    assert "gpu_remediation_prometheus_url" in result["invocation"]["module_args"]["extra"]
    assert SECRET not in proc.stdout + proc.stderr and "gpufleet:" not in proc.stdout


def test_what_preflight_masks():
    url = "http://gpufleet:%s@prom:9090" % SECRET
    assert metrics.url_secrets({"fleet_report_prometheus_url": url, "gpu_remediation_prometheus_url": "http://p"}) == {
        url, "gpufleet:" + SECRET}
    # a one-letter user alone is not masked (it would mask that letter everywhere); the whole URL is
    assert metrics.url_secrets({"gpu_remediation_prometheus_url": "http://u@p"}) == {"http://u@p"}
    assert metrics.url_secrets({"gpufleet_survey_fleet_report_prometheus_url": url}) == set()
