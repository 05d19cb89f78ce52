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
"""

import json

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.cluster_access import access_problem, connection_args


def argspec():
    spec = connection_args(None)
    spec["kubeconfig"] = dict(type="path")  # a path, named in the message (so not no_log here)
    return spec


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action plugin when
    the task runs on the controller). The client is imported here, not with the file: the controller loads
    this file in render mode too (plugins/callback/preload_filters.py imports it before an apply-mode run
    reaches this task, so the worker finds it loaded)."""
    conn = connection_args(module.params)
    shown = {k: v for k, v in conn.items() if k in ("kubeconfig", "context", "host")}
    try:
        import kubernetes
        from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    except ImportError as exc:
        module.fail_json(msg=access_problem("Failed to import the required Python library (kubernetes): %s"
                                            % exc, shown))
    try:
        client = get_api_client(**conn)
        response = kubernetes.client.VersionApi(client.client.client).get_code(_request_timeout=30, _preload_content=False)
        version = json.loads(response.data)
    except Exception as exc:  # every client error becomes the one clear message
        module.fail_json(msg=access_problem(getattr(exc, "msg", None) or str(exc), shown))
    module.exit_json(changed=False, version={"major": version.get("major"), "minor": version.get("minor"),
                                             "gitVersion": version.get("gitVersion")})


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
