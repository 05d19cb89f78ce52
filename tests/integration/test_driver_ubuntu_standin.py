"""The nvidia_driver role's Ubuntu path (Canonical's -server packages) with the real apt and dpkg against a
STAND-IN repository (issue 15 items 4/5).

Real: apt, dpkg, apt preferences and holds, the whole nvidia_driver role (probe, plan, pin, install,
hold, state) over the podman connection. STAND-INS: the host is a Debian 12 container whose
/etc/os-release names Ubuntu 24.04 (without the word Debian, which Ansible would read as Debian; no Ubuntu image can be obtained here; Debian's archive still
serves the base packages), and Canonical's driver packages are small packages with the REAL names,
source package and version scheme (nvidia-headless-580-server, nvidia-utils-580-server from source
nvidia-graphics-drivers-580-server, 580.95.05-0ubuntu1; a newer 580.105.08 to prove the pin),
built with dpkg-deb; nvidia-utils' nvidia-smi is a script.

Checked: the installed version is read from the package that owns /usr/bin/nvidia-smi (it was always
empty with nvidia-utils-<br>-server before), the exact version is pinned and held although a newer
one is offered, nvidia_driver_state says what is pinned and held, second run changed=0.
"""
import json
import os

import pytest

from systemd_node import per_worker, converge, podman_inventory, remove, shell_of, standin_apt_node

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE = per_worker("gpufleet-i15-ubuntu-standin")
OS_RELEASE = """PRETTY_NAME="Ubuntu 24.04.1 LTS (gpufleet STAND-IN)"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.1 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=noble
"""
BUILD = r"""set -e
mkdir -p /srv/ubuntu
mk() { d=/tmp/$1-$2; mkdir -p $d/DEBIAN; printf 'Package: %s\nSource: nvidia-graphics-drivers-580-server\nVersion: %s\nArchitecture: all\nMaintainer: gpufleet tests <t@gpufleet.invalid>\nDescription: gpufleet STAND-IN for Canonical %s\n' $1 $2 $1 > $d/DEBIAN/control; [ -z "$3" ] || { mkdir -p $d/usr/bin; printf '#!/bin/sh\necho "stand-in nvidia-smi %s"\n' $2 > $d/usr/bin/nvidia-smi; chmod 755 $d/usr/bin/nvidia-smi; }; dpkg-deb --root-owner-group --build $d /srv/ubuntu/$1_$2_all.deb >/dev/null; }
for v in 580.95.05-0ubuntu1 580.105.08-0ubuntu1; do mk nvidia-headless-580-server $v ""; mk nvidia-utils-580-server $v smi; done
cd /srv/ubuntu && apt-ftparchive packages . > Packages
echo 'deb [trusted=yes] file:/srv/ubuntu ./' > /etc/apt/sources.list.d/standin-canonical.list
apt-get update -qq
"""


sh = shell_of(NODE)   # a shell command in the node container


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    work = tmp_path_factory.mktemp("ubuntu")
    standin_apt_node(NODE, BUILD)
    sh("cat > /etc/os-release <<'EOF'\n%sEOF\n" % OS_RELEASE)
    inv = podman_inventory(work / "hosts.yml", NODE, nvidia_driver_version="580.95.05",
                           nvidia_driver_source="distribution")
    playbook = work / "driver.yml"
    playbook.write_text("- name: Driver\n  hosts: all\n  gather_facts: false\n  roles: [nvidia_driver]\n")
    yield {"inventory": inv, "playbook": str(playbook)}
    remove(NODE)


def play(node):
    return converge(node["inventory"], node["playbook"], NODE)[0]


def test_canonical_server_packages_pinned_held_and_version_read(node):
    assert play(node) > 0
    versions = dict(line.split() for line in sh(
        "dpkg-query -W -f='${Package} ${Version}\\n' nvidia-headless-580-server nvidia-utils-580-server").stdout.splitlines())
    assert versions == {"nvidia-headless-580-server": "580.95.05-0ubuntu1", "nvidia-utils-580-server": "580.95.05-0ubuntu1"}
    assert "580.105.08-0ubuntu1" in sh("apt-cache policy nvidia-utils-580-server").stdout   # a newer one is offered
    selections = sh("dpkg --get-selections 'nvidia-*'").stdout.split()
    assert selections == ["nvidia-headless-580-server", "hold", "nvidia-utils-580-server", "hold"]
    pin = sh("cat /etc/apt/preferences.d/gpufleet-nvidia-driver.pref").stdout
    assert "Package: src:nvidia-graphics-drivers-580-server" in pin and "Pin: version 580.95.05-*" in pin
    state = json.loads(sh("cat /etc/ansible/facts.d/gpufleet_nvidia_driver.fact").stdout)
    assert state["distro"] == "ubuntu-24.04"
    assert state["installed_version"] == "580.95.05-0ubuntu1"      # from the package owning /usr/bin/nvidia-smi
    assert (state["pinned_to"], state["held"]) == ("580.95.05-*", ["nvidia-headless-580-server", "nvidia-utils-580-server"])
    assert state["in_container"] is True
    assert sh("apt-get -s upgrade").stdout.count("Inst nvidia") == 0
    assert play(node) == 0
