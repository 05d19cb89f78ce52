# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Air-gapped fleets: what an inventory downloads, and where it downloads it from a mirror.

Two halves:

* ``manifest(plan, values, node_hosts)`` lists everything the inventory's run will download:
  OS packages per node distribution (driver through the driver role's own plan, toolkit, node
  base packages), their repositories and signing keys, container images (upstream source and
  mirror destination), Helm charts and OLM packages. It is deterministic (sorted, no clock).
* The ``gpufleet_mirror_*`` inputs make a run use the mirrors: ``effective_registry``,
  ``mirror_url`` and ``mirror_image`` are what the roles and module_utils call.

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

import copy
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils import addons as _a
from ansible_collections.gpufleet.k8s.plugins.module_utils import role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.errors import Problems
from ansible_collections.gpufleet.k8s.plugins.module_utils.node_prep import DEFAULT_PACKAGES as NODE_PREP_PACKAGES
from ansible_collections.gpufleet.k8s.plugins.module_utils.versions import (
    CHARTS, IMAGES, OLM_PACKAGES, OPERATOR_REPOSITORIES, REGISTRY_PREFIX, images as image_table, with_prefix)

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

DEFAULT_DISTRO = "debian-12"
CODENAMES = {"debian-12": "bookworm", "debian-13": "trixie", "ubuntu-22.04": "jammy", "ubuntu-24.04": "noble"}
# distro -> (distribution fact, version fact, major fact) as Ansible reports them
DISTRO_FACTS = {
    "debian-12": ("Debian", "12", "12"), "debian-13": ("Debian", "13", "13"),
    "ubuntu-22.04": ("Ubuntu", "22.04", "22"), "ubuntu-24.04": ("Ubuntu", "24.04", "24"),
    "rhel-8": ("RedHat", "8.10", "8"), "rhel-9": ("RedHat", "9.6", "9"),
    "rocky-8": ("Rocky", "8.10", "8"), "rocky-9": ("Rocky", "9.6", "9"),
    "almalinux-8": ("AlmaLinux", "8.10", "8"), "almalinux-9": ("AlmaLinux", "9.6", "9"),
    "amazon-2023": ("Amazon", "2023", "2023"),
}
# Container image of each distro the fetch script downloads packages in.
FETCH_IMAGES = {
    "debian-12": "docker.io/library/debian:12", "debian-13": "docker.io/library/debian:13",
    "ubuntu-22.04": "docker.io/library/ubuntu:22.04", "ubuntu-24.04": "docker.io/library/ubuntu:24.04",
    "rhel-8": "registry.access.redhat.com/ubi8/ubi:8.10", "rhel-9": "registry.access.redhat.com/ubi9/ubi:9.6",
    "rocky-8": "quay.io/rockylinux/rockylinux:8", "rocky-9": "quay.io/rockylinux/rockylinux:9",
    "almalinux-8": "quay.io/almalinuxorg/almalinux:8", "almalinux-9": "quay.io/almalinuxorg/almalinux:9",
    "amazon-2023": "public.ecr.aws/amazonlinux/amazonlinux:2023",
}
TOOLKIT_REPO = {
    "Debian": "https://nvidia.github.io/libnvidia-container/stable/deb/amd64",
    "RedHat": "https://nvidia.github.io/libnvidia-container/stable/rpm/x86_64",
}
TOOLKIT_KEY = "https://nvidia.github.io/libnvidia-container/gpgkey"
CLOUD_PLATFORMS = ("eks", "gke", "gke-autopilot")


def settings(extra):
    """The mirror inputs with defaults (non-strings kept so that ``check`` can report them)."""
    out = role_specs.mirror_defaults()
    for key in list(out):
        value = (extra or {}).get(key)
        if value is not None:
            out[key] = value
    return out


def _s(value):
    return value if isinstance(value, str) else ""


def effective_registry(extra):
    """The registry prefix images are pulled through: the mirror registry, else gpufleet_registry_prefix."""
    extra = extra or {}
    return _s(extra.get("gpufleet_mirror_registry")) or _s(extra.get("gpufleet_registry_prefix"))


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
    base = _s(s["gpufleet_mirror_package_url"])
    if archive == DEBIAN_ARCHIVE:
        archive = _s(s["gpufleet_mirror_debian_url"]) or mirror_url(DEBIAN_ARCHIVE, base)
    if security == DEBIAN_SECURITY:
        security = (_s(s["gpufleet_mirror_debian_security_url"])
                    or (_s(s["gpufleet_mirror_debian_url"]).rstrip("/") + "-security"
                        if _s(s["gpufleet_mirror_debian_url"]) else mirror_url(DEBIAN_SECURITY, base)))
    return archive, security


def chart_file(chart_name, version, directory):
    return "%s/%s-%s.tgz" % (directory.rstrip("/"), chart_name, version)


def apply_to_addons(s, platform, extra):
    """Resolved add-on settings ``s`` with the mirror registry and chart directory of the inventory
    values ``extra`` taking effect."""
    prefix = effective_registry(extra)
    if prefix:
        s["gpufleet_registry_prefix"] = prefix
    directory = _s((extra or {}).get("gpufleet_mirror_chart_path"))
    if directory and platform != "openshift" and not s.get("gpu_operator_chart_path") \
            and not s.get("gpu_operator_chart_repo_url"):
        version = s.get("gpu_operator_chart_version") or CHARTS["gpu_operator"]["version"]
        s["gpu_operator_chart_path"] = chart_file(CHARTS["gpu_operator"]["name"], version, directory)
    return s


def plan_mirror(extra):
    """What preflight publishes as ``gpufleet_plan.mirror`` for the roles."""
    s = settings(extra)
    return {"registry_prefix": effective_registry(extra),
            "package_url": _s(s["gpufleet_mirror_package_url"]),
            "chart_path": _s(s["gpufleet_mirror_chart_path"]),
            "enabled": any(_s(v) for v in s.values())}


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


# ---------------------------------------------------------------------------------------------
# The manifest


def node_values(values):
    # Defaults of the node roles (their defaults/ are not visible on the controller before they run).
    out = role_specs.node_defaults()
    out["gpu_node_prep_default_packages"] = list(NODE_PREP_PACKAGES["Debian"])  # the role's own list
    out.update({k: copy.deepcopy(v) for k, v in (values or {}).items() if v is not None})
    return out


def _driver_section(plan, values, distro, mirror):
    """The driver role's own plan for a node of ``distro`` (x86_64, the pools' GPUs)."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.driver_packages import driver_plan
    from ansible_collections.gpufleet.k8s.plugins.module_utils.driver_compat import pool_architectures

    dist, version, major = DISTRO_FACTS[distro]
    driver_values = {k: v for k, v in values.items() if k.startswith("nvidia_driver_") or k.startswith("gpufleet_")}
    driver_values.pop("gpufleet_mirror_package_url", None)   # the manifest lists upstream sources
    driver_values.pop("gpufleet_mirror_debian_url", None)
    driver_values.pop("gpufleet_mirror_debian_security_url", None)
    dplan = driver_plan({"values": driver_values, "distribution": dist, "distribution_version": version,
                         "distribution_major": major, "codename": CODENAMES.get(distro, ""),
                         "architecture": "x86_64",
                         "gpu_info": {"architectures": pool_architectures(plan)}, "today": "2026-01-01"})
    if dplan.get("errors"):
        return {"errors": dplan["errors"]}
    family = dplan["os_family"]
    repos = []
    for repo_file in dplan.get("repo_files") or []:
        for line in repo_file["content"].splitlines():
            if line.startswith(("URIs: ", "baseurl=")):
                url = line.split(" ", 1)[1] if line.startswith("URIs: ") else line.split("=", 1)[1]
                repos.append(url)
    keys = []
    if dplan.get("keyring"):
        keys.append(dplan["keyring"]["url"])
    for repo_file in dplan.get("repo_files") or []:
        for line in repo_file["content"].splitlines():
            if line.startswith("gpgkey="):
                keys.append(line.split("=", 1)[1])
    if family == "Debian":
        specs = [p.split("=", 1) for p in dplan["packages"]] + [[p, ""] for p in dplan["extra_packages"]]
        headers = "linux-headers-<kernel>"
    else:
        specs = [[p, ""] for p in dplan["packages"]] + [[p, ""] for p in dplan["extra_packages"]]
        headers = "kernel-devel-<kernel>"
    packages = [{"name": name, "version": ver or "(newest)", "component": "driver"} for name, ver in specs]
    return {"packages": packages, "repositories": [{"component": "driver", "url": u, "mirror": mirror_url(u, mirror)}
                                                   for u in repos],
            "keys": [{"component": "driver", "url": u, "mirror": mirror_url(u, mirror)} for u in keys],
            "driver": {"branch": dplan["branch"], "exact": dplan["exact"], "flavour": dplan["flavour"],
                       "version_glob": dplan["version_glob"], "module_stream": dplan.get("module_stream")},
            "headers": headers}


def _os_packages(plan, values, node_hosts, notes):
    distros = values.get("nvidia_driver_node_distros") or []
    out = {}
    if plan.get("platform") in CLOUD_PLATFORMS or not node_hosts:
        notes.append("No OS packages: %s." % (
            "the platform's GPU node images ship the driver and toolkit" if plan.get("platform") in CLOUD_PLATFORMS
            else "the inventory has no hosts under gpu_nodes"))
        return out, []
    if not distros:
        distros = [DEFAULT_DISTRO]
        notes.append("nvidia_driver_node_distros is not set: packages are listed for %s; declare your node OSes "
                     "there for an exact list." % DEFAULT_DISTRO)
    if plan.get("platform") == "openshift":
        notes.append("OpenShift: driver and toolkit run as GPU Operator containers on RHCOS; the node packages "
                     "below are only needed if you run playbooks/nodes.yml on non-RHCOS workers.")
    mirror = _s(values.get("gpufleet_mirror_package_url"))
    kit_version = str(values["nvidia_container_toolkit_version"])
    for distro in sorted(set(distros)):
        if distro not in DISTRO_FACTS:
            continue
        section = _driver_section(plan, values, distro, mirror)
        if "errors" in section:
            out[distro] = {"errors": section["errors"]}
            continue
        family = "Debian" if distro.startswith(("debian", "ubuntu")) else "RedHat"
        packages = section["packages"]
        packages += [{"name": n, "version": kit_version, "component": "toolkit"}
                     for n in values["nvidia_container_toolkit_packages"]]
        if family == "Debian":
            base = values["gpu_node_prep_packages"] or values["gpu_node_prep_default_packages"]
            packages += [{"name": n, "version": "(newest)", "component": "node_prep"}
                         for n in list(base) + list(values["gpu_node_prep_extra_packages"])]
        repos = section["repositories"]
        keys = section["keys"]
        # a quoted "false" (-e name=false) must not read as true
        if str(values.get("nvidia_container_toolkit_repo_manage", True)).strip().lower() in ("true", "yes", "on", "y",
                                                                                            "t", "1"):
            kit_repo = values.get("nvidia_container_toolkit_repo_url") or TOOLKIT_REPO[family]
            repos.append({"component": "toolkit", "url": kit_repo, "mirror": mirror_url(kit_repo, mirror)})
            key = values.get("nvidia_container_toolkit_repo_key_url") or TOOLKIT_KEY
            keys.append({"component": "toolkit", "url": key, "mirror": mirror_url(key, mirror)})
        out[distro] = {"family": family, "fetch_image": FETCH_IMAGES[distro],
                       "package_manager": "apt" if family == "Debian" else "dnf",
                       "codename": CODENAMES.get(distro, ""), "driver": section["driver"],
                       "kernel_headers": "%s (headers of each node's running kernel; fetched for the kernels "
                                         "listed in KERNELS)" % section["headers"],
                       "packages": packages, "repositories": repos, "keys": keys}
    return out, distros


def _image(name, source, prefix, component):
    registry, path, tag, digest = split_image(source)
    return {"name": name, "component": component, "source": source, "tag": tag, "digest": digest,
            "mirror": join_image(prefix.rstrip("/"), path, tag, digest) if prefix else source}


def _images(plan, values, s, notes):
    prefix = effective_registry(values)
    table = image_table(values.get("gpufleet_image_overrides") if isinstance(
        values.get("gpufleet_image_overrides"), dict) else None)
    out = []
    mode = plan.get("addons_mode")
    wanted = []
    if mode == "standalone":
        if s["device_plugin_enabled"]:
            wanted.append(("device_plugin", "nvidia_device_plugin"))
            if s["nvidia_device_plugin_nfd_enabled"]:
                wanted.append(("nfd", "nvidia_device_plugin"))
        if s["dcgm_exporter_enabled"]:
            wanted.append(("dcgm_exporter", "dcgm_exporter"))
    for name, component in wanted:
        img = table[name]
        ref = "%s:%s" % (img["repository"], img["tag"]) + ("@" + img["digest"] if img.get("digest") else "")
        out.append(_image(name, ref, prefix, component))
    if values.get("gpu_pools_examples"):
        out.append(_image("example", values["gpu_pools_example_image"], prefix, "gpu_pools"))
    out.append(_image("smoke", values["gpu_validate_smoke_image"], prefix, "gpu_validate"))
    if values.get("gpu_validate_metrics") and mode == "standalone" and s["dcgm_exporter_enabled"]:
        out.append(_image("probe", values["gpu_validate_probe_image"], prefix, "gpu_validate"))
    if mode == "operator":
        notes.append("GPU Operator: its operand images (driver, toolkit, device plugin, DCGM, validator, ...) "
                     "are resolved at fetch time by fetch-images.sh from `helm template` of the pinned chart with "
                     "the rendered values; on OpenShift mirror them with oc-mirror from the OLM bundle.")
    # unique by source, deterministic order
    seen, unique = set(), []
    for img in sorted(out, key=lambda i: (i["source"], i["name"])):
        if img["source"] not in seen:
            seen.add(img["source"])
            unique.append(img)
    return unique


def _charts(plan, s, values):
    if plan.get("addons_mode") != "operator":
        return [], []
    if plan.get("platform") == "openshift":
        olm = [dict(OLM_PACKAGES[k], name=k) for k in sorted(OLM_PACKAGES)]
        return [], olm
    chart = dict(CHARTS["gpu_operator"])
    if s.get("gpu_operator_chart_version"):
        chart["version"] = s["gpu_operator_chart_version"]
    if s.get("gpu_operator_chart_repo_url"):
        chart["repo_url"] = s["gpu_operator_chart_repo_url"]
    chart["file"] = "%s-%s.tgz" % (chart["name"], chart["version"])
    directory = _s(values.get("gpufleet_mirror_chart_path"))
    chart["mirror"] = chart_file(chart["name"], chart["version"], directory) if directory else ""
    chart["values_file"] = "cluster/gpu-operator/gpu-operator-values.yaml"
    return [chart], []


def manifest(plan, values, node_hosts=()):
    """Everything the inventory downloads; see the module docstring. ``values``: inventory values
    (gpufleet_*, nvidia_*, gpu_*), merged over the node roles' defaults."""
    values = node_values(values)
    notes = []
    s = _a.settings(plan, values)
    os_packages, _distros = _os_packages(plan, values, list(node_hosts or []), notes)
    imgs = _images(plan, values, s, notes)
    charts, olm = _charts(plan, s, values)
    if olm:
        notes.append("OpenShift: OLM packages come from the cluster's catalog sources; in a disconnected "
                     "cluster mirror them with oc-mirror (ImageSetConfiguration operators/packages below).")
    m = plan_mirror(values)
    return {
        "inventory": plan.get("inventory_name") or "",
        "cluster_name": plan.get("cluster_name") or "",
        "platform": plan.get("platform"),
        "addons_mode": plan.get("addons_mode"),
        "mirror": {"registry": m["registry_prefix"], "package_url": m["package_url"],
                   "chart_path": m["chart_path"]},
        "os_packages": os_packages,
        "images": imgs,
        "charts": charts,
        "olm_packages": olm,
        "notes": notes,
    }


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |")
    return lines


def manifest_markdown(man):
    """Human-readable manifest."""
    out = ["# Mirror manifest: %s" % man["inventory"], "",
           "Cluster `%s`, platform `%s`, add-ons `%s`. Generated by gpufleet (playbooks/mirror.yml); "
           "fetch with the scripts next to this file on a connected machine." % (
               man["cluster_name"], man["platform"], man["addons_mode"]), ""]
    if man["notes"]:
        out += ["## Notes", ""] + ["- " + n for n in man["notes"]] + [""]
    for distro, sec in sorted(man["os_packages"].items()):
        out += ["## OS packages: %s" % distro, ""]
        if "errors" in sec:
            out += ["- " + e for e in sec["errors"]] + [""]
            continue
        out += _table(["package", "version", "component"],
                      [(p["name"], p["version"], p["component"]) for p in sec["packages"]])
        out += ["", "Kernel headers: %s." % sec["kernel_headers"], ""]
        out += _table(["repository", "component", "mirror URL"],
                      [(r["url"], r["component"], r["mirror"]) for r in sec["repositories"]])
        out += [""] + _table(["signing key", "component", "mirror URL"],
                             [(k["url"], k["component"], k["mirror"]) for k in sec["keys"]]) + [""]
    out += ["## Container images", ""]
    out += _table(["image", "tag", "digest", "used by", "mirror reference"],
                  [(i["source"].split("@")[0].rsplit(":", 1)[0], i["tag"], i["digest"] or "-", i["component"],
                    i["mirror"]) for i in man["images"]]) + [""]
    if man["charts"]:
        out += ["## Helm charts", ""]
        out += _table(["chart", "version", "repository", "file", "mirror path"],
                      [(c["name"], c["version"], c["repo_url"], c["file"], c["mirror"] or "-")
                       for c in man["charts"]]) + [""]
    if man["olm_packages"]:
        out += ["## OLM packages (OpenShift)", ""]
        out += _table(["package", "channel", "catalog source"],
                      [(p["package"], p["channel"], p["source"]) for p in man["olm_packages"]]) + [""]
    return "\n".join(out)


def problems_of(plan, values):
    """Errors of the mirror inputs alone (for the module)."""
    problems = Problems()
    check({"extra": values}, dict(plan), problems)
    return problems.errors


__all__ = ["manifest", "manifest_markdown", "mirror_image", "mirror_url", "effective_registry", "check",
           "apply_to_addons", "debian_mirrors", "IMAGES"]


# ---------------------------------------------------------------------------------------------
# Fetch scripts (run on a connected machine)

SCRIPT_HEAD = """#!/usr/bin/env bash
# Generated by gpufleet (playbooks/mirror.yml) for inventory %s; run on a CONNECTED machine.
%s
set -euo pipefail
"""


def _q(value):
    """Single-quoted shell word."""
    return "'" + str(value).replace("'", "'\\''") + "'"


# Shell function run inside the distro container: one repository index (a dists/<suite> folder or
# a flat repository) with its signed Release files and the amd64 package lists (also under
# by-hash/SHA256/, which apt asks for first), so apt verifies the mirror with the upstream key.
APT_INDEX_FUNCTION = r"""mirror_index() {
  local base=${1%/} filter=$2 rel release f h d
  rel=${base#*://}; mkdir -p "/out/$rel"
  for f in InRelease Release Release.gpg; do curl -fsSL "$base/$f" -o "/out/$rel/$f" || rm -f "/out/$rel/$f"; done
  release=/out/$rel/InRelease; [ -f "$release" ] || release=/out/$rel/Release
  awk '/^SHA256:/ {s = 1; next} /^[^ ]/ {s = 0} s {print $3}' "$release" \
    | grep -E '^(([^/]+/)?binary-(amd64|all)/Packages(\.gz|\.xz)?|([^/]+/)?i18n/Translation-en(\.bz2|\.xz)?|Packages(\.gz|\.xz)?)$' \
    | grep -E "$filter" | sort -u | while read -r f; do
      mkdir -p "/out/$rel/$(dirname "$f")"
      if curl -fsSL "$base/$f" -o "/out/$rel/$f"; then
        h=$(sha256sum "/out/$rel/$f" | cut -d' ' -f1); d=/out/$rel/$(dirname "$f")/by-hash/SHA256
        mkdir -p "$d"; cp "/out/$rel/$f" "$d/$h"
      else
        rm -f "/out/$rel/$f"
      fi
    done
}"""


def _apt_setup(sec):
    """Shell lines run inside the distro container: the sources the roles add, then the fetch."""
    lines = ["apt-get update -qq", "apt-get install -y -qq --no-install-recommends ca-certificates curl gnupg >/dev/null",
             "install -d -m 0755 /etc/apt/keyrings", APT_INDEX_FUNCTION]
    for index, key in enumerate(sec["keys"]):
        lines.append("curl -fsSL %s -o /etc/apt/keyrings/gpufleet-%d.asc" % (_q(key["url"]), index))
        lines.append("k=%s; mkdir -p \"/out/${k%%/*}\"; cp /etc/apt/keyrings/gpufleet-%d.asc \"/out/$k\"" % (
            _q(key["url"].split("://", 1)[1]), index))
    for repo in sec["repositories"]:
        key_index = next((i for i, k in enumerate(sec["keys"]) if k["component"] == repo["component"]), None)
        signed = " [signed-by=/etc/apt/keyrings/gpufleet-%d.asc]" % key_index if key_index is not None else ""
        url = repo["url"].rstrip("/")
        if url in (DEBIAN_ARCHIVE, DEBIAN_SECURITY):
            suites = [sec["codename"], sec["codename"] + "-updates"] if url == DEBIAN_ARCHIVE \
                else [sec["codename"] + "-security"]
            for suite in suites:
                lines.append("echo %s >>/etc/apt/sources.list.d/gpufleet.list" % _q(
                    "deb %s %s contrib non-free non-free-firmware" % (url, suite)))
                lines.append("mirror_index %s %s" % (_q("%s/dists/%s" % (url, suite)),
                                                     _q("^(contrib|non-free|non-free-firmware)/")))
        else:
            lines.append("echo %s >>/etc/apt/sources.list.d/gpufleet.list" % _q("deb%s %s/ /" % (signed, url)))
            lines.append("mirror_index %s %s" % (_q(url), _q(".")))
    specs = " ".join(_q(p["name"] + ("=" + p["version"] if p["version"] != "(newest)" else ""))
                     for p in sec["packages"])
    lines += [
        "apt-get update -qq",
        "# shellcheck disable=SC2086",
        "apt-get install -y --no-install-recommends --print-uris %s $KERNEL_PKGS "
        "| awk '/^.http/ {print $1}' | tr -d \"'\" >/out/.package-uris" % specs,
        "while read -r uri; do",
        "  rel=${uri#*://}; mkdir -p \"/out/${rel%/*}\"",
        "  curl -fsSL \"$uri\" -o \"/out/$rel\"",
        "done </out/.package-uris",
    ]
    return lines


def _dnf_setup(sec):
    lines = ["dnf install -y -q 'dnf-command(download)' >/dev/null"]
    for key in sec["keys"]:
        rel = key["url"].split("://", 1)[1]
        lines.append("k=%s; mkdir -p \"/out/${k%%/*}\"; curl -fsSL %s -o \"/out/$k\"" % (_q(rel), _q(key["url"])))
    for index, repo in enumerate(sec["repositories"]):
        key = next((k["url"] for k in sec["keys"] if k["component"] == repo["component"]), "")
        lines.append("printf '%%s\\n' '[gpufleet-%d]' 'name=gpufleet %s' %s 'enabled=1' 'gpgcheck=1' %s "
                     ">/etc/yum.repos.d/gpufleet-%d.repo" % (index, repo["component"], _q("baseurl=" + repo["url"]),
                                                             _q("gpgkey=" + key), index))
    specs = " ".join(_q(p["name"] + ("-" + p["version"] if p["version"] != "(newest)" else ""))
                     for p in sec["packages"])
    lines += [
        "# shellcheck disable=SC2086",
        "dnf download -q --resolve --urls %s $KERNEL_PKGS >/out/.package-uris" % specs,
        "while read -r uri; do rel=${uri#*://}; mkdir -p \"/out/${rel%/*}\"; "
        "curl -fsSL \"$uri\" -o \"/out/$rel\"; done </out/.package-uris",
    ]
    for repo in sec["repositories"]:
        base = repo["url"].rstrip("/")
        lines += [
            "rel=%s; mkdir -p \"/out/$rel/repodata\"" % _q(base.split("://", 1)[1]),
            "curl -fsSL %s -o \"/out/$rel/repodata/repomd.xml\"" % _q(base + "/repodata/repomd.xml"),
            "curl -fsSL %s -o \"/out/$rel/repodata/repomd.xml.asc\" || rm -f \"/out/$rel/repodata/repomd.xml.asc\"" % _q(
                base + "/repodata/repomd.xml.asc"),
            "grep -o 'href=\"[^\"]*\"' \"/out/$rel/repodata/repomd.xml\" | cut -d'\"' -f2 | while read -r f; do "
            "curl -fsSL %s\"/$f\" -o \"/out/$rel/$f\"; done" % _q(base),
        ]
    return lines


def script_packages(man):
    head = SCRIPT_HEAD % (man["inventory"], "\n".join([
        "# Downloads the OS packages of the manifest per node OS inside a container of that OS (podman or",
        "# docker), with the upstream repository indexes and signing keys, into",
        "#   ${OUT:-./packages}/<distro>/<upstream host>/<upstream path>",
        "# Serve ${OUT}/<distro> as gpufleet_mirror_package_url (upstream signatures stay valid).",
        "# KERNELS=\"6.1.0-37-amd64 ...\": also fetch the kernel headers of these node kernels."]))
    body = ['OUT=${OUT:-$PWD/packages}', 'ENGINE=${ENGINE:-$(command -v podman || command -v docker)}',
            'KERNELS=${KERNELS:-}']
    if not man["os_packages"]:
        body.append('echo "no OS packages in this manifest"')
    for distro, sec in sorted(man["os_packages"].items()):
        if "errors" in sec:
            body.append("echo %s >&2" % _q("%s: skipped (%s)" % (distro, "; ".join(sec["errors"]))))
            continue
        inner = _apt_setup(sec) if sec["package_manager"] == "apt" else _dnf_setup(sec)
        header_fmt = "linux-headers-%s" if sec["package_manager"] == "apt" else "kernel-devel-%s"
        body += [
            "",
            "# %s (%s): %d packages" % (distro, sec["package_manager"], len(sec["packages"])),
            "kernel_pkgs=''",
            "for k in $KERNELS; do kernel_pkgs=\"$kernel_pkgs %s\"; done" % (header_fmt % "$k"),
            "mkdir -p \"$OUT/%s\"" % distro,
            "# shellcheck disable=SC2016  # expanded inside the container",
            "\"$ENGINE\" run --rm -e KERNEL_PKGS=\"$kernel_pkgs\" -v \"$OUT/%s:/out\" %s bash -euo pipefail -c %s" % (
                distro, _q(sec["fetch_image"]), _q("\n".join(inner))),
        ]
    body.append('echo "packages in $OUT"')
    return head + "\n".join(body) + "\n"


# Image references in a rendered chart: full "image: host/path:tag" values, and the GPU Operator's
# ClusterPolicy "repository/image/version" triplets (version may be a digest).
OPERAND_AWK = r"""
function val(line) { sub(/^[^:]*:[ ]*/, "", line); gsub(/["']/, "", line); return line }
/^[ ]*repository:/ { repo = val($0); next }
/^[ -]*image:/ { img = val($0); if (img ~ /\//) { print img; img = "" }; next }
/^[ ]*version:/ { ver = val($0)
  if (repo != "" && img != "") print repo "/" img (ver ~ /^sha256:/ ? "@" : ":") ver
  repo = ""; img = ""; next }
"""


def script_images(man):
    head = SCRIPT_HEAD % (man["inventory"], "\n".join([
        "# Copies every container image of the manifest with skopeo:",
        "#   MIRROR=registry.example.internal:5000[/path]  -> docker://$MIRROR/<path>:<tag>",
        "#   no MIRROR                                     -> ${OUT:-./images}/<name>.tar (oci-archive)"]))
    body = ['MIRROR=${MIRROR:-%s}' % man["mirror"]["registry"], 'OUT=${OUT:-$PWD/images}',
            'copy() {',
            '  local src=$1 path=$2',
            '  if [ -n "$MIRROR" ]; then',
            '    skopeo copy --all --preserve-digests "docker://$src" "docker://${MIRROR%/}/$path"',
            '  else',
            '    mkdir -p "$OUT"',
            '    skopeo copy --all "docker://$src" "oci-archive:$OUT/$(echo "$path" | tr "/:@" "___").tar:$path"',
            '  fi',
            '}']
    for img in man["images"]:
        _reg, path, tag, digest = split_image(img["source"])
        ref = join_image("", path, tag, digest)[1:]
        body.append("copy %s %s" % (_q(img["source"]), _q(ref)))
    for chart in man["charts"]:
        body += [
            "",
            "# GPU Operator operands: every image the pinned chart renders with gpufleet's values",
            "# (ClusterPolicy repository/image/version triplets and full image references). The driver",
            "# image tag carries the node OS (<version>-<os>): DRIVER_OS lists the ones to copy.",
            "DRIVER_OS=${DRIVER_OS:-ubuntu22.04 ubuntu24.04}",
            "here=$(cd \"$(dirname \"$0\")\" && pwd)",
            "tmp=$(mktemp -d); trap 'rm -rf \"$tmp\"' EXIT",
            "helm pull %s --repo %s --version %s --destination \"$tmp\"" % (
                _q(chart["name"]), _q(chart["repo_url"]), _q(chart["version"])),
            "values=\"$here/../%s\"" % chart["values_file"],
            "[ -f \"$values\" ] || values=/dev/null",
            "# the upstream repositories (the values may point at the mirror already)",
            "helm template gpufleet \"$tmp/%s\" --values \"$values\" %s \\" % (chart["file"], " ".join(
                "--set %s" % _q("%s=%s" % (path, repo))
                for path, repo in sorted(OPERATOR_REPOSITORIES.items()))),
            "  | awk %s | sort -u >\"$tmp/refs\"" % _q(OPERAND_AWK),
            "while read -r src; do",
            "  case $src in",
            "    */driver:*) for os in $DRIVER_OS; do copy \"$src-$os\" \"${src#*/}-$os\"; done ;;",
            "    *) copy \"$src\" \"${src#*/}\" ;;",
            "  esac",
            "done <\"$tmp/refs\"",
        ]
    body.append('echo "images copied"')
    return head + "\n".join(body) + "\n"


def script_charts(man):
    head = SCRIPT_HEAD % (man["inventory"], "\n".join([
        "# Pulls the pinned Helm charts into ${OUT:-./charts}; copy them to gpufleet_mirror_chart_path.",
        "# OLM packages (OpenShift) are mirrored with oc-mirror instead (see manifest.md)."]))
    body = ['OUT=${OUT:-$PWD/charts}', 'mkdir -p "$OUT"']
    for chart in man["charts"]:
        body.append("helm pull %s --repo %s --version %s --destination \"$OUT\"" % (
            _q(chart["name"]), _q(chart["repo_url"]), _q(chart["version"])))
    for pkg in man["olm_packages"]:
        body.append("echo %s" % _q("OLM: %s channel %s from %s: mirror with oc-mirror" % (
            pkg["package"], pkg["channel"], pkg["source"])))
    if not man["charts"] and not man["olm_packages"]:
        body.append('echo "no Helm chart in this manifest"')
    body.append('echo "charts in $OUT"')
    return head + "\n".join(body) + "\n"


def scripts(man):
    return {"fetch-packages.sh": script_packages(man), "fetch-images.sh": script_images(man),
            "fetch-charts.sh": script_charts(man)}
