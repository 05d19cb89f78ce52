# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The Kubernetes API server's syntax rules for everything gpufleet turns into an object field,
and the preflight checks built on them.

The rules are the API server's own (apimachinery ``validation.IsQualifiedName``,
``IsValidLabelValue``, ``IsDNS1123Label``, ``IsDNS1123Subdomain`` and the core validation of
taints), written here so that a bad value is refused before rendering, naming the variable, instead
of by the API server, Karpenter or GKE after provisioning started. Each ``*_error`` function returns
``None`` for a valid value or a short reason; ``check`` (registered in preflight) applies them to
the pools, the namespaces, the cluster name and the Node names derived from inventory hosts, and
adds the consistency rules between inputs (node groups, limits, durations, booleans).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, kind_of as _kind, one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.node_names import NODE_NAME_VAR, node_names
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.namespace_ownership import reserved_problem

# apimachinery: qualifiedNameFmt / labelValueFmt / dns1123LabelFmt / dns1123SubdomainFmt
_NAME_PART = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
NAME_MAX = 63
SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# A toleration may leave the effect empty (matches every effect).
TOLERATION_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
# Toleration operators (empty means Equal); the keys of a core/v1 Toleration.
TOLERATION_OPERATORS = ("Equal", "Exists")
TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")

# Labels gpufleet sets itself on every pool's nodes: a pool label may not replace them.
OWN_LABELS = ("gpufleet.io/pool", "nvidia.com/device-plugin.config")
# Label domains that belong to Kubernetes, Karpenter or GKE (Karpenter refuses them in a NodePool
# template, GKE owns cloud.google.com); sub-domains count too (node-role.kubernetes.io).
RESERVED_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws", "cloud.google.com")
# Exceptions Karpenter documents as settable (node.kubernetes.io, node-restriction.kubernetes.io);
# node-role.kubernetes.io is only settable where gpufleet writes the Node itself (self-managed).
RESERVED_EXCEPTIONS = ("node.kubernetes.io", "node-restriction.kubernetes.io")
SELF_MANAGED_EXCEPTIONS = ("node-role.kubernetes.io",)
# Taint keys that controllers add and remove themselves.
RESERVED_TAINT_DOMAINS = ("node.kubernetes.io", "node.cloudprovider.kubernetes.io", "karpenter.sh",
                          "cloud.google.com")

# Longest fixed prefix gpufleet puts before a pool name in an object name that the API server
# limits to 63 characters (a Job's name becomes the value of its pods' job-name label).
POOL_NAME_OBJECTS = (("Job", "gpufleet-smoke-"), ("Job", "gpu-example-"))
POOL_NAME_MAX = NAME_MAX - max(len(prefix) for _kind, prefix in POOL_NAME_OBJECTS)

# Namespaces not already checked with the add-ons (addons_preflight checks the add-on namespaces).
NAMESPACE_VARS = ("gpu_pools_example_namespace", "gpu_validate_namespace", "gpu_validate_exporter_namespace",
                  "nvidia_dra_driver_namespace")
# namespaces gpufleet creates (and deletes or relaxes) for these inputs: a system namespace is refused
# (issue 39: the DRA driver's and the examples' namespaces accepted kube-system); value: the default, named
# as what to use instead
OWN_NAMESPACE_VARS = {"gpu_validate_namespace": "gpufleet-validate", "gpu_pools_example_namespace": "gpufleet-examples",
                      "nvidia_dra_driver_namespace": "nvidia-dra-driver-gpu"}

# Quoted words true/false/yes/no are what ``-e name=value`` gives and every consumer reads them as
# booleans; any other string or number is refused. Which variables are booleans: bool_vars().
# What Ansible reads as a boolean (argument specs, the bool filter the roles read these through).
BOOL_WORDS = ("true", "false", "yes", "no", "on", "off", "y", "n", "t", "f", "1", "0")
# Checked with their own concern's wording (driver_compat, pools_check, addons_preflight).
BOOL_VARS_CHECKED_ELSEWHERE = (
    "gpu_node_prep_epel", "gpu_pools_examples", "gpu_pools_gke_auto_repair", "gpu_pools_gke_auto_upgrade", "gpu_pools_gke_integrity_monitoring",
    "gpu_pools_gke_secure_boot", "nvidia_device_plugin_gfd_enabled", "nvidia_device_plugin_nfd_enabled",
    "nvidia_driver_blacklist_nouveau", "nvidia_driver_hold_kernel", "nvidia_driver_persistence",
    "nvidia_driver_replace_preinstalled")
# Pool fields that are booleans: inside a pool there is no command-line form, so only true/false.
POOL_BOOL_FIELDS = ("compute_class", "do_not_disrupt")
SHARING_BOOL_FIELDS = ("rename_by_default", "fail_requests_greater_than_one")

ZERO_DURATION = re.compile(r"^(0+(s|m|h))+$")
EKS_CLUSTER = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]*$")
GKE_CLUSTER = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
IAM_ROLE_MAX = 64


def bool_vars():
    """Every variable declared ``type: bool`` in a role's meta/argument_specs.yml."""
    return role_specs.bool_vars()


def dns_label_error(value):
    """Reason ``value`` is not a DNS-1123 label (namespace, pool, most object names), or None."""
    if not isinstance(value, str):
        return "must be a string, got %s" % _kind(value)
    if len(value) > NAME_MAX:
        return "is %d characters long; a DNS label has at most %d" % (len(value), NAME_MAX)
    if not _DNS1123_LABEL.match(value):
        return ("is not a DNS label; use lower-case letters, digits and '-', starting and ending with a "
                "letter or digit")
    return None


def dns_subdomain_error(value):
    """Reason ``value`` is not a DNS-1123 subdomain (Node and most object names), or None."""
    if not isinstance(value, str):
        return "must be a string, got %s" % _kind(value)
    if len(value) > SUBDOMAIN_MAX:
        return "is %d characters long; a DNS subdomain has at most %d" % (len(value), SUBDOMAIN_MAX)
    if not _DNS1123_SUBDOMAIN.match(value):
        return ("is not a DNS subdomain; use lower-case letters, digits, '-' and '.', each dot-separated "
                "part starting and ending with a letter or digit")
    return None


def qualified_name_error(value):
    """Reason ``value`` is not a qualified name (label key, taint key), or None."""
    if not isinstance(value, str):
        return "must be a string, got %s" % _kind(value)
    if value.count("/") > 1:
        return "has more than one '/'; use [prefix/]name"
    prefix, _sep, name = value.rpartition("/")
    if _sep:
        if not prefix:
            return "has an empty prefix before '/'; use [prefix/]name"
        reason = dns_subdomain_error(prefix)
        if reason:
            return "prefix %r %s" % (prefix, reason)
    if not name:
        return "has an empty name part; use [prefix/]name"
    if len(name) > NAME_MAX:
        return "name part %r is %d characters long; at most %d" % (name, len(name), NAME_MAX)
    if not _NAME_PART.match(name):
        return ("name part %r is not allowed; use letters, digits, '-', '_' and '.', starting and ending with a "
                "letter or digit" % name)
    return None


def label_value_error(value):
    """Reason ``value`` is not a label value (also a taint value), or None. Values must be strings:
    YAML ``true``, ``1`` or an empty entry would reach the cluster as 'True', '1' or 'None'."""
    if not isinstance(value, str):
        return "must be a quoted string, got %s (%r)" % (_kind(value), value)
    if len(value) > LABEL_VALUE_MAX:
        return "is %d characters long; a label value has at most %d" % (len(value), LABEL_VALUE_MAX)
    if value and not _NAME_PART.match(value):
        return ("is not a label value; use letters, digits, '-', '_' and '.', starting and ending with a letter "
                "or digit (or empty)")
    return None


def _domain(key):
    return key.rpartition("/")[0]


def _in_domain(domain, parents):
    return any(domain == p or domain.endswith("." + p) for p in parents)


def reserved_label_error(key, self_managed=False):
    """Reason a pool may not set label ``key`` (gpufleet's own or a reserved domain), or None."""
    if key in OWN_LABELS:
        return ("is set by gpufleet itself on every node of the pool (to the pool's name); a pool label may not "
                "replace it; use a key other than %s" % ", ".join(OWN_LABELS))
    domain = _domain(key)
    exceptions = RESERVED_EXCEPTIONS + (SELF_MANAGED_EXCEPTIONS if self_managed else ())
    if _in_domain(domain, RESERVED_DOMAINS) and not _in_domain(domain, exceptions):
        return ("uses the reserved prefix %s/ (owned by Kubernetes, Karpenter or GKE, which refuse or overwrite "
                "it); use a key with your own prefix, e.g. example.com/%s, or one of: %s"
                % (domain, key.rpartition("/")[2], ", ".join(p + "/" for p in exceptions)))
    return None


def check_labels(var, labels, problems, self_managed=False):
    if not isinstance(labels, dict):
        problems.error(var, "must be a mapping of label key to string value, got %s" % _kind(labels))
        return
    for key in sorted(labels, key=str):
        kvar = "%s[%r]" % (var, key)
        reason = qualified_name_error(key)
        if reason:
            problems.error(kvar, "label key %r %s" % (key, reason))
            continue
        reason = reserved_label_error(key, self_managed)
        if reason:
            problems.error(kvar, "label key %r %s" % (key, reason))
        reason = label_value_error(labels[key])
        if reason:
            problems.error(kvar, "label value %s" % reason)


def check_label_map(var, labels, problems):
    """Labels put on an object as given (ServiceMonitor, PrometheusRule, dashboard ConfigMap): keys
    are qualified names, values label values (strings)."""
    if not isinstance(labels, dict):
        problems.error(var, "must be a mapping of label key to string value, got %s; use e.g. {release: "
                       "prometheus}" % _kind(labels))
        return
    for key in sorted(labels, key=str):
        kvar = "%s[%r]" % (var, key)
        reason = qualified_name_error(key)
        if reason:
            problems.error(kvar, "label key %r %s" % (key, reason))
            continue
        reason = label_value_error(labels[key])
        if reason:
            problems.error(kvar, "label value %s%s" % (reason, "" if "; use" in reason else
                                                       "; use a quoted string of at most 63 letters, digits, '-', "
                                                       "'_' and '.' (or empty)"))


def check_tolerations(var, tolerations, problems):
    """Pod tolerations as the API server validates them (core/v1 validation of tolerations)."""
    use = ("use a list of tolerations {key, operator: Equal|Exists, value, effect: %s, tolerationSeconds}"
           % "|".join(e for e in TOLERATION_EFFECTS if e))
    if not isinstance(tolerations, list):
        problems.error(var, "must be a list of tolerations, got %s; %s" % (_kind(tolerations), use))
        return
    for j, tol in enumerate(tolerations):
        tvar = "%s[%d]" % (var, j)
        if not isinstance(tol, dict):
            problems.error(tvar, "must be a mapping, got %s (%r); %s" % (_kind(tol), tol, use))
            continue
        unknown = sorted(set(tol) - set(TOLERATION_KEYS), key=str)
        if unknown:
            problems.error(tvar, "unknown key(s) %s; use %s" % (", ".join(map(str, unknown)), one_of(TOLERATION_KEYS)))
        operator = tol.get("operator") or "Equal"
        if operator not in TOLERATION_OPERATORS:
            problems.error(tvar + ".operator", "%r is not allowed; use %s (or leave it out: Equal)"
                           % (tol.get("operator"), one_of(TOLERATION_OPERATORS)))
        key = tol.get("key")
        if key in (None, ""):
            if operator != "Exists":
                problems.error(tvar + ".key", "is empty, which only operator Exists allows (tolerate every taint); "
                               "use one of: a taint key such as nvidia.com/gpu, operator: Exists")
        else:
            reason = qualified_name_error(key)
            if reason:
                problems.error(tvar + ".key", "%r %s" % (key, reason))
        value = tol.get("value")
        if operator == "Exists" and value not in (None, ""):
            problems.error(tvar + ".value", "%r is set with operator Exists, which matches any value; use one of: "
                           "no value, operator: Equal" % (value,))
        elif operator == "Equal" and value not in (None, ""):
            reason = label_value_error(value)
            if reason:
                problems.error(tvar + ".value", "toleration value %s" % reason)
        effect = tol.get("effect")
        if effect is not None and effect not in TOLERATION_EFFECTS:
            problems.error(tvar + ".effect", "%r is not allowed; use one of: %s, or empty (every effect)"
                           % (effect, ", ".join(e for e in TOLERATION_EFFECTS if e)))
        seconds = tol.get("tolerationSeconds")
        if seconds is not None:
            if isinstance(seconds, bool) or not isinstance(seconds, int):
                problems.error(tvar + ".tolerationSeconds", "%r is not allowed; use a whole number of seconds"
                               % (seconds,))
            elif effect != "NoExecute":
                problems.error(tvar + ".tolerationSeconds", "is only used with effect NoExecute; use one of: "
                               "effect: NoExecute, or drop tolerationSeconds")


def check_taints(var, taints, problems):
    if not isinstance(taints, list):
        return  # spec.validate_pools reports the shape
    seen = {}
    for j, taint in enumerate(taints):
        tvar = "%s[%d]" % (var, j)
        if not isinstance(taint, dict):
            continue
        unknown = sorted(set(taint) - {"key", "value", "effect"}, key=str)
        if unknown:
            problems.error(tvar, "unknown key(s) %s; use one of: key, value, effect" % ", ".join(map(str, unknown)))
        key = taint.get("key")
        reason = qualified_name_error(key)
        if reason:
            problems.error(tvar + ".key", "%r %s" % (key, reason))
        elif _in_domain(_domain(key), RESERVED_TAINT_DOMAINS):
            problems.error(tvar + ".key", "%r uses the prefix %s/, whose taints Kubernetes, Karpenter or GKE add "
                           "and remove themselves; use a key with your own prefix" % (key, _domain(key)))
        if taint.get("value") is not None:
            reason = label_value_error(taint["value"])
            if reason:
                problems.error(tvar + ".value", "taint value %s" % reason)
        effect = taint.get("effect")
        if isinstance(key, str) and effect in TAINT_EFFECTS:
            if (key, effect) in seen:
                problems.error(tvar, "taint %s:%s repeats %s[%d]; taints must be unique by key and effect"
                               % (key, effect, var, seen[(key, effect)]))
            else:
                seen[(key, effect)] = j


def cluster_name_error(name, platform, settings=None):
    """Reason ``gpufleet_cluster_name`` cannot be used, or None."""
    if not isinstance(name, str) or not name.strip():
        return "must be a non-empty string (it names the cluster in tags, labels and file headers)"
    if platform == "eks":
        if len(name) > 100 or not EKS_CLUSTER.match(name):
            return ("%r is not an EKS cluster name; use 1-100 letters, digits, '-' and '_', starting with a letter "
                    "or digit" % name)
        if not (settings or {}).get("eks_node_role") and len("KarpenterNodeRole-" + name) > IAM_ROLE_MAX:
            return ("%r makes the default node role KarpenterNodeRole-%s longer than the %d characters IAM allows; "
                    "use a name of at most %d characters or set gpu_pools_eks_node_role"
                    % (name, name, IAM_ROLE_MAX, IAM_ROLE_MAX - len("KarpenterNodeRole-")))
        return None
    if platform in ("gke", "gke-autopilot"):
        if len(name) > 40 or not GKE_CLUSTER.match(name):
            return ("%r is not a GKE cluster name; use 1-40 lower-case letters, digits and '-', starting with a "
                    "letter and ending with a letter or digit" % name)
        return None
    if len(name) > LABEL_VALUE_MAX or not _NAME_PART.match(name):
        return ("%r is not allowed; use 1-63 letters, digits, '-', '_' and '.', starting and ending with a letter "
                "or digit (it is written as a label value and into tags)" % name)
    return None


def bool_error(value, words=BOOL_WORDS):
    """Reason ``value`` is not a boolean, or None. ``words``: quoted forms accepted too."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().lower() in words:
        return None
    if isinstance(value, int) and value in (0, 1):
        return None
    return "%r is not a boolean; use one of: true, false" % (value,)


def _check_pool(var, pool, platform, self_managed, problems):
    name = pool.get("name")
    if isinstance(name, str) and len(name) > POOL_NAME_MAX and not dns_label_error(name):
        problems.error(var + ".name", "%r is %d characters long; gpufleet names objects after the pool (Job "
                       "%s%s, %d characters) and the API server allows at most %d there (a Job's name becomes "
                       "a label value); use at most %d characters"
                       % (name, len(name), POOL_NAME_OBJECTS[0][1], name, len(POOL_NAME_OBJECTS[0][1] + name),
                          NAME_MAX, POOL_NAME_MAX))
    check_labels(var + ".labels", pool.get("labels"), problems, self_managed=self_managed)
    check_taints(var + ".taints", pool.get("taints"), problems)
    for field in POOL_BOOL_FIELDS:
        value = pool.get(field)
        if value is not None and not isinstance(value, bool):
            problems.error("%s.%s" % (var, field), "%r is not a boolean; use one of: true, false (without quotes)"
                           % (value,))
    sharing = pool.get("sharing")
    if isinstance(sharing, dict):
        for field in SHARING_BOOL_FIELDS:
            value = sharing.get(field)
            if value is not None and not isinstance(value, bool):
                problems.error("%s.sharing.%s" % (var, field), "%r is not a boolean; use one of: true, false "
                               "(without quotes)" % (value,))
    for field in ("consolidate_after", "expire_after"):
        value = pool.get(field)
        # Karpenter v1 takes consolidateAfter 0s (remove an empty node at once; the v1alpha5 migration
        # writes it for consolidation.enabled)
        if field == "consolidate_after" and platform == "eks":
            continue
        if isinstance(value, str) and ZERO_DURATION.match(value):
            if field == "expire_after":
                why = "expires every node as soon as it starts"
            elif platform in ("gke", "gke-autopilot"):
                why = "a GKE ComputeClass cannot take (its consolidation delay is at least 1 minute)"
            else:
                why = "removes every node the moment it is empty"
            problems.error("%s.%s" % (var, field), "%r is zero, which %s; use a positive duration such as 30s, "
                           "10m, 720h, or Never" % (value, why))
    if platform in ("eks", "gke", "gke-autopilot"):
        if pool.get("max_nodes") == 0 and pool.get("max_gpus") is None:
            problems.error(var + ".max_nodes", "0 gives the pool a GPU limit of 0, so no node can ever start; use an "
                           "integer >= 1 (or remove the pool)")
        if pool.get("max_gpus") == 0:
            problems.error(var + ".max_gpus", "0 is a GPU limit of 0, so no node can ever start; use an integer "
                           ">= gpus_per_node")


def _check_node_groups(plan, inventory, problems):
    groups = inventory.get("groups")
    if not isinstance(groups, dict):
        return
    gpu_groups = sorted(g for g in groups if g.startswith("gpu_pool")) or sorted(
        g for g in groups if g not in ("all", "ungrouped", "gpufleet_controller", "gpu_nodes"))
    owner = {}
    for i, pool in enumerate(plan.get("pools") or []):
        var = "%s[%d].node_group" % ("gpufleet_gpu_pools", i)
        group = pool.get("node_group")
        if not isinstance(group, str):
            problems.error(var, "%r is not an inventory group name; use one of: %s" % (group, ", ".join(gpu_groups)))
            continue
        if group not in groups:
            problems.error(var, "%r is not a group of the inventory, so the pool would have no nodes; use one of: "
                           "%s (or add the group under gpu_nodes in hosts.yml)"
                           % (group, ", ".join(gpu_groups) or "(no group yet)"))
        if group in owner:
            problems.error(var, "%r is already the node group of gpufleet_gpu_pools[%d]; a host belongs to one pool, "
                           "use one group per pool" % (group, owner[group]))
        else:
            owner[group] = i
    # Node names of the GPU hosts: the same mapping (and refusals) the apply path uses
    names = inventory.get("node_names") or {}
    try:
        node_names(sorted(names), dict((h, {NODE_NAME_VAR: names[h]}) for h in names))
    except GpufleetError as exc:
        for err in exc.details.get("errors") or [exc.msg]:
            var, _sep, msg = err.partition(": ")
            problems.error(var, msg)


def check(params, plan, problems):
    """Preflight: the API server's syntax for every field gpufleet renders, reserved labels, and the
    consistency rules between inputs. ``params['inventory']``: {groups, node_names} of the inventory."""
    platform = plan.get("platform")
    self_managed = platform not in ("eks", "gke", "gke-autopilot")
    extra = params.get("extra") or {}
    reason = cluster_name_error(plan.get("cluster_name"), platform,
                                {"eks_node_role": extra.get("gpu_pools_eks_node_role")})
    if reason:
        problems.error("gpufleet_cluster_name", reason)
    for i, pool in enumerate(plan.get("pools") or []):
        if isinstance(pool, dict):
            _check_pool("gpufleet_gpu_pools[%d]" % i, pool, platform, self_managed, problems)
    for var in NAMESPACE_VARS:
        value = extra.get(var)
        if value is None:
            continue
        reason = dns_label_error(value)
        if reason:
            problems.error(var, "%r is not a namespace name: %s" % (value, reason))
        elif var in OWN_NAMESPACE_VARS and reserved_problem(var, value, OWN_NAMESPACE_VARS[var]):
            problems.error(var, reserved_problem(var, value, OWN_NAMESPACE_VARS[var]))
    for var in bool_vars():
        if var in extra and var not in BOOL_VARS_CHECKED_ELSEWHERE:
            reason = bool_error(extra[var])
            if reason:
                problems.error(var, reason)
    if self_managed:
        _check_node_groups(plan, params.get("inventory") or {}, problems)
