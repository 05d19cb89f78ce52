"""The node uninstall path (issue 15 item 9): playbooks/nodes.yml with gpufleet_node_state=absent.

Real parts: a Debian 12 systemd container (podman connection) running Debian's containerd as a
service, with a user's own /etc/containerd/config.toml written before gpufleet ever ran; Debian's
real nvidia-driver from non-free, version systemd_node.DEBIAN12_DRIVER (no GPU here: the driver role knows it runs in a
container and builds no module); the container toolkit from the local stand-in repository
(NVIDIA's repository is unreachable here; build-standin-repo.sh builds packages with the real
names and versions - they stand in for the upstream packages, they are not them).

Install, then remove: the user's config comes back byte for byte (same sha256, mode, owner),
containerd runs and loads its CRI plugin without the nvidia runtime, the driver and toolkit
packages are gone with their holds, pin and sources, the nouveau blacklist stays; a second removal
changes nothing, and so does a removal in --check --diff.
"""
import os
import re

import pytest

from systemd_node import (apt_install, boot, converge, node_stage_inventory, per_worker, podman, remove, shell_of,
                         standin_toolkit_repo)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE = per_worker("gpufleet-remove-node")
CONFIG = "/etc/containerd/config.toml"
DROPIN = "/etc/containerd/conf.d/99-nvidia.toml"
RECORD = "/var/lib/gpufleet/runtime-config-originals.json"
PIN = "/etc/apt/preferences.d/gpufleet-nvidia-driver.pref"
BLACKLIST = "/etc/modprobe.d/gpufleet-blacklist-nouveau.conf"
TOOLKIT = ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"]
# A user's own config, as a real node has it before gpufleet: comments, odd spacing, a mirror.
USER_CONFIG = """# Site containerd config - owned by the platform team.
version = 2

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image   = "registry.k8s.io/pause:3.9"   # pinned by the platform team
  [plugins."io.containerd.grpc.v1.cri".containerd]
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
    endpoint = ["https://mirror.example.internal"]
"""
# What removal must leave as before the install (the nouveau blacklist is kept on purpose).
SNAPSHOT = ("stat -c '%n %a %U:%G %s' " + CONFIG + " && sha256sum " + CONFIG + " && ls -A /etc/containerd;"
            " find /etc/apt/sources.list.d /etc/apt/preferences.d /etc/apt/keyrings /etc/cdi /etc/udev/rules.d"
            " /etc/ansible/facts.d /var/lib/gpufleet -type f 2>/dev/null | sort; apt-mark showhold;"
            " dpkg-query -W -f '${Package} ${db:Status-Abbrev}\\n' 2>/dev/null | awk '$2 !~ /^.n/' | grep nvidia || true")


sh = shell_of(NODE)   # a shell command in the node container


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    work = tmp_path_factory.mktemp("remove")
    repo = standin_toolkit_repo(work / "repo")
    boot(NODE)
    sh(apt_install("containerd"))
    (work / "config.toml").write_text(USER_CONFIG)
    podman("cp", str(work / "config.toml"), NODE + ":" + CONFIG)
    sh("chmod 0640 %s && systemctl enable containerd && systemctl restart containerd" % CONFIG)
    podman("cp", repo, NODE + ":/srv/repo")
    inv = node_stage_inventory(work / "hosts.yml", NODE, "remove", ansible_connection="containers.podman.podman")
    before = sh(SNAPSHOT).stdout
    yield {"inventory": inv, "before": before}
    remove(NODE)


def stage(node, *args):
    return converge(node["inventory"], "playbooks/nodes.yml", NODE, *args, timeout=1200)


def cri_ok():
    """containerd loaded its CRI plugin (the check the role itself makes after a restart)."""
    lines = sh("ctr plugins ls").stdout.splitlines()
    return [line for line in lines if re.match(r"^io\.containerd\.grpc\.v1\s+cri\s.*\sok\s*$", line)] != []


def test_install_then_remove_gives_the_user_config_back_byte_for_byte(node):
    changed, out = stage(node)
    assert changed > 5, out[-2000:]
    # the install really changed the config and installed and held things (else removal proves nothing)
    assert sh("cat " + CONFIG).stdout != USER_CONFIG and 'BinaryName = "/usr/bin/nvidia-container-runtime"' in sh(
        "cat " + DROPIN).stdout
    assert "nvidia-driver" in sh("apt-mark showhold").stdout.split()
    assert sh("test -f %s && test -f %s && test -f %s" % (PIN, RECORD, BLACKLIST), check=False).returncode == 0
    assert "nvidia" in sh("containerd config dump").stdout

    changed, out = stage(node, "-e", "gpufleet_node_state=absent")
    assert changed > 3, out[-2000:]
    after = sh(SNAPSHOT).stdout
    assert sh("cat " + CONFIG).stdout == USER_CONFIG
    assert after == node["before"], "before:\n%s\nafter:\n%s" % (node["before"], after)
    # containerd runs on the restored config, without the nvidia runtime, CRI plugin loaded
    assert sh("systemctl is-active containerd").stdout.strip() == "active"
    assert "nvidia" not in sh("containerd config dump").stdout and cri_ok()
    installed = sh("dpkg-query -W -f '${Package} ${db:Status-Abbrev}\\n' 2>/dev/null | awk '$2 !~ /^.n/'").stdout
    assert [line for line in installed.splitlines() if "nvidia" in line] == []
    assert sh("apt-mark showhold").stdout.strip() == ""
    for path in (PIN, RECORD, DROPIN, CONFIG + ".gpufleet-backup", "/etc/udev/rules.d/71-nvidia-dev-char.rules",
                 "/etc/apt/sources.list.d/nvidia-container-toolkit.sources"):
        assert sh("test -e " + path, check=False).returncode != 0, path
    assert sh("test -f " + BLACKLIST, check=False).returncode == 0  # kept unless asked


def test_a_second_removal_changes_nothing(node):
    changed, out = stage(node, "-e", "gpufleet_node_state=absent")
    assert changed == 0, out[-3000:]
    assert sh(SNAPSHOT).stdout == node["before"]


def test_removal_in_check_mode_changes_nothing(node):
    changed, out = stage(node, "-e", "gpufleet_node_state=absent", "--check", "--diff")
    assert changed == 0, out[-3000:]
    assert sh(SNAPSHOT).stdout == node["before"]


def test_the_blacklist_goes_only_when_asked(node):
    changed, out = stage(node, "-e", "gpufleet_node_state=absent", "-e", "gpu_node_prep_remove_nouveau_blacklist=true")
    assert changed >= 1, out[-3000:]
    assert sh("test -e " + BLACKLIST, check=False).returncode != 0
