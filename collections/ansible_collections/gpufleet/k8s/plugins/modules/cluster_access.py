#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: cluster_access
short_description: Reach the Kubernetes cluster once, or fail saying what to change
version_added: "0.1.0"
description:
  - Builds the API client exactly as kubernetes.core does (same options, same C(K8S_AUTH_*)
    environment variables) and asks the API server for its version.
  - On failure the message names the target (API server or kubeconfig and context), the cause
    (no kubeconfig, connection refused, name not resolved, untrusted certificate, 401, 403...),
    the C(gpufleet_k8s_*) variables to set, and that nothing was applied; the client's raw error
    comes last.
  - With O(find) and O(api_versions) it also makes the stage's first reads with the same client, in the
    same task (what a C(kubernetes.core.k8s_info) or C(kubernetes.core.k8s_cluster_info) task did in its own
    module interpreter).
  - Read-only.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.k8s.attributes.no_diff
  - gpufleet.k8s.k8s_connection
options:
  kubeconfig:
    description:
      - Path to a kubeconfig (C(~) is expanded); named in the failure message, so not hidden.
        The stage playbooks set it from C(gpufleet_k8s_kubeconfig).
    type: path
  find:
    description:
      - Objects to list, by a name of your choosing; each value has C(api_version), C(kind) and optionally
        C(label_selectors) (a list of selectors, all must match) and C(namespace) (default all namespaces).
      - A kind the cluster does not serve (its CRD is not installed) gives an empty list.
    type: dict
    default: {}
  api_versions:
    description: Also return every group/version the API server serves, as RV(apis).
    type: bool
    default: false
requirements:
  - kubernetes (Python client)
"""

EXAMPLES = r"""
- name: Reach the cluster before anything is applied
  gpufleet.k8s.cluster_access:
    kubeconfig: ~/.kube/config
"""

RETURN = r"""
version:
  description: The API server's version (C(/version)).
  returned: success
  type: dict
  sample: {major: "1", minor: "30", gitVersion: v1.30.4}
found:
  description: For each name in O(find), the objects listed (each with C(apiVersion) and C(kind)).
  returned: success
  type: dict
  sample: {policies: []}
apis:
  description: Every group/version the API server serves (with O(api_versions)).
  returned: success, with O(api_versions)
  type: list
  elements: str
  sample: [v1, apps/v1, monitoring.coreos.com/v1]
"""

import json

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.api_server import (
    ApiError, Lost, Server, list_objects, served_api_versions)
from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.cluster_access import access_problem, connection_args

FIND_KEYS = ("api_version", "kind", "label_selectors", "namespace")


def argspec():
    spec = connection_args(None)
    spec["kubeconfig"] = dict(type="path")  # a path, named in the message (so not no_log here)
    spec["find"] = dict(type="dict", default={})
    spec["api_versions"] = dict(type="bool", default=False)
    return spec


def find_problems(find):
    """What is wrong with the ``find`` option, one message per entry (before anything is asked)."""
    problems = []
    for name, query in sorted((find or {}).items()):
        if not isinstance(query, dict):
            problems.append("find.%s: must be a mapping with api_version and kind, got %r" % (name, query))
            continue
        unknown = sorted(set(query) - set(FIND_KEYS))
        if unknown:
            problems.append("find.%s: unknown key(s) %s; allowed: %s" % (name, ", ".join(unknown), ", ".join(FIND_KEYS)))
        for key in ("api_version", "kind"):
            if not isinstance(query.get(key), str) or not query.get(key):
                problems.append("find.%s.%s: required, a non-empty string" % (name, key))
        selectors = query.get("label_selectors")
        if selectors is not None and (not isinstance(selectors, list) or not all(isinstance(x, str) for x in selectors)):
            problems.append("find.%s.label_selectors: must be a list of strings, got %r" % (name, selectors))
    return problems


def reads(api_client, params):
    """The ``find`` lists and (with ``api_versions``) the served group/versions, on one client."""
    server = Server(api_client, timeout=30)
    out = {"found": {}}
    for name, query in sorted(params["find"].items()):
        out["found"][name] = list_objects(server, query["api_version"], query["kind"],
                                          query.get("label_selectors"), query.get("namespace"))
    if params["api_versions"]:
        out["apis"] = served_api_versions(server)
    return out


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action plugin when
    the task runs on the controller). The client is imported here, not with the file: the controller loads
    this file in render mode too (plugins/callback/preload_filters.py imports it before an apply-mode run
    reaches this task, so the worker finds it loaded)."""
    conn = connection_args(module.params)
    problems = find_problems(module.params["find"])
    if problems:
        module.fail_json(msg="gpufleet.k8s.cluster_access: %s. Nothing was read." % "; ".join(problems))
    try:
        import kubernetes
        from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    except ImportError as exc:
        module.fail_json(msg=access_problem("Failed to import the required Python library (kubernetes): %s"
                                            % exc, conn))
    try:
        client = get_api_client(**conn)
        response = kubernetes.client.VersionApi(client.client.client).get_code(_request_timeout=30, _preload_content=False)
        version = json.loads(response.data)
    except Exception as exc:  # every client error becomes the one clear message
        module.fail_json(msg=access_problem(getattr(exc, "msg", None) or str(exc), conn))
    try:
        found = reads(client.client.client, module.params)
    except (ApiError, Lost) as exc:
        module.fail_json(msg="gpufleet.k8s.cluster_access: the cluster answered the version request but not a read "
                         "(%s); nothing was applied" % (exc.message if isinstance(exc, ApiError) else exc))
    module.exit_json(changed=False, version={"major": version.get("major"), "minor": version.get("minor"),
                                             "gitVersion": version.get("gitVersion")}, **found)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
