# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Which Node a dcgm-exporter series belongs to: the one definition for the alert rules, the dashboard,
the fleet report and remediation, in PromQL and in Python.

dcgm-exporter names the node in the label ``hostname`` since upstream commit d5e5f51 (#655,
2026-05-12), so from release 4.6.0-4.8.3 (the one pinned in ``core/versions.py``) on; releases before
it (4.5.3-4.8.2 and older) spell it ``Hostname``. Its value is the exporter's ``NODE_NAME``
environment variable (``spec.nodeName`` in gpufleet's, the GPU Operator's and the upstream chart's
DaemonSet), else the container's host name; ``--no-hostname`` leaves the label out. gpufleet's scrape
job adds ``kubernetes_node`` from the scraped pod's Node, which is always the Node's name.

Fleets run several exporter versions side by side (GKE's managed DCGM, the GPU Operator's, an older
release on some pools), so every reader names the node by the first label of ``NODE_LABELS`` a series
carries, in that order: PromQL through :func:`with_node` (the result carries it as ``hostname``, the
pinned exporter's spelling) and :func:`series` (the dashboard's node filter), Python through
:func:`node_name`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# the label every query result names the node with: the pinned exporter's spelling
NODE = "hostname"
# labels naming the Node, first wins: the scrape job's, the exporter's from 4.6.0-4.8.3, before it
NODE_LABELS = ("kubernetes_node", "hostname", "Hostname")
# Python only, where none of NODE_LABELS is there (an answer to another query): kube-state-metrics' node,
# the scrape target (its port dropped)
FALLBACK_LABELS = ("node", "instance")
# separator of the joined labels in with_node (never part of a Node name, a DNS subdomain)
_SEP = ";"
# host:port or [IPv6]:port of a scrape target
_PORT = re.compile(r"^(\[[^\]]*\]|[^:]+):[0-9]+$")


def node_name(labels):
    """The Node a series' labels (a dict) belong to: the first of ``NODE_LABELS`` + ``FALLBACK_LABELS`` set,
    ``instance`` without its port; None when none is."""
    for key in NODE_LABELS + FALLBACK_LABELS:
        value = (labels or {}).get(key)
        if value:
            port = _PORT.match(value) if key == "instance" else None
            return port.group(1) if port else value
    return None


def with_node(expr):
    """PromQL: ``expr`` with the label ``hostname`` set to the first of ``NODE_LABELS`` each series carries
    (left out where it carries none); the other labels stay as they are."""
    joined = 'label_join(%s, "%s", "%s", %s)' % (expr, NODE, _SEP, ", ".join('"%s"' % k for k in NODE_LABELS))
    return 'label_replace(%s, "%s", "$1", "%s", "%s*([^%s]*).*")' % (joined, NODE, NODE, _SEP, _SEP)


def series(metric, node="$node", matchers="", around="%s"):
    """PromQL for the dashboard: ``metric{matchers}`` of the Nodes whose name (chosen as in :func:`with_node`)
    matches the regular expression ``node`` (a Grafana variable), through :func:`with_node`. ``around`` wraps
    each selector before that (``rate(%s[5m])``: a range function takes the selector itself)."""
    extra = (", " + matchers) if matchers else ""
    branches = []
    for i, key in enumerate(NODE_LABELS):
        before = ", ".join('%s=""' % k for k in NODE_LABELS[:i])
        branches.append(around % ('%s{%s%s=~"%s"%s}' % (metric, before + ", " if before else "", key, node, extra)))
    return with_node("(%s)" % " or ".join(branches))
