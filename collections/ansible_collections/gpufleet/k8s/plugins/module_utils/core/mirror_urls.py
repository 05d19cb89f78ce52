# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Air-gapped fleets, bottom layer: the ``gpufleet_mirror_*`` inputs and the URL/image primitives.

``effective_registry``, ``mirror_url`` and ``mirror_image`` are what the roles, filters and other
module_utils call to use the mirrors; ``check`` is the preflight check of the inputs. This module
imports nothing of gpufleet above ``errors`` and ``versions`` so that every layer can use it.

Mirror layout (what the generated fetch scripts produce, and what a proxy such as a remote
repository in Artifactory/Nexus can serve as well):

* ``gpufleet_mirror_package_url``: upstream ``https://HOST/PATH`` is fetched from
  ``<gpufleet_mirror_package_url>/HOST/PATH`` (repository indexes and signing keys kept as
  upstream publishes them, so the upstream signatures stay valid).
* ``gpufleet_mirror_debian_url`` / ``gpufleet_mirror_debian_security_url``: an existing Debian
  archive mirror (default: under the package mirror like any other host).
* ``gpufleet_mirror_registry``: ``REGISTRY/PATH:TAG`` is pulled as ``<registry>/PATH:TAG``.
* ``gpufleet_mirror_chart_path``: a directory on the controller holding ``<chart>-<version>.tgz``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import CHARTS, REGISTRY_PREFIX

# Registries and download hosts gpufleet reaches upstream; only references to these are rewritten,
# so an image or URL the user already points elsewhere stays as given.
UPSTREAM_REGISTRIES = ("nvcr.io", "registry.k8s.io", "docker.io", "quay.io", "ghcr.io", "gcr.io",
                       "registry-1.docker.io", "index.docker.io")
UPSTREAM_HOSTS = ("nvidia.github.io", "developer.download.nvidia.com", "deb.debian.org",
                  "security.debian.org", "helm.ngc.nvidia.com")
DEBIAN_ARCHIVE = "http://deb.debian.org/debian"
DEBIAN_SECURITY = "http://deb.debian.org/debian-security"

URL = re.compile(r"^(https?|file)://[^\s]+$")
URL_PARTS = re.compile(r"^(https?)://([^/]+)(/.*)?$")


def settings(extra):
    """The mirror inputs with defaults (non-strings kept so that ``check`` can report them)."""
    out = role_specs.mirror_defaults()
    for key in list(out):
        value = (extra or {}).get(key)
        if value is not None:
            out[key] = value
    return out


def str_or_empty(value):
    return value if isinstance(value, str) else ""


def effective_registry(extra):
    """The registry prefix images are pulled through: the mirror registry, else gpufleet_registry_prefix."""
    extra = extra or {}
    return str_or_empty(extra.get("gpufleet_mirror_registry")) or str_or_empty(extra.get("gpufleet_registry_prefix"))


def split_image(ref):
    """``nvcr.io/nvidia/x:1@sha256:..`` -> (registry, path, tag, digest); Docker Hub short names expanded."""
    digest = ""
    if "@" in ref:
        ref, digest = ref.split("@", 1)
    tag = ""
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        ref, tag = ref.rsplit(":", 1)
    first = ref.split("/", 1)[0]
    if "/" in ref and ("." in first or ":" in first or first == "localhost"):
        registry, path = ref.split("/", 1)
    else:
        registry, path = "docker.io", ref if "/" in ref else "library/" + ref
    return registry, path, tag, digest


def join_image(registry, path, tag, digest=""):
    out = "%s/%s" % (registry, path)
    if tag:
        out += ":" + tag
    if digest:
        out += "@" + digest
    return out


def mirror_image(ref, prefix):
    """``ref`` pulled through the registry ``prefix`` when it names an upstream registry (else unchanged)."""
    if not prefix or not isinstance(ref, str) or not ref:
        return ref
    registry, path, tag, digest = split_image(ref)
    if registry not in UPSTREAM_REGISTRIES:
        return ref
    return join_image(prefix.rstrip("/"), path, tag, digest)


def mirror_url(url, base):
    """Upstream ``https://HOST/PATH`` as ``<base>/HOST/PATH`` when ``base`` is set and HOST is upstream."""
    if not base or not isinstance(url, str):
        return url
    match = URL_PARTS.match(url)
    if not match or match.group(2) not in UPSTREAM_HOSTS:
        return url
    return "%s/%s%s" % (base.rstrip("/"), match.group(2), match.group(3) or "")


def debian_mirrors(extra, archive=DEBIAN_ARCHIVE, security=DEBIAN_SECURITY):
    """(archive, security) URLs of the Debian archive for the driver's non-free sources."""
    s = settings(extra)
    base = str_or_empty(s["gpufleet_mirror_package_url"])
    if archive == DEBIAN_ARCHIVE:
        archive = str_or_empty(s["gpufleet_mirror_debian_url"]) or mirror_url(DEBIAN_ARCHIVE, base)
    if security == DEBIAN_SECURITY:
        security = (str_or_empty(s["gpufleet_mirror_debian_security_url"])
                    or (str_or_empty(s["gpufleet_mirror_debian_url"]).rstrip("/") + "-security"
                        if str_or_empty(s["gpufleet_mirror_debian_url"]) else mirror_url(DEBIAN_SECURITY, base)))
    return archive, security


def chart_file(chart_name, version, directory):
    return "%s/%s-%s.tgz" % (directory.rstrip("/"), chart_name, version)


def apply_to_addons(s, platform, extra):
    """Resolved add-on settings ``s`` with the mirror registry and chart directory of the inventory
    values ``extra`` taking effect."""
    prefix = effective_registry(extra)
    if prefix:
        s["gpufleet_registry_prefix"] = prefix
    directory = str_or_empty((extra or {}).get("gpufleet_mirror_chart_path"))
    if directory and platform != "openshift" and not s.get("gpu_operator_chart_path") \
            and not s.get("gpu_operator_chart_repo_url"):
        version = s.get("gpu_operator_chart_version") or CHARTS["gpu_operator"]["version"]
        s["gpu_operator_chart_path"] = chart_file(CHARTS["gpu_operator"]["name"], version, directory)
    return s


def plan_mirror(extra):
    """What preflight publishes as ``gpufleet_plan.mirror`` for the roles."""
    s = settings(extra)
    return {"registry_prefix": effective_registry(extra),
            "package_url": str_or_empty(s["gpufleet_mirror_package_url"]),
            "chart_path": str_or_empty(s["gpufleet_mirror_chart_path"]),
            "enabled": any(str_or_empty(v) for v in s.values())}


def check(params, plan, problems):
    """Preflight: the format of every gpufleet_mirror_* input; publishes ``plan["mirror"]``."""
    extra = params.get("extra") or {}
    s = settings(extra)
    for key, value in sorted(s.items()):
        if not isinstance(value, str):
            problems.error(key, "%r is not a string; use one of: \"\" (no mirror), a value as documented" % (value,))
    reg = s["gpufleet_mirror_registry"]
    if isinstance(reg, str) and reg and not REGISTRY_PREFIX.match(reg):
        problems.error("gpufleet_mirror_registry", "%r is not a registry; use a host[:port][/path] without "
                                                   "scheme, e.g. mirror.example.internal:5000/gpufleet" % reg)
    prefix = extra.get("gpufleet_registry_prefix")
    if isinstance(reg, str) and reg and isinstance(prefix, str) and prefix and prefix.rstrip("/") != reg.rstrip("/"):
        problems.error("gpufleet_mirror_registry", "differs from gpufleet_registry_prefix (%s); use one of: "
                                                   "only gpufleet_mirror_registry, the same value in both" % prefix)
    for key in ("gpufleet_mirror_package_url", "gpufleet_mirror_debian_url", "gpufleet_mirror_debian_security_url"):
        value = s[key]
        if isinstance(value, str) and value and not URL.match(value):
            problems.error(key, "%r is not a URL; use one of: https://mirror.example.internal/gpufleet, "
                                "http://HOST/PATH, file:///srv/mirror" % value)
    path = s["gpufleet_mirror_chart_path"]
    if isinstance(path, str) and path and not path.startswith("/"):
        problems.error("gpufleet_mirror_chart_path", "%r is not an absolute directory on the controller; use "
                                                     "one of: /srv/gpufleet-mirror/charts" % path)
    if isinstance(path, str) and path and plan.get("platform") == "openshift":
        problems.warn("gpufleet_mirror_chart_path", "OpenShift installs the GPU Operator through OLM: mirror the "
                                                    "catalog (oc-mirror), the chart directory is not used")
    plan["mirror"] = plan_mirror(extra)


def problems_of(plan, values):
    """Errors of the mirror inputs alone (for the module)."""
    problems = Problems()
    check({"extra": values}, dict(plan), problems)
    return problems.errors
