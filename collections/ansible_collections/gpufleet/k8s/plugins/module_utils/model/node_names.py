# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Which Kubernetes Node each inventory host is: ``gpufleet_node_name`` or the inventory hostname,
checked against the API server's rule for Node names. Used by preflight's syntax checks (model) and
by the label/taint apply path (pools), so it lives here, below both."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError

NODE_NAME_VAR = "gpufleet_node_name"
# RFC 1123 DNS subdomain: what the API server accepts as a Node name.
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def node_names(hosts, hostvars):
    """{host: Node name}: ``gpufleet_node_name`` of the host, else the inventory hostname.

    Raises GpufleetError naming the host when a name is not a valid Node name or when two hosts map
    to the same Node."""
    out, seen, errors = {}, {}, []
    for host in hosts:
        name = (hostvars.get(host) or {}).get(NODE_NAME_VAR)
        given = name not in (None, "")
        name = str(name) if given else str(host)
        if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
            errors.append("%s (host %s): %r is not a Kubernetes Node name (lowercase RFC 1123 DNS subdomain)%s"
                          % (NODE_NAME_VAR, host, name,
                             "" if given else "; set %s to the host's Node name (kubectl get nodes)" % NODE_NAME_VAR))
            continue
        if name in seen:
            errors.append("%s (host %s): Node %r is already the Node of host %s; each host needs its own Node"
                          % (NODE_NAME_VAR, host, name, seen[name]))
            continue
        seen[name] = host
        out[host] = name
    if errors:
        raise GpufleetError("; ".join(errors), errors=errors)
    return out
