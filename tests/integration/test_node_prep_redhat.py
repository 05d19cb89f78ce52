"""gpu_node_prep on the RedHat family with the real rpm and dnf against STAND-IN repositories (issue 15).

What is real: Debian's rpm 4.18 and dnf 4.14 (python3-dnf, dnf-plugins-core), rpmbuild and
createrepo_c, Ansible's ansible.builtin.dnf and community.general.dnf_config_manager modules, the
role itself. What is a STAND-IN: the host is a Debian 12 container whose /etc/os-release and
/etc/redhat-release name Rocky Linux 9.4 (no RHEL-family image can be obtained here), and the
BaseOS, CRB and EPEL repositories are built by tests/standin/build-el-standin-repos.sh with the
real package names and stand-in contents (dracut is a script that logs its arguments).

Checked: EPEL installed and CRB enabled, base packages installed from the repositories, nouveau
blacklisted and dracut run once through the handler, check mode changes nothing, the second run
reports changed=0.
"""
import json
import re

import pytest

from ansible_run import ansible
from systemd_node import converge, per_worker, podman_inventory, remove, rocky_standin, shell_of

NODE = per_worker("gpufleet-i15-rocky-standin")
STATE = ("rpm -qa | sort; dnf -q repolist --all 2>/dev/null | sort; cat /var/log/gpufleet-standin-dracut.log 2>/dev/null;"
         " find /etc -xdev -type f 2>/dev/null | sort | xargs -r sha256sum")


sh = shell_of(NODE)   # a shell command in the node container


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    work = tmp_path_factory.mktemp("rocky")
    rocky_standin(NODE)
    inv = podman_inventory(work / "hosts.yml", NODE)
    playbook = work / "prep.yml"
    playbook.write_text("- name: Prepare the node\n  hosts: all\n  gather_facts: false\n  roles: [gpu_node_prep]\n")
    yield {"inventory": inv, "playbook": str(playbook)}
    remove(NODE)


def play(node, *args):
    return converge(node["inventory"], node["playbook"], NODE, *args)


def test_ansible_sees_a_rocky_9_host(node):
    proc = ansible("ansible", NODE, "-i", node["inventory"], "-m", "ansible.builtin.setup", "-a", "gather_subset=min",
                   timeout=120, ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    facts = json.loads(proc.stdout[proc.stdout.index("{"):])["ansible_facts"]
    assert (facts["ansible_distribution"], facts["ansible_distribution_major_version"], facts["ansible_os_family"]) == (
        "Rocky", "9", "RedHat")


def test_check_mode_reports_changes_and_changes_nothing(node):
    before = sh(STATE).stdout
    changed, out = play(node, "--check", "--diff")
    assert changed >= 3
    assert "Install the EPEL release package" in out
    assert sh(STATE).stdout == before


def test_epel_crb_packages_blacklist_and_dracut_then_idempotent(node):
    changed, out = play(node)
    assert changed >= 5
    rpms = sh("rpm -qa --qf '%{NAME}\\n' | sort").stdout.split()
    assert {"epel-release", "dnf-plugins-core", "pciutils", "kmod", "dracut"} <= set(rpms)
    repos = sh("dnf -q repolist --enabled 2>/dev/null").stdout
    assert re.search(r"^crb\s", repos, re.M) and re.search(r"^epel\s", repos, re.M), repos
    # dkms (what NVIDIA's DKMS packages need) is now installable from EPEL
    assert "dkms" in sh("dnf -q list --available dkms 2>/dev/null").stdout
    assert sh("cat /etc/modprobe.d/gpufleet-blacklist-nouveau.conf").stdout.splitlines()[1:] == [
        "blacklist nouveau", "options nouveau modeset=0"]
    assert sh("cat /var/log/gpufleet-standin-dracut.log").stdout == "dracut --force --regenerate-all\n"
    changed, _out = play(node)
    assert changed == 0
    assert sh("cat /var/log/gpufleet-standin-dracut.log").stdout == "dracut --force --regenerate-all\n"
