# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Filters of namespace ownership (module_utils/model/namespace_ownership.py): which namespaces gpufleet may
label, relax and delete."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.model.namespace_ownership import transient_problem
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import plain


def namespace_transient_problem(resources, variable, component):
    """``k8s_info`` resources of one Namespace (empty: it does not exist) -> why a stage that creates and
    deletes that namespace may not use it, or ''."""
    found = plain(resources) or []
    return transient_problem(variable, found[0] if found else None, component)


class FilterModule(object):
    def filters(self):
        return {"namespace_transient_problem": namespace_transient_problem}
