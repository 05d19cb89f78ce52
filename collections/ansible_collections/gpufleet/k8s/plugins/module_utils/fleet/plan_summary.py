# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The plan summary (``plan.md`` in the build directory): the cluster, the pools and the rendered files.

Written in Python rather than as a Jinja template: a template reads the plan through Ansible's lazy
containers item by item, which for a fleet of hundreds of pools and a thousand rendered files cost
more than everything else the report step does."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def _sharing(sharing):
    text = "%s" % (sharing.get("mode"),)
    if "replicas" in sharing:
        text += " x%s" % (sharing["replicas"],)
    if "mig_strategy" in sharing:
        text += " %s" % (sharing["mig_strategy"],)
    return text


def plan_markdown(plan, files):
    """``plan.md``'s text for the normalized ``plan`` (preflight's) and the rendered ``files``
    (paths relative to the build directory, in listing order)."""
    lines = [
        "# gpufleet plan: %s (%s)" % (plan["cluster_name"], plan["platform"]),
        "",
        "Mode: %s" % ("apply" if plan.get("apply") else "render (nothing was changed)"),
        "Add-ons: %s" % (plan.get("addons_mode"),),
        "",
        "| pool | GPU type | GPUs/node | nodes (min-max) | sharing | node group |",
        "|---|---|---|---|---|---|",
    ]
    for pool in plan.get("pools") or []:
        max_nodes = pool.get("max_nodes")
        lines.append("| %s | %s | %s | %s-%s | %s | %s |" % (
            pool.get("name"), pool.get("gpu_type"), pool.get("gpus_per_node"), pool.get("min_nodes"),
            "unbounded" if max_nodes is None else max_nodes, _sharing(pool.get("sharing") or {}),
            pool.get("node_group")))
    class_sharing = plan.get("gke_class_sharing") or []
    if class_sharing:
        lines += ["", "## GPU sharing of the ComputeClass pools"] + ["- %s" % (line,) for line in class_sharing]
    lines += ["", "## Rendered files"] + ["- %s" % (name,) for name in files] + ["", "## Next"]
    if plan.get("apply"):
        lines.append("Applied to the cluster; run playbooks/validate.yml to check GPUs are schedulable.")
    else:
        lines += ["Review the files above (or commit them for GitOps), then run again with gpufleet_apply: true",
                  "to bootstrap the GPU hosts and apply the manifests."]
    return "\n".join(lines) + "\n"
