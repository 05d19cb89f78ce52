# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: inputs
short_description: The gpufleet inputs that are set, as one dictionary
version_added: "0.2.0"
description:
  - Collects every variable named with the public-input prefix of the given roles (C(<role>_),
    C(gpufleet_) for the gpufleet role and the project-wide inputs) into one dictionary, the shape
    preflight and the filters check and render from.
  - The prefixes come from the roles' C(meta/argument_specs.yml), so the roles, the playbooks and
    preflight sweep the same inputs.
  - Options declared C(no_log) there (C(gpufleet_k8s_api_key), the Prometheus passwords and bearer tokens) are
    left out - the dictionary reaches module arguments and facts, which are printed at C(-vvv); the tasks that
    need a secret read its own variable.
author:
  - gpufleet maintainers (@gpufleet)
options:
  _terms:
    description:
      - Role names whose inputs to collect. None collects the inputs of every role (all the prefixes).
    type: list
    elements: str
    required: false
  defaults:
    description:
      - Also fill in the argument-spec default of every option of those roles that is not set
        (for a play that needs roles' defaults without running the roles).
    type: bool
    default: false
  set_secrets:
    description:
      - Return instead the sorted names of those roles' secret options (declared C(no_log)) that are set to a
        non-empty value - never a value - for preflight's checks of which credentials are given.
    type: bool
    default: false
    version_added: "0.4.0"
"""

EXAMPLES = r"""
- name: Check every input of the cluster stage
  ansible.builtin.debug:
    msg: "{{ lookup('gpufleet.k8s.inputs', 'gpufleet', 'dcgm_exporter') }}"

- name: Which Prometheus passwords and bearer tokens are set (names only)
  ansible.builtin.debug:
    msg: "{{ lookup('gpufleet.k8s.inputs', 'fleet_report', 'gpu_remediation', set_secrets=true) }}"

- name: The node roles' inputs with their defaults, for the mirror manifest
  ansible.builtin.set_fact:
    __mirror_values: "{{ lookup('gpufleet.k8s.inputs', 'nvidia_driver', 'gpu_node_prep', defaults=true) }}"
"""

RETURN = r"""
_raw:
  description:
    - "One dictionary, variable name: value, of the set variables with those prefixes (with
      I(defaults), the unset options' defaults too); with I(set_secrets), the list of the secret options
      that are set, by name."
  type: list
  elements: raw
"""

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.plain import template_free_copy


def select(names, roles=None):
    """The names among ``names`` that are inputs of ``roles`` (every input role when empty)."""
    prefixes = tuple(role + "_" for role in roles) if roles else role_specs.prefixes()
    return sorted(name for name in names if isinstance(name, str) and name.startswith(prefixes))


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        roles = [str(term) for term in terms or []]
        try:
            known = role_specs.roles()
            unknown = [role for role in roles if role not in known]
            if unknown:
                raise GpufleetError("gpufleet.k8s.inputs: unknown role(s) %s; use role names: %s"
                                    % (", ".join(unknown), ", ".join(known)))
            values = {}
            if self.get_option("defaults"):
                values.update(role_specs.defaults(*roles))
        except GpufleetError as exc:
            raise AnsibleError(str(exc))
        variables = variables or {}
        secret = set(role_specs.secret_inputs())
        if self.get_option("set_secrets"):
            given = select([name for name in variables if name in secret], roles)
            values = self._templar.template([variables[name] for name in given]) if given else []
            return [[name for name, value in zip(given, values) if value not in (None, "", [], {})]]
        for name in secret:
            values.pop(name, None)
        names = [name for name in select(variables.keys(), roles) if name not in secret]
        # A value with no "{" in any of its strings renders to itself: copy it instead of templating
        # it (templating 200 pools in every task that reads the inputs cost 0.2 s a time).
        templated = []
        for name in names:
            free, copy = template_free_copy(variables[name])
            if free:
                values[name] = copy
            else:
                templated.append(name)
        if templated:
            values.update(zip(templated, self._templar.template([variables[name] for name in templated])))
        return [values]
