# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Connection options of gpufleet's Kubernetes modules (group gpufleet.k8s.k8s), documented once;
the matching argument spec is module_utils.kube.cluster_access.CONNECTION_ARG_SPEC."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig (as in kubernetes.core). The stage playbooks set it from C(gpufleet_k8s_kubeconfig).
    type: raw
  context:
    description: Kubeconfig context (C(gpufleet_k8s_context)).
    type: str
  host:
    description: API server URL (C(gpufleet_k8s_host)).
    type: str
  api_key:
    description: Bearer token (C(gpufleet_k8s_api_key)).
    type: str
  validate_certs:
    description: Verify the API server's certificate.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description: CA bundle of the API server (C(gpufleet_k8s_ca_cert)).
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
"""
