# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The check_mode and diff_mode attributes of gpufleet's modules, documented once (both supported in
full). A module states only what differs, under its own ``attributes:`` (merged key by key with the
fragment, the module's keys winning): ``details:``, or ``support: none`` for a module without diff."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
"""

