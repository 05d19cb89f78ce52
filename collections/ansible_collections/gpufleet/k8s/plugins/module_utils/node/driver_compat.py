# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""NVIDIA driver inputs and their compatibility: version format, CUDA range, end of life,
kernel-module flavour per GPU architecture, distribution and package source.

Used twice with the same rules: by preflight on the controller (``check``, before any host is
contacted) and by the ``nvidia_driver`` role at its start on each host (``validate_driver``), so
that a bad version fails before any package changes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems, one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import (
    ARCHITECTURES, GPU_TYPES, OPEN_REQUIRED, OPEN_UNSUPPORTED)

FLAVOURS = ("auto", "open", "proprietary")
SOURCES = ("distribution", "nvidia")

# The driver's inputs are the nvidia_driver role's options plus these project-wide ones; their
# defaults come from the roles' meta/argument_specs.yml (preflight does not see role defaults).
SHARED_INPUTS = ("gpufleet_allow_eol_driver", "gpufleet_allow_reboot")
# Booleans of the role checked by k8s_syntax instead (they accept yes/no from the command line).
BOOLS_CHECKED_ELSEWHERE = ("nvidia_driver_prepare_node",)


def defaults():
    """{variable: default} of the driver inputs, from the argument specs."""
    out = role_specs.defaults("nvidia_driver")
    shared = role_specs.defaults("gpufleet")
    out.update((name, shared[name]) for name in SHARED_INPUTS)
    return out


def bool_vars():
    """The driver inputs that must be true or false: declared ``type: bool``, or ``type: raw`` with a
    boolean default (preflight checks those itself)."""
    kinds = role_specs.types("nvidia_driver", "gpufleet")
    return tuple(sorted(name for name, default in defaults().items()
                        if name not in BOOLS_CHECKED_ELSEWHERE
                        and (kinds.get(name) == "bool" or (kinds.get(name) == "raw" and isinstance(default, bool)))))


BRANCH_RE = re.compile(r"^([1-9][0-9]{2})$")
# 580.95.05, 535.261.03, 570.26 (two-part versions exist, e.g. 570.26 for CUDA 12.8 GA)
EXACT_RE = re.compile(r"^([1-9][0-9]{2})\.([0-9]{2,3})(?:\.([0-9]{2}))?$")
CUDA_RE = re.compile(r"^(1[0-9])\.([0-9]{1,2})$")

# Data-centre branches: kind and last day of support (None: supported, no date announced).
BRANCHES = {
    "535": ("LTS", datetime.date(2026, 6, 30)),
    "570": ("production", datetime.date(2026, 2, 28)),
    "580": ("LTS", datetime.date(2028, 8, 31)),
    "595": ("production", None),
}
# Branches that have reached end of life (datacenter and new-feature branches).
EOL_BRANCHES = ("450", "460", "470", "495", "510", "515", "520", "525", "530", "545", "550", "555", "560",
                "565", "575")
NEWEST_KNOWN_BRANCH = 595
LAST_BRANCH_FOR_OLD_GPUS = 580          # R580 is the last branch for Maxwell, Pascal and Volta
FIRST_BRANCH_FOR_BLACKWELL = 570

# CUDA major: lowest driver branch (minor-version compatibility). Drivers are backward compatible
# with no upper bound: a 580 driver runs CUDA 11.x and 12.x programs (measured on an H200 with
# driver 580.159.04: a CUDA 12.4 runtime got cudaDriverGetVersion 13000 and allocated memory).
CUDA_MAJOR_MINIMUM = {11: 450, 12: 525, 13: 580}
# Linux x86_64 driver of each CUDA GA release (full feature set; below it minor-version compatibility),
# newest first. A CUDA version newer than the first row is unknown: preflight refuses it rather than
# judge it by an older release's driver.
CUDA_RELEASE_MINIMUMS = (
    ((13, 3), "610.43.02"),     # CUDA 13.3 release notes (R610, a branch gpufleet does not install yet)
    ((13, 2), "595.45.04"),
    ((13, 1), "590.44.01"),
    ((13, 0), "580.65.06"),
    # every CUDA 12 minor release has its row: a missing one (12.9 before) was judged by an older release's
    # driver, so CUDA 12.9 on R570 got no verdict (CUDA toolkit release notes, table 3)
    ((12, 9), "575.51.03"),
    ((12, 8), "570.26"),
    ((12, 6), "560.28.03"),
    ((12, 5), "555.42.02"),
    ((12, 4), "550.54.14"),
    ((12, 3), "545.23.06"),
    ((12, 2), "535.54.03"),
    ((12, 1), "530.30.02"),
    ((12, 0), "525.60.13"),
)

# Node operating systems: distro id-version -> OS family; and which sources carry the driver.
DISTROS = {
    "ubuntu-22.04": "Debian", "ubuntu-24.04": "Debian",
    "debian-12": "Debian", "debian-13": "Debian",
    "rhel-8": "RedHat", "rhel-9": "RedHat", "rocky-8": "RedHat", "rocky-9": "RedHat",
    "almalinux-8": "RedHat", "almalinux-9": "RedHat",
    "amazon-2023": "RedHat",
}
# Driver branches the distribution itself ships (source: distribution). RHEL-family and Amazon
# Linux ship none: NVIDIA's repository is the only source there.
DISTRIBUTION_BRANCHES = {
    "debian-12": ("535",),
    "debian-13": ("550",),
    "ubuntu-22.04": ("535", "550", "570", "575", "580"),
    "ubuntu-24.04": ("535", "550", "570", "575", "580"),
}


def parse_version(value):
    """Return ``{"branch", "exact", "parts"}`` or raise ValueError with the reason.

    ``"580"`` is a branch; ``"580.95.05"`` an exact version. YAML floats (580.95) are refused
    because they lose digits (535.50 becomes 535.5).
    """
    if isinstance(value, bool) or value is None:
        raise ValueError("is not a driver version")
    if isinstance(value, int):
        value = str(value)
    elif isinstance(value, float):
        raise ValueError("is a number (%r); quote it so no digits are lost, e.g. \"580.95.05\"" % value)
    if not isinstance(value, str):
        raise ValueError("is not a driver version")
    match = BRANCH_RE.match(value)
    if match:
        return {"branch": match.group(1), "exact": None, "parts": (int(match.group(1)),)}
    match = EXACT_RE.match(value)
    if match:
        parts = tuple(int(p) for p in match.groups() if p is not None)
        return {"branch": match.group(1), "exact": value, "parts": parts}
    raise ValueError("%r is not a driver version" % value)


def _version_tuple(text):
    return tuple(int(p) for p in text.split("."))


def version_satisfies(installed, requested):
    """Whether an installed driver version (``535.261.03``) meets a requested branch or exact version."""
    try:
        want = parse_version(requested)
        have = parse_version(installed)
    except ValueError:
        return False
    if want["exact"]:
        return have["exact"] == want["exact"]
    return have["branch"] == want["branch"]


def branch_status(branch, today):
    """Return ``("supported"|"eol"|"unknown-newer"|"unknown", message or None)``."""
    if branch in BRANCHES:
        kind, eol = BRANCHES[branch]
        if eol is not None and today > eol:
            return "eol", "R%s (%s) reached end of life on %s" % (branch, kind, eol.isoformat())
        return "supported", None
    if branch in EOL_BRANCHES:
        return "eol", "R%s is an end-of-life branch" % branch
    if int(branch) > NEWEST_KNOWN_BRANCH:
        return "unknown-newer", ("R%s is newer than the branches gpufleet knows (up to R%s); its CUDA and "
                                 "end-of-life rules are not checked" % (branch, NEWEST_KNOWN_BRANCH))
    return "unknown", None


def _var(prefix, name):
    return "%s%s" % (prefix, name)


def validate_driver(values, architectures=(), distros=(), today=None, grace_hopper=False, prefix=""):
    """Check the driver inputs; return Problems (errors and warnings, each naming its variable).

    ``values`` holds the ``nvidia_driver_*``/``gpufleet_*`` inputs with defaults applied;
    ``architectures`` the GPU architectures the driver must serve; ``distros`` the node OSes
    (``debian-12``, ...); ``prefix`` is put before every variable name in messages.
    """
    problems = Problems()
    today = today or datetime.date.today()
    v_version = _var(prefix, "nvidia_driver_version")
    v_flavour = _var(prefix, "nvidia_driver_flavour")
    v_source = _var(prefix, "nvidia_driver_source")
    v_cuda = _var(prefix, "nvidia_driver_cuda_version")
    v_distros = _var(prefix, "nvidia_driver_node_distros")

    for name in bool_vars():
        if not isinstance(values.get(name), bool):
            problems.error(_var(prefix, name), "%r is not a boolean; use one of: true, false" % (values.get(name),))
    allow_eol = values.get("gpufleet_allow_eol_driver") is True

    flavour = values.get("nvidia_driver_flavour")
    if flavour not in FLAVOURS:
        problems.error(v_flavour, "%r is not a kernel-module flavour; use %s" % (flavour, one_of(FLAVOURS)))
        flavour = None
    source = values.get("nvidia_driver_source")
    if source not in SOURCES:
        problems.error(v_source, "%r is not a driver source; use %s" % (source, one_of(SOURCES)))
        source = None

    version = None
    try:
        version = parse_version(values.get("nvidia_driver_version"))
    except ValueError as exc:
        problems.error(v_version, "%s; use one of: a branch such as \"580\", an exact version such as "
                                  "\"580.95.05\"" % exc)

    known_archs = [a for a in architectures if a in ARCHITECTURES]
    old_gpus = sorted(set(a for a in known_archs if a in OPEN_UNSUPPORTED))
    open_only = sorted(set(a for a in known_archs if a in OPEN_REQUIRED)
                       | (set(["grace-hopper"]) if grace_hopper else set()))

    if version is not None:
        branch = version["branch"]
        status, message = branch_status(branch, today)
        if status == "unknown":
            problems.error(v_version, "R%s is not an NVIDIA driver branch gpufleet knows; use one of: %s" % (
                branch, ", ".join(sorted(BRANCHES))))
        elif status == "unknown-newer":
            problems.warn(v_version, message)
        elif status == "eol":
            if allow_eol:
                problems.warn(v_version, message + "; allowed by gpufleet_allow_eol_driver")
            else:
                problems.error(v_version, "%s; use one of: %s (supported), or set gpufleet_allow_eol_driver: true" % (
                    message, ", ".join(b for b in sorted(BRANCHES) if branch_status(b, today)[0] == "supported")))
        if old_gpus and int(branch) > LAST_BRANCH_FOR_OLD_GPUS:
            problems.error(v_version, "R%s does not support %s GPUs (R%d is their last branch); use one of: %d or older" % (
                branch, "/".join(old_gpus), LAST_BRANCH_FOR_OLD_GPUS, LAST_BRANCH_FOR_OLD_GPUS))
        if "blackwell" in known_archs and int(branch) < FIRST_BRANCH_FOR_BLACKWELL:
            problems.error(v_version, "R%s does not support blackwell GPUs; use one of: %d or newer" % (
                branch, FIRST_BRANCH_FOR_BLACKWELL))
        _check_cuda(values.get("nvidia_driver_cuda_version"), version, problems, v_cuda)
    else:
        _check_cuda(values.get("nvidia_driver_cuda_version"), None, problems, v_cuda)

    if flavour == "open" and old_gpus:
        problems.error(v_flavour, "open kernel modules do not support %s GPUs; use one of: proprietary, auto" %
                       "/".join(old_gpus))
    if flavour == "proprietary" and open_only:
        problems.error(v_flavour, "%s GPUs need the open kernel modules; use one of: open, auto" % "/".join(open_only))
    if not isinstance(distros, (list, tuple)):
        problems.error(v_distros, "must be a list of node OSes; use %s" % one_of(sorted(DISTROS)))
        distros = ()
    for index, distro in enumerate(distros):
        var = "%s[%d]" % (v_distros, index)
        if distro not in DISTROS:
            problems.error(var, "%r is not a supported node OS; use %s" % (distro, one_of(sorted(DISTROS))))
            continue
        if source == "distribution" and version is not None:
            shipped = DISTRIBUTION_BRANCHES.get(distro, ())
            if not shipped:
                problems.error(v_source, "%s does not ship the NVIDIA driver; use one of: nvidia" % distro)
            elif version["branch"] not in shipped:
                problems.error(v_version, "%s ships driver branch(es) %s, not R%s; use one of: %s, or set "
                                          "nvidia_driver_source: nvidia" % (
                                              distro, "/".join(shipped), version["branch"], ", ".join(shipped)))

    _check_signing(values, problems, prefix)
    params = values.get("nvidia_driver_module_params")
    if not isinstance(params, dict) or not all(
            isinstance(k, str) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", k) and isinstance(v, (str, int))
            and not isinstance(v, bool) for k, v in params.items()):
        problems.error(_var(prefix, "nvidia_driver_module_params"),
                       "must map nvidia module parameter names to string or integer values; use one of: "
                       "{NVreg_PreserveVideoMemoryAllocations: 1}, {}")
    return problems


def _check_cuda(cuda, version, problems, var):
    if cuda in ("", None):
        return
    match = CUDA_RE.match(cuda) if isinstance(cuda, str) else None
    if not match:
        problems.error(var, "%r is not a CUDA version; use one of: \"\" (none), \"12.4\", \"13.0\" (quoted)" % (cuda,))
        return
    major, minor = int(match.group(1)), int(match.group(2))
    if major not in CUDA_MAJOR_MINIMUM:
        problems.error(var, "CUDA %s is not supported by any driver gpufleet installs; use one of: %s" % (
            cuda, ", ".join("%d.x" % m for m in sorted(CUDA_MAJOR_MINIMUM))))
        return
    newest = CUDA_RELEASE_MINIMUMS[0][0]
    if (major, minor) > newest:
        problems.error(var, "CUDA %s is unknown to gpufleet: its driver table ends at CUDA %d.%d (driver %s), so "
                       "the driver CUDA %s needs cannot be checked; use one of: a CUDA version up to %d.%d, \"\" "
                       "(no CUDA check)" % (cuda, newest[0], newest[1], CUDA_RELEASE_MINIMUMS[0][1], cuda,
                                            newest[0], newest[1]))
        return
    if version is None:
        return
    low = CUDA_MAJOR_MINIMUM[major]
    branch = int(version["branch"])
    if branch < low:
        problems.error(var, "CUDA %s needs a driver >= %d, but nvidia_driver_version is %s; use one of: a driver "
                            "version >= %d (newer drivers run older CUDA too), or a CUDA version R%d supports (%s)" % (
                                cuda, low, version["exact"] or "R%d" % branch, low, branch,
                                ", ".join("%d.x" % m for m in sorted(CUDA_MAJOR_MINIMUM)
                                          if CUDA_MAJOR_MINIMUM[m] <= branch) or "none"))
        return
    for release, minimum in CUDA_RELEASE_MINIMUMS:
        if (major, minor) >= release:
            if release[0] == major:
                need = _version_tuple(minimum)
                have = version["parts"]
                below = have[:len(need)] < need if version["exact"] else branch < need[0]
                if below:
                    problems.warn(var, "CUDA %s's own driver is %s or newer; %s runs it only under minor-version "
                                       "compatibility (no PTX JIT of newer code)" % (
                                           cuda, minimum, version["exact"] or "R%d" % branch))
            break


def _check_signing(values, problems, prefix):
    key, cert = values.get("nvidia_driver_mok_key"), values.get("nvidia_driver_mok_cert")
    for name, value in (("nvidia_driver_mok_key", key), ("nvidia_driver_mok_cert", cert)):
        if not isinstance(value, str) or (value and not value.startswith("/")):
            problems.error(_var(prefix, name), "%r must be an absolute path on the node or empty; use one of: "
                                               "\"\", /var/lib/shim-signed/mok/MOK.priv" % (value,))
    if isinstance(key, str) and isinstance(cert, str) and bool(key) != bool(cert):
        problems.error(_var(prefix, "nvidia_driver_mok_key" if not key else "nvidia_driver_mok_cert"),
                       "Secure Boot signing needs both nvidia_driver_mok_key and nvidia_driver_mok_cert; "
                       "use one of: both set, both empty")


def resolve_flavour(flavour, architectures, grace_hopper=False):
    """``auto``: open for Turing and newer, proprietary for Maxwell/Pascal/Volta (and with no GPU seen)."""
    if flavour != "auto":
        return flavour
    if grace_hopper or any(a in OPEN_REQUIRED for a in architectures):
        return "open"
    if any(a in OPEN_UNSUPPORTED for a in architectures):
        return "proprietary"
    if architectures:
        return "open"
    return "proprietary"


def with_defaults(extra):
    values = defaults()
    values.update(dict((k, v) for k, v in (extra or {}).items() if k in values))
    return values


def pool_architectures(plan):
    archs = []
    for pool in plan.get("pools") or []:
        gpu = GPU_TYPES.get(pool.get("gpu_type")) if isinstance(pool, dict) else None
        if gpu and gpu["arch"] not in archs:
            archs.append(gpu["arch"])
    return archs


def iso_date(value):
    """``datetime.date`` of an ISO date string (YYYY-MM-DD), None when it is not one."""
    try:
        return datetime.date(*[int(p) for p in str(value).split("-")]) if str(value).count("-") == 2 else None
    except ValueError:
        return None


def check(params, plan, problems, today=None):
    """Preflight: the driver inputs against the pools' GPU architectures and the declared node OSes.

    Driver checks apply where gpufleet installs the driver: self-managed clusters (on EKS and GKE
    the platform's images ship it).
    """
    extra = params.get("extra") or {}
    if plan.get("platform") in ("eks", "gke", "gke-autopilot") and not any(
            k.startswith("nvidia_driver_") for k in extra):
        return
    if today is None and params.get("today"):
        today = iso_date(params["today"])
        if today is None:
            problems.error("today", "%r is not a date; use YYYY-MM-DD (empty: the controller's clock)"
                           % params["today"])
            return
    values = with_defaults(extra)
    result = validate_driver(values, pool_architectures(plan), values.get("nvidia_driver_node_distros") or [],
                             today=today)
    problems.extend(result)
