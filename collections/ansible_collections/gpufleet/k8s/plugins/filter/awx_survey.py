# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Filters for AWX surveys (module_utils/fleet/awx_survey.py): typed answers, node stage batches."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.awx_survey import parse_answers, serial_batches
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError


def awx_survey_answers(answers):
    """{survey variable: answer} -> {"variables": {real variable: typed value}, "errors": [...]}."""
    variables, errors = parse_answers(dict(answers or {}))
    return {"variables": variables, "errors": errors}


def node_batches(value, variable="gpufleet_nodes_serial"):
    """The node stage's ``serial`` list (first batch the canary) from a list, number or "1,25%" text."""
    try:
        return serial_batches(value, variable)
    except GpufleetError as exc:
        raise AnsibleFilterError(exc.msg)


class FilterModule(object):
    def filters(self):
        return {"awx_survey_answers": awx_survey_answers, "node_batches": node_batches}
