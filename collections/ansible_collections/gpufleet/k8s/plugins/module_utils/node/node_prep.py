# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""What the gpu_node_prep role does on one host, per OS family, and the preflight of its inputs.

Debian family: base packages with apt, nouveau blacklist, ``update-initramfs``. RedHat family
(RHEL, Rocky, AlmaLinux, Amazon Linux 2023): base packages with dnf, nouveau blacklist,
``dracut``; on RHEL/Rocky/Alma also EPEL plus CodeReady Builder (CRB, PowerTools on 8), because
NVIDIA's DKMS kernel-module packages need ``dkms`` from EPEL and EPEL packages need CRB. Amazon
Linux 2023 has no EPEL (NVIDIA's amzn2023 repository carries what the driver needs).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs

FAMILIES = ("Debian", "RedHat")
# Distributions (ansible_facts.distribution) per family that gpu_node_prep supports.
DISTRIBUTIONS = {
    "Debian": ("Debian", "Ubuntu"),
    "RedHat": ("RedHat", "Rocky", "AlmaLinux", "Amazon"),
}
DEFAULT_PACKAGES = {
    "Debian": ["pciutils", "kmod", "gnupg", "initramfs-tools"],
    "RedHat": ["pciutils", "kmod", "dracut", "dnf-plugins-core"],
}
INITRAMFS_COMMANDS = {
    "Debian": ["update-initramfs", "-u", "-k", "all"],
    "RedHat": ["dracut", "--force", "--regenerate-all"],
}
EPEL_HOST = "dl.fedoraproject.org"
EPEL_PATH = "/pub/epel/epel-release-latest-%s.noarch.rpm"
PACKAGE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+._~:=*-]*$")
EPEL_RE = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9+._-]*|(?:https?|file)://\S+\.rpm)$")


def defaults():
    """{variable: default} of the gpu_node_prep inputs, from its argument spec."""
    return role_specs.defaults("gpu_node_prep")


def crb_repo(distribution, major, architecture):
    """The CodeReady Builder repository id of a RHEL-family host, None where there is none."""
    if distribution in ("Rocky", "AlmaLinux"):
        return "powertools" if str(major) == "8" else "crb"
    if distribution == "RedHat":
        return "codeready-builder-for-rhel-%s-%s-rpms" % (major, architecture)
    return None


def node_prep_plan(inputs):
    """Decide for one host. ``inputs``: os_family, distribution, distribution_major, architecture,
    values (the role's variables), mirror (gpufleet_mirror_package_url or "")."""
    values = defaults()
    values.update(dict((k, v) for k, v in (inputs.get("values") or {}).items() if k in values))
    family = inputs.get("os_family")
    distribution = inputs.get("distribution")
    major = str(inputs.get("distribution_major") or "")
    plan = {"os_family": family, "errors": [], "crb_repo": None, "epel_package": None}
    if family not in FAMILIES or distribution not in DISTRIBUTIONS[family]:
        plan["errors"].append("gpu_node_prep: %s (OS family %s) is not supported; use one of: %s" % (
            distribution, family, ", ".join("%s (%s)" % (d, f) for f in FAMILIES for d in DISTRIBUTIONS[f])))
        return plan
    plan["packages"] = list(values["gpu_node_prep_packages"] or DEFAULT_PACKAGES[family]) + list(
        values["gpu_node_prep_extra_packages"])
    plan["initramfs_command"] = list(INITRAMFS_COMMANDS[family])
    if family == "RedHat" and distribution != "Amazon" and values["gpu_node_prep_epel"]:
        plan["crb_repo"] = crb_repo(distribution, major, inputs.get("architecture") or "x86_64")
        chosen = values["gpu_node_prep_epel_package"]
        if not chosen:
            # Rocky and Alma ship epel-release in their extras repository; RHEL takes Fedora's rpm.
            # Through gpufleet_mirror_package_url (<mirror>/<host>/<path>, fetch-packages.sh's layout).
            base = (inputs.get("mirror") or "").rstrip("/") or "https:/"
            chosen = "epel-release" if distribution != "RedHat" else "%s/%s%s" % (base, EPEL_HOST, EPEL_PATH % major)
        plan["epel_package"] = chosen
    return plan


def _is_bool(value):
    return isinstance(value, bool)


def check(params, plan, problems):
    """Preflight: the gpu_node_prep_* inputs (booleans, package lists, the EPEL package)."""
    extra = params.get("extra") or {}
    for name in ("gpu_node_prep_blacklist_nouveau", "gpu_node_prep_rebuild_initramfs", "gpu_node_prep_epel"):
        if name in extra and not _is_bool(extra[name]):
            problems.error(name, "%r is not a boolean; use one of: true, false" % (extra[name],))
    for name in ("gpu_node_prep_packages", "gpu_node_prep_extra_packages"):
        if name not in extra:
            continue
        value = extra[name]
        if not isinstance(value, list):
            problems.error(name, "%r is not a list of package names; use one of: [], [pciutils, kmod]" % (value,))
            continue
        for index, item in enumerate(value):
            if not isinstance(item, str) or not PACKAGE_RE.match(item):
                problems.error("%s[%d]" % (name, index),
                               "%r is not a package name; use one of: a name such as "
                               "pciutils, name=version (apt), name-version (dnf)" % (item,))
    if "gpu_node_prep_epel_package" in extra:
        value = extra["gpu_node_prep_epel_package"]
        if not isinstance(value, str) or (value and not EPEL_RE.match(value)):
            problems.error("gpu_node_prep_epel_package", "%r is neither a package name nor an .rpm URL; use one of: "
                                                         "\"\" (the distribution's), epel-release, "
                                                         "https://mirror.example/epel-release-latest-9.noarch.rpm" % (value,))
