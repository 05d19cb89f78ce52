#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_labels
short_description: Set the labels and taints gpufleet owns on existing Nodes, keeping everyone else's
version_added: "0.1.0"
description:
  - Reads every Node once (one list request), then writes each Node that must change with a JSON merge
    patch that carries the C(resourceVersion) it read (the API server refuses it with 409 if the Node
    changed in between; the module reads that Node again and recomputes, up to five times). The
    patches go O(workers) at a time; when a Node cannot be written the others still are, and the
    error names each Node that failed.
  - Labels and taints not owned by gpufleet (kubelet, kube-controller-manager's cordon and NotReady
    taints, C(kubectl taint) by anyone) are kept; the taint list is rewritten with them in place.
  - What gpufleet owns is recorded on each Node in the annotation C(gpufleet.io/owned); only that is
    ever removed (a pool's changed labels or taints, a host dropped from the inventory with
    O(prune), everything with an empty O(nodes) list). Nodes labelled by older gpufleet versions
    with server-side apply are recognised from C(metadata.managedFields) (manager C(gpufleet)).
  - Never creates or deletes a Node. A Node in O(nodes) that does not exist fails the module, naming
    the host, before anything is written; so does a label or taint another party set to a
    different value (unless O(force_conflicts)).
author:
  - gpufleet maintainers (@gpufleet)
options:
  nodes:
    description:
      - Every Node gpufleet manages, with the labels and taints it wants there. Omitted together with
        O(nodes_json), no Node is wanted (everything gpufleet owns is removed, with O(prune)).
      - Mutually exclusive with O(nodes_json).
    type: list
    elements: dict
    suboptions:
      name:
        description: The Node name.
        type: str
        required: true
      host:
        description: The inventory host, for messages.
        type: str
      labels:
        description: Labels gpufleet sets.
        type: dict
        default: {}
      taints:
        description: Taints gpufleet sets (C(key), C(value), C(effect)).
        type: list
        elements: dict
        default: []
  nodes_json:
    description:
      - The same list as O(nodes), as one JSON text (filter C(gpufleet.k8s.objects_json)), checked against
        the same suboptions. Ansible walks and copies every element of a list argument, which costs
        seconds for a thousand Nodes; a text is passed as it is.
      - Mutually exclusive with O(nodes).
    type: raw
  prune:
    description: Remove what gpufleet owns from every Node not in O(nodes).
    type: bool
    default: true
  force_conflicts:
    description: Overwrite labels and taints someone else set to another value instead of failing.
    type: bool
    default: false
  workers:
    description: How many Node patches are in flight at once (1 writes one Node after the other).
    type: int
    default: 8
extends_documentation_fragment:
  - gpufleet.k8s.attributes
  - gpufleet.k8s.k8s_connection
attributes:
  check_mode:
    details: Reads the Nodes and reports what would change; writes nothing.
  diff_mode:
    details: One diff per changed Node (labels, taints and the ownership record, before and after).
requirements:
  - kubernetes (Python client)
notes:
  - On the controller (a task on C(localhost) with the local connection) the module runs inside
    Ansible's worker process, without starting a module interpreter.
  - Uses kubernetes.core's client setup, so the same connection options (and C(K8S_AUTH_*)
    environment variables) reach the same cluster as every kubernetes.core task.
"""

EXAMPLES = r"""
- name: Label and taint the GPU pools' Nodes
  gpufleet.k8s.node_labels:
    nodes:
      - name: gpu-a1
        host: gpu-a1.example.com
        labels: {gpufleet.io/pool: train}
        taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]

- name: Remove everything gpufleet set on any Node
  gpufleet.k8s.node_labels:
    nodes: []
"""

RETURN = r"""
nodes:
  description: One entry per Node gpufleet owns something on, or wants to.
  returned: always
  type: list
  elements: dict
  contains:
    name: {description: Node name, type: str}
    host: {description: Inventory host (null for Nodes no longer in the inventory), type: str}
    changed: {description: Whether this Node was (or in check mode would be) written, type: bool}
    after: {description: "Labels, taints and ownership record after the change", type: dict}
notes:
  description:
    - Labels gpufleet no longer claims because someone else changed them, and labels and taints that were on a
      Node as a pool wants them before gpufleet wrote them - they stay their setter's (not recorded in
      C(gpufleet.io/owned), never removed by gpufleet). Each is also a warning.
  returned: always
  type: list
  elements: str
"""

import json

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.cluster_access import connection_args
from ansible_collections.gpufleet.k8s.plugins.module_utils.kube import redact
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.node_ownership import (
    FIELD_MANAGER, Conflict, converge, plan_diff)


def _api_client(params):
    """The kubernetes ApiClient of the connection options (None without the client). Imported here: the
    controller loads this module for every run, render mode included."""
    try:
        import kubernetes  # noqa: F401 pylint: disable=unused-import
        from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    except ImportError:
        return None
    return get_api_client(**connection_args(params)).client.client


class NodeApi:
    """list/get/patch Nodes through the kubernetes client, as plain dicts (safe to call from several threads:
    the client's connection pool is)."""

    def __init__(self, api_client):
        import kubernetes
        self.core = kubernetes.client.CoreV1Api(api_client)
        self.api_exception = kubernetes.client.exceptions.ApiException

    def list_nodes(self):
        return json.loads(self.core.list_node(_preload_content=False).data).get("items") or []

    def get_node(self, name):
        return json.loads(self.core.read_node(name, _preload_content=False).data)

    def patch_node(self, name, patch):
        try:
            self.core.patch_node(name, patch, field_manager=FIELD_MANAGER,
                                 _content_type="application/merge-patch+json", _preload_content=False)
        except self.api_exception as exc:
            if exc.status == 409:
                raise Conflict(name)
            raise


def _nodes_spec():
    return dict(type="list", elements="dict", options=dict(
        name=dict(type="str", required=True), host=dict(type="str"),
        labels=dict(type="dict", default={}), taints=dict(type="list", elements="dict", default=[])))


def argspec():
    spec = dict(
        nodes=_nodes_spec(),
        nodes_json=dict(type="raw"),
        prune=dict(type="bool", default=True),
        force_conflicts=dict(type="bool", default=False),
        workers=dict(type="int", default=8),
    )
    spec.update(connection_args(None))
    return spec


def wanted_nodes(params):
    """The ``nodes`` list, from ``nodes`` or ``nodes_json`` (checked against the same suboptions); GpufleetError
    naming the option otherwise."""
    if params.get("nodes") is not None and params.get("nodes_json") is not None:
        raise GpufleetError("node_labels takes one of nodes and nodes_json, got both")
    if params.get("nodes_json") is None:
        return params.get("nodes") or []
    value = params["nodes_json"]
    if not isinstance(value, (list, tuple)):  # ansible-core 2.18 may hand over the list itself
        try:
            value = json.loads(value)
        except (TypeError, ValueError) as exc:
            raise GpufleetError("nodes_json is not JSON: %s" % exc)
    if not isinstance(value, list):
        raise GpufleetError("nodes_json must hold a list of Nodes (mappings), got %s" % type(value).__name__)
    checked = ArgumentSpecValidator({"nodes": _nodes_spec()}).validate({"nodes": value})
    if checked.error_messages:
        raise GpufleetError("nodes_json: %s" % "; ".join(checked.error_messages))
    return checked.validated_parameters["nodes"]


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action plugin)."""
    p = module.params
    if p["workers"] < 1:
        module.fail_json(msg="workers: must be 1 or more, got %s" % p["workers"])
    try:
        nodes = wanted_nodes(p)
    except GpufleetError as exc:
        module.fail_json(msg=exc.msg)
    try:
        client = _api_client(p)
    except Exception as exc:  # the client's own errors (kubeconfig, connection): nothing was read or written
        module.fail_json(msg="gpufleet could not read or write Nodes: %s" % redact.scrub(exc, connection_args(p)))
    if client is None:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    try:
        plans = converge(NodeApi(client), nodes, prune=p["prune"], force=p["force_conflicts"],
                         check_mode=module.check_mode, workers=p["workers"])
    except GpufleetError as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    except Exception as exc:  # the client's own errors (connection, auth, API status)
        module.fail_json(msg="gpufleet could not read or write Nodes: %s" % redact.scrub(exc, connection_args(p)))
    changed = [pl for pl in plans if pl["changed"]]
    result = dict(
        changed=bool(changed),
        nodes=[{"name": pl["name"], "host": pl.get("host"), "changed": pl["changed"], "after": pl["after"]}
               for pl in plans],
        notes=[n for pl in plans for n in pl["notes"]],
    )
    if module._diff and changed:
        result["diff"] = [plan_diff(pl) for pl in changed]
    for note in result["notes"]:
        module.warn(note)
    module.exit_json(**result)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
