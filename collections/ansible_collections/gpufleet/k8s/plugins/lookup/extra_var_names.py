# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: extra_var_names
short_description: The names of the variables given as extra vars (C(-e)) to this run
version_added: "0.5.0"
description:
  - Returns the sorted names of the variables this run was given with C(-e)/C(--extra-vars) (inline,
    JSON/YAML or C(@file), and AWX's extra variables, which reach C(ansible-playbook) the same way), never their
    values.
  - An extra var wins over every other variable, C(set_fact) included, so a play cannot tell from a value alone
    whether the run set it. The gpufleet role uses this to refuse C(gpufleet_plan) given from outside, which
    would otherwise skip preflight.
  - With names given as terms, returns only those of them that were given as extra vars.
author:
  - gpufleet maintainers (@gpufleet)
options:
  _terms:
    description:
      - Variable names to look for. None returns every extra var's name.
    type: list
    elements: str
    required: false
"""

EXAMPLES = r"""
- name: Refuse a plan handed in from outside
  ansible.builtin.assert:
    that: lookup('gpufleet.k8s.extra_var_names', 'gpufleet_plan', wantlist=true) | length == 0
    fail_msg: gpufleet_plan is published by the gpufleet role; it cannot be given as an extra var
"""

RETURN = r"""
_raw:
  description:
    - The names, sorted.
  type: list
  elements: str
"""

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase
from ansible.utils.vars import load_extra_vars


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        try:
            given = load_extra_vars(self._loader)
        except Exception as exc:  # pylint: disable=broad-except
            raise AnsibleError("gpufleet.k8s.extra_var_names: cannot read this run's extra vars: %s" % exc)
        names = sorted(str(name) for name in given)
        wanted = [str(term) for term in terms or []]
        return [name for name in names if name in wanted] if wanted else names
