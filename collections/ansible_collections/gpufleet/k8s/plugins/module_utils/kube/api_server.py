# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The one part of gpufleet's in-process Kubernetes client that makes requests: ``Server`` (raw JSON
through the kubernetes client's ApiClient, discovery learnt once per run), the two ways a request fails
(``ApiError``: the server answered with an error; ``Lost``: it stopped answering), and the reads built
on it (served API versions, a filtered list). apply_run.py applies whole trees with it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
import time

APPLY_TYPE = "application/apply-patch+yaml"  # JSON is YAML: the body goes as JSON


class ApiError(Exception):
    """An answer of the API server that is not a success: ``status`` and the server's own message."""

    def __init__(self, status, message):
        super(ApiError, self).__init__(message)
        self.status = status
        self.message = message


class Lost(Exception):
    """The cluster stopped answering (connection refused, timed out): nothing after this is tried."""


def _server_words(body, fallback):
    try:
        status = json.loads(body)
    except (TypeError, ValueError):
        return fallback
    return status.get("message") or fallback if isinstance(status, dict) else fallback


class Server(object):
    """Raw JSON requests on a kubernetes ``ApiClient``, and discovery cached per group-version."""

    def __init__(self, api_client, timeout=60):
        # imported here, not with this file: render mode loads the module that imports it and never applies
        from kubernetes.client.rest import ApiException
        from urllib3.exceptions import HTTPError
        self._errors = (ApiException, HTTPError)
        self.client = api_client
        self.timeout = timeout
        self.retry_delay = 0.5
        self._resources = {}
        self._preferred = {}
        self._lock = threading.Lock()

    def request(self, method, path, body=None, query=None, content_type="application/json"):
        """The decoded JSON answer; ApiError for an error status, Lost when the server cannot be reached.
        A connection that broke is tried once more (every request here is idempotent: GET, server-side apply,
        DELETE): a glitch then costs nothing, and a server that is gone is named by the second error
        (connection refused) rather than by the half-read answer of the first."""
        try:
            return self._request(method, path, body, query, content_type)
        except Lost:
            time.sleep(self.retry_delay)
            return self._request(method, path, body, query, content_type)

    def _request(self, method, path, body, query, content_type):
        headers = {"Accept": "application/json", "Content-Type": content_type}
        api_exception, http_error = self._errors
        try:
            if hasattr(self.client, "param_serialize"):  # kubernetes >= 33: requests built, status not checked
                method, url, headers, body, _post_params = self.client.param_serialize(
                    method=method, resource_path=path, query_params=list((query or {}).items()),
                    header_params=headers, body=body, auth_settings=["BearerToken"])
                response = self.client.rest_client.request(method, url, headers=headers, body=body,
                                                           _request_timeout=self.timeout)
                status, data = response.status, response.read()
            else:  # older clients raise ApiException for an error status themselves
                data = self.client.call_api(
                    path, method, query_params=list((query or {}).items()), header_params=headers, body=body,
                    auth_settings=["BearerToken"], _preload_content=False, _return_http_data_only=True,
                    _request_timeout=self.timeout).data
                status = 200
        except api_exception as exc:
            if not exc.status:
                raise Lost(str(exc.reason))
            raise ApiError(exc.status, _server_words(exc.body, "%s %s" % (exc.status, exc.reason)))
        except (http_error, OSError) as exc:  # urllib3's connection errors
            raise Lost(str(exc))
        if not 200 <= status < 300:
            raise ApiError(status, _server_words(data, "HTTP %s" % status))
        return json.loads(data) if data else {}

    def get(self, path, query=None):
        try:
            return self.request("GET", path, query=query)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    # discovery -------------------------------------------------------------------------------------
    def resources(self, group_version):
        """{kind: (plural, namespaced)} the server serves in ``group_version`` ({} when none)."""
        with self._lock:
            if group_version in self._resources:
                return self._resources[group_version]
        path = "/api/v1" if group_version == "v1" else "/apis/%s" % group_version
        found = {}
        for res in (self.get(path) or {}).get("resources") or []:
            if "/" not in res["name"]:
                found[res["kind"]] = (res["name"], bool(res.get("namespaced")))
        with self._lock:
            self._resources.setdefault(group_version, {}).update(found)
            return self._resources[group_version]

    def learn(self, crd):
        """What an Established CustomResourceDefinition serves, without asking discovery again."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        with self._lock:
            for version in spec.get("versions") or []:
                if version.get("served", True):
                    gv = "%s/%s" % (spec.get("group"), version.get("name"))
                    self._resources.setdefault(gv, {})[names.get("kind")] = (
                        names.get("plural"), spec.get("scope") == "Namespaced")

    def preferred_version(self, group):
        if not group:
            return "v1"
        with self._lock:
            if group in self._preferred:
                return self._preferred[group]
        found = ((self.get("/apis/%s" % group) or {}).get("preferredVersion") or {}).get("groupVersion")
        with self._lock:
            self._preferred[group] = found
        return found

    def collection(self, group_version, kind, namespace=None):
        """The URL path of a kind's collection (in ``namespace`` when namespaced), or None if not served."""
        found = self.resources(group_version).get(kind)
        if not found:
            return None
        plural, namespaced = found
        prefix = "/api/v1" if group_version == "v1" else "/apis/%s" % group_version
        if namespaced:
            return "%s/namespaces/%s/%s" % (prefix, namespace or "default", plural)
        return "%s/%s" % (prefix, plural)

    def namespaced(self, group_version, kind):
        return self.resources(group_version).get(kind, (None, False))[1]


def served_api_versions(server):
    """Every group/version the API server serves ("v1", "apps/v1", "monitoring.coreos.com/v1", ...), sorted:
    the keys of kubernetes.core.k8s_cluster_info's ``apis``, from two requests (/api and /apis)."""
    out = set("%s" % v for v in (server.get("/api") or {}).get("versions") or [])
    for group in (server.get("/apis") or {}).get("groups") or []:
        out.update(v.get("groupVersion") for v in group.get("versions") or [] if v.get("groupVersion"))
    return sorted(out)


def list_objects(server, api_version, kind, label_selectors=None, namespace=None):
    """The live objects of a kind (all namespaces unless ``namespace``), each with its apiVersion and kind;
    [] when the server does not serve the kind (e.g. its CRD is not installed), as kubernetes.core.k8s_info
    answers then."""
    found = server.resources(api_version).get(kind)
    if not found:
        return []
    plural, namespaced = found
    prefix = "/api/v1" if api_version == "v1" else "/apis/%s" % api_version
    path = "%s/namespaces/%s/%s" % (prefix, namespace, plural) if namespaced and namespace else \
        "%s/%s" % (prefix, plural)
    query = {"labelSelector": ",".join(label_selectors)} if label_selectors else None
    items = (server.get(path, query) or {}).get("items") or []
    return [dict(item, apiVersion=api_version, kind=kind) for item in items]
