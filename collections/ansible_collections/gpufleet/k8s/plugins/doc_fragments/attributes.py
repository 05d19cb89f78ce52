# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The check_mode and diff_mode attributes of gpufleet's modules, documented once: full check mode,
and full diff mode (gpufleet.k8s.attributes) or none (gpufleet.k8s.attributes.no_diff). A module adds
what is its own under its ``attributes:`` (merged key by key with the fragment), e.g. ``details:``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # plain string constants: ansible-test's yamllint reads these assignments without running them
    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
"""

    NO_DIFF = r"""
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""
