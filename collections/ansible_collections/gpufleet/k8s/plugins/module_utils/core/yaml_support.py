# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""PyYAML for the module_utils that write or read YAML.

ansible-core's controller always has PyYAML, but a module may run where it is missing (a managed
host's Python): importing still works, and the module says what to install (``require_yaml``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

try:
    import yaml
except ImportError:
    yaml = None
    YAML_IMPORT_ERROR = traceback.format_exc()
else:
    YAML_IMPORT_ERROR = None

HAS_YAML = yaml is not None


def safe_load(stream):
    """``yaml.safe_load`` with libyaml's C loader when PyYAML was built with it (same result, about
    ten times faster: the role argument specs are read by every render)."""
    return yaml.load(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def require_yaml(module):
    """Fail the module with ansible's usual missing-library message when PyYAML is absent."""
    if not HAS_YAML:
        from ansible.module_utils.basic import missing_required_lib
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)
