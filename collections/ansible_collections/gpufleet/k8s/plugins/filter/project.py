# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The project directory gpufleet's output paths are relative to (module_utils/core/output_tree.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.output_tree import project_dir


def gpufleet_project_dir(playbook_dir):
    """``playbook_dir | project_dir`` -> the project directory (an absolute path)."""
    if not isinstance(playbook_dir, str) or not playbook_dir:
        raise AnsibleFilterError("project_dir: the input must be the playbook directory (playbook_dir), got %r"
                                 % (playbook_dir,))
    return project_dir(playbook_dir, os.getcwd())


class FilterModule(object):
    def filters(self):
        return {"project_dir": gpufleet_project_dir}
