# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""A fleet as an AWX / Automation Controller workflow: one job template per (cluster, stage) on that cluster's
inventory, and a workflow running each cluster's stages in order (each on the success of the one before) with
the clusters side by side.

The fleet inventories are found in the project's ``inventories/``: a folder whose ``group_vars/all`` (one file
or a folder of files) sets ``fleet_run_clusters``. Each is checked like a fleet run checks it (names, clouds,
regions, inventories, pool spread) before AWX is changed. A cluster's part of the fleet pools and who it is
travel as the job template's extra vars (no credentials: those are AWX credentials).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import fleet_inventory as fleet
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.pool_spread import split_pools


# read like a fleet run reads them (one loader for both)
fleet_vars = fleet.fleet_vars


def find_fleets(project_dir):
    """[(folder name, its group_vars/all variables)] for every inventory of the project that is a fleet."""
    top = os.path.join(project_dir, "inventories")
    out = []
    for name in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        folder = os.path.join(top, name)
        if os.path.isdir(folder):
            variables = fleet_vars(folder)
            if "fleet_run_clusters" in variables:
                out.append((name, variables))
    return out


def _awx_inventory(project_dir, fleet_name, cluster, index):
    top = os.path.realpath(os.path.join(project_dir, "inventories"))
    path = os.path.realpath(cluster["inventory"])
    if os.path.dirname(path) != top or not os.path.isdir(path):
        raise GpufleetError("%s: fleet_run_clusters[%d].inventory: %s is not a folder of the project's "
                            "inventories/; AWX sources each inventory from the project (inventories/<name>)"
                            % (fleet_name, index, cluster["inventory_given"]))
    return os.path.basename(path)


def template_name(prefix, fleet_name, cluster, stage):
    return "%sfleet %s %s %s" % (prefix, fleet_name, cluster, stage)


def _credentials(fleet_name, cluster, index, known):
    """The AWX credentials of one cluster's job templates: only those its entry names, each one of ``known``
    (the names in gpufleet_awx_credentials; None skips that check)."""
    unknown = [c for c in cluster["credentials"] if known is not None and c not in known]
    if unknown:
        raise GpufleetError("%s: fleet_run_clusters[%d].credentials: %s not in gpufleet_awx_credentials (known: %s); "
                            "a cluster's job templates get only the credentials its entry names, from those gpufleet "
                            "creates" % (fleet_name, index, ", ".join(repr(c) for c in unknown),
                                         ", ".join(sorted(known)) or "none"))
    return list(cluster["credentials"])


def fleet_plan(project_dir, folder_name, variables, stages, organization, prefix="gpufleet ", credentials=None):
    """The AWX objects of one fleet: {name, workflow, inventory, job_templates, workflow_nodes}. Each job template
    carries the credentials its cluster names (``credentials``: the known credential names, or None)."""
    folder = os.path.join(project_dir, "inventories", folder_name)
    fleet_name = str(variables.get("fleet_run_name") or folder_name)
    try:
        clusters = fleet.load(variables.get("fleet_run_clusters"), folder)
        parts = split_pools(variables.get("fleet_run_pools") or [], clusters)
    except GpufleetError as exc:
        raise GpufleetError("fleet inventory inventories/%s: %s" % (folder_name, exc.msg))
    for stage in stages:
        fleet.stage_playbook(os.path.join(project_dir, "playbooks"), stage)
    templates, nodes = [], []
    for index, cluster in enumerate(clusters):
        inventory = _awx_inventory(project_dir, "inventories/" + folder_name, cluster, index)
        attached = _credentials("inventories/" + folder_name, cluster, index, credentials)
        extra = {"gpufleet_fleet_cluster": {"name": cluster["name"], "cloud": cluster["cloud"],
                                            "region": cluster["region"], "tags": list(cluster["tags"])},
                 "gpufleet_fleet_pools": parts.get(cluster["name"], [])}
        extra.update(cluster["vars"])
        for position, stage in enumerate(stages):
            name = template_name(prefix, fleet_name, cluster["name"], stage)
            templates.append({"name": name, "stage": stage, "cluster": cluster["name"],
                              "playbook": "playbooks/%s.yml" % stage, "inventory": prefix + inventory,
                              "extra_vars": extra, "credentials": attached})
            node = {"identifier": "%s %s" % (cluster["name"], stage),
                    "unified_job_template": {"name": name, "type": "job_template",
                                             "organization": {"name": organization}}}
            if position + 1 < len(stages):
                node["related"] = {"success_nodes": [{"identifier": "%s %s" % (cluster["name"], stages[position + 1])}]}
            nodes.append(node)
    return {"name": fleet_name, "folder": folder_name, "workflow": "%sfleet %s" % (prefix, fleet_name),
            "inventory": prefix + folder_name, "clusters": [c["name"] for c in clusters],
            "job_templates": templates, "workflow_nodes": nodes}


def fleet_plans(project_dir, stages, organization, prefix="gpufleet ", credentials=None):
    """The AWX objects of every fleet inventory of the project (checked; the first problem raises)."""
    if not stages:
        raise GpufleetError("gpufleet_awx_stages: empty; a fleet workflow needs at least one stage")
    plans = [fleet_plan(project_dir, name, variables, stages, organization, prefix, credentials)
             for name, variables in find_fleets(project_dir)]
    seen = {}
    for plan in plans:
        if plan["name"] in seen:
            raise GpufleetError("inventories/%s and inventories/%s both name their fleet %r (fleet_run_name); "
                                "AWX workflow names are unique" % (seen[plan["name"]], plan["folder"], plan["name"]))
        seen[plan["name"]] = plan["folder"]
    return plans


def roots(nodes):
    """Identifiers of the nodes no other node leads to (they start when the workflow starts)."""
    targets = {t["identifier"] for n in nodes for t in (n.get("related") or {}).get("success_nodes", [])}
    return [n["identifier"] for n in nodes if n["identifier"] not in targets]
