# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The one exception type gpufleet's modules map to ``fail_json``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class GpufleetError(Exception):
    """An error a user can act on: the message names the variable and what is allowed."""

    def __init__(self, msg, **details):
        super(GpufleetError, self).__init__(msg)
        self.msg = msg
        self.details = details


class Problems:
    """Collects errors and warnings so that preflight reports all of them at once."""

    def __init__(self):
        self.errors = []
        self.warnings = []

    def error(self, var, msg):
        self.errors.append("%s: %s" % (var, msg))

    def warn(self, var, msg):
        self.warnings.append("%s: %s" % (var, msg))

    def extend(self, other):
        self.errors.extend(other.errors)
        self.warnings.extend(other.warnings)

    def __bool__(self):
        return bool(self.errors)

    __nonzero__ = __bool__


def one_of(values):
    """Render allowed values for a message: ``one of: a, b, c``."""
    return "one of: " + ", ".join(str(v) for v in values)


def kind_of(value):
    """How a message names the type of ``value`` (never a Python class name)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return "a %s value" % type(value).__name__
