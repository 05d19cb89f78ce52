# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Ansible's default screen output, with a refused role input shown as the problem alone."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: default
type: stdout
short_description: Ansible's default output, with refused role inputs shown in a few lines
version_added: 0.5.0
description:
  - Prints everything as ansible.builtin.default does (same options), except the failure of a role's
    argument-spec check (ansible.builtin.validate_argument_spec).
  - Ansible prints such a failure with the role's whole argument spec, several hundred lines for the gpufleet
    role, and the one useful line near the top. At verbosity below 3 this callback prints only the message
    (each refused variable, the problem with its value and the allowed values) and the argument errors; with
    C(-vvv) the whole result is printed as before.
  - gpufleet's ansible.cfg sets it as C(stdout_callback); AWX and Automation Controller use their own.
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as stdout in configuration
"""

from ansible.plugins.callback.default import CallbackModule as DefaultCallback

ARG_SPEC_ACTIONS = ("validate_argument_spec", "ansible.builtin.validate_argument_spec",
                    "ansible.legacy.validate_argument_spec")
# what a refused input's result keeps at verbosity below 3
KEPT = ("msg", "argument_errors", "changed", "failed")


def _result_dict(result):
    """The result mapping of a callback's task result (``result.result`` from ansible-core 2.19, ``_result`` before)."""
    value = getattr(result, "result", None)
    return value if isinstance(value, dict) else getattr(result, "_result", {})


def trim_argument_spec_failure(res):
    """Drop, in place, what a failed argument-spec check adds beside its message: the whole spec
    (argument_spec_data), the validation context and the exception with the task's arguments."""
    for key in list(res):
        if key not in KEPT and not key.startswith("_ansible"):
            del res[key]
    return res


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "gpufleet.k8s.default"

    def v2_runner_on_failed(self, result, ignore_errors=False):
        task = getattr(result, "task", None) or getattr(result, "_task", None)
        if self._display.verbosity < 3 and getattr(task, "action", None) in ARG_SPEC_ACTIONS:
            trim_argument_spec_failure(_result_dict(result))
        super(CallbackModule, self).v2_runner_on_failed(result, ignore_errors=ignore_errors)
