# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""What the nvidia_driver role does on one host, decided in one place.

``driver_plan`` takes the role's inputs and what was read from the host (distribution, GPUs from
``nvidia_gpu_info``, container, Secure Boot, preinstalled-driver markers) and returns the
packages with their version specs, the pin (apt preferences / dnf versionlock), the repository
file, the module-parameter file and every error and warning. The role only carries it out.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_compat import (
    DISTROS, parse_version, resolve_flavour, validate_driver, version_satisfies,
    with_defaults)
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.mirror_urls import debian_mirrors, mirror_url
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.repo_keys import cuda_key
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import REPO_KEYS

CUDA_REPO_BASE = "https://developer.download.nvidia.com/compute/cuda/repos"
CUDA_REPO_NAMES = {
    "debian-12": "debian12", "debian-13": "debian13", "ubuntu-22.04": "ubuntu2204", "ubuntu-24.04": "ubuntu2404",
    "rhel-8": "rhel8", "rocky-8": "rhel8", "almalinux-8": "rhel8",
    "rhel-9": "rhel9", "rocky-9": "rhel9", "almalinux-9": "rhel9", "amazon-2023": "amzn2023",
}
# NVIDIA's signing key file in each CUDA repository (Debian family: per repository, see
# versions.REPO_KEYS and repo_keys.cuda_key)
CUDA_REPO_KEYS = {"Debian": REPO_KEYS["cuda"]["file"], "RedHat": REPO_KEYS["cuda_rhel"]["file"]}
CUDA_REPO_ARCH = {"x86_64": "x86_64", "aarch64": "sbsa"}
APT_KEYRING = "/etc/apt/keyrings/gpufleet-nvidia-cuda.asc"
APT_SOURCES = "/etc/apt/sources.list.d/gpufleet-nvidia-driver.sources"
APT_PREFERENCES = "/etc/apt/preferences.d/gpufleet-nvidia-driver.pref"
DNF_REPO = "/etc/yum.repos.d/gpufleet-nvidia-cuda.repo"
# The checked CUDA key on RHEL-family nodes: the .repo file's gpgkey points here, so dnf imports only the
# key whose fingerprint the role checked (never what a URL serves at import time).
DNF_KEY = "/etc/pki/rpm-gpg/RPM-GPG-KEY-gpufleet-nvidia-cuda"
MODPROBE_OPTIONS = "/etc/modprobe.d/gpufleet-nvidia.conf"
# Where a platform ships the driver itself
PREINSTALLED_MARKERS = {
    "/etc/dgx-release": "DGX OS",
    "/home/kubernetes/bin/nvidia": "GKE driver installer",
    "/etc/eks/release": "EKS accelerated AMI",
}
HEADER = "Managed by gpufleet (role nvidia_driver); local changes are overwritten."
# NVIDIA's Driver Installation Guide: from branch 590 on, the Debian/Ubuntu packages of NVIDIA's
# CUDA repository drop the branch from their names (nvidia-open, cuda-drivers, nvidia-dkms, ...)
# and a branch or version is kept with a pinning package, nvidia-driver-pinning-<branch|version>,
# installed before the driver.
UNBRANCHED_FROM = 590
PINNING_PREFIX = "nvidia-driver-pinning-"


def distro_key(distribution, version, major):
    """``Debian``/``12`` -> ``debian-12``; ``Ubuntu``/``24.04`` -> ``ubuntu-24.04``; ``Amazon``/``2023``."""
    name = (distribution or "").lower().replace(" ", "")
    name = {"redhat": "rhel", "redhatenterpriselinux": "rhel", "centos": "rhel"}.get(name, name)
    if name == "ubuntu":
        return "ubuntu-%s" % version
    return "%s-%s" % (name, major)


def _cuda_base(values):
    """NVIDIA's CUDA repository root, through gpufleet_mirror_package_url when set."""
    return mirror_url(CUDA_REPO_BASE, values.get("gpufleet_mirror_package_url") or "")


def _version_glob(version):
    """apt/dnf version pattern: an exact version with any package revision, or a whole branch."""
    return "%s-*" % version["exact"] if version["exact"] else "%s.*" % version["branch"]


def _apt_pin(packages_line, version, what):
    return "\n".join([
        "Explanation: %s" % HEADER,
        "Explanation: %s stays at %s; change nvidia_driver_version to move it." % (what, _version_glob(version)),
        "Package: %s" % packages_line,
        "Pin: version %s" % _version_glob(version),
        "Pin-Priority: 1001",
        "",
    ])


def _deb822(uris, suites, components, signed_by=None):
    lines = ["# %s" % HEADER, "Types: deb", "URIs: %s" % uris, "Suites: %s" % " ".join(suites)]
    if components:
        lines.append("Components: %s" % " ".join(components))
    if signed_by:
        lines.append("Signed-By: %s" % signed_by)
    return "\n".join(lines) + "\n"


def apt_repository(url, suites, components=(), key_url=None, keyring=None):
    """One apt repository as data: the URL, its suites and components, and its signing key."""
    return {"type": "apt", "url": url, "suites": list(suites), "components": list(components),
            "key_url": key_url, "keyring": keyring}


def dnf_repository(name, description, baseurl, key_url, keyring=None):
    """One dnf repository as data: section name, baseurl, signing key URL and where the checked key is
    written on the node (None: dnf fetches ``key_url`` itself)."""
    return {"type": "dnf", "name": name, "description": description, "url": baseurl, "key_url": key_url,
            "keyring": keyring}


def apt_sources(repositories):
    """deb822 text of ``repositories`` (one stanza each)."""
    return "\n".join(_deb822(r["url"], r["suites"], r["components"], r["keyring"]) for r in repositories)


def dnf_repo_file(repositories):
    """.repo text of ``repositories``."""
    lines = ["# %s" % HEADER]
    for r in repositories:
        lines += ["[%s]" % r["name"], "name=%s" % r["description"], "baseurl=%s" % r["url"], "enabled=1",
                  "gpgcheck=1", "repo_gpgcheck=0", "gpgkey=%s" % ("file://" + r["keyring"] if r["keyring"] else r["key_url"])]
    return "\n".join(lines + [""])


def _signing_keys(repositories):
    """The distinct signing keys of ``repositories``: [{url, path}] (path None: the package manager imports it)."""
    keys = []
    for r in repositories:
        key = {"url": r["key_url"], "path": r["keyring"]}
        if r["key_url"] and key not in keys:
            keys.append(key)
    return keys


def _cuda_key(plan, distro, arch, values):
    """The CUDA repository's key URL (NVIDIA's server, never the package mirror, unless the inventory
    names its own key); records in ``plan["key_check"]`` what the role checks the key against."""
    vendor = "%s/%s/%s/" % (CUDA_REPO_BASE, CUDA_REPO_NAMES[distro], CUDA_REPO_ARCH.get(arch, arch))
    plan["key_check"] = cuda_key(vendor, CUDA_REPO_NAMES[distro], values)
    return plan["key_check"]["url"]


def _debian_family(plan, distro, version, flavour, values, codename, arch):
    branch = version["branch"]
    glob = _version_glob(version)
    if values["nvidia_driver_source"] == "distribution" and distro.startswith("debian"):
        kernel_pkg = "nvidia-open-kernel-dkms" if flavour == "open" else "nvidia-kernel-dkms"
        names = ["nvidia-driver", "nvidia-smi", kernel_pkg]
        components = ["contrib", "non-free", "non-free-firmware"]
        plan["repositories"] = [
            apt_repository(values["nvidia_driver_debian_mirror"], [codename, codename + "-updates"], components),
            apt_repository(values["nvidia_driver_debian_security_mirror"], [codename + "-security"], components)]
        plan["pin_file"] = {"path": APT_PREFERENCES,
                            "content": _apt_pin("src:nvidia-graphics-drivers", version, "Debian's NVIDIA driver")}
        plan["extra_packages"] = ["nvidia-persistenced"] if values["nvidia_driver_persistence"] else []
    elif values["nvidia_driver_source"] == "distribution":  # Ubuntu, Canonical's -server packages
        suffix = "-open" if flavour == "open" else ""
        names = ["nvidia-headless-%s-server%s" % (branch, suffix), "nvidia-utils-%s-server" % branch]
        plan["repositories"] = []
        plan["pin_file"] = {"path": APT_PREFERENCES,
                            "content": _apt_pin("src:nvidia-graphics-drivers-%s-server" % branch, version,
                                                "Canonical's NVIDIA %s server driver" % branch)}
        plan["extra_packages"] = []
    elif int(branch) >= UNBRANCHED_FROM:  # NVIDIA's CUDA repository, 590 and later: unbranched names
        repo = "%s/%s/%s/" % (_cuda_base(values), CUDA_REPO_NAMES[distro], CUDA_REPO_ARCH.get(arch, arch))
        names = ["nvidia-open" if flavour == "open" else "cuda-drivers"]
        plan["repositories"] = [apt_repository(repo, ["/"], [], _cuda_key(plan, distro, arch, values), APT_KEYRING)]
        # NVIDIA's pinning package keeps the branch (or version); the preferences file says the same
        # for apt runs before it is installed and covers the unbranched library/kernel names.
        plan["pinning_packages"] = [PINNING_PREFIX + (version["exact"] or branch)]
        plan["pin_file"] = {"path": APT_PREFERENCES, "content": _apt_pin(
            "cuda-drivers* nvidia-open* nvidia-driver nvidia-driver-cuda* nvidia-kernel-* nvidia-dkms* nvidia-utils*"
            " libnvidia-* nvidia-compute-utils* nvidia-firmware* nvidia-modprobe nvidia-persistenced"
            " xserver-xorg-video-nvidia* nvidia-fabricmanager*",
            version, "NVIDIA's CUDA-repository driver")}
        plan["extra_packages"] = []
    else:  # NVIDIA's CUDA repository (flat repository, signed)
        repo = "%s/%s/%s/" % (_cuda_base(values), CUDA_REPO_NAMES[distro], CUDA_REPO_ARCH.get(arch, arch))
        names = ["nvidia-open-%s" % branch if flavour == "open" else "cuda-drivers-%s" % branch]
        plan["repositories"] = [apt_repository(repo, ["/"], [], _cuda_key(plan, distro, arch, values), APT_KEYRING)]
        plan["pin_file"] = {"path": APT_PREFERENCES, "content": _apt_pin(
            "cuda-drivers* nvidia-open* nvidia-driver* nvidia-kernel-* nvidia-dkms-* nvidia-utils-* libnvidia-*"
            " nvidia-compute-utils-* nvidia-firmware-* nvidia-modprobe nvidia-persistenced xserver-xorg-video-nvidia*"
            " nvidia-fabricmanager*",
            version, "NVIDIA's CUDA-repository driver")}
        plan["extra_packages"] = []
    plan["keys"] = _signing_keys(plan["repositories"])
    # the role downloads the apt keyring file itself and checks its fingerprint first (None: no keyring)
    plan["keyring"] = next((dict(k, check=plan.get("key_check")) for k in plan["keys"] if k["path"]), None)
    plan["repo_files"] = ([{"path": APT_SOURCES, "content": apt_sources(plan["repositories"])}]
                          if plan["repositories"] else [])
    plan["packages"] = ["%s=%s" % (name, glob) for name in names]
    plan["hold"] = names if version["exact"] else []
    plan["package_names"] = names
    plan.setdefault("pinning_packages", [])


def _redhat_family(plan, distro, version, flavour, values, arch):
    branch = version["branch"]
    repo = "%s/%s/%s" % (_cuda_base(values), CUDA_REPO_NAMES[distro], CUDA_REPO_ARCH.get(arch, arch))
    # the key from NVIDIA's server, never from the package mirror; the role reads it, checks its fingerprint
    # (versions.REPO_KEYS cuda_rhel, or the inventory's own) and writes it to DNF_KEY, which the .repo names
    key_url = _cuda_key(plan, distro, arch, values)
    plan["repositories"] = [dnf_repository("gpufleet-nvidia-cuda", "NVIDIA CUDA repository (%s)" % CUDA_REPO_NAMES[distro],
                                           repo, key_url, DNF_KEY)]
    plan["keys"] = _signing_keys(plan["repositories"])
    plan["keyring"] = dict(plan["keys"][0], check=plan["key_check"])
    plan["repo_files"] = [{"path": DNF_REPO, "content": dnf_repo_file(plan["repositories"])}]
    kmod = "kmod-nvidia-open-dkms" if flavour == "open" else "kmod-nvidia-latest-dkms"
    names = ["nvidia-driver", "nvidia-driver-cuda", kmod]
    # The branch's module stream (NVIDIA's Driver Installation Guide: also on Amazon Linux 2023).
    plan["module_stream"] = "nvidia-driver:%s-%s" % (branch, "open" if flavour == "open" else "dkms")
    if version["exact"]:
        # NVIDIA's RPMs carry epoch 3; "@stream:version" specs are what fails on RHEL, plain NEVRA works.
        plan["packages"] = ["%s-3:%s" % (name, version["exact"]) for name in names]
        plan["versionlock"] = ["%s-3:%s-*" % (name, version["exact"]) for name in names]
    elif distro == "amazon-2023":
        # AL2023 does not keep a package inside an enabled stream on update: a versionlock on the branch does.
        plan["packages"] = list(names)
        plan["versionlock"] = ["%s-3:%s.*" % (name, branch) for name in names]
    else:
        plan["packages"] = list(names)
        plan["versionlock"] = []
    plan["hold"] = []
    plan["pin_file"] = None
    plan["extra_packages"] = ["dnf-plugin-versionlock" if distro.endswith("-8") else "python3-dnf-plugin-versionlock"]
    plan["package_names"] = names


FABRIC_MANAGER_SERVICE = "nvidia-fabricmanager"
MODULES_LOAD_FILE = "/etc/modules-load.d/gpufleet-fabricmanager.conf"


def _fabric_manager(plan, gpu, version, values, distro):
    """HGX/DGX boards (NVSwitch on the PCI bus) need Fabric Manager at the driver's exact version,
    else CUDA fails with error 802; Blackwell NVSwitch systems also need NVLSM and the ib_umad module."""
    plan["fabric_manager"] = None
    if not int(gpu.get("nvswitch_count") or 0) or not plan["install"]:
        return
    if values["nvidia_driver_source"] == "distribution" and distro.startswith("debian"):
        plan["errors"].append("nvidia_driver_source: this host has %d NVSwitch(es) and needs NVIDIA Fabric Manager, "
                              "which Debian's packages do not include; use one of: nvidia" % int(gpu["nvswitch_count"]))
        return
    blackwell = "blackwell" in (gpu.get("architectures") or [])
    glob = _version_glob(version)
    if plan["os_family"] == "Debian":
        unbranched = plan.get("pinning_packages") and int(version["branch"]) >= UNBRANCHED_FROM
        names = ["nvidia-fabricmanager" if unbranched else "nvidia-fabricmanager-%s" % version["branch"]]
        specs = ["%s=%s" % (n, glob) for n in names]
    else:
        names = ["nvidia-fabric-manager"]
        specs = ["nvidia-fabric-manager-3:%s" % version["exact"]] if version["exact"] else list(names)
        if version["exact"]:
            plan["versionlock"] = list(plan["versionlock"]) + ["nvidia-fabric-manager-3:%s-*" % version["exact"]]
    extra = ["nvlsm"] if blackwell else []
    plan["packages"] = list(plan["packages"]) + specs
    plan["extra_packages"] = list(plan["extra_packages"]) + extra
    plan["package_names"] = list(plan["package_names"]) + names
    if version["exact"] and plan["os_family"] == "Debian":
        plan["hold"] = list(plan["hold"]) + names
    plan["fabric_manager"] = {
        "packages": names + extra, "service": FABRIC_MANAGER_SERVICE,
        "modules_load": {"path": MODULES_LOAD_FILE, "content": "# %s\nib_umad\n" % HEADER} if blackwell else None,
        "nvswitch_count": int(gpu["nvswitch_count"]),
    }


def modprobe_options(params):
    if not params:
        return None
    body = " ".join("%s=%s" % (k, params[k]) for k in sorted(params))
    return "# %s\noptions nvidia %s\n" % (HEADER, body)


def secure_boot_state(mokutil_rc, mokutil_out):
    """``enabled``/``disabled``/``unsupported`` (no EFI, or mokutil absent: rc None)."""
    text = (mokutil_out or "").lower()
    if mokutil_rc is None:
        return "unknown"
    if "secureboot enabled" in text:
        return "enabled"
    if "secureboot disabled" in text:
        return "disabled"
    return "unsupported"


def driver_plan(inputs):
    """Decide everything for one host; see the module docstring. ``inputs`` keys:

    values (role variables), distribution, distribution_version, distribution_major, codename,
    os_family, architecture, gpu_info (nvidia_gpu_info result), in_container, mokutil_rc,
    mokutil_out, markers (existing marker paths), managed_version (version of our main package
    installed by the package manager, or ""), today (ISO date, optional).
    """
    values = with_defaults(inputs.get("values") or {})
    for key in ("nvidia_driver_debian_mirror", "nvidia_driver_debian_security_mirror"):
        values[key] = (inputs.get("values") or {}).get(key) or {
            "nvidia_driver_debian_mirror": "http://deb.debian.org/debian",
            "nvidia_driver_debian_security_mirror": "http://deb.debian.org/debian-security"}[key]
    mirror_inputs = dict((k, v) for k, v in (inputs.get("values") or {}).items() if k.startswith("gpufleet_mirror_"))
    values["gpufleet_mirror_package_url"] = mirror_inputs.get("gpufleet_mirror_package_url") or ""
    values["nvidia_driver_debian_mirror"], values["nvidia_driver_debian_security_mirror"] = debian_mirrors(
        mirror_inputs, values["nvidia_driver_debian_mirror"], values["nvidia_driver_debian_security_mirror"])
    gpu = inputs.get("gpu_info") or {}
    archs = gpu.get("architectures") or []
    grace = bool(gpu.get("grace_hopper"))
    distro = distro_key(inputs.get("distribution"), inputs.get("distribution_version"),
                        inputs.get("distribution_major"))
    today = inputs.get("today")
    today = datetime.date(*[int(p) for p in today.split("-")]) if today else None
    problems = validate_driver(values, archs, [distro] if distro in DISTROS else [], today=today,
                               grace_hopper=grace)
    if distro not in DISTROS:
        problems.error("nvidia_driver (host OS)", "%s is not a supported node OS; use one of: %s" % (
            distro, ", ".join(sorted(DISTROS))))
    plan = {"distro": distro, "os_family": DISTROS.get(distro), "errors": problems.errors,
            "warnings": problems.warnings, "in_container": bool(inputs.get("in_container")),
            "architectures": archs}
    if problems.errors:
        return plan
    version = parse_version(values["nvidia_driver_version"])
    flavour = resolve_flavour(values["nvidia_driver_flavour"], archs, grace)
    plan.update({"branch": version["branch"], "exact": version["exact"], "flavour": flavour,
                 "version_glob": _version_glob(version),
                 "module_params_file": {"path": MODPROBE_OPTIONS,
                                        "content": modprobe_options(values["nvidia_driver_module_params"])}})
    if plan["os_family"] == "Debian":
        _debian_family(plan, distro, version, flavour, values, inputs.get("codename"), inputs.get("architecture"))
        plan["module_stream"] = None
        plan["versionlock"] = []
    else:
        _redhat_family(plan, distro, version, flavour, values, inputs.get("architecture"))
        plan["pinning_packages"] = []

    # A driver the platform put there (or one installed outside the package manager)
    markers = [m for m in (inputs.get("markers") or []) if m in PREINSTALLED_MARKERS]
    loaded = gpu.get("driver_version") if gpu.get("driver_loaded") else None
    managed = inputs.get("managed_version") or ""
    preinstalled = bool(markers) or bool(loaded and not managed)
    plan["preinstalled"] = preinstalled
    plan["preinstalled_by"] = [PREINSTALLED_MARKERS[m] for m in markers] or (
        ["a driver outside the package manager"] if preinstalled else [])
    plan["install"] = True
    if preinstalled:
        if loaded and version_satisfies(loaded, values["nvidia_driver_version"]):
            plan["install"] = False
            plan["warnings"].append("nvidia_driver_version: the preinstalled driver %s (%s) satisfies %s; "
                                    "nothing is installed"
                                    % (loaded, ", ".join(plan["preinstalled_by"]), values["nvidia_driver_version"]))
        elif not values["nvidia_driver_replace_preinstalled"]:
            plan["errors"].append("nvidia_driver_version: the preinstalled driver %s (%s) does not satisfy the "
                                  "requested %s; use one of: nvidia_driver_version matching %s, "
                                  "nvidia_driver_replace_preinstalled: true" % (
                                      loaded or "(not loaded)", ", ".join(plan["preinstalled_by"]),
                                      values["nvidia_driver_version"], loaded or "it"))
            return plan

    _fabric_manager(plan, gpu, version, values, distro)
    if plan["errors"]:
        return plan

    sb = secure_boot_state(inputs.get("mokutil_rc"), inputs.get("mokutil_out"))
    plan["secure_boot"] = sb
    plan["sign_modules"] = sb == "enabled" and bool(values["nvidia_driver_mok_key"])
    if sb == "enabled" and not values["nvidia_driver_mok_key"] and plan["install"]:
        plan["errors"].append("nvidia_driver_mok_key: Secure Boot is enabled and would reject the unsigned NVIDIA "
                              "module; use one of: nvidia_driver_mok_key + nvidia_driver_mok_cert (an enrolled "
                              "MOK), Secure Boot disabled in firmware")

    plan["module_state"] = ("not loaded: running in a container, which shares the host's kernel"
                            if plan["in_container"] else "loaded by the role")
    # What is really pinned/held on the host: nothing when nothing is installed (a preinstalled
    # driver that satisfies the request is left alone, no pin file, no hold, no versionlock).
    pins = plan["install"] and bool(plan.get("pin_file") or plan.get("versionlock") or plan.get("module_stream"))
    plan["pinned_to"] = plan["version_glob"] if pins else None
    plan["held"] = list(plan.get("hold") or []) + list(plan.get("versionlock") or []) if plan["install"] else []
    return plan
