# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Which namespaces gpufleet may label, relax and delete: only the ones it created.

An add-on's namespace (``nvidia_device_plugin_namespace``, ``dcgm_exporter_namespace``,
``gpu_operator_namespace``, ``gpu_monitoring_namespace``, NFD's) is rendered as a Namespace object with
Pod Security labels (``enforce: privileged`` for the node agents) and ``app.kubernetes.io/managed-by:
gpufleet``. Applied over a namespace someone else made, that relaxes Pod Security for everything there;
deleted with ``<role>_state: absent``, it takes everything there with it. So:

- preflight refuses the system namespaces as add-on namespaces (:func:`reserved_problem`): ``default``,
  ``kube-*`` (Kubernetes reserves the prefix), ``openshift`` and ``openshift-*`` (OpenShift's own; the
  OpenShift preset's namespaces are gpufleet's fixed choices, not inputs), and ``gpufleet-system`` (where
  gpufleet keeps its ApplySet records, module_utils/kube/apply_tree.py);
- when gpufleet creates a Namespace it records that on it, in the annotation ``gpufleet.io/created-by``
  whose value is the component that created it (``cluster/dcgm-exporter``);
- before a Namespace object is applied or deleted, the live Namespace is read (:func:`guard`):

  ===========================  ===================================  =========================================
  live Namespace               apply (state present)                delete (state absent)
  ===========================  ===================================  =========================================
  none                         created, annotated                   nothing to delete
  created by this component    applied, annotation kept             deleted, and the run says so
  made by gpufleet before the  applied, annotation added (adopted)  deleted, and the run says so
  annotation existed [1]_
  created by another gpufleet  left as it is (not applied)          kept while its creator uses it [2]_
  component
  anyone else's                left as it is; a warning names the   kept, with everything else in it; only
                               labels the add-on needs there        the component's own objects are removed
  ===========================  ===================================  =========================================

  .. [2] a namespace of gpufleet's that several components share goes with the last of them: on delete (and in
     the ApplySet prune) it is kept while another component's ApplySet parent (gpufleet-system) records objects
     in it, whoever created it.
  .. [1] no annotation, the label ``app.kubernetes.io/managed-by: gpufleet``, and no field manager but
     ``gpufleet`` in ``metadata.managedFields``: a Namespace created by a server-side apply of gpufleet
     (older versions) has exactly that; one created by anyone else carries its creator's entry (the API
     server records who set ``kubernetes.io/metadata.name`` at creation), even after gpufleet relabelled it.

A namespace gpufleet created is still not gpufleet's to delete while it holds objects gpufleet did not create
(:func:`foreign_objects`, read before the delete and before an ApplySet prune would delete it): a user's ConfigMap
in ``gpufleet-monitoring`` would go with it. Such a namespace is kept, and the warning names what is in it (kind/name,
the first FOREIGN_LISTED). Not counted as someone else's: objects labelled ``app.kubernetes.io/managed-by:
gpufleet``, the objects being deleted, objects with an owner (Pods of a DaemonSet, ReplicaSets, EndpointSlices:
their owner is judged), what Kubernetes and OpenShift put in every namespace (ServiceAccount ``default``, ConfigMap
``kube-root-ca.crt``, service-account token Secrets, ...), Events, Endpoints and Leases (made by controllers and
the pods running there), objects OLM made for gpufleet's Subscription (label ``operators.coreos.com/...``), and
the metrics.k8s.io group (a view of the pods). A resource that cannot be listed keeps the namespace too, named.

The namespaced objects of a namespace that is kept are applied and deleted as always. The read and the
apply are two requests: a Namespace someone creates in between is applied over as gpufleet's (a window of
milliseconds within one run).

The validate stage's namespace (``gpu_validate_namespace``) lives only while the stage runs: gpufleet creates it,
annotated, and deletes it with its Jobs at the end. The stage refuses to start when that namespace exists and this
stage did not create it (:func:`transient_problem`), because its cleanup would delete the namespace.

``guard`` is the hook the tree apply (module_utils/kube/apply_run.py) calls with the objects of one component;
``prunable`` filters what its prune would delete. No I/O here beyond the ``get`` callable given.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

CREATED_BY = "gpufleet.io/created-by"
MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
FIELD_MANAGER = "gpufleet"
# module_utils/kube/apply_tree.py PARENT_NAMESPACE (a unit test keeps them equal)
RECORDS_NAMESPACE = "gpufleet-system"
RESERVED = ("default", "kube-system", "kube-public", "kube-node-lease", "openshift", RECORDS_NAMESPACE)
RESERVED_PREFIXES = ("kube-", "openshift-")
# the namespace inputs of the add-ons whose Namespace gpufleet creates (and deletes with *_state: absent)
NAMESPACE_VARS = ("nvidia_device_plugin_namespace", "dcgm_exporter_namespace", "gpu_operator_namespace",
                  "gpu_monitoring_namespace", "gpu_validate_namespace")

NEW, OURS, LEGACY, OTHER, FOREIGN = "new", "ours", "legacy", "other component", "foreign"

# what a namespace holds that does not make it someone else's (see the module's docstring)
FOREIGN_LISTED = 10
DERIVED_KINDS = frozenset([("", "Event"), ("events.k8s.io", "Event"), ("", "Endpoints"),
                           ("discovery.k8s.io", "EndpointSlice"), ("coordination.k8s.io", "Lease")])
SKIPPED_GROUPS = ("metrics.k8s.io",)
DEFAULT_OBJECTS = frozenset([("", "ServiceAccount", "default"), ("", "ConfigMap", "kube-root-ca.crt"),
                             # OpenShift, in every project
                             ("", "ConfigMap", "openshift-service-ca.crt"), ("", "ServiceAccount", "builder"),
                             ("", "ServiceAccount", "deployer"),
                             ("rbac.authorization.k8s.io", "RoleBinding", "system:deployers"),
                             ("rbac.authorization.k8s.io", "RoleBinding", "system:image-builders"),
                             ("rbac.authorization.k8s.io", "RoleBinding", "system:image-pullers")])
DERIVED_SECRET_TYPES = ("kubernetes.io/service-account-token", "kubernetes.io/dockercfg")


def reserved_reason(name):
    """Why ``name`` cannot be a namespace gpufleet creates and deletes, or ''."""
    if not isinstance(name, str):
        return ""
    if name == RECORDS_NAMESPACE:
        return "is where gpufleet keeps its ApplySet records (deleting it with the add-on would lose them)"
    if name in RESERVED or name.startswith(RESERVED_PREFIXES):
        return "is a system namespace (Kubernetes or OpenShift): gpufleet would relax its Pod Security and " \
               "could delete it with the add-on"
    return ""


def reserved_problem(var, name, example):
    """The preflight message for ``var`` set to a reserved namespace, or ''. ``example``: the variable's
    default, named as what to use instead."""
    reason = reserved_reason(name)
    if not reason:
        return ""
    return ("%r %s; use a namespace of its own that gpufleet creates and owns (e.g. %s), not default, kube-*, "
            "openshift, openshift-* or %s" % (name, reason, example, RECORDS_NAMESPACE))


def owner(live, component):
    """(status, detail) of the live Namespace ``live`` (None: it does not exist) for ``component``:
    NEW, OURS, LEGACY, OTHER (detail: the creating component) or FOREIGN."""
    if live is None:
        return NEW, ""
    meta = live.get("metadata") or {}
    created_by = (meta.get("annotations") or {}).get(CREATED_BY)
    if created_by:
        return (OURS, created_by) if created_by == component else (OTHER, created_by)
    managers = set(entry.get("manager") for entry in meta.get("managedFields") or [])
    if (meta.get("labels") or {}).get(MANAGED_BY_KEY) == FIELD_MANAGER and managers == {FIELD_MANAGER}:
        return LEGACY, ""
    return FOREIGN, ""


def _is_namespace(obj):
    return obj.get("apiVersion") == "v1" and obj.get("kind") == "Namespace"


def _name(obj):
    return (obj.get("metadata") or {}).get("name") or ""


def annotated(obj, component):
    """A copy of the Namespace object ``obj`` recording ``component`` as its creator."""
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta["annotations"] = dict(meta.get("annotations") or {}, **{CREATED_BY: component})
    return out


def needed_labels(obj, live):
    """The labels of the rendered Namespace ``obj`` the add-on relies on (Pod Security and the like; not
    gpufleet's own app.kubernetes.io/* bookkeeping) that the live Namespace lacks or sets otherwise."""
    have = ((live or {}).get("metadata") or {}).get("labels") or {}
    want = (obj.get("metadata") or {}).get("labels") or {}
    return dict((k, v) for k, v in sorted(want.items())
                if not k.startswith("app.kubernetes.io/") and have.get(k) != v)


def _group(api_version):
    return api_version.split("/")[0] if "/" in (api_version or "") else ""


def gpufleets(obj, group, kind, rendered=()):
    """Whether the live namespaced object ``obj`` (of API ``group`` and ``kind``) counts as gpufleet's, or as made
    by Kubernetes for what is there, when deciding whether its namespace may be deleted. ``rendered``: the
    (kind, name) of the objects being deleted with it."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    labels = meta.get("labels") or {}
    if labels.get(MANAGED_BY_KEY) == FIELD_MANAGER or (kind, name) in rendered:
        return True
    if meta.get("ownerReferences") or (group, kind) in DERIVED_KINDS or (group, kind, name) in DEFAULT_OBJECTS:
        return True
    if group == "" and kind == "Secret" and obj.get("type") in DERIVED_SECRET_TYPES \
            and (meta.get("annotations") or {}).get("kubernetes.io/service-account.name"):
        return True
    return any(k.startswith("operators.coreos.com/") for k in labels)


def namespaced_resources(get):
    """[(group, path prefix, plural, kind)] of every listable namespaced resource the server serves (preferred
    versions), and the discovery documents that could not be read ([text])."""
    out, problems = [], []
    docs = [("", "/api/v1")]
    groups = get("/apis") or {}
    for group in groups.get("groups") or []:
        if group.get("name") in SKIPPED_GROUPS:
            continue
        version = (group.get("preferredVersion") or {}).get("groupVersion")
        if version:
            docs.append((group["name"], "/apis/%s" % version))
    for group, prefix in docs:
        try:
            found = get(prefix) or {}
        except Exception as exc:  # an aggregated API that is down: that group cannot be checked
            problems.append("%s (%s)" % (prefix, exc))
            continue
        for res in found.get("resources") or []:
            if "/" in res.get("name", "") or not res.get("namespaced") or "list" not in (res.get("verbs") or []):
                continue
            if (group, res.get("kind")) in DERIVED_KINDS:
                continue
            out.append((group, prefix, res["name"], res["kind"]))
    return out, problems


def foreign_objects(get, namespace, rendered=()):
    """The objects in ``namespace`` gpufleet did not create (:func:`gpufleets`), as sorted ``Kind/name`` texts,
    and resources that could not be listed (``resource (error)`` texts; the namespace is kept for them too).
    ``rendered``: (kind, name) of the objects deleted together with it."""
    resources, problems = namespaced_resources(get)
    found = []
    for group, prefix, plural, kind in resources:
        try:
            listed = get("%s/namespaces/%s/%s" % (prefix, namespace, plural)) or {}
        except Exception as exc:  # forbidden, or an API that fails: not known to be empty
            problems.append("%s (%s)" % (plural if not group else "%s.%s" % (plural, group), exc))
            continue
        for item in listed.get("items") or []:
            if not gpufleets(item, group, kind, rendered):
                found.append("%s/%s" % (kind, (item.get("metadata") or {}).get("name")))
    return sorted(found), problems


def contents_note(name, contents, component):
    """The warning for a namespace gpufleet created that is kept because of ``contents``
    (:func:`foreign_objects`' answer)."""
    found, problems = contents
    parts = []
    if found:
        listed = ", ".join(found[:FOREIGN_LISTED])
        if len(found) > FOREIGN_LISTED:
            listed += " and %d more" % (len(found) - FOREIGN_LISTED)
        parts.append("it holds objects gpufleet did not create: %s" % listed)
    if problems:
        parts.append("what it holds could not all be read (%s)" % "; ".join(problems[:3]))
    return ("Namespace %s is kept although gpufleet created it: %s. Only %s's objects there are removed; delete "
            "the namespace yourself once those can go (kubectl delete namespace %s)"
            % (name, "; ".join(parts), component, name))


def decide(objects, lives, component, state, users=None, contents=None):
    """(objects to apply or delete, warnings) for one component's ``objects``; ``lives`` maps each rendered
    Namespace's name to its live object (None: absent). ``users`` ({component: namespaces its ApplySet records},
    see :func:`namespace_users`; None: not known) keeps a gpufleet namespace that another component still uses.
    ``contents`` ({name: :func:`foreign_objects`' answer}) keeps one that holds objects gpufleet did not create.
    Objects other than Namespaces pass unchanged."""
    out, notes = [], []
    for obj in objects:
        if not _is_namespace(obj):
            out.append(obj)
            continue
        name = _name(obj)
        live = lives.get(name)
        status, creator = owner(live, component)
        if state == "present":
            if status in (NEW, OURS, LEGACY):
                out.append(annotated(obj, component))
            elif status == OTHER:
                notes.append("Namespace %s was created by gpufleet's %s, not %s: left as it is (its labels are %s's)"
                             % (name, creator, component, creator))
            else:
                missing = needed_labels(obj, live)
                notes.append(
                    "Namespace %s was not created by gpufleet (no annotation %s): gpufleet does not label it and "
                    "will not delete it. %s applied only its objects there.%s"
                    % (name, CREATED_BY, component,
                       (" Its Pod Security labels are your responsibility: %s needs %s on it"
                        % (component, ", ".join("%s=%s" % kv for kv in missing.items()))) if missing else ""))
            continue
        others = sorted(c for c, spaces in (users or {}).items() if c != component and name in spaces)
        if status == NEW:
            out.append(obj)  # nothing to delete; deleting a missing object changes nothing
        elif status == FOREIGN:
            notes.append("Namespace %s is kept with everything else in it: gpufleet did not create it (no annotation "
                         "%s); only %s's objects there are removed" % (name, CREATED_BY, component))
        elif others:
            notes.append("Namespace %s is kept: gpufleet's %s still has objects there (the namespace goes with the "
                         "last of them); only %s's objects there are removed" % (name, ", ".join(others), component))
        elif status == OTHER and users is None:
            notes.append("Namespace %s is kept with everything else in it: gpufleet's %s created it; only %s's "
                         "objects there are removed" % (name, creator, component))
        elif any((contents or {}).get(name) or ()):
            notes.append(contents_note(name, contents[name], component))
        else:
            out.append(obj)
            how = ("annotation %s: %s" % (CREATED_BY, creator)) if status == OURS else \
                ("gpufleet's %s, which no longer uses it" % creator) if status == OTHER else \
                "an earlier gpufleet version: label %s=%s, no other field manager" % (MANAGED_BY_KEY, FIELD_MANAGER)
            notes.append("Namespace %s is deleted with everything in it: gpufleet created it (%s)" % (name, how))
    return out, notes


def namespace_users(parents):
    """{component: set of namespaces} from the live ApplySet parent Secrets gpufleet keeps (module_utils/
    apply_tree.py parent_object: annotations gpufleet.io/component and applyset.kubernetes.io/additional-namespaces)."""
    users = {}
    for parent in parents or []:
        notes = (parent.get("metadata") or {}).get("annotations") or {}
        component = notes.get("gpufleet.io/component")
        if component:
            spaces = [n for n in (notes.get("applyset.kubernetes.io/additional-namespaces") or "").split(",") if n]
            users.setdefault(component, set()).update(spaces)
    return users


def guard(get, component, objects, state):
    """The hook of the tree apply: reads each rendered Namespace with ``get(path)`` (the live object, or None
    when it does not exist; errors propagate, nothing is applied then) and, to delete one gpufleet created, the
    ApplySet parents in gpufleet-system (which components still have objects in it); returns :func:`decide`'s
    (objects, warnings)."""
    names = sorted(set(_name(o) for o in objects if _is_namespace(o)))
    lives = dict((name, get("/api/v1/namespaces/%s" % name)) for name in names)
    users, contents = None, {}
    deletable = [n for n in names if owner(lives[n], component)[0] in (OURS, LEGACY, OTHER)]
    if state == "absent" and deletable:
        users = _read_users(get)
        used = set(n for c, spaces in users.items() if c != component for n in spaces)
        rendered = set((o.get("kind"), _name(o)) for o in objects)
        # only a namespace that would be deleted is listed (every resource kind in it: many reads)
        contents = dict((n, foreign_objects(get, n, rendered)) for n in deletable if n not in used)
    return decide(objects, lives, component, state, users, contents)


def _read_users(get):
    found = get("/api/v1/namespaces/%s/secrets" % RECORDS_NAMESPACE,
                {"labelSelector": "applyset.kubernetes.io/id,%s=%s" % (MANAGED_BY_KEY, FIELD_MANAGER)})
    return namespace_users((found or {}).get("items"))


def transient_problem(var, live, component):
    """Why a stage that creates a namespace and deletes it with everything in it when it ends (the validate
    stage: ``gpu_validate_namespace``) may not use the live Namespace ``live`` (None: it does not exist),
    or ''. Only one this component created (a run that stopped before its cleanup) is reused."""
    status, creator = owner(live, component)
    if status in (NEW, OURS):
        return ""
    name = _name(live)
    who = ("gpufleet's %s created it" % creator) if status == OTHER else \
        "gpufleet did not create it (no annotation %s: %s)" % (CREATED_BY, component)
    return ("%s: namespace %r exists and %s. This stage creates its own namespace and deletes it with everything "
            "in it when it ends, so it will not use this one; use a name that does not exist (e.g. the default "
            "gpufleet-validate), or delete the namespace if an earlier gpufleet run left it behind "
            "(kubectl delete namespace %s). Nothing was changed on the cluster." % (var, name, who, name))


def prunable(candidates, component, get=None, notes=None):
    """The prune candidates (live objects) without the Namespaces this component may not delete: ones it did
    not create, and (read with ``get`` when given) ones another component's ApplySet still records objects in,
    or that hold objects gpufleet did not create (:func:`foreign_objects`; the warning for each goes to ``notes``)."""
    mine = [c for c in candidates if _is_namespace(c) and owner(c, component)[0] in (OURS, LEGACY)]
    users = _read_users(get) if mine and get else {}
    used = set(n for c, spaces in users.items() if c != component for n in spaces)
    mine = [m for m in mine if _name(m) not in used]
    if mine and get:
        rendered = set((c.get("kind"), _name(c)) for c in candidates)
        kept = []
        for m in mine:
            contents = foreign_objects(get, _name(m), rendered)
            if any(contents):
                kept.append(m)
                if notes is not None:
                    notes.append(contents_note(_name(m), contents, component))
        mine = [m for m in mine if not any(m is k for k in kept)]
    return [c for c in candidates if not _is_namespace(c) or any(c is m for m in mine)]
