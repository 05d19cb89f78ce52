"""The driver role's kernel guard on an apt host (issue 15 item 7): real apt and dpkg, stand-in kernels.

Real: apt, dpkg and its selections in a Debian 12 container, the role's kernel.yml tasks. STAND-INS:
the kernel packages (a container cannot install or boot a kernel of its own): small packages with the
real names, built here with dpkg-deb into a local apt repository - linux-image-amd64 (installed
first, as on every Debian machine), linux-headers-amd64 and linux-headers-<running kernel>. The
role is told it runs on a machine (in_container false), which is what it would see on a VM.

Checked: the headers of the running kernel AND the headers metapackage are installed (so DKMS can
build for the kernel the next upgrade brings); with nvidia_driver_hold_kernel the metapackages -
what brings new kernels - are held, not the running kernel's versioned packages; second run changed=0.
"""
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_host import (
    apt_kernel_plan)
from systemd_node import per_worker, converge, podman_inventory, remove, shell_of, standin_apt_node

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE = per_worker("gpufleet-i15-kernel")
KERNEL = os.uname()[2]
BUILD = r"""set -e
mkdir -p /srv/kernel && cd /tmp
mk() { d=/tmp/$1; mkdir -p $d/DEBIAN; printf 'Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: gpufleet tests <t@gpufleet.invalid>\nDescription: gpufleet STAND-IN for %s\n' $1 $2 $1 > $d/DEBIAN/control; dpkg-deb --root-owner-group --build $d /srv/kernel/$1_$2_all.deb >/dev/null; }
mk linux-image-amd64 6.1.999
mk linux-headers-amd64 6.1.999
mk linux-headers-KERNEL 1
cd /srv/kernel && apt-ftparchive packages . > Packages
echo 'deb [trusted=yes] file:/srv/kernel ./' > /etc/apt/sources.list.d/standin-kernel.list
apt-get update -qq && apt-get install -y -qq linux-image-amd64 >/dev/null
""".replace("KERNEL", KERNEL)


sh = shell_of(NODE)   # a shell command in the node container


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    work = tmp_path_factory.mktemp("kernel")
    standin_apt_node(NODE, BUILD)
    inv = podman_inventory(work / "hosts.yml", NODE)
    playbook = work / "kernel.yml"
    playbook.write_text("""- name: Kernel guard of the driver role
  hosts: all
  gather_facts: true
  gather_subset: [min]
  tasks:
    - name: Guard the kernel module build
      ansible.builtin.include_role:
        name: nvidia_driver
        tasks_from: kernel.yml
      vars:
        __nvidia_driver_probed: {in_container: false}
        __nvidia_driver_plan: {os_family: Debian, sign_modules: false}
        __nvidia_driver_headers_package: "linux-headers-{{ ansible_facts.kernel }}"
""")
    yield {"inventory": inv, "playbook": str(playbook)}
    remove(NODE)


def play(node, *args):
    return converge(node["inventory"], node["playbook"], NODE, *args)[0]


def selections():
    return dict(line.split() for line in sh("dpkg --get-selections 'linux-*'").stdout.splitlines())


def test_plan_from_the_real_dpkg_query_of_the_node(node):
    out = sh("dpkg-query -W -f='${binary:Package} ${db:Status-Abbrev}\\n' 'linux-*'").stdout
    plan = apt_kernel_plan(out, KERNEL, True)
    assert plan["headers"] == ["linux-headers-%s" % KERNEL, "linux-headers-amd64"]
    assert plan["hold"] == ["linux-headers-amd64", "linux-image-amd64"]


def test_headers_for_the_next_kernel_then_holds_on_what_brings_kernels(node):
    assert play(node) >= 1
    assert {"linux-headers-%s" % KERNEL: "install", "linux-headers-amd64": "install"}.items() <= selections().items()
    assert play(node) == 0
    assert play(node, "-e", "nvidia_driver_hold_kernel=true") == 1  # one loop task, two holds
    assert {"linux-image-amd64": "hold", "linux-headers-amd64": "hold",
            "linux-headers-%s" % KERNEL: "install"}.items() <= selections().items()
    assert play(node, "-e", "nvidia_driver_hold_kernel=true") == 0
