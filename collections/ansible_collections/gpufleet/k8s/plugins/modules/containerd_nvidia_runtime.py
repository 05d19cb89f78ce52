#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: containerd_nvidia_runtime
short_description: Add the nvidia runtime to containerd (or CRI-O) without losing user config
version_added: "0.1.0"
description:
  - Adds or updates the runtime C(nvidia) in the container runtime's configuration, the way
    C(nvidia-ctk runtime configure) does, but keeps every other byte of the user's files
    (comments, ordering, registry mirrors, other runtimes); the TOML is edited with tomlkit.
  - Detects the containerd config version (no C(version) key = 1, 2, 3, 4) and its CRI plugin
    path (C(plugins.cri), C(plugins."io.containerd.grpc.v1.cri"),
    C(plugins."io.containerd.cri.v1.runtime")).
  - C(runtime_type) is copied from the default runtime and its other settings (for example
    C(base_runtime_spec), C(privileged_without_host_devices)) and options (for example
    C(SystemdCgroup)) are inherited, as C(nvidia-ctk) does; C(options.BinaryName) is set to
    I(runtime_binary). Settings an existing nvidia runtime already has are kept. When the
    config lacks the default runtime (C(runc)) it is added too, since a config with
    C(runtimes.nvidia) but no C(runtimes.runc) makes the CRI plugin fail to load.
  - A missing root config is first created from C(containerd config default) (when the binary
    exists) or from a built-in minimal default of I(config_version), runc included.
  - Before replacing a live file it is copied to C(<file>.gpufleet-backup), and the candidate is
    validated with the real C(containerd --config CANDIDATE config dump) when I(containerd_binary)
    exists; the effective config must contain the nvidia runtime and runc. Files are replaced
    atomically. C(changed) is true only when a file's content changes.
  - "Distribution presets (files written, socket):"
  - "C(containerd) - kubeadm, EKS self-managed, Kubespray: C(/etc/containerd/config.toml) and, in
    drop-in mode, C(/etc/containerd/conf.d/99-nvidia.toml) - C(/run/containerd/containerd.sock)."
  - "C(k3s) - C(/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl) when it exists;
    otherwise k3s adds the nvidia runtime itself at start and I(set_as_default) writes
    C(default-runtime) into C(/etc/rancher/k3s/config.yaml.d/90-gpufleet-nvidia.yaml) (removed
    when false) - C(/run/k3s/containerd/containerd.sock)."
  - "C(rke2) - C(/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl) when it exists,
    otherwise C(default-runtime) in C(/etc/rancher/rke2/config.yaml.d/90-gpufleet-nvidia.yaml) -
    C(/run/k3s/containerd/containerd.sock)."
  - "C(k0s) - C(/etc/k0s/containerd.d/nvidia.toml) - C(/run/k0s/containerd.sock)."
  - "C(microk8s) - C(/var/snap/microk8s/current/args/containerd-template.toml) -
    C(/var/snap/microk8s/common/run/containerd.sock)."
  - "C(crio) - OpenShift-style nodes: C(/etc/crio/crio.conf.d/99-nvidia.toml) -
    C(/var/run/crio/crio.sock)."
  - Templates (k3s, RKE2, MicroK8s) are edited in place only when they are plain TOML; the
    candidate of a template or a standalone drop-in is not validated with a binary (their
    runtimes embed their own containerd).
author:
  - gpufleet maintainers (@gpufleet)
notes:
  - The TOML library (tomlkit) ships inside the collection; nothing needs installing on the node.
extends_documentation_fragment:
  - gpufleet.k8s.attributes
options:
  preset:
    description: Distribution preset; see the table above. An unknown preset is refused before anything changes.
    type: str
    default: containerd
  mode:
    description:
      - C(drop-in) writes a drop-in of the root file's config version and adds its glob to the
        root's top-level C(imports); before containerd 2.1 (or when the version is unknown) the
        drop-in carries the whole CRI plugin table, because imports replace whole tables there.
      - C(in-place) edits the root file. It is refused, naming the file, when a file the root imports
        would take the change back (before containerd 2.1 an imported CRI table replaces the edited
        one; from 2.1 an imported C(default_runtime_name), C(enable_cdi) or nvidia C(BinaryName) wins).
      - Only the C(containerd) preset uses it; templates are always edited in place.
    type: str
    default: drop-in
    choices: [drop-in, in-place]
  config_path:
    description: Root config (or template) path; default from the preset.
    type: path
  dropin_path:
    description: Drop-in path; default from the preset.
    type: path
  runtime_name:
    description: Name of the runtime.
    type: str
    default: nvidia
  runtime_binary:
    description: C(options.BinaryName) of the runtime.
    type: path
    default: /usr/bin/nvidia-container-runtime
  set_as_default:
    description: Set C(default_runtime_name) to I(runtime_name); when false and it is the default, hand the default back to C(runc).
    type: bool
    default: false
  enable_cdi:
    description: Set C(enable_cdi = true) in the CRI plugin.
    type: bool
    default: false
  config_version:
    description: Config version for a new file when no containerd binary can print its default (and for standalone drop-ins such as k0s's); default 2.
    type: int
    choices: [1, 2, 3, 4]
  containerd_binary:
    description: containerd binary used for C(config default), C(--version) and candidate validation; skipped when absent.
    type: path
    default: /usr/bin/containerd
  backup:
    description: Copy each existing file to C(<file>.gpufleet-backup) before replacing it.
    type: bool
    default: true
  state:
    description:
      - C(present) adds the runtime. The first time it changes a file it records the file's original
        bytes (or that it did not exist) in I(originals_path).
      - C(absent) takes the runtime out again (module_utils/runtime/runtime_removal.py) - a file that still
        holds only what gpufleet wrote gets its original back byte for byte (or is removed when
        gpufleet created it, with the directories it created when they are empty); a file edited
        since loses only gpufleet's keys. Each changed file is first copied to
        C(runtime-removal-backups/) beside I(originals_path) (returned in I(rollback)), and a
        containerd root config is validated with C(containerd config dump) before anything is replaced.
    type: str
    default: present
    choices: [present, absent]
  originals_path:
    description: Where the originals of the files gpufleet changed are recorded (JSON).
    type: path
    default: /var/lib/gpufleet/runtime-config-originals.json
"""

EXAMPLES = r"""
- name: Add the nvidia runtime to plain containerd as a drop-in
  gpufleet.k8s.containerd_nvidia_runtime:
    preset: containerd
    mode: drop-in
  register: runtime_config

- name: Make nvidia the default runtime on RKE2 (template edited in place)
  gpufleet.k8s.containerd_nvidia_runtime:
    preset: rke2
    set_as_default: true

- name: Take the nvidia runtime out again, restoring the user's containerd config
  gpufleet.k8s.containerd_nvidia_runtime:
    preset: containerd
    state: absent

- name: CRI-O drop-in with CDI
  gpufleet.k8s.containerd_nvidia_runtime:
    preset: crio
    enable_cdi: true
"""

RETURN = r"""
files:
  description: Files written (or that would be written in check mode).
  returned: always
  type: list
  elements: str
rollback:
  description: For each written file, its backup (null when none) and whether it existed before; a rollback restores or removes it.
  returned: always
  type: list
  elements: dict
version:
  description: containerd config version of the edited config (null for CRI-O).
  returned: always
  type: int
cri_path:
  description: Path of the CRI plugin table in that config.
  returned: always
  type: list
  elements: str
actions:
  description: What changed in the effective config.
  returned: always
  type: list
  elements: str
validated:
  description: Whether the candidate was checked with C(containerd config dump).
  returned: always
  type: bool
created_from:
  description: Where a missing root config's defaults came from (null when it existed).
  returned: always
  type: str
socket:
  description: The runtime's socket for the preset.
  returned: always
  type: str
backups:
  description:
    - State C(absent) - the C(.gpufleet-backup) copies beside the runtime's files and the removal's backup
      directory, to remove once the runtime runs on the restored configuration.
  returned: always
  type: list
  elements: str
service:
  description: >-
    The systemd service that runs the runtime on this host: the preset's server or agent unit
    (k3s / k3s-agent, rke2-server / rke2-agent, k0sworker / k0scontroller), an enabled one first.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_plan as cplan
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_presets as presets
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_validate as cvalidate
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import runtime_removal as rr
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import change_diffs


def argspec():
    return dict(
        preset=dict(type="str", default="containerd"),
        mode=dict(type="str", default="drop-in", choices=list(presets.MODES)),
        config_path=dict(type="path"),
        dropin_path=dict(type="path"),
        runtime_name=dict(type="str", default="nvidia"),
        runtime_binary=dict(type="path", default=presets.NVIDIA_RUNTIME_BINARY),
        set_as_default=dict(type="bool", default=False),
        enable_cdi=dict(type="bool", default=False),
        config_version=dict(type="int", choices=list(presets.CONFIG_VERSIONS)),
        containerd_binary=dict(type="path", default="/usr/bin/containerd"),
        backup=dict(type="bool", default=True),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        originals_path=dict(type="path", default=rr.RECORD_PATH),
    )


def remove(module):
    """State absent: the plan, validation and writes live in module_utils/runtime/runtime_removal.py."""
    p = module.params
    try:
        result = rr.plan(p["preset"], p["originals_path"], p["runtime_name"], p["config_path"], p["dropin_path"])
        files = result["files"]
        validated = False
        binary = p["containerd_binary"]
        if files and result["root"] and binary and os.path.exists(binary):
            validated = rr.validate_removal(binary, result["root"], files, p["runtime_name"])
        rollback = []
        backup_dir = rr.backup_dir_for(p["originals_path"])
        if files and not module.check_mode:
            rollback = rr.apply(files, result["record"], backup_dir)
        backups = rr.leftover_backups(result["record"], p["preset"], backup_dir, config_path=p["config_path"],
                                      dropin_path=p["dropin_path"])
    except (GpufleetError, OSError) as exc:
        module.fail_json(msg="containerd_nvidia_runtime (%s, state absent): %s" % (p["preset"], exc))
    for note in result["notes"]:
        module.warn(note)
    out = dict(changed=bool(files), files=sorted(files), rollback=rollback, validated=validated, version=None,
               cri_path=[], actions=result["actions"], created_from=None, socket=presets.resolve_preset(p["preset"])["socket"],
               service=presets.resolve_service(p["preset"]), backups=backups)
    if module._diff:
        out["diff"] = [dict(before=(old or b"").decode("utf-8", "replace"), after=(new or b"").decode("utf-8", "replace"),
                            before_header=path, after_header=path if new is not None else "(absent)")
                       for path, (old, new) in sorted(files.items())]
    module.exit_json(**out)


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    p = module.params
    if p["state"] == "absent":
        remove(module)
    try:
        result = cplan.plan(p["preset"], p["mode"], p["config_path"], p["dropin_path"], p["runtime_name"],
                            p["runtime_binary"], p["set_as_default"], p["enable_cdi"], p["config_version"],
                            p["containerd_binary"])
        files = result["files"]
        validated = False
        if files and result["validate"]:
            dumped = cvalidate.validate_candidate(p["containerd_binary"], result["config_path"],
                                                  dict((path, new) for path, (_old, new) in files.items()),
                                                  p["runtime_name"], p["runtime_binary"])
            result["notes"].extend(cvalidate.dump_warnings(dumped, p["enable_cdi"]))
            validated = True
        if not validated and any(path.endswith((".toml", ".tmpl")) for path in files):
            result["notes"].append("the candidate was not validated with containerd (%s): %s"
                                   % (p["containerd_binary"], "the preset's runtime embeds its own containerd"
                                      if result["preset"] != "containerd" else "binary not found"))
        rollback = []
        if files and not module.check_mode:
            # The originals first, so that state absent can give them back byte for byte.
            record = rr.load_record(p["originals_path"])
            if rr.record_writes(record, files):
                rr.save_record(p["originals_path"], record)
            rollback = cplan.write_files(files, backup=p["backup"])
            rr.record_written(record, files)
            rr.save_record(p["originals_path"], record)
    except (GpufleetError, OSError) as exc:
        module.fail_json(msg="containerd_nvidia_runtime (%s): %s" % (p["preset"], exc))
    out = dict(changed=bool(files), files=sorted(files), rollback=rollback, validated=validated,
               version=result["version"], cri_path=result["cri_path"], actions=result["actions"],
               created_from=result["created_from"], socket=result["socket"],
               service=presets.resolve_service(result["preset"]), backups=[])
    for note in result["notes"]:
        module.warn(note)
    if module._diff:
        out["diff"] = change_diffs(files)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
