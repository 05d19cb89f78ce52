# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""What a whole-tree apply decides before and after it talks to the API server: the order objects go in,
what counts as a change in a dry-run answer, and the ApplySet bookkeeping that lets a later run prune what
the inventory no longer renders. No I/O here; module_utils/kube/apply_run.py does the requests.

ApplySet (Kubernetes KEP-3659, the convention ``kubectl apply --prune --applyset`` uses):

- one *parent* object per set, labelled ``applyset.kubernetes.io/id`` with an id derived from the parent's
  own name, namespace, kind and group, and annotated with the tooling that manages the set, the group-kinds
  its members have (``contains-group-kinds``) and the namespaces they live in besides the parent's
  (``additional-namespaces``);
- every member labelled ``applyset.kubernetes.io/part-of: <id>``.

Pruning lists only those group-kinds in only those namespaces, selects by the part-of label and deletes
what the current render does not name: an object without the label is never a candidate.

gpufleet's parent is a Secret per stage component (``cluster/device-plugin``, ``provision/karpenter``, ...)
in the namespace ``gpufleet-system``: a Secret is the parent kind kubectl itself defaults to, so
``kubectl`` can read the set; it is namespaced, so a namespace gpufleet owns keeps every parent of a cluster
in one place (cluster-scoped members are allowed), and a component's parent lives as long as that namespace,
not as long as one of the component's own namespaces (deleting an add-on's namespace must not lose the record
of its cluster-scoped members). One parent per component, not per stage: a component removed with
``*_state: absent`` or left out by a role's ``when`` never prunes another component's objects.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import hashlib


FIELD_MANAGER = "gpufleet"
PARENT_NAMESPACE = "gpufleet-system"
TOOLING = "gpufleet/v1"
ID_LABEL = "applyset.kubernetes.io/id"
PART_OF = "applyset.kubernetes.io/part-of"
TOOLING_ANNOTATION = "applyset.kubernetes.io/tooling"
GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
NAMESPACES = "applyset.kubernetes.io/additional-namespaces"
CRD_KIND = ("apiextensions.k8s.io", "CustomResourceDefinition")

# fields the server sets or moves on every write; a dry-run answer that differs from the live object only
# there changes nothing
_VOLATILE_METADATA = ("managedFields", "resourceVersion", "generation", "creationTimestamp", "uid")


def group_of(obj):
    api_version = obj.get("apiVersion") or ""
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def group_kind(obj):
    return (group_of(obj), obj.get("kind") or "")


def gk_text(gk):
    """("apps", "DaemonSet") -> "DaemonSet.apps"; the core group has no suffix ("Namespace")."""
    group, kind = gk
    return "%s.%s" % (kind, group) if group else kind


def parse_gk(text):
    kind, _dot, group = text.partition(".")
    return (group, kind)


def key(obj, default_namespace=None):
    """(group, kind, namespace, name): what makes two objects the same object."""
    meta = obj.get("metadata") or {}
    return group_kind(obj) + (meta.get("namespace") or default_namespace or "", meta.get("name") or "")


def label(obj):
    """Kind/name or Kind/namespace/name, as errors and results name an object."""
    meta = obj.get("metadata") or {}
    parts = [obj.get("kind") or "?"] + ([meta["namespace"]] if meta.get("namespace") else []) + \
        [meta.get("name") or "?"]
    return "/".join(parts)


def is_crd(obj):
    return group_kind(obj) == CRD_KIND


def levels(objects):
    """The objects in the dependency levels they are applied in, each level in the given order:
    CustomResourceDefinitions, then Namespaces, then everything else. Empty levels are left out."""
    crds = [o for o in objects if is_crd(o)]
    namespaces = [o for o in objects if group_kind(o) == ("", "Namespace")]
    rest = [o for o in objects if not is_crd(o) and group_kind(o) != ("", "Namespace")]
    return [level for level in (crds, namespaces, rest) if level]


def delete_levels(objects):
    """The order objects are deleted in: the apply order reversed, level by level and within each level."""
    return [list(reversed(level)) for level in reversed(levels(objects))]


def comparable(obj):
    """``obj`` without what the server rewrites on every write, for comparing a live object with a dry-run
    answer; None stays None."""
    if obj is None:
        return None
    out = copy.deepcopy(obj)
    meta = out.get("metadata") or {}
    for field in _VOLATILE_METADATA:
        meta.pop(field, None)
    return out


def differs(live, answer):
    """Whether the server's (dry-run) answer is another object than the live one."""
    return live is None or comparable(live) != comparable(answer)


def applyset_id(name, namespace, kind="Secret", group=""):
    """The parent's id: ``applyset-`` + unpadded URL-safe base64 of the SHA-256 of
    ``<name>.<namespace>.<kind>.<group>`` + ``-v1``."""
    digest = hashlib.sha256(("%s.%s.%s.%s" % (name, namespace, kind, group)).encode("utf-8")).digest()
    return "applyset-%s-v1" % base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def parent_name(component):
    """The parent Secret's name for a component path: cluster/device-plugin -> gpufleet-cluster-device-plugin."""
    cleaned = "".join(c if c.isalnum() else "-" for c in component.lower()).strip("-")
    return ("gpufleet-" + cleaned)[:253].rstrip("-")


def with_part_of(obj, set_id):
    """A copy of ``obj`` labelled as a member of the set (the rendered object itself is not touched)."""
    out = copy.deepcopy(obj)
    meta = out.setdefault("metadata", {})
    meta["labels"] = dict(meta.get("labels") or {}, **{PART_OF: set_id})
    return out


def scope(objects, parent_namespace=PARENT_NAMESPACE):
    """(group-kinds, namespaces other than the parent's) the objects cover, both sorted."""
    gks = sorted(set(group_kind(o) for o in objects), key=gk_text)
    namespaces = sorted(set((o.get("metadata") or {}).get("namespace") or "" for o in objects)
                        - {"", parent_namespace})
    return gks, namespaces


def recorded_scope(parent):
    """(group-kinds, namespaces) a live parent records; ([], []) for None."""
    notes = ((parent or {}).get("metadata") or {}).get("annotations") or {}
    gks = [parse_gk(t) for t in (notes.get(GROUP_KINDS) or "").split(",") if t]
    namespaces = [n for n in (notes.get(NAMESPACES) or "").split(",") if n]
    return gks, namespaces


def parent_object(component, gks, namespaces, parent_namespace=PARENT_NAMESPACE):
    """The parent Secret recording ``gks`` and ``namespaces`` (as kubectl writes them: sorted, comma-joined)."""
    name = parent_name(component)
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {
            "name": name, "namespace": parent_namespace,
            "labels": {ID_LABEL: applyset_id(name, parent_namespace),
                       "app.kubernetes.io/managed-by": "gpufleet"},
            "annotations": {
                TOOLING_ANNOTATION: TOOLING,
                GROUP_KINDS: ",".join(sorted(set(gk_text(gk) for gk in gks))),
                NAMESPACES: ",".join(sorted(set(namespaces) - {parent_namespace})),
                "gpufleet.io/component": component,
            },
        },
    }


def union_scope(parent, objects, parent_namespace=PARENT_NAMESPACE):
    """What a run must list to prune: the scope the live parent recorded plus the scope of this render."""
    old_gks, old_namespaces = recorded_scope(parent)
    gks, namespaces = scope(objects, parent_namespace)
    return (sorted(set(old_gks) | set(gks), key=gk_text), sorted(set(old_namespaces) | set(namespaces)))


def prune_candidates(listed, objects, set_id):
    """The listed live objects to delete: members of the set (part-of label equal to ``set_id``) that this
    render does not name. Anything without that label is never a candidate, whatever else it carries; an
    object already being deleted is not one either."""
    wanted = set(key(o) for o in objects)
    out, seen = [], set()
    for live in listed:
        meta = live.get("metadata") or {}
        k = key(live)
        if (meta.get("labels") or {}).get(PART_OF) != set_id or meta.get("deletionTimestamp") or k in wanted \
                or k in seen:
            continue
        seen.add(k)
        out.append(live)
    return out


def foreign_parent(parent):
    """Why a live object of the parent's name cannot be used as gpufleet's parent, or ''."""
    if parent is None:
        return ""
    notes = (parent.get("metadata") or {}).get("annotations") or {}
    tooling = notes.get(TOOLING_ANNOTATION)
    if tooling and tooling.split("/", 1)[0] != TOOLING.split("/", 1)[0]:
        return "its applyset is managed by %s, not gpufleet" % tooling
    return ""


ROLLOUT = (("apps", "Deployment"), ("apps", "DaemonSet"), ("apps", "StatefulSet"))


def rolled_out(live):
    """Whether a live Deployment, DaemonSet or StatefulSet has rolled out its current generation."""
    if live is None:
        return False
    status, meta = live.get("status") or {}, live.get("metadata") or {}
    if status.get("observedGeneration", 0) < meta.get("generation", 0):
        return False
    if live.get("kind") == "DaemonSet":
        want = status.get("desiredNumberScheduled", 0)
        return status.get("updatedNumberScheduled", 0) >= want and status.get("numberAvailable", 0) >= want
    want = (live.get("spec") or {}).get("replicas", 1)
    return status.get("updatedReplicas", 0) >= want and status.get("availableReplicas", 0) >= want
