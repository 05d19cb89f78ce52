# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""``objects | gpufleet.k8s.objects_json``: a list of Kubernetes objects as one JSON text, for
gpufleet.k8s.render_manifests' ``objects_json``.

Ansible 2.19 finalizes every task argument that is a list or a mapping: it walks and re-creates
each node, at tens of microseconds a node. Hundreds of rendered objects (the Karpenter classes and
node pools of 200 pools are about 40,000 nodes) then cost more in that walk than in the render
itself; a string argument is passed as it is."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import plain


def gpufleet_objects_json(objects):
    """``objects`` (a list of mappings) -> compact JSON text that decodes to the same list."""
    value = plain(objects)
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise AnsibleFilterError("objects_json: the input must be a list of Kubernetes objects (mappings), got %s"
                                 % type(value).__name__)
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("objects_json: an object holds a value JSON cannot carry: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"objects_json": gpufleet_objects_json}
