#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: k8s_apply_tree
short_description: Server-side apply a whole tree of Kubernetes objects with one client, and prune what it dropped
version_added: "0.2.0"
description:
  - Applies one component's objects (for example C(cluster/device-plugin)) with server-side apply, field manager
    C(gpufleet), conflicts not forced, through one API client and one discovery.
  - Objects go in dependency order - CustomResourceDefinitions, then Namespaces, then everything else - and the
    objects of one level in parallel (O(workers) at a time). Objects of a kind whose CustomResourceDefinition is
    in the same tree are applied once it is Established.
  - C(changed) only when the server's object changed (its resourceVersion moved), not for every object sent.
  - When an object fails, every object is still tried, and the error says which objects were applied, which
    the API server refused with its own message (named Kind/namespace/name), and which were not applied because
    the cluster stopped answering (the message of the C(gpufleet.k8s.k8s_apply_problem) filter).
  - With O(prune), the objects are members of an ApplySet (the KEP-3659 convention kubectl uses) whose parent is
    the Secret C(gpufleet-<component>) in O(applyset_namespace). Members the render no longer names are deleted
    after a successful apply; objects without the set's C(applyset.kubernetes.io/part-of) label are never
    touched. The label is added at apply time only - rendered files do not carry it.
  - O(state=absent) deletes the objects in the reverse order, then the set's remaining members and its parent.
  - A Namespace is labelled or deleted only when gpufleet created it, as recorded in its annotation
    C(gpufleet.io/created-by) (set to O(component) when it is created here). Each Namespace among the objects is
    read first; one that exists without the annotation is neither applied nor deleted - only the other objects
    are - and the result's warnings say so, naming the labels the objects there need (module_utils
    namespace_ownership.py). Deleting a Namespace gpufleet created is said in the warnings too.
author:
  - gpufleet maintainers (@gpufleet)
options:
  component:
    description: The component the objects belong to (names the ApplySet parent and appears in messages).
    type: str
    required: true
  objects:
    description:
      - The objects, each a complete Kubernetes object.
      - Exactly one of O(objects) and O(objects_json) is required.
    type: list
    elements: dict
  objects_json:
    description:
      - The same list as one JSON text (the C(gpufleet.k8s.objects_json) filter makes it); Ansible copies every
        node of a list argument, a string as it is. ansible-core 2.18 may hand the decoded list instead; it
        is accepted as well.
    type: raw
  state:
    description: C(present) applies, C(absent) deletes.
    type: str
    choices: [present, absent]
    default: present
  prune:
    description: Record the objects in the component's ApplySet and delete the members no longer rendered.
    type: bool
    default: true
  applyset_namespace:
    description: Namespace of the ApplySet parent Secrets (created when missing).
    type: str
    default: gpufleet-system
  workers:
    description: Objects of one level applied at the same time.
    type: int
    default: 8
  wait:
    description: Wait until the applied Deployments, DaemonSets and StatefulSets have rolled out.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait for the roll-out.
    type: int
    default: 300
extends_documentation_fragment:
  - gpufleet.k8s.attributes
  - gpufleet.k8s.k8s_connection
attributes:
  check_mode:
    details: >-
      Server-side dry-run (C(dryRun=All)) of every apply; changed when the server's answer differs from the live
      object (managedFields, resourceVersion, generation and timestamps aside). Lists what the prune would delete
      and deletes nothing.
  diff_mode:
    details: One diff per changed object, the live object against the server's (dry-run) answer; pruned objects
      against nothing.
requirements:
  - kubernetes (Python client)
"""

EXAMPLES = r"""
- name: Apply the device plugin's objects and prune what the inventory dropped
  gpufleet.k8s.k8s_apply_tree:
    component: cluster/device-plugin
    objects_json: "{{ objects | gpufleet.k8s.objects_json }}"

- name: Delete a component's objects
  gpufleet.k8s.k8s_apply_tree:
    component: cluster/dcgm-exporter
    state: absent
    objects: "{{ objects }}"
"""

RETURN = r"""
changed_objects:
  description: Objects the server changed (or would, in check mode), as Kind/namespace/name.
  returned: always
  type: list
  elements: str
pruned:
  description: Members of the ApplySet deleted (or that would be) because the render no longer names them.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.api_server import Server
from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.apply_run import run_tree
from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.cluster_access import apply_problem, connection_args
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import objects_from_json


def _api_client(params):
    """The kubernetes ApiClient of the connection options (None without the client). Imported here: the
    controller loads this module for every run, render mode included, and the client takes ~0.5 s to import."""
    try:
        import kubernetes  # noqa: F401 pylint: disable=unused-import
        from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    except ImportError:
        return None
    return get_api_client(**connection_args(params)).client.client


def argspec():
    spec = dict(
        component=dict(type="str", required=True),
        objects=dict(type="list", elements="dict"),
        objects_json=dict(type="raw"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        prune=dict(type="bool", default=True),
        applyset_namespace=dict(type="str", default="gpufleet-system"),
        workers=dict(type="int", default=8),
        wait=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=300),
    )
    spec.update(connection_args(None))
    return spec


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the in-process stand-in of the action plugin)."""
    p = module.params
    given = [n for n in ("objects", "objects_json") if p.get(n) is not None]
    if len(given) != 1:
        module.fail_json(msg="k8s_apply_tree needs exactly one of objects and objects_json, got %s"
                         % (" and ".join(given) or "neither"))
    try:
        objects = p["objects"] if given[0] == "objects" else objects_from_json(p["objects_json"])
    except GpufleetError as exc:
        module.fail_json(msg=str(exc))
    try:
        client = _api_client(p)
    except Exception as exc:  # the client's own errors: nothing was applied
        module.fail_json(msg=apply_problem([dict(item=o, msg=str(exc)) for o in objects], p["component"])
                         or "%s: %s" % (p["component"], exc))
    if client is None:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    result = run_tree(Server(client), p["component"], objects, state=p["state"], check_mode=module.check_mode,
                      diff=module._diff, prune=p["prune"], parent_namespace=p["applyset_namespace"],
                      workers=max(1, p["workers"]), wait=p["wait"], wait_timeout=p["wait_timeout"])
    if result.get("failed"):
        module.fail_json(**result)
    module.exit_json(**result)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
