# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""A fleet of clusters: the fleet file (``fleet_run_clusters`` and friends) checked, the clusters a run
selects, and the ``ansible-playbook`` command line of one cluster's stage run.

A fleet inventory holds only the controller; each cluster entry names an ordinary gpufleet inventory
(one folder per cluster, unchanged). Every cluster runs in its own ``ansible-playbook`` process with its
own inventory, so the variables of two clusters never meet. Everything here is checked before any
cluster runs, and every message names the variable path and what is allowed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, Problems, kind_of, one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.input_text import walk_errors
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import yaml
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import PLATFORMS

STAGES = ("preflight", "provision", "nodes", "cluster", "validate", "report", "site", "remediate", "upgrade_driver")
# Stages after which the cluster has a fresh build/<inventory>/report/fleet.json.
REPORT_STAGES = ("site", "report")
CLOUDS = ("aws", "gcp", "onprem")
CLUSTER_KEYS = ("name", "inventory", "platform", "cloud", "region", "tags", "vars", "environment", "credentials")
REQUIRED_KEYS = ("name", "inventory", "cloud", "region")
SELECTOR_KEYS = ("region", "cloud", "tag")
DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z")
# region / on-prem location labels and tags: one word of letters, digits, '.', '_', '-'
WORD = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,62})\Z")
WORD_RULE = "letters, digits, '.', '_', '-' (starting with a letter or digit, at most 63)"
DNS_RULE = "a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63"
# Variables a cluster's ``vars`` / fleet_run_vars may not set: the fleet run sets them itself.
FLEET_SET_VARS = ("gpufleet_fleet_pools", "gpufleet_fleet_cluster", "gpufleet_fleet_build_dir_file")
# In a cluster's run folder: the build directory the cluster's run resolved (written by the gpufleet role).
BUILD_DIR_FILE = "build-dir"
# A cluster's ``environment``: names of the controller's environment variables its run may see (credential
# variables are withheld unless named here, see fleet_runner.child_env).
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
ENV_RULE = "letters, digits and '_', not starting with a digit"

# ansible-playbook options fleet_run_extra_args may pass on to every cluster: option -> takes a value.
EXTRA_OPTIONS = {"--tags": True, "--skip-tags": True, "--limit": True, "--forks": True,
                 "-v": False, "-vv": False, "-vvv": False, "-vvvv": False, "--flush-cache": False}
EXTRA_VALUE = re.compile(r"^[A-Za-z0-9_.:,*!&@\[\]-]+\Z")


def _text(problems, var, value, pattern=None, rule=None):
    """True when ``value`` is a non-empty one-line string (matching ``pattern``)."""
    if not isinstance(value, str) or not value.strip():
        problems.error(var, "%s; give a non-empty string%s" % (
            "missing" if value is None else kind_of(value) if not isinstance(value, str) else "empty",
            " (%s)" % rule if rule else ""))
        return False
    for path, reason in walk_errors(var, value):
        problems.error(path, reason)
        return False
    if pattern is not None and not pattern.match(value):
        problems.error(var, "%r is not valid; use %s" % (value, rule))
        return False
    return True


def _inventory_path(value, fleet_dir):
    path = value if os.path.isabs(value) else os.path.join(fleet_dir, value)
    return os.path.realpath(path)


def _cluster(problems, index, entry, fleet_dir, known):
    var = "fleet_run_clusters[%d]" % index
    if not isinstance(entry, dict):
        problems.error(var, "%s; each cluster is a mapping with %s" % (kind_of(entry), ", ".join(REQUIRED_KEYS)))
        return None
    unknown = sorted(str(k) for k in entry if k not in CLUSTER_KEYS)
    if unknown:
        problems.error(var, "unknown key(s) %s; allowed keys: %s" % (", ".join(unknown), ", ".join(CLUSTER_KEYS)))
    before = len(problems.errors)
    name = entry.get("name")
    if _text(problems, var + ".name", name, DNS_LABEL, DNS_RULE):
        if name in known["names"]:
            problems.error(var + ".name", "%r is also the name of fleet_run_clusters[%d]; cluster names are unique"
                           % (name, known["names"][name]))
        known["names"].setdefault(name, index)
    inventory = entry.get("inventory")
    path = None
    if _text(problems, var + ".inventory", inventory):
        path = _inventory_path(inventory, fleet_dir)
        if not os.path.exists(path):
            problems.error(var + ".inventory", "%s does not exist (relative paths are relative to the fleet "
                           "inventory %s)" % (inventory, fleet_dir))
        elif os.path.realpath(fleet_dir) in (path, inventory_identity(path)):
            problems.error(var + ".inventory", "%s is the fleet inventory itself; name a cluster's inventory"
                           % inventory)
        elif inventory_identity(path) in known["inventories"]:
            other, other_given = known["inventories"][inventory_identity(path)]
            problems.error(var + ".inventory", "%s (fleet_run_clusters[%d], %s) and %s (fleet_run_clusters[%d], %s) "
                           "are the same inventory (%s); each cluster has its own inventory (its own "
                           "build/<inventory>/), or its run would overwrite the other's" % (
                               other_given, other, _name_of(known, other), inventory, index, name,
                               inventory_identity(path)))
        known["inventories"].setdefault(inventory_identity(path), (index, inventory))
        known["by_index"][index] = name
    platform = entry.get("platform")
    if platform is not None and platform not in PLATFORMS:
        problems.error(var + ".platform", "%r; use %s (or leave it out)" % (platform, one_of(PLATFORMS)))
    cloud = entry.get("cloud")
    if cloud not in CLOUDS:
        problems.error(var + ".cloud", "%s; use %s" % ("missing" if cloud is None else repr(cloud), one_of(CLOUDS)))
    _text(problems, var + ".region", entry.get("region"), WORD, WORD_RULE)
    tags = entry.get("tags", [])
    if not isinstance(tags, list):
        problems.error(var + ".tags", "%s; give a list of tags (%s)" % (kind_of(tags), WORD_RULE))
        tags = []
    for tag_index, tag in enumerate(tags):
        _text(problems, "%s.tags[%d]" % (var, tag_index), tag, WORD, WORD_RULE)
    variables = entry.get("vars", {})
    _vars(problems, var + ".vars", variables)
    environment = _names(problems, var + ".environment", entry.get("environment", []), ENV_NAME, ENV_RULE,
                         "names of the controller's environment variables this cluster's run may see")
    credentials = _names(problems, var + ".credentials", entry.get("credentials", []), None, None,
                         "names of the AWX credentials this cluster's job templates get")
    if len(problems.errors) > before:
        return None
    return {"name": name, "inventory": path, "inventory_given": inventory, "platform": platform or "",
            "cloud": cloud, "region": entry.get("region"), "tags": list(tags), "vars": dict(variables or {}),
            "environment": environment, "credentials": credentials}


def _names(problems, var, values, pattern, rule, what):
    """A list of unique one-line names (``environment``, ``credentials``), or [] after naming the problem."""
    if values is None:
        return []
    if not isinstance(values, list):
        problems.error(var, "%s; give a list of %s" % (kind_of(values), what))
        return []
    seen = {}
    for index, value in enumerate(values):
        where = "%s[%d]" % (var, index)
        if not _text(problems, where, value, pattern, rule):
            continue
        if value in seen:
            problems.error(where, "%r is also %s[%d]; name each once" % (value, var, seen[value]))
        seen.setdefault(value, index)
    return [v for v in values if isinstance(v, str)]


def inventory_identity(path):
    """What makes two spellings of a cluster inventory the same: the real folder Ansible reads its group_vars and
    host_vars from (the folder itself, or the folder of an inventory file such as ``x/hosts.yml``)."""
    real = os.path.realpath(path)
    return real if os.path.isdir(real) else os.path.dirname(real)


def _name_of(known, index):
    return known["by_index"].get(index) or "?"


def _vars(problems, var, variables):
    if variables is None:
        return
    if not isinstance(variables, dict):
        problems.error(var, "%s; give a mapping of variables" % kind_of(variables))
        return
    for key in sorted(variables, key=str):
        if key in FLEET_SET_VARS:
            problems.error("%s.%s" % (var, key), "is set by the fleet run itself (fleet_run_pools and the "
                           "cluster entry); remove it")
    for path, reason in walk_errors(var, variables, "\n\r\t"):
        problems.error(path, reason)


def load(clusters, fleet_dir, common_vars=None):
    """The checked cluster entries (inventory paths made absolute, in fleet order). Raises GpufleetError
    listing every problem."""
    problems = Problems()
    out = []
    if not isinstance(clusters, list) or not clusters:
        problems.error("fleet_run_clusters", "%s; give a list of clusters, each with %s" % (
            "empty" if clusters == [] else kind_of(clusters), ", ".join(REQUIRED_KEYS)))
    else:
        known = {"names": {}, "inventories": {}, "by_index": {}}
        for index, entry in enumerate(clusters):
            cluster = _cluster(problems, index, entry, fleet_dir, known)
            if cluster is not None:
                out.append(cluster)
    _vars(problems, "fleet_run_vars", common_vars or {})
    if problems:
        raise GpufleetError("the fleet file has %d problem(s): %s" % (len(problems.errors), "; ".join(problems.errors)),
                            errors=problems.errors)
    return out


def _selectors(select):
    if select is None:
        return []
    if isinstance(select, str):
        return [part.strip() for part in select.split(",") if part.strip()]
    if not isinstance(select, list):
        raise GpufleetError("fleet_run_select: %s; give a list of selectors (a cluster name, region=<r>, "
                            "cloud=<c>, tag=<t>)" % kind_of(select))
    return select


def _known(clusters, key):
    values = set()
    for cluster in clusters:
        values |= set(cluster["tags"]) if key == "tag" else {cluster[key]}
    return sorted(values)


def select(clusters, selectors, var="fleet_run_select"):
    """The clusters ``selectors`` pick, in fleet order; several selectors pick the union, none picks all.
    A selector is a cluster name, ``region=<r>``, ``cloud=<c>`` or ``tag=<t>``; one that picks no cluster is
    refused naming what is known."""
    items = _selectors(selectors)
    if not items:
        return list(clusters)
    names = [c["name"] for c in clusters]
    chosen = set()
    for index, item in enumerate(items):
        where = "%s[%d]" % (var, index)
        if not isinstance(item, str) or not item.strip():
            raise GpufleetError("%s: %s; use a cluster name, region=<r>, cloud=<c> or tag=<t>"
                                % (where, kind_of(item) if not isinstance(item, str) else "empty"))
        for path, reason in walk_errors(where, item):
            raise GpufleetError("%s: %s" % (path, reason))
        item = item.strip()
        if "=" in item:
            key, _sep, value = item.partition("=")
            key, value = key.strip(), value.strip()
            if key not in SELECTOR_KEYS:
                raise GpufleetError("%s: %r selects by %r; select by %s (or give a cluster name: %s)"
                                    % (where, item, key, one_of(SELECTOR_KEYS), ", ".join(names)))
            if key == "cloud" and value not in CLOUDS:
                raise GpufleetError("%s: %r; cloud is %s" % (where, item, one_of(CLOUDS)))
            picked = {c["name"] for c in clusters
                      if (value in c["tags"] if key == "tag" else c[key] == value)}
            if not picked:
                raise GpufleetError("%s: no cluster of the fleet has %s %r; known: %s"
                                    % (where, key, value, ", ".join(_known(clusters, key)) or "none"))
        else:
            if item not in names:
                raise GpufleetError("%s: %r is not a cluster of the fleet; known clusters: %s"
                                    % (where, item, ", ".join(names)))
            picked = {item}
        chosen |= picked
    return [c for c in clusters if c["name"] in chosen]


def extra_args(args, var="fleet_run_extra_args"):
    """The ansible-playbook arguments passed on to every cluster, checked against EXTRA_OPTIONS
    (``--tags=a,b`` or ``--tags a,b``). Never extra vars: a credential on a command line is visible to
    every user of the machine."""
    if args is None:
        return []
    if not isinstance(args, list):
        raise GpufleetError("%s: %s; give a list such as ['--tags=cluster', '-v']" % (var, kind_of(args)))
    out = []
    index = 0
    allowed = "allowed: %s" % ", ".join(sorted(EXTRA_OPTIONS))
    while index < len(args):
        where = "%s[%d]" % (var, index)
        arg = args[index]
        if not isinstance(arg, str):
            raise GpufleetError("%s: %s; give strings (%s)" % (where, kind_of(arg), allowed))
        option, sep, value = arg.partition("=")
        if option not in EXTRA_OPTIONS:
            raise GpufleetError("%s: %r is not passed on to the clusters; %s (variables go into fleet_run_vars or "
                                "a cluster's vars, written to a private file)" % (where, arg, allowed))
        if EXTRA_OPTIONS[option]:
            if not sep:
                index += 1
                value = args[index] if index < len(args) else None
            if not isinstance(value, str) or not EXTRA_VALUE.match(value):
                raise GpufleetError("%s: %s needs a value of letters, digits and . _ : , * ! & @ [ ] -; got %r"
                                    % (where, option, value))
            if option == "--forks" and not (value.isdigit() and int(value) > 0):
                raise GpufleetError("%s: --forks needs a positive number; got %r" % (where, value))
            out.append("%s=%s" % (option, value))
        elif sep:
            raise GpufleetError("%s: %s takes no value; got %r" % (where, option, arg))
        else:
            out.append(option)
        index += 1
    return out


def stage_playbook(playbooks_dir, stage):
    """The stage's playbook in ``playbooks_dir`` (a clone's playbooks/, or the installed collection's)."""
    if stage not in STAGES:
        raise GpufleetError("fleet_run_stage: %r; use %s" % (stage, one_of(STAGES)))
    return os.path.join(playbooks_dir, stage + ".yml")


def command_line(ansible_playbook, playbooks_dir, cluster, stage, vars_file, check_mode=False, diff=False, extra=()):
    """The argv of one cluster's stage run: its own inventory, the fleet part of its variables from a
    private file, the run's check/diff flags and the checked extra arguments."""
    argv = [ansible_playbook, "-i", cluster["inventory"], stage_playbook(playbooks_dir, stage), "-e", "@" + vars_file]
    if check_mode:
        argv.append("--check")
    if diff:
        argv.append("--diff")
    argv.extend(extra)
    return argv


def cluster_vars(cluster, pools, common_vars=None):
    """The variables of one cluster's run (written to its 0600 vars file): fleet_run_vars, then the
    cluster's own vars, then what the fleet run sets (its pools part and who it is)."""
    out = dict(common_vars or {})
    out.update(cluster["vars"])
    out["gpufleet_fleet_pools"] = list(pools or [])
    out["gpufleet_fleet_cluster"] = {"name": cluster["name"], "cloud": cluster["cloud"],
                                     "region": cluster["region"], "tags": list(cluster["tags"])}
    return out


def build_dir(project_dir, cluster, common_vars=None, run_folder=None):
    """Where the cluster's run writes: what its run said (``run_folder``/BUILD_DIR_FILE, written by the gpufleet
    role, which sees gpufleet_inventory_name and gpufleet_build_dir set inside the cluster's own inventory too),
    else its gpufleet_build_dir (cluster vars, then fleet_run_vars), else <project>/build/<inventory name>."""
    said = _said_build_dir(run_folder)
    if said:
        return said
    merged = dict(common_vars or {})
    merged.update(cluster["vars"])
    given = merged.get("gpufleet_build_dir")
    if given:
        return given if os.path.isabs(given) else os.path.join(project_dir, given)
    name = merged.get("gpufleet_inventory_name")
    if not name:
        name = os.path.basename(cluster["inventory"].rstrip("/"))
        if os.path.isfile(cluster["inventory"]):
            name = os.path.basename(os.path.dirname(cluster["inventory"]))
    return os.path.join(project_dir, "build", name)


def _tagged(loader, suffix, node):
    return None


def _loader():
    """A SafeLoader that reads Ansible's tags (``!vault``, ``!unsafe``) as None instead of failing."""
    loader = type("InventoryLoader", (yaml.SafeLoader,), {})
    loader.add_multi_constructor("!", _tagged)
    return loader


def _group_vars_files(folder):
    base = os.path.join(folder, "group_vars")
    out = []
    for name in ("all.yml", "all.yaml"):
        if os.path.isfile(os.path.join(base, name)):
            out.append(os.path.join(base, name))
    sub = os.path.join(base, "all")
    if os.path.isdir(sub):
        out.extend(os.path.join(sub, n) for n in sorted(os.listdir(sub)) if n.endswith((".yml", ".yaml")))
    return out


def fleet_vars(folder):
    """The group_vars/all variables of the inventory ``folder`` (later files win), or {}."""
    merged = {}
    for path in _group_vars_files(folder):
        with open(path) as handle:
            try:
                data = yaml.load(handle, Loader=_loader())  # nosec - a SafeLoader subclass
            except yaml.YAMLError as exc:
                raise GpufleetError("%s: not valid YAML: %s" % (path, exc))
        if isinstance(data, dict):
            merged.update(data)
    return merged


def planned_build_dir(project_dir, cluster, common_vars=None):
    """Where the cluster's run will write, as far as it can be known before it runs: gpufleet_build_dir or
    gpufleet_inventory_name from the cluster's vars, fleet_run_vars or its inventory's group_vars/all (in that
    order), else <project>/build/<inventory name>; the real path. None when a value is templated ({{ }})."""
    keys = ("gpufleet_build_dir", "gpufleet_inventory_name")
    merged = {}
    for values in (fleet_vars(inventory_identity(cluster["inventory"])), common_vars or {}, cluster["vars"]):
        merged.update((k, v) for k, v in values.items() if k in keys)
    if any(isinstance(v, str) and "{" in v for v in merged.values()):
        return None
    return os.path.realpath(build_dir(project_dir, dict(cluster, vars=merged)))


def check_build_dirs(clusters, project_dir, common_vars=None):
    """Refuse two clusters whose runs would write the same build folder (their runs would overwrite each other and
    the fleet report would show one cluster's data under the other's name), naming both; before anything runs."""
    seen = {}
    problems = []
    for cluster in clusters:
        try:
            path = planned_build_dir(project_dir, cluster, common_vars)
        except GpufleetError as exc:
            problems.append("%s: %s" % (cluster["name"], exc.msg))
            continue
        if path is None:
            continue
        if path in seen:
            problems.append("clusters %s and %s would both write the build folder %s (gpufleet_build_dir / "
                            "gpufleet_inventory_name, or inventories with one name); give each cluster its own"
                            % (seen[path], cluster["name"], path))
        seen.setdefault(path, cluster["name"])
    if problems:
        raise GpufleetError("the fleet file has %d problem(s): %s" % (len(problems), "; ".join(problems)),
                            errors=problems)


def _said_build_dir(run_folder):
    """The absolute path in ``run_folder``/BUILD_DIR_FILE, or None (no folder, no file, not one absolute path)."""
    if not run_folder:
        return None
    try:  # never through a symbolic link planted in the run folder
        fd = os.open(os.path.join(run_folder, BUILD_DIR_FILE), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd) as handle:
            text = handle.read(65536).strip()
    except (IOError, OSError, ValueError):
        return None
    return text if text and "\n" not in text and os.path.isabs(text) else None
