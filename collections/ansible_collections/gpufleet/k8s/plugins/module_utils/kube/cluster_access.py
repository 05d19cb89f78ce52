# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""One cluster connection for every Kubernetes task, and a clear message when it does not work.

The ``gpufleet_k8s_*`` variables become one dict of kubernetes.core connection options; the stage
playbooks hand it to every kubernetes.core and gpufleet Kubernetes module through
``module_defaults`` (groups ``kubernetes.core.k8s``, ``kubernetes.core.helm``, ``gpufleet.k8s.k8s``
and ``kubernetes.core.k8s_cluster_info``, which is in no group). Apply mode first reaches the
cluster once (module ``gpufleet.k8s.cluster_access``); :func:`access_problem` turns the client's raw
error into what to change.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube import redact

# gpufleet variable -> kubernetes.core option (the same names in the k8s and helm modules)
CONNECTION_VARS = (
    ("gpufleet_k8s_kubeconfig", "kubeconfig"),
    ("gpufleet_k8s_context", "context"),
    ("gpufleet_k8s_host", "host"),
    ("gpufleet_k8s_api_key", "api_key"),
    ("gpufleet_k8s_ca_cert", "ca_cert"),
)

# Options of gpufleet's Kubernetes modules (documented once in doc_fragments/k8s_connection.py),
# handed to kubernetes.core's get_api_client as they are.
CONNECTION_ARG_SPEC = dict(
    kubeconfig=dict(type="raw", no_log=True),
    context=dict(type="str"),
    host=dict(type="str"),
    api_key=dict(type="str", no_log=True),
    validate_certs=dict(type="bool", aliases=["verify_ssl"]),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"]),
    client_cert=dict(type="path", aliases=["cert_file"]),
    client_key=dict(type="path", aliases=["key_file"]),
)


def connection_args(argspec_or_params):
    """A fresh copy of CONNECTION_ARG_SPEC (for argspec()), or, given module params, the connection
    options that are set (for get_api_client)."""
    if argspec_or_params is None:
        return dict((k, dict(v)) for k, v in CONNECTION_ARG_SPEC.items())
    return dict((k, argspec_or_params[k]) for k in CONNECTION_ARG_SPEC if argspec_or_params.get(k) is not None)


# Per-role connection variables of earlier versions: a value there used to reach only some tasks.
RETIRED_VARS = {
    "k8s_apply_kubeconfig": "gpufleet_k8s_kubeconfig",
    "k8s_apply_context": "gpufleet_k8s_context",
    "gpu_validate_kubeconfig": "gpufleet_k8s_kubeconfig",
    "gpu_validate_context": "gpufleet_k8s_context",
    # a task argument, even an omitted one, kept module_defaults' connection from reaching the report
    "fleet_report_kubeconfig": "gpufleet_k8s_kubeconfig",
    "fleet_report_context": "gpufleet_k8s_context",
}


def connection(values):
    """kubernetes.core connection options from the ``gpufleet_k8s_*`` values (empty ones left out,
    so the client's defaults apply: in-cluster config, then ~/.kube/config or $KUBECONFIG)."""
    out = {}
    for var, option in CONNECTION_VARS:
        value = values.get(var)
        if value not in (None, ""):
            out[option] = value
    if values.get("gpufleet_k8s_validate_certs") in (False, "false", "False", "no"):
        out["validate_certs"] = False
    return out


KUBECONFIG_FORMS = ("the path of a kubeconfig file on the controller (absolute, or ~/...), or empty for the "
                    "client's default")


def check(params, plan, problems):
    """Preflight: ``gpufleet_k8s_kubeconfig`` is a path (the role argument spec says ``str``, the path of a file).
    A kubeconfig given inline - a mapping, or its JSON/YAML text - is refused without quoting it: it carries
    tokens and keys, and every message and module argument that names the connection would carry them too."""
    value = (params.get("extra") or {}).get("gpufleet_k8s_kubeconfig")
    if value in (None, "") or redact.inline_kubeconfig(value) is None:
        return
    form = "a mapping" if isinstance(value, dict) or str(value).strip().startswith("{") else "kubeconfig text"
    problems.error("gpufleet_k8s_kubeconfig", "is an inline kubeconfig (%s, not shown: it holds credentials); "
                   "allowed: %s. Write the kubeconfig to a file readable only by you (mode 0600) and give its "
                   "path" % (form, KUBECONFIG_FORMS))


def secret_values(values):
    """Strings of the ``gpufleet_k8s_*`` values (the inputs dictionary) that no result may show: the secrets of an
    inline kubeconfig (refused by :func:`check`) and credentials in the API server URL."""
    return set(redact.secrets(dict((k, v) for k, v in (values or {}).items() if k.startswith("gpufleet_k8s_"))))


def helm_connection(values):
    out = connection(values)
    out["binary_path"] = values.get("gpufleet_helm_binary") or "helm"
    return out


def retired(values):
    """Messages for retired per-role connection variables that are set."""
    return ["%s: replaced by %s (one connection for every task); move the value there" % (var, RETIRED_VARS[var])
            for var in sorted(RETIRED_VARS) if values.get(var) not in (None, "")]


_CAUSES = (
    (("Failed to import the required Python library", "kubernetes"),
     "the kubernetes Python client is not installed for the interpreter running the task "
     "(scripts/bootstrap.sh installs requirements.txt into .venv)"),
    (("Invalid kube-config file",), "no usable kubeconfig was found"),
    (("Could not create API client",), "no API client could be built from the connection settings"),
    (("Connection refused",), "the connection was refused (nothing listens there, or it is the wrong address/port)"),
    (("Name or service not known",), "the API server's host name does not resolve"),
    (("nodename nor servname",), "the API server's host name does not resolve"),
    (("timed out",), "the connection timed out (network, firewall or proxy)"),
    (("CERTIFICATE_VERIFY_FAILED",), "the API server's TLS certificate is not trusted (set gpufleet_k8s_ca_cert)"),
    (("(401)",), "the API server refused the credentials (401 Unauthorized)"),
    (("Unauthorized",), "the API server refused the credentials (401 Unauthorized)"),
    (("(403)",), "the credentials may not read the cluster (403 Forbidden)"),
    (("(404)",), "something answered but it is not a Kubernetes API server (404 on /version)"),
    (("No such file or directory",), "a file the connection names is not there (gpufleet_k8s_ca_cert, or a path "
                                     "in the kubeconfig)"),
)

HOW = ("Set gpufleet_k8s_kubeconfig (and gpufleet_k8s_context), or gpufleet_k8s_host with gpufleet_k8s_api_key "
       "(and gpufleet_k8s_ca_cert), in group_vars/all; every Kubernetes task of every stage uses them.")


def access_problem(error, conn):
    """What to tell the user when the cluster did not answer: ``error`` is the client's raw error
    text, ``conn`` the connection options used. Both go through the one redaction point (module_utils.kube.redact):
    no token, inline kubeconfig, key or URL credentials reaches the message."""
    raw = redact.scrub(error or "unknown error", conn)
    cause = "the cluster did not answer"
    for needles, text in _CAUSES:
        if all(n in raw for n in needles):
            cause = text
            break
    if len(raw) > 400:
        raw = raw[:400] + "..."
    return ("gpufleet cannot reach the Kubernetes cluster (%s): %s. This step applied nothing (what earlier steps of this run applied stays as it is). "
            "%s Client error: %s" % (redact.describe(conn), cause, HOW, raw))


def _object_name(item):
    item = item or {}
    return "%s/%s" % (item.get("kind", "?"), (item.get("metadata") or {}).get("name", "?"))


def _first_line(text, limit=300):
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[:limit] + "..."


def _server_message(msg):
    """The API server's own words from a client error that embeds its Status object as JSON."""
    start = msg.find("{")
    if start >= 0:
        try:
            status = json.loads(msg[start:])
        except ValueError:
            status = None
        if isinstance(status, dict) and status.get("message"):
            return status["message"]
    return msg


def apply_problem(results, component):
    """The message when applying ``component``'s objects failed for some of them (``results``: the
    registered per-object results of the apply loop, in order); empty when none failed.

    Says which objects the cluster accepted, which it refused and why (the server's own message), and
    which were not applied because the cluster stopped answering - so that nothing is left half-applied
    without a word."""
    results = results or []
    # the loop runs with failed_when false (Ansible then sets failed to false): an object the module
    # did not apply has its message and no result
    failed = [r for r in results if r.get("failed") or (r.get("msg") and "result" not in r)]
    if not failed:
        return ""
    done = [_object_name(r.get("item")) for r in results if r not in failed and not r.get("skipped")]
    lost, refused = [], []
    for r in failed:
        msg = str(r.get("msg") or r.get("reason") or "failed")
        cause = next((text for needles, text in _CAUSES[2:] if all(n in msg for n in needles)), None)
        if cause and ("Max retries exceeded" in msg or "Connection" in msg or "timed out" in msg):
            lost.append((_object_name(r.get("item")), cause))
        else:
            said = redact.scrub(_server_message(msg))
            refused.append("%s: %s" % (_object_name(r.get("item")), _first_line(said, 400)))
    parts = ["Applying %s stopped part-way: %d of %d object(s) applied or already as rendered%s" % (
        component, len(done), len(results), (" (%s)" % ", ".join(done)) if done else "")]
    if refused:
        parts.append("refused by the API server: %s" % "; ".join(refused))
    if lost:
        parts.append("not applied because the cluster stopped answering (%s): %s" % (
            lost[0][1], ", ".join(entry[0] for entry in lost)))
    return "; ".join(parts) + (". Objects are applied with server-side apply: once the cause is fixed, run the same "
                               "command again; it applies what is missing and changes nothing else.")


def lost_problem(component, msg, what):
    """The message when the cluster stopped answering before anything of ``component`` was applied or deleted
    (``what``: the read that failed)."""
    cause = next((text for needles, text in _CAUSES[2:] if all(n in str(msg) for n in needles)),
                 "it did not answer")
    return ("%s stopped before anything was applied or deleted: the cluster stopped answering (%s) while %s. "
            "Once it answers, run the same command again; it applies what is missing and changes nothing else."
            % (component, cause, what))


def helm_problem(result, binary):
    """The message when the helm binary the GPU Operator install needs is not usable."""
    if result and not result.get("failed") and result.get("rc", 1) == 0:
        return ""
    detail = redact.scrub(str((result or {}).get("msg") or (result or {}).get("stderr") or "not found").strip())
    return ("gpufleet_addons_mode is operator: the GPU Operator is installed with helm, but %r does not run (%s). "
            "This step applied nothing (what earlier steps of this run applied stays as it is). Install helm 3 on "
            "the controller or set gpufleet_helm_binary to its path."
            % (binary, detail[:200]))


# OpenShift preset: OLM installs the GPU Operator and the NFD operator. These CRDs must be served
# before gpufleet creates the OperatorGroups and Subscriptions.
OLM_CRDS = ("operatorgroups.operators.coreos.com", "subscriptions.operators.coreos.com")
# CRDs the OLM-installed operators bring, waited for before their instances are applied.
OPERATOR_CRDS = ("nodefeaturediscoveries.nfd.openshift.io", "clusterpolicies.nvidia.com")


def olm_problem(found):
    """The message when OLM's CRDs are missing (``found``: names of the CRDs the cluster has)."""
    missing = [c for c in OLM_CRDS if c not in (found or [])]
    if not missing:
        return ""
    return ("gpu_operator_preset openshift installs the GPU Operator and the NFD operator through OLM, but this cluster "
            "serves no %s (OLM is not installed). This step applied nothing (what earlier steps of this run applied "
            "stays as it is). Install OLM first, or use a Helm preset "
            "(gpu_operator_preset: kubeadm, k3s, rke2, ...)." % ", ".join(missing))


# kubernetes.core's action plugins (k8s, k8s_info, k8s_drain, helm, ...) copy the task's arguments,
# the connection's api_key included and unmasked, into a result that has no ``invocation``: a module
# that crashed (the API server stopped answering mid-stage raises out of the client). gpufleet's tasks
# with those modules therefore run without a log, register the result and say its error with this.
def task_problem(result, what, connection=None):
    """The message for a failed (hidden) kubernetes.core task, or ``""``. ``result`` is the registered
    result (of a loop or a single task), ``what`` says what the task did, ``connection`` the connection
    options, whose secrets are masked should the error text quote them."""
    result = result or {}
    failed = [r for r in result.get("results") or [] if r.get("failed")] if "results" in result else (
        [result] if result.get("failed") else [])
    if not failed:
        return ""
    parts = []
    for item in failed:
        text = redact.scrub(str(item.get("msg") or "failed without a message").strip(), connection)
        label = redact.scrub(_item_label(item.get("_ansible_item_label", item.get("item"))), connection)
        parts.append("%s%s" % ("%s: " % label if label and "results" in result else "", text[:1500]))
    return "%s failed: %s" % (what, "; ".join(parts))


def _item_label(item):
    """A loop item as a short label: ``Kind/name`` for an object, the name of a named mapping, else the text."""
    if isinstance(item, dict):
        name = (item.get("metadata") or {}).get("name") or item.get("name")
        if name:
            return "%s/%s" % (item["kind"], name) if item.get("kind") else str(name)
    return "" if item is None else str(item)[:120]
