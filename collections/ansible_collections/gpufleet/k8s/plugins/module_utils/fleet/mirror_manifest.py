# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Air-gapped fleets: the mirror manifest, everything an inventory's run downloads.

``manifest(plan, values, node_hosts, today)`` lists OS packages per node distribution (driver
through the driver role's own plan, toolkit, node base packages), their repositories and signing
keys, container images (upstream source and mirror destination), Helm charts and OLM packages.
It is deterministic (sorted); the date the driver branch support is judged on is the ``today``
argument. The human-readable form and fetch scripts are in ``mirror_scripts``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpufleet.k8s.plugins.module_utils.model.dra import dra_pools
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dra_driver import chart as dra_chart, settings as dra_settings
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import addons as _a
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_TYPES, cpu_arch
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_compat import pool_architectures
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_packages import driver_plan
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.mirror_urls import (
    chart_file, effective_registry, join_image, mirror_url, plan_mirror, split_image, str_or_empty)
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.node_prep import DEFAULT_PACKAGES as NODE_PREP_PACKAGES
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import (
    CHARTS, OLM_PACKAGES, images as image_table)

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
# kubernetes.io/arch of a node -> the architecture Ansible reports (ansible_facts.architecture) and dnf's
# basearch; the libnvidia-container apt repository is per Debian architecture (stable/deb/<arch>).
MACHINE_ARCH = {"amd64": "x86_64", "arm64": "aarch64"}
TOOLKIT_REPOS = {
    ("Debian", "amd64"): TOOLKIT_REPO["Debian"], ("Debian", "arm64"): "https://nvidia.github.io/libnvidia-container/stable/deb/arm64",
    ("RedHat", "amd64"): TOOLKIT_REPO["RedHat"], ("RedHat", "arm64"): "https://nvidia.github.io/libnvidia-container/stable/rpm/aarch64",
}
CLOUD_PLATFORMS = ("eks", "gke", "gke-autopilot")


def node_values(values):
    # Defaults of the node roles (their defaults/ are not visible on the controller before they run).
    out = role_specs.node_defaults()
    out["gpu_node_prep_default_packages"] = list(NODE_PREP_PACKAGES["Debian"])  # the role's own list
    out.update({k: copy.deepcopy(v) for k, v in (values or {}).items() if v is not None})
    return out


def node_architectures(plan):
    """kubernetes.io/arch values the GPU nodes of ``plan``'s pools run on, sorted: each pool's ``gpu_type``
    decides it (gpu_catalog ``cpu_arch``: gb200 is arm64); amd64 when no pool says otherwise (no pools, or
    GPU types the catalog does not know)."""
    archs = {cpu_arch(p["gpu_type"]) for p in plan.get("pools") or []
             if isinstance(p, dict) and p.get("gpu_type") in GPU_TYPES}
    return sorted(archs) or ["amd64"]


def _arch_plan(plan, arch, archs):
    """``plan`` with only the pools whose nodes are ``arch`` (the GPUs the driver of those nodes drives)."""
    if len(archs) == 1:
        return plan
    return dict(plan, pools=[p for p in plan.get("pools") or []
                             if isinstance(p, dict) and p.get("gpu_type") in GPU_TYPES and cpu_arch(p["gpu_type"]) == arch])


def _driver_section(plan, values, distro, mirror, today, arch="amd64"):
    """The driver role's own plan for a node of ``distro`` and kubernetes.io/arch ``arch`` (the GPUs of
    ``plan``'s pools); ``today``: ISO date the driver branch's support is judged on (None: the driver role's
    own default, the current date)."""
    dist, version, major = DISTRO_FACTS[distro]
    driver_values = {k: v for k, v in values.items() if k.startswith("nvidia_driver_") or k.startswith("gpufleet_")}
    driver_values.pop("gpufleet_mirror_package_url", None)   # the manifest lists upstream sources
    driver_values.pop("gpufleet_mirror_debian_url", None)
    driver_values.pop("gpufleet_mirror_debian_security_url", None)
    dplan = driver_plan({"values": driver_values, "distribution": dist, "distribution_version": version,
                         "distribution_major": major, "codename": CODENAMES.get(distro, ""),
                         "architecture": MACHINE_ARCH[arch],
                         "gpu_info": {"architectures": pool_architectures(plan)}, "today": today})
    if dplan.get("errors"):
        return {"errors": dplan["errors"]}
    family = dplan["os_family"]
    # the driver role's repositories and keys as data (never parsed back from the rendered files)
    repos = [r["url"] for r in dplan["repositories"]]
    keys = [k["url"] for k in dplan["keys"]]
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


def _arch_packages(plan, values, distro, family, mirror, today, arch):
    """Packages, repositories and keys of the nodes of ``distro`` on ``arch`` (kubernetes.io/arch)."""
    section = _driver_section(plan, values, distro, mirror, today, arch)
    if "errors" in section:
        return section
    kit_version = str(values["nvidia_container_toolkit_version"])
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
    manage = str(values.get("nvidia_container_toolkit_repo_manage", True)).strip().lower()
    if manage in ("true", "yes", "on", "y", "t", "1"):
        kit_repo = values.get("nvidia_container_toolkit_repo_url") or TOOLKIT_REPOS[(family, arch)]
        repos.append({"component": "toolkit", "url": kit_repo, "mirror": mirror_url(kit_repo, mirror)})
        key = values.get("nvidia_container_toolkit_repo_key_url") or TOOLKIT_KEY
        keys.append({"component": "toolkit", "url": key, "mirror": mirror_url(key, mirror)})
    return {"driver": section["driver"], "packages": packages, "repositories": repos, "keys": keys,
            "headers": section["headers"]}


def _os_packages(plan, values, node_hosts, notes, today):
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
    notes.append("Signing keys: the nodes read them from NVIDIA's server, also with gpufleet_mirror_package_url (a "
                 "mirror serves packages, not the trust anchor). Where that server is unreachable, point "
                 "nvidia_driver_repo_key_url and nvidia_container_toolkit_repo_key_url at the copies listed under "
                 "keys (their mirror column, or file:///PATH on the node): they are checked against NVIDIA's pinned "
                 "fingerprints before the keyring is written.")
    mirror = str_or_empty(values.get("gpufleet_mirror_package_url"))
    archs = node_architectures(plan)
    for distro in sorted(set(distros)):
        if distro not in DISTRO_FACTS:
            continue
        family = "Debian" if distro.startswith(("debian", "ubuntu")) else "RedHat"
        per_arch, errors = {}, []
        for arch in archs:
            part = _arch_packages(_arch_plan(plan, arch, archs), values, distro, family, mirror, today, arch)
            if "errors" in part:
                errors += ["%s: %s" % (arch, e) if len(archs) > 1 else e for e in part["errors"]]
            per_arch[arch] = part
        if errors:
            out[distro] = {"errors": errors}
            continue
        first = per_arch[archs[0]]
        out[distro] = {"family": family, "fetch_image": FETCH_IMAGES[distro],
                       "package_manager": "apt" if family == "Debian" else "dnf",
                       "codename": CODENAMES.get(distro, ""), "driver": first["driver"],
                       "kernel_headers": "%s (headers of each node's running kernel; fetched for the kernels "
                                         "listed in KERNELS)" % first["headers"],
                       "packages": first["packages"], "repositories": first["repositories"], "keys": first["keys"],
                       # the node architectures; the keys above are those of the first, other_architectures
                       # holds the same keys for each further one
                       "architectures": archs,
                       "other_architectures": {a: {k: per_arch[a][k] for k in ("driver", "packages", "repositories",
                                                                               "keys")} for a in archs[1:]}}
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
    if mode in ("standalone", "operator") and dra_pools(plan.get("pools")):
        wanted.append(("dra_driver", "nvidia_dra_driver"))
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


def _dra_chart(plan, values):
    """The DRA driver chart, where a pool has allocation dra (role nvidia_dra_driver, both add-on modes)."""
    if plan.get("addons_mode") not in ("standalone", "operator") or not dra_pools(plan.get("pools")):
        return []
    chart = dra_chart(dra_settings(values))
    chart.pop("path", None)
    chart["file"] = "%s-%s.tgz" % (chart["name"], chart["version"])
    directory = str_or_empty(values.get("gpufleet_mirror_chart_path"))
    chart["mirror"] = chart_file(chart["name"], chart["version"], directory) if directory else ""
    chart["values_file"] = "cluster/dra-driver/dra-driver-values.yaml"
    chart["operands"] = False
    return [chart]


def _charts(plan, s, values):
    charts, olm = _operator_charts(plan, s, values)
    return charts + _dra_chart(plan, values), olm


def _operator_charts(plan, s, values):
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
    directory = str_or_empty(values.get("gpufleet_mirror_chart_path"))
    chart["mirror"] = chart_file(chart["name"], chart["version"], directory) if directory else ""
    chart["values_file"] = "cluster/gpu-operator/gpu-operator-values.yaml"
    return [chart], []


def manifest(plan, values, node_hosts=(), today=None):
    """Everything the inventory downloads; see the module docstring. ``values``: inventory values
    (gpufleet_*, nvidia_*, gpu_*), merged over the node roles' defaults; ``today``: ISO date
    (``YYYY-MM-DD``) the driver branch's support is judged on (None: the current date)."""
    values = node_values(values)
    notes = []
    s = _a.settings(plan, values)
    os_packages, _distros = _os_packages(plan, values, list(node_hosts or []), notes, today)
    imgs = _images(plan, values, s, notes)
    charts, olm = _charts(plan, s, values)
    if olm:
        notes.append("OpenShift: OLM packages come from the cluster's catalog sources; in a disconnected "
                     "cluster mirror them with oc-mirror (ImageSetConfiguration operators/packages below).")
    m = plan_mirror(values)
    archs = node_architectures(plan)
    if archs != ["amd64"]:
        notes.append("Node architectures: %s (from the pools' GPU types). OS packages are listed and fetched for "
                     "each; container images are copied with `skopeo copy --all`, every architecture of their "
                     "index, so one copy serves amd64 and arm64 nodes." % ", ".join(archs))
    return {
        "inventory": plan.get("inventory_name") or "",
        "cluster_name": plan.get("cluster_name") or "",
        "platform": plan.get("platform"),
        "addons_mode": plan.get("addons_mode"),
        "mirror": {"registry": m["registry_prefix"], "package_url": m["package_url"],
                   "chart_path": m["chart_path"]},
        "node_architectures": archs,
        "os_packages": os_packages,
        "images": imgs,
        "charts": charts,
        "olm_packages": olm,
        "notes": notes,
    }
