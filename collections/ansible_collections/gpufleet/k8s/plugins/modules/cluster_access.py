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
  - gpufleet maintainers
options:
  kubeconfig:
    description: Path to a kubeconfig (named in the failure message; an inline kubeconfig is not accepted here).
    type: path
  context:
    description: Kubeconfig context.
    type: str
  host:
    description: API server URL.
    type: str
  api_key:
    description: Bearer token.
    type: str
  validate_certs:
    description: Verify the API server's certificate.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description: CA bundle of the API server.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description: Client certificate.
    type: path
    aliases: [cert_file]
  client_key:
    description: Client key.
    type: path
    aliases: [key_file]
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
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

from ansible_collections.gpufleet.k8s.plugins.module_utils.cluster_access import access_problem

try:
    import kubernetes
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    IMPORT_ERROR = None
except ImportError as exc:
    IMPORT_ERROR = exc

AUTH_KEYS = ("kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert", "client_key")


def argspec():
    return dict(
        kubeconfig=dict(type="path"),  # a path (named in the message), not an inline kubeconfig
        context=dict(type="str"),
        host=dict(type="str"),
        api_key=dict(type="str", no_log=True),
        validate_certs=dict(type="bool", aliases=["verify_ssl"]),
        ca_cert=dict(type="path", aliases=["ssl_ca_cert"]),
        client_cert=dict(type="path", aliases=["cert_file"]),
        client_key=dict(type="path", aliases=["key_file"]),
    )


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    conn = {k: module.params[k] for k in AUTH_KEYS if module.params.get(k) is not None}
    shown = {k: v for k, v in conn.items() if k in ("kubeconfig", "context", "host")}
    if IMPORT_ERROR is not None:
        module.fail_json(msg=access_problem("Failed to import the required Python library (kubernetes): %s"
                                            % IMPORT_ERROR, shown))
    try:
        client = get_api_client(**conn)
        response = kubernetes.client.VersionApi(client.client.client).get_code(_request_timeout=30, _preload_content=False)
        version = json.loads(response.data)
    except Exception as exc:  # every client error becomes the one clear message
        module.fail_json(msg=access_problem(getattr(exc, "msg", None) or str(exc), shown))
    module.exit_json(changed=False, version={"major": version.get("major"), "minor": version.get("minor"),
                                             "gitVersion": version.get("gitVersion")})


if __name__ == "__main__":
    main()
