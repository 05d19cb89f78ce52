# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Drain a Node the way ``kubectl drain`` does.

Which pods go, in kubectl's order of rules (a pod is judged by the first rule that decides it):
1. a pod already being deleted is waited for, not evicted again;
2. a DaemonSet pod is left alone when DaemonSets are ignored (its controller would recreate it), and
   blocks the drain otherwise - before any local-storage rule, so the device plugin's and GFD's
   emptyDir never block a drain;
3. a mirror (static) pod is left alone: the API cannot delete it;
4. a running pod with an emptyDir volume blocks unless ``delete_emptydir_data``;
5. a running pod without a controller blocks unless ``force``.
Finished pods (Succeeded/Failed) pass rules 4 and 5.

Evictions go through the Eviction API, so PodDisruptionBudgets are honoured: a 429 (the budget allows
no disruption now) is retried until the drain timeout, as kubectl retries it, and a drain that runs
out of time names each budget still blocking and the pods it protects.

The API is reached through a small interface (``list_pods``, ``evict``, ``list_pdbs``, ``get_pod``) so
the rules are unit-tested over tables and the module talks to the real API server.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


class DrainError(Exception):
    """The drain cannot go on; the message says why and what to set."""


def _meta(pod):
    return pod.get("metadata") or {}


def pod_name(pod):
    return "%s/%s" % (_meta(pod).get("namespace"), _meta(pod).get("name"))


def _controller(pod):
    for ref in _meta(pod).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def _finished(pod):
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _has_emptydir(pod):
    return any("emptyDir" in (v or {}) for v in (pod.get("spec") or {}).get("volumes") or [])


def classify(pods, ignore_daemonsets=True, delete_emptydir_data=False, force=False):
    """(to_evict, waiting, skipped, blockers): pods to evict, pods already terminating, pods left
    alone with the reason, and a list of (reason, pod names) that forbid the drain."""
    to_evict, waiting, skipped = [], [], []
    blocked = {}
    for pod in pods:
        name = pod_name(pod)
        if _meta(pod).get("deletionTimestamp"):
            waiting.append(pod)
            continue
        owner = _controller(pod)
        if owner and owner.get("kind") == "DaemonSet":
            if ignore_daemonsets:
                skipped.append((name, "DaemonSet"))
            else:
                blocked.setdefault("DaemonSet-managed pods (set ignore_daemonsets)", []).append(name)
            continue
        if MIRROR_ANNOTATION in (_meta(pod).get("annotations") or {}):
            skipped.append((name, "mirror pod"))
            continue
        if not _finished(pod):
            if _has_emptydir(pod) and not delete_emptydir_data:
                blocked.setdefault("pods with local storage (emptyDir data would be lost; "
                                   "set gpufleet_upgrade_delete_emptydir_data=true to evict them)", []).append(name)
                continue
            if owner is None and not force:
                blocked.setdefault("pods without a controller (not recreated once evicted; "
                                   "set gpufleet_upgrade_drain_force=true to delete them)", []).append(name)
                continue
        to_evict.append(pod)
    return to_evict, waiting, skipped, sorted(blocked.items())


def _selector_matches(selector, labels):
    """A LabelSelector (matchLabels + matchExpressions) against a pod's labels."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def blocking_budgets(pods, pdbs):
    """{budget "namespace/name (status)": [pod names]} for the pods the budgets select."""
    out = {}
    for pod in pods:
        labels = _meta(pod).get("labels") or {}
        for pdb in pdbs:
            meta = pdb.get("metadata") or {}
            if meta.get("namespace") != _meta(pod).get("namespace"):
                continue
            if not _selector_matches((pdb.get("spec") or {}).get("selector"), labels):
                continue
            status = pdb.get("status") or {}
            key = "%s/%s (allows %s disruption(s): %s of %s pods healthy, %s needed)" % (
                meta.get("namespace"), meta.get("name"), status.get("disruptionsAllowed", 0),
                status.get("currentHealthy", "?"), status.get("expectedPods", "?"), status.get("desiredHealthy", "?"))
            out.setdefault(key, []).append(pod_name(pod))
    return out


class TooManyRequests(Exception):
    """The Eviction API answered 429: a PodDisruptionBudget allows no disruption now."""

    def __init__(self, message=""):
        super(TooManyRequests, self).__init__(message)
        self.message = message


def drain(api, node, ignore_daemonsets=True, delete_emptydir_data=False, force=False, grace_period=None,
          timeout=600, poll=5.0, check_mode=False, clock=time.monotonic, sleep=time.sleep):
    """Evict every pod that must leave ``node``; returns a result dict. Raises DrainError.

    ``api``: ``list_pods(node)`` -> pods, ``evict(namespace, name, grace_period)`` (raises
    TooManyRequests on 429, returns False when the pod is gone), ``get_pod(namespace, name)`` -> pod or
    None, ``list_pdbs(namespaces)`` -> PodDisruptionBudgets.
    """
    pods = api.list_pods(node)
    to_evict, waiting, skipped, blockers = classify(pods, ignore_daemonsets, delete_emptydir_data, force)
    if blockers:
        raise DrainError("cannot drain node %s: %s" % (node, "; ".join(
            "%s: %s" % (reason, ", ".join(names)) for reason, names in blockers)))
    result = dict(evicted=[pod_name(p) for p in to_evict], left_alone=["%s (%s)" % s for s in skipped],
                  changed=bool(to_evict))
    if check_mode or not (to_evict or waiting):
        return result
    deadline = clock() + timeout
    pending = list(to_evict)
    last_refusal = {}
    while pending:
        still = []
        for pod in pending:
            meta = _meta(pod)
            try:
                api.evict(meta["namespace"], meta["name"], grace_period)
            except TooManyRequests as exc:
                last_refusal[pod_name(pod)] = exc.message
                still.append(pod)
        pending = still
        if not pending:
            break
        if clock() >= deadline:
            budgets = blocking_budgets(pending, api.list_pdbs(sorted(set(_meta(p)["namespace"] for p in pending))))
            detail = "; ".join("PodDisruptionBudget %s protects %s" % (b, ", ".join(names))
                               for b, names in sorted(budgets.items()))
            raise DrainError(
                "drain of node %s timed out after %ss: evicting %s is refused because it would violate a "
                "PodDisruptionBudget (%s). Free the budget (scale the workload up or wait for its pods to be "
                "healthy), or raise gpufleet_upgrade_drain_timeout" % (
                    node, timeout, ", ".join(pod_name(p) for p in pending),
                    detail or "; ".join(sorted(set(last_refusal.values())))))
        sleep(poll)
    # wait until every evicted (or already terminating) pod is gone from the node
    gone_wait = [(_meta(p)["namespace"], _meta(p)["name"], _meta(p).get("uid")) for p in to_evict + waiting]
    while gone_wait:
        left = []
        for namespace, name, uid in gone_wait:
            pod = api.get_pod(namespace, name)
            if pod is not None and _meta(pod).get("uid") == uid:
                left.append((namespace, name, uid))
        gone_wait = left
        if not gone_wait:
            break
        if clock() >= deadline:
            raise DrainError("drain of node %s timed out after %ss waiting for evicted pods to terminate: %s" % (
                node, timeout, ", ".join("%s/%s" % entry[:2] for entry in gone_wait)))
        sleep(min(poll, 1.0))
    return result
