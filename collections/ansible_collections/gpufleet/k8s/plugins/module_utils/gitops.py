# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""The GitOps tree: ``build/<inv>/gitops/``, only what a GitOps controller may apply.

``build/<inv>/`` mixes appliable manifests with files that are not Kubernetes objects (scrape
job, rules file, NAP file, Helm values, MIGRATION.md, the report) and with objects gpufleet never
applies (example Jobs, migrated Karpenter objects). Pointing Argo CD or Flux at it would apply
them all. The GitOps tree holds one kustomization per component with copies of that component's
appliable manifests, a root kustomization listing the components, and (not listed by the root)
Argo CD and Flux definitions that apply the root, plus, in operator mode, the GPU Operator chart
with the rendered values (Argo CD Helm source, Flux HelmRelease).

Left out on purpose:
- ``provision/examples`` and ``provision/karpenter-migrated``: never applied;
- ``provision/nodes``: partial Node objects. gpufleet applies them server-side as field manager
  ``gpufleet``; a GitOps controller would own whole Nodes, and pruning would delete a Node;
- every file that is not a numbered manifest (``NN-kind-name.yaml``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.k8s.plugins.module_utils.yaml_support import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.files import file_diffs, plan_files, write_planned
from ansible_collections.gpufleet.k8s.plugins.module_utils.render import MANAGED_NAME, dump_yaml

GITOPS_DIR = "gitops"
STAGES = ("provision", "cluster")
NEVER_APPLIED = {"provision/examples", "provision/karpenter-migrated", "provision/nodes"}
OPERATOR_VALUES = "cluster/gpu-operator/gpu-operator-values.yaml"
HEADER = "# Rendered by gpufleet for cluster %s; do not edit by hand (GitOps tree, see README).\n"


def _is_never_applied(rel):
    return any(rel == p or rel.startswith(p + "/") for p in NEVER_APPLIED)


def components(build_dir):
    """[(component path under build_dir, [manifest file names])] of appliable components, in
    apply order (provision before cluster, then by path)."""
    found = []
    for stage in STAGES:
        top = os.path.join(build_dir, stage)
        if not os.path.isdir(top):
            continue
        for dirpath, dirs, files in os.walk(top):
            dirs.sort()
            rel = os.path.relpath(dirpath, build_dir).replace(os.sep, "/")
            if _is_never_applied(rel):
                continue
            manifests = sorted(f for f in files if MANAGED_NAME.match(f))
            if manifests:
                found.append((rel, manifests))
    return found


def component_name(rel):
    return rel.replace("/", "-")


def kustomization(resources):
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": list(resources)}


def argocd_application(name, repo_url, revision, path, namespace, project, prune):
    sync = {"syncOptions": ["ServerSideApply=true", "CreateNamespace=false"],
            "automated": {"prune": bool(prune), "selfHeal": True}}
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"project": project,
                     "source": {"repoURL": repo_url, "targetRevision": revision, "path": path},
                     "destination": {"server": "https://kubernetes.default.svc"},
                     "syncPolicy": sync}}


def flux_kustomization(name, path, namespace, source_name, prune):
    return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"interval": "10m", "path": "./" + path.lstrip("./"), "prune": bool(prune), "wait": False,
                     "sourceRef": {"kind": "GitRepository", "name": source_name}}}


def operator_apps(name, chart, values, settings):
    """Argo CD Application with the chart as Helm source, and Flux HelmRepository + HelmRelease,
    both with the rendered values inline."""
    release = settings.get("release_name") or "gpu-operator"
    namespace = chart["namespace"]
    argo = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": name + "-gpu-operator", "namespace": settings["argocd_namespace"]},
            "spec": {"project": settings["argocd_project"],
                     "source": {"repoURL": chart["repo_url"], "chart": chart["name"],
                                "targetRevision": chart["version"],
                                "helm": {"releaseName": release, "valuesObject": values}},
                     "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
                     "syncPolicy": {"syncOptions": ["ServerSideApply=true"],
                                    "automated": {"prune": bool(settings["prune"]), "selfHeal": True}}}}
    repo = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
            "metadata": {"name": "nvidia", "namespace": settings["flux_namespace"]},
            "spec": {"interval": "1h", "url": chart["repo_url"]}}
    helm_release = {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                    "metadata": {"name": release, "namespace": settings["flux_namespace"]},
                    "spec": {"interval": "10m", "releaseName": release, "targetNamespace": namespace,
                             "chart": {"spec": {"chart": chart["name"], "version": chart["version"],
                                                "sourceRef": {"kind": "HelmRepository", "name": "nvidia"}}},
                             "values": values}}
    return argo, repo, helm_release


DEFAULT_SETTINGS = {"repo_url": "", "revision": "HEAD", "path": "", "argocd_namespace": "argocd",
                    "argocd_project": "default", "flux_namespace": "flux-system", "flux_source": "gpufleet",
                    "prune": False}


def plan_tree(build_dir, cluster_name, inventory_name, settings=None, chart=None):
    """{relative path under gitops/: text} of the whole GitOps tree."""
    s = dict(DEFAULT_SETTINGS)
    s.update({k: v for k, v in (settings or {}).items() if v is not None})
    path = s["path"] or "build/%s/%s" % (inventory_name, GITOPS_DIR)
    repo_url = s["repo_url"] or "https://git.example.internal/fleet.git"
    header = HEADER % cluster_name
    out = {}
    names = []
    for rel, manifests in components(build_dir):
        name = component_name(rel)
        names.append(name)
        for manifest in manifests:
            with open(os.path.join(build_dir, rel, manifest)) as handle:
                out["%s/%s" % (name, manifest)] = handle.read()
        out["%s/kustomization.yaml" % name] = header + dump_yaml(kustomization(manifests))
    out["kustomization.yaml"] = header + dump_yaml(kustomization(names))
    app = "gpufleet-%s" % inventory_name
    note = ("# Apply this file to the cluster that runs Argo CD; it syncs %s (server-side apply).\n"
            "# Set gitops_repo_url (now %s) and gitops_revision to your repository.\n" % (path, repo_url))
    out["argocd/application.yaml"] = header + note + dump_yaml(
        argocd_application(app, repo_url, s["revision"], path, s["argocd_namespace"], s["argocd_project"], s["prune"]))
    out["flux/kustomization.yaml"] = header + (
        "# A Flux Kustomization that applies %s from the GitRepository %s/%s (create it for your repository).\n"
        % (path, s["flux_namespace"], s["flux_source"])) + dump_yaml(
        flux_kustomization(app, path, s["flux_namespace"], s["flux_source"], s["prune"]))
    values_path = os.path.join(build_dir, OPERATOR_VALUES)
    if chart and os.path.isfile(values_path):
        with open(values_path) as handle:
            values = yaml.safe_load(handle) or {}
        argo, repo, release = operator_apps(app, chart, values, s)
        out["argocd/gpu-operator.yaml"] = header + "# The GPU Operator chart with the rendered values.\n" + dump_yaml(argo)
        out["flux/gpu-operator.yaml"] = header + "# The GPU Operator chart with the rendered values.\n" + \
            dump_yaml(repo) + "---\n" + dump_yaml(release)
    return out


def stale_files(gitops_dir, wanted):
    """Files under ``gitops_dir`` that the tree no longer holds."""
    stale = []
    if os.path.isdir(gitops_dir):
        for dirpath, _dirs, files in os.walk(gitops_dir):
            for name in files:
                rel = os.path.relpath(os.path.join(dirpath, name), gitops_dir).replace(os.sep, "/")
                if rel not in wanted and not name.startswith(".tmp-"):
                    stale.append(rel)
    return sorted(stale)


def check_chart(chart):
    for key in ("repo_url", "name", "version", "namespace"):
        if not (chart or {}).get(key):
            raise GpufleetError("gitops: the GPU Operator chart has no %s" % key)


def write_tree(gitops_dir, wanted, check_mode=False):
    """Write ``wanted`` ({relative path: text}) under ``gitops_dir`` through the one file-writing
    path (files.py: only what differs, atomically), remove stale files and empty directories.
    Returns (changed paths, removed paths, diff entries)."""
    by_dir = {}
    for rel, text in wanted.items():
        directory, name = os.path.split(rel)
        by_dir.setdefault(directory, {})[name] = text
    stale = stale_files(gitops_dir, wanted)
    stale_by_dir = {}
    for rel in stale:
        directory, name = os.path.split(rel)
        stale_by_dir.setdefault(directory, []).append(name)
    changed, diffs = [], []
    for directory in sorted(set(by_dir) | set(stale_by_dir)):
        dest = os.path.join(gitops_dir, directory)
        writes = plan_files(dest, by_dir.get(directory, {}))
        removes = stale_by_dir.get(directory, [])
        changed += [os.path.join(directory, n) for n in sorted(writes)]
        diffs += file_diffs(dest, writes, removes)
        if not check_mode and (writes or removes):
            write_planned(dest, writes, removes)
    if not check_mode:
        for dirpath, _dirs, _files in sorted(os.walk(gitops_dir, topdown=False)) if os.path.isdir(gitops_dir) else []:
            if dirpath != gitops_dir and not os.listdir(dirpath):
                os.rmdir(dirpath)
    return changed, stale, diffs
