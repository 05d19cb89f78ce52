# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Container runtime presets (which file gpufleet writes for each distribution, where the socket
is), the runtime inputs' checks (also preflight's) and the service that runs the runtime."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, one_of

NVIDIA_RUNTIME_BINARY = "/usr/bin/nvidia-container-runtime"
DEFAULT_RUNTIME_TYPE = "io.containerd.runc.v2"
BACKUP_SUFFIX = ".gpufleet-backup"
MODES = ("drop-in", "in-place")
CONFIG_VERSIONS = (1, 2, 3, 4)

CRI_PATHS = {
    1: ("plugins", "cri"),
    2: ("plugins", "io.containerd.grpc.v1.cri"),
    3: ("plugins", "io.containerd.cri.v1.runtime"),
    4: ("plugins", "io.containerd.cri.v1.runtime"),
}


def _rancher(name, server, agent, description):
    """The preset of a Rancher distribution (k3s, RKE2): same layout under /var/lib/rancher/<name> and
    /etc/rancher/<name>, containerd's socket under /run/k3s for both, a server and an agent service."""
    return {
        "kind": "containerd", "style": "template",
        "config": "/var/lib/rancher/%s/agent/etc/containerd/config.toml.tmpl" % name,
        "dropin": None, "socket": "/run/k3s/containerd/containerd.sock", "service": server,
        "services": (server, agent),
        "distro_config": "/etc/rancher/%s/config.yaml.d/90-gpufleet-nvidia.yaml" % name,
        "description": description,
    }


# Distribution presets: which file gpufleet writes, how, and where the runtime's socket is.
#   kind      containerd | crio
#   style     root       root config + optional drop-in (mode decides)
#             template   a distribution template that must stay valid TOML; edited in place
#             dropin     a standalone drop-in the distribution merges itself (no root file)
PRESETS = {
    "containerd": {
        "kind": "containerd", "style": "root", "config": "/etc/containerd/config.toml",
        "dropin": "/etc/containerd/conf.d/99-nvidia.toml",
        "socket": "/run/containerd/containerd.sock", "service": "containerd",
        "description": "plain containerd: kubeadm, EKS self-managed nodes, Kubespray",
    },
    "k3s": _rancher("k3s", "k3s", "k3s-agent", "k3s (server or agent)"),
    "rke2": _rancher("rke2", "rke2-server", "rke2-agent", "RKE2 (server or agent)"),
    "k0s": {
        "kind": "containerd", "style": "dropin", "config": None,
        "dropin": "/etc/k0s/containerd.d/nvidia.toml",
        "socket": "/run/k0s/containerd.sock", "service": "k0sworker",
        "services": ("k0sworker", "k0scontroller"),
        "description": "k0s (k0s merges /etc/k0s/containerd.d/*.toml into its containerd config)",
    },
    "microk8s": {
        "kind": "containerd", "style": "template",
        "config": "/var/snap/microk8s/current/args/containerd-template.toml",
        "dropin": None, "socket": "/var/snap/microk8s/common/run/containerd.sock",
        "service": "snap.microk8s.daemon-containerd",
        "description": "MicroK8s (snap)",
    },
    "crio": {
        "kind": "crio", "style": "dropin", "config": None,
        "dropin": "/etc/crio/crio.conf.d/99-nvidia.toml",
        "socket": "/var/run/crio/crio.sock", "service": "crio",
        "description": "CRI-O (OpenShift-style nodes)",
    },
}

# gpufleet_platform -> preset (cloud platforms with self-managed nodes use plain containerd).
PLATFORM_PRESETS = {
    "kubeadm": "containerd", "eks": "containerd", "gke": "containerd", "gke-autopilot": "containerd",
    "k3s": "k3s", "rke2": "rke2", "k0s": "k0s", "microk8s": "microk8s", "openshift": "crio",
}

# Minimal defaults for a missing config when no containerd binary can print its own
# (``containerd config default``): enough for the CRI plugin to load with runc.
_BUILTIN_DEFAULTS = {
    1: (
        "# Created by gpufleet from a built-in minimal default (config version 1).\n"
        "[plugins]\n"
        "  [plugins.cri]\n"
        "    [plugins.cri.containerd]\n"
        "      default_runtime_name = \"runc\"\n"
        "      [plugins.cri.containerd.runtimes]\n"
        "        [plugins.cri.containerd.runtimes.runc]\n"
        "          runtime_type = \"io.containerd.runc.v2\"\n"
    ),
    2: (
        "# Created by gpufleet from a built-in minimal default (config version 2).\n"
        "version = 2\n\n"
        "[plugins]\n"
        "  [plugins.\"io.containerd.grpc.v1.cri\"]\n"
        "    [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
        "      default_runtime_name = \"runc\"\n"
        "      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes]\n"
        "        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
        "          runtime_type = \"io.containerd.runc.v2\"\n"
    ),
}
for _v in (3, 4):
    _BUILTIN_DEFAULTS[_v] = (
        "# Created by gpufleet from a built-in minimal default (config version %d).\n"
        "version = %d\n\n"
        "[plugins]\n"
        "  [plugins.\"io.containerd.cri.v1.runtime\"]\n"
        "    [plugins.\"io.containerd.cri.v1.runtime\".containerd]\n"
        "      default_runtime_name = \"runc\"\n"
        "      [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes]\n"
        "        [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\n"
        "          runtime_type = \"io.containerd.runc.v2\"\n"
    ) % (_v, _v)


def builtin_default(version):
    return _BUILTIN_DEFAULTS[version]


# ---------------------------------------------------------------------------------------------
# Input checks (also used by preflight with the role's variable names)
# ---------------------------------------------------------------------------------------------

def resolve_preset(name, var="preset"):
    if name not in PRESETS:
        raise GpufleetError("%s: %r is not a known runtime preset; use %s" % (var, name, one_of(sorted(PRESETS))))
    return PRESETS[name]


def check_inputs(preset, mode, config_version=None, var_prefix=""):
    """Return a list of problems (``"<var>: <problem>; use one of: ..."``) for the inputs."""
    problems = []
    if preset not in PRESETS:
        problems.append("%spreset: %r is not a known runtime preset; use %s"
                        % (var_prefix, preset, one_of(sorted(PRESETS))))
    if mode not in MODES:
        problems.append("%smode: %r is not a supported mode; use %s" % (var_prefix, mode, one_of(MODES)))
    if config_version not in (None, "", 0) and as_int(config_version) not in CONFIG_VERSIONS:
        problems.append("%sconfig_version: %r is not a containerd config version; use %s"
                        % (var_prefix, config_version, one_of(CONFIG_VERSIONS) + " (0: detect)"))
    return problems


def as_int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def check(params, plan, problems):
    """Preflight check for the nvidia_container_toolkit role's inventory variables."""
    extra = params.get("extra") or {}
    prefix = "nvidia_container_toolkit_runtime_"
    preset = extra.get(prefix + "preset") or PLATFORM_PRESETS.get(plan.get("platform") or "", "containerd")
    mode = extra.get(prefix + "mode", "drop-in")
    for problem in check_inputs(preset, mode, extra.get(prefix + "config_version"), var_prefix=prefix):
        var, _sep, msg = problem.partition(": ")
        problems.error(var, msg)


UNIT_DIRS = ("/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system")


def resolve_service(preset_name, exists=os.path.exists):
    """The service that runs the preset's runtime on this host: k3s server ``k3s`` or agent
    ``k3s-agent``, RKE2 ``rke2-server`` or ``rke2-agent`` (the RKE2 installer ships both units,
    so an enabled one wins), k0s ``k0sworker`` or ``k0scontroller``. Falls back to the preset's."""
    preset = resolve_preset(preset_name)
    candidates = preset.get("services") or (preset["service"],)
    for name in candidates:
        if exists("/etc/systemd/system/multi-user.target.wants/%s.service" % name):
            return name
    for name in candidates:
        if any(exists("%s/%s.service" % (d, name)) for d in UNIT_DIRS):
            return name
    return preset["service"]


def table_markdown():
    """The distribution -> files -> socket table (used by the module docs and a unit test)."""
    rows = ["| preset | distribution | files written | socket |", "|---|---|---|---|"]
    for name in sorted(PRESETS):
        preset = PRESETS[name]
        files = [p for p in (preset["config"], preset["dropin"]) if p]
        if preset.get("distro_config"):
            files.append("(no template:) " + preset["distro_config"])
        rows.append("| %s | %s | %s | %s |" % (name, preset["description"], ", ".join(files), preset["socket"]))
    return "\n".join(rows)
