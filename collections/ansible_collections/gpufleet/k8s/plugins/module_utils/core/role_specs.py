# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The roles' ``meta/argument_specs.yml``: the one source of every input's default and type.

Preflight and the filters run before (or outside) the roles whose defaults they need, so they read
the defaults here instead of keeping copies. The roles are looked for in this order:

1. ``$GPUFLEET_ROLES_DIR`` when set (a module run by Ansible executes from a temporary copy of this
   file, so the task that calls it sets this variable to the real roles directory);
2. ``<collection root>/roles`` (an installed collection carries the roles there);
3. ``roles/`` of the repository the collection lives in (``collections/ansible_collections/gpufleet/k8s``).

Every role's public inputs carry its name as prefix (``gpufleet_`` for the gpufleet role and the
project-wide inputs); ``prefixes()`` lists them, the one list the input sweeps use.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import safe_load
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError

ROLES_DIR_ENV = "GPUFLEET_ROLES_DIR"
# module_utils/core/role_specs.py -> the collection root, four levels up
_COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# Roles whose options are not inventory inputs (the AWX survey role takes survey answers).
NOT_INPUT_ROLES = ("gpufleet_survey",)

_CACHE = {}
_DIRS = {}


def candidate_dirs():
    dirs = []
    if os.environ.get(ROLES_DIR_ENV):
        dirs.append(os.environ[ROLES_DIR_ENV])
    dirs.append(os.path.join(_COLLECTION_ROOT, "roles"))
    repo = _COLLECTION_ROOT
    for _level in range(4):          # k8s -> gpufleet -> ansible_collections -> collections -> repository
        repo = os.path.dirname(repo)
    dirs.append(os.path.join(repo, "roles"))
    return dirs


def roles_dir():
    """The first candidate directory that holds role argument specs (looked up once per
    ``$GPUFLEET_ROLES_DIR`` value)."""
    key = os.environ.get(ROLES_DIR_ENV)
    if key in _DIRS:
        return _DIRS[key]
    for path in candidate_dirs():
        if os.path.isdir(path) and any(
                os.path.isfile(os.path.join(path, role, "meta", "argument_specs.yml")) for role in os.listdir(path)):
            _DIRS[key] = path
            return path
    raise GpufleetError("no roles with meta/argument_specs.yml found in %s; set %s to the roles directory"
                        % (", ".join(candidate_dirs()), ROLES_DIR_ENV))


def _load():
    path = roles_dir()
    if path not in _CACHE:
        specs = {}
        for role in sorted(os.listdir(path)):
            spec_path = os.path.join(path, role, "meta", "argument_specs.yml")
            if not os.path.isfile(spec_path):
                continue
            with open(spec_path) as handle:
                data = safe_load(handle) or {}
            options = {}
            for entry in (data.get("argument_specs") or {}).values():
                options.update((entry or {}).get("options") or {})
            specs[role] = options
        _CACHE[path] = specs
    return _CACHE[path]


def roles():
    """Every role with an argument spec."""
    return sorted(_load())


def input_roles():
    return [role for role in roles() if role not in NOT_INPUT_ROLES]


def _options(role):
    specs = _load()
    if role not in specs:
        raise GpufleetError("role %s has no meta/argument_specs.yml in %s" % (role, roles_dir()))
    return specs[role]


def options(role):
    """The options of ``role`` (all entry points), as written in its spec."""
    return copy.deepcopy(_options(role))


def defaults(*role_names, **kwargs):
    """{option: default} of the options of ``role_names`` (every input role when none) that have a
    default; ``prefix`` keeps only names starting with it."""
    prefix = kwargs.get("prefix", "")
    out = {}
    for role in role_names or input_roles():
        for name, option in _options(role).items():
            if "default" in option and name.startswith(prefix):
                out[name] = copy.deepcopy(option["default"])
    return out


def types(*role_names):
    """{option: type} of the options of ``role_names`` (every role when none)."""
    out = {}
    for role in role_names or roles():
        for name, option in _options(role).items():
            out[name] = option.get("type", "str")
    return out


def secret_inputs():
    """Every option declared ``no_log: true`` in any role's spec (a bearer token, a password), sorted: never
    collected into the inputs dictionaries that modules and facts receive."""
    return tuple(sorted(name for role in roles() for name, option in _options(role).items() if option.get("no_log")))


def bool_vars():
    """Every option declared ``type: bool`` in any role's spec, sorted."""
    return tuple(sorted(name for name, kind in types().items() if kind == "bool"))


def prefixes():
    """The public-input prefix of every input role (``<role>_``), sorted."""
    return tuple(sorted(set(role + "_" for role in input_roles())))


def is_input(name):
    return isinstance(name, str) and name.startswith(prefixes())


def mirror_defaults():
    """Defaults of the gpufleet_mirror_* inputs."""
    return defaults("gpufleet", prefix="gpufleet_mirror_")


# The node and add-on roles whose defaults the mirror manifest needs (their roles do not run there).
MIRROR_NODE_ROLES = ("nvidia_container_toolkit", "nvidia_driver", "gpu_node_prep", "gpu_pools", "gpu_validate")


def node_defaults():
    """Defaults of the roles whose downloads the mirror manifest lists."""
    return defaults(*MIRROR_NODE_ROLES)


# Stage playbooks -> the options of the roles they include (the AWX surveys ask only about these).
INCLUDE_ROLE = re.compile(r"^\s*name:\s*([a-z0-9_]+)\s*$")


def load_role_spec(directory, role, entry="main"):
    path = os.path.join(directory, role, "meta", "argument_specs.yml")
    if not os.path.isfile(path):
        raise GpufleetError("role %s has no meta/argument_specs.yml" % role)
    with open(path) as handle:
        data = safe_load(handle) or {}
    try:
        return data["argument_specs"][entry]
    except (KeyError, TypeError):
        raise GpufleetError("%s: no argument_specs.%s entry" % (path, entry))


def roles_of_playbook(path):
    """Role names a stage playbook includes (``include_role``/``import_role`` name: lines)."""
    roles = []
    with open(path) as handle:
        lines = handle.read().splitlines()
    for index, line in enumerate(lines):
        if re.match(r"^\s*ansible\.builtin\.(include|import)_role:\s*$", line):
            for follow in lines[index + 1:index + 4]:
                match = INCLUDE_ROLE.match(follow)
                if match:
                    if match.group(1) not in roles:
                        roles.append(match.group(1))
                    break
    return roles


def stage_options(project_dir, playbook):
    """{variable: option} for every role a stage playbook uses."""
    options = {}
    for role in roles_of_playbook(os.path.join(project_dir, playbook)):
        spec = load_role_spec(os.path.join(project_dir, "roles"), role)
        for var, option in (spec.get("options") or {}).items():
            options.setdefault(var, option)
    return options
