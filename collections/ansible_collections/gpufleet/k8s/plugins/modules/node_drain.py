#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_drain
short_description: Drain a Node as kubectl drain does, through the Eviction API
version_added: "0.2.0"
description:
  - Evicts the pods that must leave a (cordoned) Node, with the rules and order of C(kubectl drain
    --ignore-daemonsets) - DaemonSet pods are left alone before any local-storage rule, so add-ons that
    mount an emptyDir (the NVIDIA device plugin, GPU feature discovery) never block a drain.
  - Pods with emptyDir data and pods without a controller block the drain unless O(delete_emptydir_data)
    or O(force); the error names each such pod. Nothing is evicted when any pod blocks.
  - Evictions go through the Eviction API, so PodDisruptionBudgets are honoured. A refusal (HTTP 429) is
    retried until O(timeout), as kubectl retries it; when time runs out the error names each budget that
    still blocks and the pods it protects.
  - Waits until the evicted pods are gone.
  - Does not cordon; use M(kubernetes.core.k8s_drain) with C(state=cordon) first.
author:
  - gpufleet maintainers (@gpufleet)
options:
  name:
    description: Name of the Node.
    type: str
    required: true
  ignore_daemonsets:
    description: Leave DaemonSet pods on the node (their controller would recreate them at once).
    type: bool
    default: true
  delete_emptydir_data:
    description: Evict pods whose emptyDir volumes hold data (the data is lost).
    type: bool
    default: false
  force:
    description: Evict pods that no controller recreates.
    type: bool
    default: false
  grace_period:
    description: Seconds each pod gets to stop; default the pod's own.
    type: int
  pod_selectors:
    description: Only pods matching all these label selectors are drained.
    type: list
    elements: str
  timeout:
    description: Seconds for the whole drain, retries of refused evictions included.
    type: int
    default: 600
  poll:
    description: Seconds between retries of refused evictions.
    type: float
    default: 5
extends_documentation_fragment:
  - gpufleet.k8s.attributes.no_diff
  - gpufleet.k8s.k8s_connection
attributes:
  check_mode:
    details: Lists the pods that would be evicted or block the drain, and evicts nothing.
requirements:
  - kubernetes (Python client)
notes:
  - On the controller (a task on C(localhost) or delegated there, with the local connection and without
    C(become)) the module runs inside Ansible's worker process, without starting a module interpreter.
"""

EXAMPLES = r"""
- name: Cordon the node
  kubernetes.core.k8s_drain:
    name: gpu-node-1
    state: cordon

- name: Drain it, waiting up to 10 minutes for PodDisruptionBudgets
  gpufleet.k8s.node_drain:
    name: gpu-node-1
    timeout: 600
"""

RETURN = r"""
evicted:
  description: Pods evicted (namespace/name), or that would be in check mode.
  returned: always
  type: list
  elements: str
left_alone:
  description: Pods left on the node, with why (C(DaemonSet), C(mirror pod)).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.cluster_access import connection_args
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.drain import DrainError, drain
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.drain_client import DrainApi

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    HAS_K8S = True
except ImportError:
    HAS_K8S = False


def argspec():
    spec = dict(
        name=dict(type="str", required=True),
        ignore_daemonsets=dict(type="bool", default=True),
        delete_emptydir_data=dict(type="bool", default=False),
        force=dict(type="bool", default=False),
        grace_period=dict(type="int"),
        pod_selectors=dict(type="list", elements="str"),
        timeout=dict(type="int", default=600),
        poll=dict(type="float", default=5),
    )
    spec.update(connection_args(None))
    return spec


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the action plugin's in-process stand-in)."""
    if not HAS_K8S:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    p = module.params
    try:
        api = DrainApi(get_api_client(**connection_args(p)).client.client, p["pod_selectors"])
        result = drain(api, p["name"], ignore_daemonsets=p["ignore_daemonsets"],
                       delete_emptydir_data=p["delete_emptydir_data"], force=p["force"],
                       grace_period=p["grace_period"], timeout=p["timeout"], poll=p["poll"],
                       check_mode=module.check_mode)
    except DrainError as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # the client's own errors
        module.fail_json(msg="gpufleet could not drain node %s: %s" % (p["name"], exc))
    module.exit_json(**result)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
