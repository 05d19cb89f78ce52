# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The API server's cross-field rules for pod specs that an OpenAPI schema cannot express.

The OpenAPI schemas (checked in the tests with kubernetes-validate) say which fields exist and their
types; the API server's pod validation also refuses combinations of fields. These are the ones a
renderer can get wrong, checked on every object gpufleet renders (module ``render_manifests``) so that
such an object is refused when it is written, not by the API server halfway through an apply:

- ``hostPID`` together with ``shareProcessNamespace`` (the API server says "ShareProcessNamespace and
  HostPID cannot both be enabled");
- two containers (init and regular together) or two volumes with the same name;
- a volume mount naming a volume the pod does not have.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def pod_spec(obj):
    """The pod spec of a Pod or of a workload's pod template (DaemonSet, Deployment, StatefulSet,
    ReplicaSet, Job, CronJob), else None."""
    if not isinstance(obj, dict):
        return None
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None
    if obj.get("kind") == "Pod":
        return spec
    if obj.get("kind") == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        return template["spec"]
    return None


def _duplicates(names):
    seen, dup = set(), []
    for name in names:
        if name in seen and name not in dup:
            dup.append(name)
        seen.add(name)
    return dup


def pod_spec_problems(spec):
    """What the API server would refuse in the pod spec ``spec``, in its terms (empty: nothing)."""
    spec = spec or {}
    out = []
    if spec.get("hostPID") and spec.get("shareProcessNamespace"):
        out.append("ShareProcessNamespace and HostPID cannot both be enabled")
    containers = list(spec.get("initContainers") or []) + list(spec.get("containers") or [])
    for name in _duplicates(c.get("name") for c in containers):
        out.append("container name %s is used twice" % name)
    volumes = [v.get("name") for v in spec.get("volumes") or []]
    for name in _duplicates(volumes):
        out.append("volume name %s is used twice" % name)
    for container in containers:
        for mount in container.get("volumeMounts") or []:
            if mount.get("name") not in volumes:
                out.append("container %s mounts volume %s, which the pod does not have"
                           % (container.get("name"), mount.get("name")))
    return out


def object_problems(objects):
    """``["<Kind> <namespace>/<name>: <problem>", ...]`` over the objects ``objects``."""
    out = []
    for obj in objects or []:
        spec = pod_spec(obj)
        if spec is None:
            continue
        meta = obj.get("metadata") or {}
        where = "%s %s%s" % (obj.get("kind"), meta["namespace"] + "/" if meta.get("namespace") else "", meta.get("name"))
        out.extend("%s: %s" % (where, problem) for problem in pod_spec_problems(spec))
    return out
