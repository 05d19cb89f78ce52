"""Driver packaging from branch 590 on (issue 15 item 5) and stale pins.

NVIDIA's Driver Installation Guide: from 590 on, the Debian/Ubuntu packages of NVIDIA's CUDA
repository carry no branch in their names (nvidia-open, cuda-drivers, nvidia-dkms, libnvidia-compute,
...) and a branch or an exact version is kept by installing nvidia-driver-pinning-<branch|version>
before the driver. On dnf hosts (RHEL family, Amazon Linux 2023) the branch is a module stream
plus a versionlock; a lock or pinning package of an earlier choice must go before the driver can
move. NVIDIA's repository is unreachable here, so this checks the plans the role carries out.
"""
import fnmatch

import pytest

from ansible_collections.gpufleet.k8s.plugins.filter.nvidia_driver import nvidia_driver_stale_pins
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_packages import (
    driver_plan)
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_host import (
    stale_pinning_packages, stale_versionlocks)

HOSTS = {
    "debian-12": ("Debian", "12.12", "12", "bookworm"),
    "ubuntu-24.04": ("Ubuntu", "24.04", "24", "noble"),
    "rhel-9": ("RedHat", "9.6", "9", "Plow"),
    "amazon-2023": ("Amazon", "2023", "2023", ""),
}


def plan_for(distro, version, flavour="auto", source="nvidia", gpu=None):
    dist, dversion, major, codename = HOSTS[distro]
    return driver_plan({
        "values": {"nvidia_driver_version": version, "nvidia_driver_flavour": flavour, "nvidia_driver_source": source},
        "distribution": dist, "distribution_version": dversion, "distribution_major": major, "codename": codename,
        "architecture": "x86_64", "gpu_info": gpu or {"architectures": ["hopper"], "driver_loaded": False},
        "in_container": False, "today": "2026-11-29"})


@pytest.mark.parametrize("distro,version,flavour,packages,pinning,hold", [
    # before 590: branch in the names, no pinning package
    ("ubuntu-24.04", "580", "open", ["nvidia-open-580=580.*"], [], []),
    ("ubuntu-24.04", "580.95.05", "proprietary", ["cuda-drivers-580=580.95.05-*"], [], ["cuda-drivers-580"]),
    # 590 and later: unbranched names, NVIDIA's pinning package for the branch or the exact version
    ("ubuntu-24.04", "595", "open", ["nvidia-open=595.*"], ["nvidia-driver-pinning-595"], []),
    ("ubuntu-24.04", "595.71.05", "open", ["nvidia-open=595.71.05-*"], ["nvidia-driver-pinning-595.71.05"],
     ["nvidia-open"]),
    ("debian-12", "595", "proprietary", ["cuda-drivers=595.*"], ["nvidia-driver-pinning-595"], []),
    ("debian-12", "595.71.05", "proprietary", ["cuda-drivers=595.71.05-*"], ["nvidia-driver-pinning-595.71.05"],
     ["cuda-drivers"]),
])
def test_apt_packages_and_pinning_packages_per_branch(distro, version, flavour, packages, pinning, hold):
    plan = plan_for(distro, version, flavour)
    assert plan["errors"] == []
    assert plan["packages"] == packages
    assert plan["pinning_packages"] == pinning
    assert plan["hold"] == hold
    assert plan["pinned_to"] == plan["version_glob"]


@pytest.mark.parametrize("name", [
    "nvidia-open", "cuda-drivers", "nvidia-driver", "nvidia-driver-cuda", "nvidia-dkms", "nvidia-dkms-open",
    "nvidia-kernel-common", "nvidia-kernel-source", "libnvidia-compute", "libnvidia-gl", "nvidia-utils",
    "nvidia-compute-utils", "nvidia-firmware", "nvidia-modprobe", "nvidia-persistenced", "nvidia-fabricmanager",
])
def test_apt_preferences_cover_the_unbranched_names(name):
    """apt reads the Package: line as globs; every renamed package stays in the branch."""
    content = plan_for("ubuntu-24.04", "595")["pin_file"]["content"]
    line = next(l for l in content.splitlines() if l.startswith("Package: "))
    assert any(fnmatch.fnmatchcase(name, pattern) for pattern in line[len("Package: "):].split()), line
    assert "Pin: version 595.*" in content.splitlines()


def test_before_590_the_preferences_are_unchanged_and_do_not_name_bare_nvidia_dkms():
    line = next(l for l in plan_for("ubuntu-24.04", "580")["pin_file"]["content"].splitlines()
                if l.startswith("Package: "))
    assert "nvidia-dkms-*" in line.split() and "nvidia-dkms*" not in line.split()


def test_fabric_manager_is_unbranched_from_590():
    hgx = {"architectures": ["hopper"], "driver_loaded": False, "nvswitch_count": 4}
    assert plan_for("ubuntu-24.04", "595.71.05", gpu=hgx)["fabric_manager"]["packages"] == ["nvidia-fabricmanager"]
    assert "nvidia-fabricmanager=595.71.05-*" in plan_for("ubuntu-24.04", "595.71.05", gpu=hgx)["packages"]
    assert plan_for("ubuntu-24.04", "580", gpu=hgx)["fabric_manager"]["packages"] == ["nvidia-fabricmanager-580"]


@pytest.mark.parametrize("distro,version,stream,locks", [
    ("amazon-2023", "595", "nvidia-driver:595-open",
     ["nvidia-driver-3:595.*", "nvidia-driver-cuda-3:595.*", "kmod-nvidia-open-dkms-3:595.*"]),
    ("amazon-2023", "595.71.05", "nvidia-driver:595-open",
     ["nvidia-driver-3:595.71.05-*", "nvidia-driver-cuda-3:595.71.05-*", "kmod-nvidia-open-dkms-3:595.71.05-*"]),
    ("rhel-9", "595", "nvidia-driver:595-open", []),
])
def test_dnf_hosts_use_the_module_stream_and_versionlock_not_pinning_packages(distro, version, stream, locks):
    plan = plan_for(distro, version)
    assert plan["errors"] == []
    assert plan["module_stream"] == stream
    assert plan["versionlock"] == locks
    assert plan["pinning_packages"] == []


DPKG = ("nvidia-driver-pinning-580 ii \nnvidia-driver-pinning-595.71.05 ii \n"
        "nvidia-driver-pinning-570 rc \nnvidia-open ii \n")


@pytest.mark.parametrize("wanted,stale", [
    (["nvidia-driver-pinning-595.71.05"], ["nvidia-driver-pinning-580"]),          # branch moved on
    (["nvidia-driver-pinning-595"], ["nvidia-driver-pinning-580", "nvidia-driver-pinning-595.71.05"]),  # exact -> branch
    ([], ["nvidia-driver-pinning-580", "nvidia-driver-pinning-595.71.05"]),       # back below 590
])
def test_stale_pinning_packages(wanted, stale):
    # removed-but-configured (rc) packages pin nothing; other packages are not pins
    assert stale_pinning_packages(DPKG, wanted) == stale


def test_no_pinning_packages_installed():
    assert stale_pinning_packages("", ["nvidia-driver-pinning-595"]) == []


LOCKS = """nvidia-driver-3:580.95.05-1.el9.*
nvidia-driver-cuda-3:580.95.05-1.el9.*
kmod-nvidia-latest-dkms-3:580.95.05-1.el9.*
nvidia-fabric-manager-3:580.95.05-1.*
!nvidia-driver-3:570.*
bash-0:5.1.8-9.el9.*
"""


@pytest.mark.parametrize("version,flavour,stale", [
    # the same exact version and flavour: nothing to remove (Fabric Manager is not wanted without NVSwitch)
    ("580.95.05", "proprietary", ["nvidia-fabric-manager-3:580.95.05-1.*"]),
    # a new exact version: every old lock goes, the user's exclude and other packages stay
    ("580.105.08", "proprietary", ["nvidia-driver-3:580.95.05-1.el9.*", "nvidia-driver-cuda-3:580.95.05-1.el9.*",
                                   "kmod-nvidia-latest-dkms-3:580.95.05-1.el9.*",
                                   "nvidia-fabric-manager-3:580.95.05-1.*"]),
    # the other flavour: the proprietary kmod's lock goes
    ("580.95.05", "open", ["kmod-nvidia-latest-dkms-3:580.95.05-1.el9.*", "nvidia-fabric-manager-3:580.95.05-1.*"]),
])
def test_stale_versionlocks_on_amazon_linux(version, flavour, stale):
    plan = plan_for("amazon-2023", version, flavour)
    assert stale_versionlocks(LOCKS, plan["versionlock"]) == stale
    assert nvidia_driver_stale_pins(LOCKS, plan) == stale


def test_branch_lock_keeps_the_installed_version_of_the_branch():
    plan = plan_for("amazon-2023", "580", "proprietary")
    assert stale_versionlocks(LOCKS, plan["versionlock"]) == ["nvidia-fabric-manager-3:580.95.05-1.*"]


def test_rhel_branch_without_versionlock_releases_every_driver_lock():
    plan = plan_for("rhel-9", "580", "proprietary")
    assert plan["versionlock"] == []
    assert stale_versionlocks(LOCKS, plan["versionlock"]) == [
        "nvidia-driver-3:580.95.05-1.el9.*", "nvidia-driver-cuda-3:580.95.05-1.el9.*",
        "kmod-nvidia-latest-dkms-3:580.95.05-1.el9.*", "nvidia-fabric-manager-3:580.95.05-1.*"]


def test_filter_dispatches_on_the_os_family():
    plan = plan_for("ubuntu-24.04", "595")
    assert nvidia_driver_stale_pins(DPKG, plan) == ["nvidia-driver-pinning-580", "nvidia-driver-pinning-595.71.05"]
    assert nvidia_driver_stale_pins(LOCKS, plan) == []
