"""Prometheus credentials have their own no_log variables, never the URL (issue 30, item 3 / issue 29).

A URL is an ordinary task argument: printed with the task at -vvv and kept in AWX job events. gpu_remediation and
fleet_report refuse ``user:password@`` in their Prometheus URL before anything is read, without quoting it, and take
basic-auth or bearer credentials from ``*_prometheus_username`` / ``*_password`` / ``*_bearer_token`` (no_log). The
AWX survey refuses such a URL as an answer before it sets it as a fact. Checked here on the functions and on the
gpu_remediate module run as the controller runs it (plugin_utils/controller_module.py)."""
import base64

import pytest

from ansible_collections.gpufleet.k8s.plugins.filter.fleet_report import prometheus_access_problems
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import awx_survey
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation_metrics as metrics
from ansible_collections.gpufleet.k8s.plugins.modules import gpu_remediate
from ansible_collections.gpufleet.k8s.plugins.plugin_utils.controller_module import run_in_process

SECRET = "s3ntinel-pw-77"


@pytest.mark.parametrize("url,has", [
    ("https://gpufleet:%s@prometheus.example:9090/prom" % SECRET, True),
    ("http://token@prometheus:9090", True),
    ("http://prometheus.monitoring:9090", False),
    ("http://prometheus:9090/path@x", False),  # an @ in the path is not userinfo
    ("http://prometheus:9090?q=a@b", False),
    ("", False),
    ("prometheus:9090", False),
])
def test_credentials_in_a_url_are_found(url, has):
    assert metrics.has_credentials(url) is has


@pytest.mark.parametrize("args,expected", [
    (("http://p:9090", "", "", ""), []),
    (("http://p:9090", "u", SECRET, ""), []),
    (("http://p:9090", "", "", SECRET), []),
    (("http://u:%s@p:9090" % SECRET, "", "", ""),
     ["fleet_report_prometheus_url: credentials in the URL (user:password@) are refused"]),
    (("http://p:9090", "u", SECRET, "tok"), ["fleet_report_prometheus_bearer_token: set either the bearer token or"]),
    (("http://p:9090", "u", "", ""), ["fleet_report_prometheus_password: basic authentication needs both"]),
    (("http://p:9090", "", SECRET, ""), ["fleet_report_prometheus_username: basic authentication needs both"]),
])
def test_access_problems_name_the_variable_and_quote_no_secret(args, expected):
    got = prometheus_access_problems(args[0], "fleet_report", *args[1:])
    assert len(got) == len(expected) and all(g.startswith(e) for g, e in zip(got, expected)), got
    assert not any(SECRET in g or "http://" in g for g in got)


def test_auth_headers():
    assert metrics.auth_headers() == {}
    assert metrics.auth_headers(bearer_token="abc") == {"Authorization": "Bearer abc"}
    basic = metrics.auth_headers("gpufleet", SECRET)["Authorization"]
    assert basic.startswith("Basic ") and base64.b64decode(basic[6:]).decode() == "gpufleet:" + SECRET


def test_queries_send_the_header_and_a_refusal_says_which_variables():
    seen = []

    class Refused(Exception):
        code = 401

    def opener(url, **kw):
        seen.append(kw["headers"])
        raise Refused("HTTP Error 401: Unauthorized")

    headers = metrics.auth_headers(bearer_token=SECRET)
    with pytest.raises(GpufleetError) as err:
        metrics.read_all("http://prometheus:9090", "15m", {"ecc_dbe": 0}, opener=opener, headers=headers)
    assert seen == [headers]
    assert "refused the request (HTTP 401)" in str(err.value) and "gpu_remediation_prometheus_bearer_token" in str(err.value)
    assert SECRET not in str(err.value)


def test_gpu_remediate_refuses_a_url_with_credentials_before_reading_and_masks_it():
    url = "https://gpufleet:%s@prometheus.example:9090" % SECRET
    result = run_in_process(gpu_remediate, {"pools": [], "platform": "kubeadm",
                                            "policy": {"prometheus_url": url}}, name="gpufleet.k8s.gpu_remediate")
    assert result["failed"]
    assert result["msg"].startswith("gpu_remediation_prometheus_url: credentials in the URL (user:password@) are "
                                    "refused") and result["msg"].endswith("nothing was read or changed")
    assert SECRET not in repr(result) and url not in repr(result)


def test_gpu_remediate_masks_its_password_and_token_options():
    for extra in ({"prometheus_username": "u", "prometheus_password": SECRET, "prometheus_bearer_token": SECRET},):
        result = run_in_process(gpu_remediate, dict({"pools": [], "platform": "kubeadm",
                                                     "policy": {"prometheus_url": "http://p:9090"}}, **extra),
                                name="gpufleet.k8s.gpu_remediate")
        assert result["failed"] and "not both" in result["msg"] and SECRET not in repr(result)


@pytest.mark.parametrize("answer,refused", [
    ("https://gpufleet:%s@prometheus.example:9090" % SECRET, True),
    ("http://prometheus.monitoring:9090", False),
])
def test_survey_refuses_a_url_with_credentials_without_repeating_it(answer, refused):
    variables, errors = awx_survey.parse_answers({"gpufleet_survey_fleet_report_prometheus_url": answer,
                                                  "gpufleet_survey_gpu_remediation_prometheus_url": answer})
    if refused:
        assert variables == {} and len(errors) == 2
        assert errors[0].startswith("gpufleet_survey_fleet_report_prometheus_url: credentials in the URL")
        assert "fleet_report_prometheus_username" in errors[0] and "gpu_remediation_prometheus_password" in errors[1]
        assert SECRET not in repr(errors)
    else:
        assert variables == {"fleet_report_prometheus_url": answer, "gpu_remediation_prometheus_url": answer}
        assert errors == []
