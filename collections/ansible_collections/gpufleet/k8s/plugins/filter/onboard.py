# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Filter of playbooks/onboard.yml: a starting inventory from a cluster's Nodes (module_utils/fleet/onboard.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.onboard import inventory_files, propose


def onboard_inventory(nodes, cluster_name, platform=None):
    """{"proposal": ..., "files": {relative path: text}} for the Node objects ``nodes``."""
    proposal = propose(json.loads(json.dumps(list(nodes or []))), str(cluster_name), platform or None)
    return {"proposal": proposal, "files": inventory_files(proposal)}


class FilterModule(object):
    def filters(self):
        return {"onboard_inventory": onboard_inventory}
