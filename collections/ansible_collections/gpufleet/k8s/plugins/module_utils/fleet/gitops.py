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

import hashlib
import os
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import (
    file_diffs, plan_files, refuse_links, write_planned)
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.input_text import text_error
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.k8s_syntax import dns_label_error, dns_subdomain_error
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import MANAGED_NAME, comment, comments, dump_yaml

GITOPS_DIR = "gitops"
STAGES = ("provision", "cluster")
NEVER_APPLIED = {"provision/examples", "provision/karpenter-migrated", "provision/nodes"}
OPERATOR_VALUES = "cluster/gpu-operator/gpu-operator-values.yaml"
HEADER = "Rendered by gpufleet for cluster %s; do not edit by hand (GitOps tree, see README)."

# The role's inputs, by settings key (preflight and the module check the same rules).
SETTINGS_VARS = (("repo_url", "gitops_repo_url"), ("revision", "gitops_revision"), ("path", "gitops_path"),
                 ("argocd_namespace", "gitops_argocd_namespace"), ("argocd_project", "gitops_argocd_project"),
                 ("flux_namespace", "gitops_flux_namespace"), ("flux_source", "gitops_flux_source"))
# RFC 3986 characters (unreserved, reserved, '%'): no space, quote, backslash, control or non-ASCII.
URL_CHARS = re.compile(r"^[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+\Z")
HOST = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z")
SCP_URL = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)@([^:/@]+):(.+)\Z")
URL_FORMS = "https://host/path, ssh://[user@]host[:port]/path or user@host:path (e.g. git@github.com:org/repo.git)"
REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/+-]*\Z")
PATH_PART = re.compile(r"^[A-Za-z0-9._-]+\Z")


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
            "spec": {"interval": "10m", "path": "./" + (path[2:] if path.startswith("./") else path),
                     "prune": bool(prune), "wait": False,
                     "sourceRef": {"kind": "GitRepository", "name": source_name}}}


def _host_error(host):
    if host.startswith("[") and host.endswith("]") and re.match(r"^\[[0-9A-Fa-f:.]+\]\Z", host):
        return None
    if not HOST.match(host or "") or len(host) > 253:
        return "host %r is not a host name" % host
    return None


def repo_url_error(value):
    """Why ``value`` cannot be the repository URL of the Argo CD Application, or None ('' is the
    placeholder). The URL is never repeated when it holds a password."""
    if value == "":
        return None
    if not isinstance(value, str):
        return "must be a string; use %s" % URL_FORMS
    reason = text_error(value)
    if reason:
        return reason
    if not URL_CHARS.match(value):
        return ("holds characters a URL may not (spaces, quotes, backslashes, non-ASCII); use %s with "
                "percent-encoding" % URL_FORMS)
    scp = SCP_URL.match(value)
    if "://" not in value and scp:
        reason = _host_error(scp.group(2))
        return "%s; use %s" % (reason, URL_FORMS) if reason else None
    scheme, _sep, rest = value.partition("://")
    authority = rest.split("/", 1)[0]
    userinfo, _at, hostport = authority.rpartition("@")
    if _at and (":" in userinfo or scheme.lower() != "ssh"):
        # a token or password: written into the Application file that gets committed; never repeated here
        return ("holds credentials before '@' (the URL is written into the Application file you commit); give "
                "Argo CD and Flux the credentials as a repository Secret and use %s" % URL_FORMS)
    if scheme.lower() not in ("https", "ssh"):
        return ("%r: the scheme %s:// is not allowed: a plain-text or local source lets whoever is on the way or on "
                "the machine choose what the cluster applies; use %s" % (value, scheme, URL_FORMS)
                if _sep else "%r is not a repository URL; use %s" % (value, URL_FORMS))
    host, port = hostport, ""
    if not hostport.startswith("[") and ":" in hostport:
        host, port = hostport.rsplit(":", 1)
    elif hostport.startswith("[") and "]:" in hostport:
        host, port = hostport.rsplit(":", 1)
    reason = _host_error(host)
    if reason is None and port and (not port.isdigit() or not 0 < int(port) < 65536):
        reason = "port %r is not a port number (1-65535)" % port
    if reason is None and not rest[len(authority):].strip("/"):
        reason = "has no repository path"
    return "%r: %s; use %s" % (value, reason, URL_FORMS) if reason else None


def revision_error(value):
    """Why ``value`` cannot be the Git revision (branch, tag, commit, HEAD), or None."""
    if not isinstance(value, str) or not value:
        return "must be a non-empty string: a branch, tag, commit or HEAD"
    reason = text_error(value)
    if reason:
        return reason
    if len(value) > 255 or not REVISION.match(value) or ".." in value or "//" in value or value.endswith(
            ("/", ".", ".lock")) or "/." in value:
        return ("%r is not a Git revision gpufleet writes; use a branch, tag, commit or HEAD: up to 255 letters, "
                "digits, '.', '_', '-', '+' and '/', starting with a letter or digit, without '..', '//', a part "
                "starting with '.', or a '/', '.' or '.lock' at the end" % value)
    return None


def path_error(value):
    """Why ``value`` cannot be the path of the tree in the repository, or None ('' is the default)."""
    if value == "":
        return None
    if not isinstance(value, str):
        return "must be a string: a path relative to the repository root"
    reason = text_error(value)
    if reason:
        return reason
    rest = value[2:] if value.startswith("./") else value
    parts = rest.split("/")
    if value.startswith("/") or len(value) > 1024 or not rest or any(
            p in ("", ".", "..") or not PATH_PART.match(p) for p in parts):
        return ("%r is not allowed; use a path relative to the repository root (e.g. build/prod/gitops): parts of "
                "letters, digits, '.', '_' and '-' separated by single '/', no leading or trailing '/', no '.' or "
                "'..' part" % value)
    return None


def settings_problems(settings):
    """[(variable, message)] for the settings of the GitOps definitions (keys of SETTINGS_VARS)."""
    out = []
    checks = {"repo_url": repo_url_error, "revision": revision_error, "path": path_error,
              "argocd_namespace": _name_error(dns_label_error, "a namespace name"),
              "flux_namespace": _name_error(dns_label_error, "a namespace name"),
              "argocd_project": _name_error(dns_subdomain_error, "an Argo CD project name"),
              "flux_source": _name_error(dns_subdomain_error, "a GitRepository name")}
    for key, var in SETTINGS_VARS:
        if (settings or {}).get(key) is not None:
            reason = checks[key](settings[key])
            if reason:
                out.append((var, reason))
    return out


def _name_error(rule, what):
    def error(value):
        reason = text_error(value) if isinstance(value, str) else None
        if reason:
            return reason
        reason = rule(value)
        return "%r is not %s: it %s" % (value, what, reason) if reason else None
    return error


def check(params, plan, problems):
    """Preflight: the GitOps role's inputs that are set (URL, revision, path, names). A value that is
    not one line of text is left to input_text.check, which names it once."""
    extra = params.get("extra") or {}
    settings = dict((key, extra[var]) for key, var in SETTINGS_VARS
                    if var in extra and not (isinstance(extra[var], str) and text_error(extra[var])))
    for var, msg in settings_problems(settings):
        problems.error(var, msg)


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


# The Argo CD Application / Flux Kustomization name is a DNS label: gpufleet-<inventory> with the GPU Operator's
# "-gpu-operator" suffix must still fit in 63 characters.
APP_NAME_MAX = 63 - len("-gpu-operator")


def app_name(inventory_name):
    """The Argo CD / Flux object name of an inventory: ``gpufleet-<inventory name>`` where that is a DNS label
    (the object names of every existing example stay as they were); otherwise the name made lower-case with
    each run of other characters turned into '-', shortened, and given the first 6 hex digits of the name's
    SHA-256, so two inventories (``prod_eu`` and ``prod-eu``) never share an object name."""
    name = "gpufleet-%s" % inventory_name
    if len(name) <= APP_NAME_MAX and dns_label_error(name) is None:
        return name
    digest = hashlib.sha256(str(inventory_name).encode("utf-8")).hexdigest()[:6]
    base = re.sub(r"[^a-z0-9]+", "-", str(inventory_name).lower()).strip("-")
    return ("gpufleet-%s" % base)[:APP_NAME_MAX - 7].rstrip("-") + "-" + digest


def plan_tree(build_dir, cluster_name, inventory_name, settings=None, chart=None):
    """{relative path under gitops/: text} of the whole GitOps tree. Settings that break the rules
    of ``settings_problems`` and symbolic links in ``build_dir`` are refused (GpufleetError)."""
    s = dict(DEFAULT_SETTINGS)
    s.update({k: v for k, v in (settings or {}).items() if v is not None})
    problems = settings_problems(s)
    if problems:
        raise GpufleetError("; ".join("%s: %s" % problem for problem in problems))
    refuse_links(build_dir, tree=True)
    path = s["path"] or "build/%s/%s" % (inventory_name, GITOPS_DIR)
    repo_url = s["repo_url"] or "https://git.example.internal/fleet.git"
    header = comment(HEADER % cluster_name)
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
    app = app_name(inventory_name)
    note = comments("Apply this file to the cluster that runs Argo CD; it syncs %s (server-side apply)." % path,
                    "Set gitops_repo_url (now %s) and gitops_revision to your repository." % repo_url)
    out["argocd/application.yaml"] = header + note + dump_yaml(
        argocd_application(app, repo_url, s["revision"], path, s["argocd_namespace"], s["argocd_project"], s["prune"]))
    out["flux/kustomization.yaml"] = header + comment(
        "A Flux Kustomization that applies %s from the GitRepository %s/%s (create it for your repository)."
        % (path, s["flux_namespace"], s["flux_source"])) + dump_yaml(
        flux_kustomization(app, path, s["flux_namespace"], s["flux_source"], s["prune"]))
    values_path = os.path.join(build_dir, OPERATOR_VALUES)
    if chart and os.path.isfile(values_path):
        with open(values_path) as handle:
            values = yaml.safe_load(handle) or {}
        argo, repo, release = operator_apps(app, chart, values, s)
        note = comment("The GPU Operator chart with the rendered values.")
        out["argocd/gpu-operator.yaml"] = header + note + dump_yaml(argo)
        out["flux/gpu-operator.yaml"] = header + note + dump_yaml(repo) + "---\n" + dump_yaml(release)
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
    Returns (changed paths, removed paths, diff entries). A symbolic link at ``gitops_dir``, on the
    way to it or anywhere below it is refused before anything is read or changed: following it wrote
    into, and removed the files of, whatever it pointed to."""
    refuse_links(gitops_dir, tree=True)
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
