# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""GPU health from DCGM metrics, read through the Prometheus HTTP API (``GET /api/v1/query``).

dcgm-exporter serves the DCGM fields as metrics named after them, one series per GPU with the
labels ``gpu``, ``UUID`` and the node's name: ``hostname`` (``Hostname`` before exporter 4.6.0-4.8.3), and
``kubernetes_node`` where the scrape job relabels the pod's node name, as gpufleet's job does. Every query
names the node as ``hostname`` whichever of them a series carries (``addons/dcgm_labels.py``, the one rule
for alerts, dashboard, report and remediation), so evidence from any exporter version counts. What is read,
per GPU:

- ``DCGM_FI_DEV_XID_ERRORS``: the value is the code of the last XID the driver reported (0: none);
  the highest within the window is read, so an XID seen a minute ago is not lost to a later scrape.
- ``DCGM_FI_DEV_ECC_DBE_VOL_TOTAL``: double-bit (uncorrectable) ECC errors since the last driver
  load; above the threshold the GPU is unhealthy until a reset clears the volatile count.
- ``DCGM_FI_DEV_RETIRED_PENDING``: pages waiting to be retired (they are retired at the next GPU
  reset or reboot); ``DCGM_FI_DEV_RETIRED_SBE`` + ``DCGM_FI_DEV_RETIRED_DBE``: pages retired so far.
- ``DCGM_FI_DEV_ROW_REMAP_FAILURE``: 1 when the GPU could not remap a row (no spare rows left).
- ``DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL``: NVLink recovery errors, as an increase over
  the window (the counter only grows).

Each query is an instant query; the answer is the documented JSON
``{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {..}, "value": [ts, "v"]}]}}``.
A query Prometheus refuses (``status: error``) or cannot be reached raises GpufleetError naming the
URL: remediation never acts on half of its evidence.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import math
import re

from ansible.module_utils.six.moves.urllib.parse import urlencode
from ansible.module_utils.urls import open_url

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_labels import NODE, node_name, with_node
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError

# the base URL of Prometheus: http(s), a host, nothing else required (the rule of gpu_remediation's policy too)
_HTTP_URL = re.compile(r"^https?://[^\s/]+")

# name: (PromQL with {window}, what a value above the threshold means, threshold variable)
# (the node named as hostname by dcgm_labels.with_node whichever label the exporter used)
QUERIES = {
    "xid": "max by (%s, gpu, UUID) (%s)" % (NODE, with_node("max_over_time(DCGM_FI_DEV_XID_ERRORS[{window}])")),
    "ecc_dbe": with_node("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
    "retired_pending": with_node("DCGM_FI_DEV_RETIRED_PENDING"),
    "retired_pages": with_node("DCGM_FI_DEV_RETIRED_SBE + DCGM_FI_DEV_RETIRED_DBE"),
    "row_remap_failure": with_node("DCGM_FI_DEV_ROW_REMAP_FAILURE"),
    "nvlink_errors": with_node("increase(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL[{window}])"),
}


def query_texts(window):
    return dict((name, text.replace("{window}", window)) for name, text in QUERIES.items())


def samples(response, what="query"):
    """[(labels, float value)] of an instant-query vector response. Raises GpufleetError when
    Prometheus refused the query or the answer is not a vector."""
    if not isinstance(response, dict) or response.get("status") != "success":
        detail = response.get("error") if isinstance(response, dict) else response
        raise GpufleetError("Prometheus refused the %s: %s" % (what, detail))
    data = response.get("data") or {}
    if data.get("resultType") != "vector":
        raise GpufleetError("Prometheus answered the %s with a %s, not an instant vector"
                            % (what, data.get("resultType")))
    out = []
    for sample in data.get("result") or []:
        try:
            value = float((sample.get("value") or [0, "nan"])[1])
        except (TypeError, ValueError, IndexError):
            continue
        if math.isnan(value):  # no data
            continue
        out.append((sample.get("metric") or {}, value))
    return out


def _gpu(labels):
    return labels.get("gpu") or labels.get("UUID") or "?"


def findings(responses, thresholds, xid_verdict):
    """{node: [finding]} from the answers to ``QUERIES`` (``{name: response}``; a name left out was
    not asked). A finding is ``{"source", "gpu", "value", "verdict", "why"}``; ``verdict`` is one of
    ``application``, ``watch`` (reported, no action) or ``unhealthy`` (remediate).

    ``thresholds``: ``ecc_dbe``, ``retired_pending``, ``retired_pages`` (None: not checked),
    ``nvlink_errors``: a value above it is unhealthy. ``xid_verdict(code)`` -> (verdict, meaning)."""
    out = {}

    def add(node, finding):
        out.setdefault(node, []).append(finding)

    for name in sorted(responses):
        for labels, value in samples(responses[name], "query %s (%s)" % (name, QUERIES.get(name, "?"))):
            node = node_name(labels)
            if node is None:
                continue
            gpu = _gpu(labels)
            if name == "xid":
                code = int(value)
                if code == 0:
                    continue
                verdict, meaning = xid_verdict(code)
                add(node, {"source": "xid", "gpu": gpu, "value": code, "verdict": verdict,
                           "why": "GPU %s: XID %d (%s)" % (gpu, code, meaning)})
                continue
            if name == "row_remap_failure":
                if value > 0:
                    add(node, {"source": name, "gpu": gpu, "value": value, "verdict": "unhealthy",
                               "why": "GPU %s: row remapping failed (no spare memory rows left)" % gpu})
                continue
            limit = thresholds.get(name)
            if limit is None or value <= limit:
                continue
            text = {
                "ecc_dbe": "%d double-bit ECC error(s) since the driver loaded (more than %s)",
                "retired_pending": "%d page(s) pending retirement (more than %s; retired at the next GPU reset)",
                "retired_pages": "%d retired page(s) (more than %s)",
                "nvlink_errors": "%d NVLink recovery error(s) in the window (more than %s)",
            }[name]
            add(node, {"source": name, "gpu": gpu, "value": value, "verdict": "unhealthy",
                       "why": "GPU %s: %s" % (gpu, text % (value, limit))})
    return out


def shown(url):
    """``url`` as it may appear in a message: credentials in it (``https://user:password@host``) replaced."""
    scheme, sep, rest = str(url).partition("://")
    if not sep:
        scheme, rest = "", scheme
    host, slash, path = rest.partition("/")
    if "@" in host:
        host = "***@" + host.rsplit("@", 1)[1]
    return "%s%s%s%s%s" % (scheme, sep, host, slash, path)


def has_credentials(url):
    """True when ``url`` carries userinfo (``scheme://user[:password]@host``, or ``user:password@host`` without a
    scheme): an ``@`` before the path, query or fragment."""
    scheme, sep, rest = str(url).partition("://")
    return "@" in (rest if sep else scheme).split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]


def userinfo(url):
    """The ``user[:password]`` part of ``url`` ("" when it has none): a value to mask wherever it could appear."""
    if not has_credentials(url):
        return ""
    scheme, sep, rest = str(url).partition("://")
    return (rest if sep else scheme).split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rsplit("@", 1)[0]


def credentials_problems(prefix, url, username="", password="", bearer_token=""):
    """Messages for Prometheus access settings that cannot be used, naming the ``<prefix>_*`` variable and
    never quoting the URL or a secret: a URL that is not http(s), credentials in the URL, a bearer token with
    basic authentication, half of basic authentication. Credentials belong in their own (no_log) variables: a
    URL is an ordinary argument, printed with the task at -vvv and kept in the job events. The one rule for
    preflight (:func:`check`), the fleet_report role's filter and the gpu_remediate module."""
    out = []
    if url and not _HTTP_URL.match(str(url)):
        # never quoted: a URL without a scheme may still carry user:password@
        out.append("%s_prometheus_url: not an http:// or https:// URL; use the base URL of Prometheus, e.g. "
                   "http://prometheus.monitoring:9090, or \"\" for none" % prefix)
    if has_credentials(url):
        out.append("%s_prometheus_url: credentials in the URL (user:password@) are refused, they would be printed "
                   "with the task's arguments; put the user name in %s_prometheus_username and the password in "
                   "%s_prometheus_password (or a token in %s_prometheus_bearer_token)" % (prefix, prefix, prefix, prefix))
    if bearer_token and (username or password):
        out.append("%s_prometheus_bearer_token: set either the bearer token or %s_prometheus_username and "
                   "%s_prometheus_password, not both" % (prefix, prefix, prefix))
    elif bool(username) != bool(password):
        out.append("%s_prometheus_%s: basic authentication needs both %s_prometheus_username and "
                   "%s_prometheus_password" % (prefix, "password" if username else "username", prefix, prefix))
    return out


def url_inputs():
    """{prefix: variable} of every Prometheus URL input: ``<role>_prometheus_url`` of each role whose argument
    spec declares one (fleet_report, gpu_remediation), so that a role that adds one is checked too."""
    return dict((role, role + "_prometheus_url") for role in role_specs.input_roles()
                if role + "_prometheus_url" in role_specs.options(role))


def url_secrets(values):
    """The strings to mask wherever preflight's result could show them (its arguments at -vvv): each Prometheus
    URL input in ``values`` (the inputs dictionary) that carries credentials, and its ``user:password`` part."""
    out = set()
    for variable in url_inputs().values():
        url = values.get(variable)
        if isinstance(url, str) and has_credentials(url):
            out.add(url)
            if len(userinfo(url)) > 2:  # a one-letter user name alone would mask every such letter
                out.add(userinfo(url))
    return out


def check(params, plan, problems):
    """Preflight: the Prometheus access settings of every ``<role>_prometheus_url`` input, by
    :func:`credentials_problems`, before any stage runs. The passwords and bearer tokens never reach preflight
    (no_log inputs stay out of ``extra``): ``secrets_set`` names the ones set, without their values."""
    extra = params.get("extra") or {}
    given = set(params.get("secrets_set") or [])
    for prefix, variable in sorted(url_inputs().items()):
        url = extra.get(variable)
        url = "" if url is None else str(url)
        username = extra.get(prefix + "_prometheus_username")
        password = "set" if prefix + "_prometheus_password" in given else ""
        token = "set" if prefix + "_prometheus_bearer_token" in given else ""
        for message in credentials_problems(prefix, url, "" if username is None else str(username), password, token):
            name, _sep, text = message.partition(": ")
            problems.error(name, text)


def auth_headers(username="", password="", bearer_token=""):
    """The Authorization header for Prometheus (or a proxy in front of it): Bearer, Basic, or none."""
    if bearer_token:
        return {"Authorization": "Bearer %s" % bearer_token}
    if username and password:
        pair = ("%s:%s" % (username, password)).encode("utf-8")
        return {"Authorization": "Basic %s" % base64.b64encode(pair).decode("ascii")}
    return {}


def query(base_url, promql, timeout=30, validate_certs=True, headers=None, opener=None):
    """The decoded JSON of ``GET <base_url>/api/v1/query?query=<promql>``. Prometheus answers a bad
    query with HTTP 400 and the same JSON (status error): that JSON is returned for ``samples`` to
    name. Raises GpufleetError when Prometheus cannot be reached or does not answer JSON."""
    url = "%s/api/v1/query?%s" % (base_url.rstrip("/"), urlencode({"query": promql}))
    opener = opener or open_url
    try:
        response = opener(url, method="GET", timeout=timeout, validate_certs=validate_certs, headers=headers or {})
        body = response.read()
    except Exception as exc:  # HTTPError carries the error JSON; anything else: not reachable
        if getattr(exc, "code", None) in (401, 403):
            raise GpufleetError("gpu_remediation_prometheus_url: Prometheus at %s refused the request (HTTP %s): set "
                                "gpu_remediation_prometheus_username and gpu_remediation_prometheus_password, or "
                                "gpu_remediation_prometheus_bearer_token, to what it accepts; nothing was changed"
                                % (shown(base_url), exc.code))
        read = getattr(exc, "read", None)
        body = read() if read is not None else None
        if not body:
            raise GpufleetError("gpu_remediation_prometheus_url: Prometheus at %s could not be queried (%s); "
                                "nothing was changed" % (shown(base_url), str(exc).replace(str(base_url), shown(base_url))))
    try:
        return json.loads(body)
    except ValueError:
        raise GpufleetError("gpu_remediation_prometheus_url: %s did not answer a Prometheus API query with JSON "
                            "(is it the Prometheus base URL?); nothing was changed" % shown(base_url))


def read_all(base_url, window, thresholds, timeout=30, validate_certs=True, opener=None, headers=None):
    """{name: response} for every query whose threshold is set (XIDs and row remapping always);
    ``headers`` (auth_headers()) go with every query."""
    out = {}
    for name, text in sorted(query_texts(window).items()):
        if name not in ("xid", "row_remap_failure") and thresholds.get(name) is None:
            continue
        out[name] = query(base_url, text, timeout=timeout, validate_certs=validate_certs, headers=headers, opener=opener)
    return out
