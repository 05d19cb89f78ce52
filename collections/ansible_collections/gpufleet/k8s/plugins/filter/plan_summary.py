# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""``gpufleet_plan | gpufleet.k8s.plan_summary(files)``: the text of plan.md (module_utils/fleet/plan_summary.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import plain
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.plan_summary import plan_markdown


def gpufleet_plan_summary(plan, files):
    plan, files = plain(plan), plain(files)
    if not isinstance(plan, dict) or not isinstance(files, list):
        raise AnsibleFilterError("plan_summary: the input must be gpufleet_plan and the argument the list of rendered "
                                 "files, got %s and %s" % (type(plan).__name__, type(files).__name__))
    try:
        return plan_markdown(plan, files)
    except (KeyError, TypeError, AttributeError) as exc:
        raise AnsibleFilterError("plan_summary: gpufleet_plan lacks %s; run the preflight stage (the gpufleet role) "
                                 "first" % exc)


class FilterModule(object):
    def filters(self):
        return {"plan_summary": gpufleet_plan_summary}
