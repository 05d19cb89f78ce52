# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""What the nvidia_driver role reads back from a host and decides from it: container or VM, reboot,
kernel holds, stale pinning packages and versionlocks, dnf module streams. The package plan itself
is driver_packages.driver_plan."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_packages import PINNING_PREFIX

# Every package the role may have versionlocked on dnf hosts (both flavours, Fabric Manager):
# an entry for one of them that the current plan does not want is stale and removed first.
DNF_LOCKED_NAMES = ("nvidia-driver", "nvidia-driver-cuda", "kmod-nvidia-open-dkms", "kmod-nvidia-latest-dkms",
                    "nvidia-fabric-manager")


def container_verdict(engine, pid2_comm):
    """Whether the role runs in a container, i.e. without a kernel of its own.

    ``engine``: what systemd-detect-virt --container or the engines' marker files (/run/.containerenv,
    /.dockerenv) said ("none" when nothing); ``pid2_comm``: /proc/2/comm. Marker files are weak: a VM
    built from a container image (Firecracker, Kata) keeps /.dockerenv, and systemd-detect-virt reports
    "docker" from it. PID 2 is kthreadd in the initial PID namespace of every Linux kernel, which a
    machine with its own kernel (bare metal or VM) sees and a container (own PID namespace) does not.
    """
    engine = (engine or "none").strip() or "none"
    pid2 = (pid2_comm or "").strip()
    if engine == "none":
        return {"container": "none", "in_container": False, "evidence": "no container engine marker"}
    if pid2 == "kthreadd":
        return {"container": "none", "in_container": False,
                "evidence": "marker says %s, but the kernel's own threads are visible (PID 2 is kthreadd): a "
                            "machine with its own kernel (e.g. a VM built from a container image)" % engine}
    return {"container": engine, "in_container": True,
            "evidence": "%s, and the kernel's threads are hidden (PID 2 is %s)" % (engine, pid2 or "not readable")}


def reboot_decision(in_container, loaded_version, installed_version, nouveau_loaded, allow_reboot, is_controller):
    """Whether the host needs a reboot, and whether the role may do it; never in a container or on the controller."""
    reasons = []
    if nouveau_loaded:
        reasons.append("nouveau is loaded and holds the GPUs")
    if loaded_version and installed_version and not installed_version.startswith(loaded_version):
        reasons.append("the loaded nvidia module is %s but %s is installed" % (loaded_version, installed_version))
    if in_container:
        return {"required": False, "reboot": False, "reasons": [],
                "message": "no reboot: running in a container, which shares the host's kernel"}
    if not reasons:
        return {"required": False, "reboot": False, "reasons": [], "message": "no reboot needed"}
    if is_controller:
        return {"required": True, "reboot": False, "reasons": reasons,
                "message": "reboot required (%s); not rebooting the Ansible controller" % "; ".join(reasons)}
    if not allow_reboot:
        return {"required": True, "reboot": False, "reasons": reasons,
                "message": "reboot required (%s); set gpufleet_allow_reboot: true to let gpufleet reboot" %
                           "; ".join(reasons)}
    return {"required": True, "reboot": True, "reasons": reasons,
            "message": "rebooting: %s" % "; ".join(reasons)}


# Kernel metapackages: what brings a new kernel on apt hosts (linux-image-amd64, linux-image-cloud-amd64,
# linux-image-generic, linux-image-aws, linux-generic, linux-aws, linux-generic-hwe-24.04, ...).
# Versioned packages (linux-image-6.1.0-40-amd64) never get upgraded in place, so holding them does nothing.
_APT_KERNEL_META = re.compile(r"^linux-(?:image|headers)-(?![0-9])[a-z0-9.+-]+$")
_APT_KERNEL_TOP_META = re.compile(r"^linux-(?:generic|virtual|lowlatency|aws|gcp|gke|azure|oracle|kvm|ibm|nvidia)"
                                  r"(?:-hwe-[0-9.]+)?$")


def apt_kernel_plan(dpkg_lines, kernel, hold):
    """Headers to install and packages to hold on an apt host so DKMS can build for the next kernel.

    ``dpkg_lines``: ``dpkg-query -W -f '${binary:Package} ${db:Status-Abbrev}\\n' 'linux-*'`` output.
    Headers: the running kernel's, plus the headers metapackage of every installed image
    metapackage (linux-image-amd64 -> linux-headers-amd64), so that the kernel an upgrade brings
    comes with its headers and DKMS builds the module for it before the reboot. Hold (when asked):
    the metapackages, which are what bring new kernels.
    """
    installed = []
    for line in (dpkg_lines or "").splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1][1:2] == "i":   # ii, hi: installed
            installed.append(fields[0].split(":", 1)[0])
    image_metas = sorted(n for n in installed if _APT_KERNEL_META.match(n) and n.startswith("linux-image-"))
    headers = ["linux-headers-%s" % kernel] + [n.replace("linux-image-", "linux-headers-", 1) for n in image_metas]
    metas = sorted(set(n for n in installed if _APT_KERNEL_META.match(n) or _APT_KERNEL_TOP_META.match(n))
                   | set(headers[1:]))
    # Holds are never released here: a hold the user set on a metapackage is theirs.
    return {"headers": headers, "hold": metas if hold else [], "metapackages": metas}


def stale_pinning_packages(dpkg_lines, wanted):
    """NVIDIA pinning packages installed on an apt host that the plan no longer wants (a branch or
    version change): removed before the driver moves, else the old pin keeps it where it was.

    ``dpkg_lines``: ``dpkg-query -W -f '${binary:Package} ${db:Status-Abbrev}\\n' 'nvidia-driver-pinning-*'``
    output; ``wanted``: the plan's ``pinning_packages``."""
    stale = []
    for line in (dpkg_lines or "").splitlines():
        fields = line.split()
        if len(fields) != 2 or fields[1][1:2] != "i":
            continue
        name = fields[0].split(":", 1)[0]
        if name.startswith(PINNING_PREFIX) and name not in (wanted or []) and name not in stale:
            stale.append(name)
    return stale


def stale_versionlocks(locklist, wanted):
    """Entries of the dnf versionlock list that lock one of the role's driver packages
    (``DNF_LOCKED_NAMES``) but match none of the plan's ``versionlock`` specs: an old exact
    version, another branch or the other flavour. They are deleted before installing, else the
    old lock hides the version asked for (or keeps an exact version after moving to a branch).

    ``locklist``: ``dnf versionlock list`` output (entries such as
    ``nvidia-driver-3:580.95.05-1.el9.*``; excluded ``!`` entries are the user's and kept)."""
    stale = []
    for entry in (locklist or "").split():
        match = re.match(r"^(?P<name>[A-Za-z0-9_.+-]+?)-(?P<epoch>[0-9]+):(?P<rest>.+)$", entry)
        if not match or match.group("name") not in DNF_LOCKED_NAMES:
            continue
        if any(fnmatch.fnmatchcase(entry, spec) or fnmatch.fnmatchcase(entry, spec + ".*")
               for spec in (wanted or [])):
            continue
        if entry not in stale:
            stale.append(entry)
    return stale


def enabled_module_stream(output, name="nvidia-driver"):
    """The enabled stream of module ``name`` from ``dnf module list --enabled NAME`` (None: none enabled).

    dnf prints a table ("nvidia-driver  580-dkms [e]  default, ...") with [e] after enabled streams.
    """
    for line in (output or "").splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0] == name and "[e]" in fields[2:4]:
            return "%s:%s" % (name, fields[1])
    return None


def module_stream_switch(output, wanted):
    """Whether the enabled stream must be switched (``dnf module switch-to WANTED --allowerasing``):
    another stream of the same module is enabled. None wanted or none enabled: no switch."""
    if not wanted:
        return False
    current = enabled_module_stream(output, wanted.split(":", 1)[0])
    return current is not None and current != wanted
