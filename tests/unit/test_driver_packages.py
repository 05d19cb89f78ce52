"""The nvidia_driver role's per-host plan: packages, pins, repositories, per distro.

Debian's own packages are installed for real in molecule/nvidia_driver. NVIDIA's CUDA repository,
Canonical's archive and RHEL/Rocky/Alma/Amazon Linux repositories are unreachable from the test
machines (and their images cannot be obtained), so for those this tests the rendered repository
files, pins and package lists.
"""
import configparser

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_packages import (
    APT_PREFERENCES, APT_SOURCES, DNF_REPO, distro_key, driver_plan, modprobe_options, secure_boot_state)
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_host import (
    apt_kernel_plan, container_verdict, reboot_decision)

HOSTS = {
    "debian-12": ("Debian", "12.12", "12", "bookworm"),
    "debian-13": ("Debian", "13.2", "13", "trixie"),
    "ubuntu-22.04": ("Ubuntu", "22.04", "22", "jammy"),
    "ubuntu-24.04": ("Ubuntu", "24.04", "24", "noble"),
    "rhel-9": ("RedHat", "9.6", "9", "Plow"),
    "rocky-8": ("Rocky", "8.10", "8", "Green Obsidian"),
    "almalinux-9": ("AlmaLinux", "9.6", "9", "Sage Margay"),
    "amazon-2023": ("Amazon", "2023", "2023", ""),
}
HOPPER = {"architectures": ["hopper"], "driver_loaded": False}


def plan_for(distro, values=None, gpu=None, arch="x86_64", **extra):
    dist, version, major, codename = HOSTS[distro]
    inputs = {"values": dict(values or {}), "distribution": dist, "distribution_version": version,
              "distribution_major": major, "codename": codename, "architecture": arch,
              "gpu_info": gpu if gpu is not None else HOPPER, "in_container": False, "today": "2026-11-29"}
    inputs.update(extra)
    return driver_plan(inputs)


def parse_deb822(text):
    stanzas = []
    for block in text.strip().split("\n\n"):
        fields = {}
        for line in block.splitlines():
            if line.startswith("#"):
                continue
            key, _, value = line.partition(": ")
            fields[key] = value
        stanzas.append(fields)
    return stanzas


@pytest.mark.parametrize("dist,version,major,key", [
    ("Debian", "12.12", "12", "debian-12"), ("Ubuntu", "24.04", "24", "ubuntu-24.04"),
    ("RedHat", "9.6", "9", "rhel-9"), ("Rocky", "8.10", "8", "rocky-8"), ("AlmaLinux", "9.6", "9", "almalinux-9"),
    ("Amazon", "2023", "2023", "amazon-2023"), ("CentOS", "7.9", "7", "rhel-7"),
])
def test_distro_key(dist, version, major, key):
    assert distro_key(dist, version, major) == key


def test_debian12_distribution_exact_pin_and_hold():
    plan = plan_for("debian-12", {"nvidia_driver_source": "distribution", "nvidia_driver_version": "535.261.03",
                                  "gpufleet_allow_eol_driver": True})
    assert plan["errors"] == []
    assert plan["flavour"] == "open"   # Hopper: auto -> open
    assert plan["packages"] == ["nvidia-driver=535.261.03-*", "nvidia-smi=535.261.03-*",
                                "nvidia-open-kernel-dkms=535.261.03-*"]
    assert plan["hold"] == ["nvidia-driver", "nvidia-smi", "nvidia-open-kernel-dkms"]
    assert plan["extra_packages"] == ["nvidia-persistenced"]
    assert plan["pin_file"]["path"] == APT_PREFERENCES
    assert plan["pin_file"]["content"].splitlines()[2:] == [
        "Package: src:nvidia-graphics-drivers", "Pin: version 535.261.03-*", "Pin-Priority: 1001"]
    (repo,) = plan["repo_files"]
    assert repo["path"] == APT_SOURCES
    assert parse_deb822(repo["content"]) == [
        {"Types": "deb", "URIs": "http://deb.debian.org/debian", "Suites": "bookworm bookworm-updates",
         "Components": "contrib non-free non-free-firmware"},
        {"Types": "deb", "URIs": "http://deb.debian.org/debian-security", "Suites": "bookworm-security",
         "Components": "contrib non-free non-free-firmware"},
    ]
    assert plan["keyring"] is None


def test_branch_pins_the_branch_without_hold():
    plan = plan_for("debian-13", {"nvidia_driver_source": "distribution", "nvidia_driver_version": "550",
                                  "gpufleet_allow_eol_driver": True, "nvidia_driver_flavour": "proprietary"})
    assert plan["packages"] == ["nvidia-driver=550.*", "nvidia-smi=550.*", "nvidia-kernel-dkms=550.*"]
    assert plan["hold"] == []
    assert "Pin: version 550.*" in plan["pin_file"]["content"]
    assert "trixie trixie-updates" in plan["repo_files"][0]["content"]


@pytest.mark.parametrize("distro,repo", [("debian-12", "debian12"), ("ubuntu-22.04", "ubuntu2204"),
                                         ("ubuntu-24.04", "ubuntu2404")])
@pytest.mark.parametrize("flavour,package", [("open", "nvidia-open-580"), ("proprietary", "cuda-drivers-580")])
def test_cuda_repository_on_apt_distros(distro, repo, flavour, package):
    plan = plan_for(distro, {"nvidia_driver_version": "580.95.05", "nvidia_driver_flavour": flavour})
    assert plan["errors"] == []
    base = "https://developer.download.nvidia.com/compute/cuda/repos/%s/x86_64/" % repo
    keyring = dict(plan["keyring"])
    check = keyring.pop("check")
    assert keyring == {"url": base + "3bf863cc.pub", "path": "/etc/apt/keyrings/gpufleet-nvidia-cuda.asc"}
    # the key is checked against NVIDIA's pinned cudatools key before the keyring is written
    assert (check["url"], check["fingerprint"], check["pinned"]) == (
        base + "3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC", True)
    assert parse_deb822(plan["repo_files"][0]["content"]) == [
        {"Types": "deb", "URIs": base, "Suites": "/", "Signed-By": "/etc/apt/keyrings/gpufleet-nvidia-cuda.asc"}]
    assert plan["packages"] == ["%s=580.95.05-*" % package]
    assert plan["hold"] == [package]
    assert "Pin: version 580.95.05-*" in plan["pin_file"]["content"]


def test_cuda_repository_arm64_uses_sbsa():
    plan = plan_for("ubuntu-24.04", {"nvidia_driver_version": "580"}, arch="aarch64")
    assert "/ubuntu2404/sbsa/" in plan["repo_files"][0]["content"]


@pytest.mark.parametrize("flavour,headless", [("open", "nvidia-headless-580-server-open"),
                                               ("proprietary", "nvidia-headless-580-server")])
def test_ubuntu_canonical_server_packages(flavour, headless):
    plan = plan_for("ubuntu-24.04", {"nvidia_driver_source": "distribution", "nvidia_driver_version": "580.95.05",
                                     "nvidia_driver_flavour": flavour})
    assert plan["errors"] == []
    assert plan["packages"] == ["%s=580.95.05-*" % headless, "nvidia-utils-580-server=580.95.05-*"]
    assert plan["repo_files"] == [] and plan["keyring"] is None
    assert "Package: src:nvidia-graphics-drivers-580-server" in plan["pin_file"]["content"]


@pytest.mark.parametrize("distro,repo,stream_prefix", [
    ("rhel-9", "rhel9", "nvidia-driver:580-"), ("rocky-8", "rhel8", "nvidia-driver:580-"),
    ("almalinux-9", "rhel9", "nvidia-driver:580-"), ("amazon-2023", "amzn2023", "nvidia-driver:580-"),
])
@pytest.mark.parametrize("flavour,kmod,stream", [("open", "kmod-nvidia-open-dkms", "open"),
                                                  ("proprietary", "kmod-nvidia-latest-dkms", "dkms")])
def test_dnf_distros_repo_stream_and_versionlock(distro, repo, stream_prefix, flavour, kmod, stream):
    plan = plan_for(distro, {"nvidia_driver_version": "580.95.05", "nvidia_driver_flavour": flavour})
    assert plan["errors"] == []
    (repo_file,) = plan["repo_files"]
    assert repo_file["path"] == DNF_REPO
    ini = configparser.ConfigParser()
    ini.read_string(repo_file["content"])
    section = ini["gpufleet-nvidia-cuda"]
    base = "https://developer.download.nvidia.com/compute/cuda/repos/%s/x86_64" % repo
    assert (section["baseurl"], section["gpgcheck"], section["gpgkey"]) == (
        base, "1", "file:///etc/pki/rpm-gpg/RPM-GPG-KEY-gpufleet-nvidia-cuda")
    assert plan["keyring"]["url"] == base + "/D42D0685.pub"
    assert plan["key_check"]["fingerprint"] == "610C7B14E068A878070DA4E99CD0A493D42D0685"
    assert plan["module_stream"] == (stream_prefix + stream if stream_prefix else None)
    assert plan["packages"] == ["nvidia-driver-3:580.95.05", "nvidia-driver-cuda-3:580.95.05", kmod + "-3:580.95.05"]
    assert plan["versionlock"] == ["nvidia-driver-3:580.95.05-*", "nvidia-driver-cuda-3:580.95.05-*",
                                   kmod + "-3:580.95.05-*"]
    assert plan["pin_file"] is None and plan["hold"] == []


def test_dnf_branch_has_no_versionlock_and_el8_plugin_name():
    plan = plan_for("rocky-8", {"nvidia_driver_version": "580"})
    assert plan["versionlock"] == [] and plan["packages"][0] == "nvidia-driver"
    assert plan["extra_packages"] == ["dnf-plugin-versionlock"]
    assert plan_for("rhel-9", {"nvidia_driver_version": "580"})["extra_packages"] == ["python3-dnf-plugin-versionlock"]


def test_amazon_linux_2023_enables_the_branch_stream_and_locks_the_branch():
    """Issue 15 item 5: AL2023 needs `dnf module enable nvidia-driver:<br>-open` and a versionlock on the branch."""
    plan = plan_for("amazon-2023", {"nvidia_driver_version": "580", "nvidia_driver_flavour": "open"})
    assert plan["module_stream"] == "nvidia-driver:580-open"
    assert plan["versionlock"] == ["nvidia-driver-3:580.*", "nvidia-driver-cuda-3:580.*", "kmod-nvidia-open-dkms-3:580.*"]
    assert plan["pinned_to"] == "580.*"


# `dnf module list --enabled nvidia-driver`: WRITTEN BY HAND after dnf 4's table format ([e] after the enabled
# stream); no modular repository can be built or reached here
DNF_MODULES = """CUDA 12.x (rhel9)
Name          Stream      Profiles                         Summary
nvidia-driver 570-dkms [e] default [d], fm, ks, src        Nvidia driver for 570-dkms branch

Hint: [d]efault, [e]nabled, [x]disabled, [i]nstalled
"""


@pytest.mark.parametrize("output,wanted,switch", [
    (DNF_MODULES, "nvidia-driver:580-dkms", True),        # branch change: switch-to --allowerasing
    (DNF_MODULES, "nvidia-driver:570-open", True),        # flavour change
    (DNF_MODULES, "nvidia-driver:570-dkms", False),       # already there
    ("", "nvidia-driver:580-dkms", False),                # nothing enabled: plain enable
    (DNF_MODULES, None, False),
])
def test_module_stream_switch(output, wanted, switch):
    from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_host import module_stream_switch
    assert module_stream_switch(output, wanted) is switch


# Role-side validation: the same rules as preflight, on the host's own OS and GPUs.
@pytest.mark.parametrize("distro,values,gpu,fragment", [
    ("debian-12", {"nvidia_driver_version": "58O"}, None, "nvidia_driver_version: '58O' is not a driver version"),
    ("debian-12", {"nvidia_driver_source": "distribution"}, None, "debian-12 ships driver branch(es) 535"),
    ("rhel-9", {"nvidia_driver_source": "distribution"}, None, "rhel-9 does not ship the NVIDIA driver"),
    ("debian-12", {"nvidia_driver_flavour": "open"}, {"architectures": ["pascal"]}, "do not support pascal"),
    ("debian-12", {"nvidia_driver_flavour": "proprietary"}, {"architectures": ["hopper"], "grace_hopper": True},
     "grace-hopper GPUs need the open kernel modules"),
    ("debian-12", {"nvidia_driver_version": "595"}, {"architectures": ["maxwell"]}, "R580 is their last branch"),
])
def test_role_validation_refuses(distro, values, gpu, fragment):
    plan = plan_for(distro, values, gpu)
    assert any(fragment in e for e in plan["errors"]), plan["errors"]
    assert "packages" not in plan   # nothing decided, nothing installed


def test_unsupported_host_os_is_refused():
    plan = driver_plan({"values": {}, "distribution": "Debian", "distribution_version": "11.9",
                        "distribution_major": "11", "codename": "bullseye", "gpu_info": {}})
    assert plan["errors"] == ["nvidia_driver (host OS): debian-11 is not a supported node OS; use one of: "
                              "almalinux-8, almalinux-9, amazon-2023, debian-12, debian-13, rhel-8, rhel-9, "
                              "rocky-8, rocky-9, ubuntu-22.04, ubuntu-24.04"]


# Preinstalled drivers: platform markers, or a loaded driver no package manager installed.
@pytest.mark.parametrize("markers,loaded,managed,requested,replace,install,error", [
    (["/etc/dgx-release"], "580.95.05", "", "580", False, False, None),
    (["/etc/dgx-release"], "570.172.08", "", "580", False, None, "preinstalled driver 570.172.08 (DGX OS)"),
    (["/etc/dgx-release"], "570.172.08", "", "580", True, True, None),
    ([], "580.82.07", "", "580.95.05", False, None, "does not satisfy the requested 580.95.05"),
    ([], "580.95.05", "580.95.05-1", "580.95.05", False, True, None),   # ours: package-managed, not preinstalled
    ([], None, "", "580", False, True, None),
    (["/home/kubernetes/bin/nvidia"], None, "", "580", False, None, "(not loaded) (GKE driver installer)"),
])
def test_preinstalled_driver(markers, loaded, managed, requested, replace, install, error):
    gpu = {"architectures": ["hopper"], "driver_loaded": bool(loaded), "driver_version": loaded}
    plan = plan_for("ubuntu-24.04", {"nvidia_driver_version": requested,
                                     "nvidia_driver_replace_preinstalled": replace},
                    gpu, markers=markers, managed_version=managed)
    if error:
        assert any(error in e for e in plan["errors"]), plan["errors"]
        assert all(e.startswith("nvidia_driver_version: ") for e in plan["errors"])
    else:
        assert plan["errors"] == []
        assert plan["install"] is install


@pytest.mark.parametrize("rc,out,state", [
    (None, "", "unknown"), (0, "SecureBoot enabled", "enabled"), (0, "SecureBoot disabled", "disabled"),
    (255, "EFI variables are not supported on this system", "unsupported"),
])
def test_secure_boot_state(rc, out, state):
    assert secure_boot_state(rc, out) == state


def test_secure_boot_without_key_stops_and_with_key_signs():
    plan = plan_for("debian-12", {"nvidia_driver_version": "580"}, mokutil_rc=0, mokutil_out="SecureBoot enabled")
    assert [e.split(":")[0] for e in plan["errors"]] == ["nvidia_driver_mok_key"]
    plan = plan_for("debian-12", {"nvidia_driver_version": "580", "nvidia_driver_mok_key": "/var/lib/dkms/mok.key",
                                  "nvidia_driver_mok_cert": "/var/lib/dkms/mok.pub"},
                    mokutil_rc=0, mokutil_out="SecureBoot enabled")
    assert plan["errors"] == [] and plan["sign_modules"] is True


def test_container_says_module_not_loaded():
    plan = plan_for("debian-12", {"nvidia_driver_version": "580"}, in_container=True)
    assert plan["module_state"].startswith("not loaded: running in a container")


# Issue 15: the H200 VM (Ubuntu 24.04 userland, driver 580.159.04 installed outside any package
# manager, no systemd) reported pinned_to "580.*" although nothing was installed or pinned.
def test_preinstalled_driver_that_satisfies_pins_and_holds_nothing():
    gpu = {"architectures": ["hopper"], "driver_loaded": True, "driver_version": "580.159.04"}
    plan = plan_for("ubuntu-24.04", {"nvidia_driver_version": "580"}, gpu, managed_version="")
    assert (plan["errors"], plan["install"], plan["pinned_to"], plan["held"]) == ([], False, None, [])


@pytest.mark.parametrize("distro,version,pinned_to,held", [
    ("debian-12", "580", "580.*", []),                                  # apt preferences pin the branch
    ("debian-12", "580.95.05", "580.95.05-*", ["cuda-drivers-580"]),    # pin + dpkg hold
    ("almalinux-9", "580", "580.*", []),                                  # module stream keeps the branch
    ("almalinux-9", "580.95.05", "580.95.05-*", ["nvidia-driver-3:580.95.05-*", "nvidia-driver-cuda-3:580.95.05-*",
                                              "kmod-nvidia-open-dkms-3:580.95.05-*"]),
])
def test_pinned_to_and_held_when_the_role_installs(distro, version, pinned_to, held):
    plan = plan_for(distro, {"nvidia_driver_version": version, "nvidia_driver_flavour": "proprietary"
                             if distro.startswith("debian") else "open"})
    assert plan["install"] is True
    assert (plan["pinned_to"], plan["held"]) == (pinned_to, held)


@pytest.mark.parametrize("engine,pid2,in_container,container", [
    ("none", "kthreadd", False, "none"),
    ("docker", "kthreadd", False, "none"),     # Firecracker VM built from an image: /.dockerenv, own kernel
    ("podman", "kthreadd", False, "none"),     # same with /run/.containerenv
    ("docker", "sleep", True, "docker"),       # a real container: PID 2 is one of its own processes
    ("podman", "", True, "podman"),            # PID 2 does not exist in the container's namespace
    ("systemd-nspawn", "systemd-journal", True, "systemd-nspawn"),
    ("", None, False, "none"),
])
def test_container_verdict_needs_a_hidden_kernel(engine, pid2, in_container, container):
    verdict = container_verdict(engine, pid2)
    assert (verdict["in_container"], verdict["container"]) == (in_container, container)
    assert verdict["evidence"]


@pytest.mark.parametrize("params,text", [
    ({}, None),
    ({"NVreg_PreserveVideoMemoryAllocations": 1, "NVreg_EnableGpuFirmware": 0},
     "options nvidia NVreg_EnableGpuFirmware=0 NVreg_PreserveVideoMemoryAllocations=1\n"),
])
def test_modprobe_options(params, text):
    out = modprobe_options(params)
    assert (out if out is None else out.splitlines()[1] + "\n") == text


# in container, loaded, installed, nouveau, allow, controller -> required, reboot
@pytest.mark.parametrize("args,required,reboot", [
    ((True, None, "535.261.03-1", False, True, False), False, False),
    ((True, "535.261.03", "535.309.01-0+deb12u1", True, True, False), False, False),
    ((False, "535.261.03", "535.261.03-1", False, True, False), False, False),
    ((False, "535.261.03", "535.309.01-0+deb12u1", False, True, False), True, True),
    ((False, "535.261.03", "535.309.01-0+deb12u1", False, False, False), True, False),
    ((False, None, "535.261.03-1", True, True, False), True, True),
    ((False, None, "535.261.03-1", True, True, True), True, False),
])
def test_reboot_decision(args, required, reboot):
    decision = reboot_decision(*args)
    assert (decision["required"], decision["reboot"]) == (required, reboot), decision
    if args[5] and required:
        assert "not rebooting the Ansible controller" in decision["message"]
    if required and not args[4]:
        assert "gpufleet_allow_reboot" in decision["message"]


# Issue 15 item 7: hold what brings new kernels (metapackages), install headers for the next kernel.
@pytest.mark.parametrize("dpkg,kernel,headers,metas", [
    ("linux-image-6.1.0-40-amd64\tii \nlinux-image-amd64\tii \nlinux-base\tii \nlinux-libc-dev\tii \n",
     "6.1.0-40-amd64", ["linux-headers-6.1.0-40-amd64", "linux-headers-amd64"], ["linux-headers-amd64", "linux-image-amd64"]),
    ("linux-image-cloud-amd64\tii \nlinux-image-6.1.0-40-cloud-amd64\tii \n", "6.1.0-40-cloud-amd64",
     ["linux-headers-6.1.0-40-cloud-amd64", "linux-headers-cloud-amd64"], ["linux-headers-cloud-amd64", "linux-image-cloud-amd64"]),
    ("linux-generic\tii \nlinux-image-generic\tii \nlinux-headers-generic\tii \nlinux-image-6.8.0-45-generic\tii \n"
     "linux-modules-6.8.0-45-generic\tii \n", "6.8.0-45-generic",
     ["linux-headers-6.8.0-45-generic", "linux-headers-generic"],
     ["linux-generic", "linux-headers-generic", "linux-image-generic"]),
    ("linux-aws\tii \nlinux-image-aws\tii \nlinux-image-generic\trc \n", "6.8.0-1015-aws",
     ["linux-headers-6.8.0-1015-aws", "linux-headers-aws"], ["linux-aws", "linux-headers-aws", "linux-image-aws"]),
    ("", "6.18.44-fc-v1045", ["linux-headers-6.18.44-fc-v1045"], []),   # kernel from outside the package manager
])
def test_apt_kernel_plan(dpkg, kernel, headers, metas):
    plan = apt_kernel_plan(dpkg, kernel, True)
    assert (plan["headers"], plan["hold"]) == (headers, metas)
    assert not any(p.startswith("linux-image-6") for p in plan["hold"])  # versioned packages are never held
    assert apt_kernel_plan(dpkg, kernel, False)["hold"] == []


# Issue 15 item 6: HGX boards (NVSwitch on the PCI bus) get Fabric Manager at the driver's version.
HGX = {"architectures": ["hopper"], "driver_loaded": False, "nvswitch_count": 4}


@pytest.mark.parametrize("distro,version,gpu,packages,extra,held,modules_load", [
    ("ubuntu-24.04", "580.95.05", HGX, ["nvidia-fabricmanager-580=580.95.05-*"], [], ["nvidia-fabricmanager-580"], False),
    ("debian-12", "580", HGX, ["nvidia-fabricmanager-580=580.*"], [], [], False),
    ("almalinux-9", "580.95.05", HGX, ["nvidia-fabric-manager-3:580.95.05"], [],
     ["nvidia-fabric-manager-3:580.95.05-*"], False),
    ("ubuntu-24.04", "580", dict(HGX, architectures=["blackwell"]), ["nvidia-fabricmanager-580=580.*"], ["nvlsm"], [], True),
])
def test_fabric_manager_on_nvswitch_systems(distro, version, gpu, packages, extra, held, modules_load):
    plan = plan_for(distro, {"nvidia_driver_version": version}, gpu)
    assert plan["errors"] == []
    assert [p for p in plan["packages"] if "fabric" in p] == packages
    assert plan["extra_packages"][-len(extra):] == extra if extra else "nvlsm" not in plan["extra_packages"]
    assert [h for h in plan["held"] if "fabric" in h] == held
    assert plan["fabric_manager"]["service"] == "nvidia-fabricmanager"
    assert (plan["fabric_manager"]["modules_load"] is not None) == modules_load
    if modules_load:
        assert plan["fabric_manager"]["modules_load"]["content"].endswith("ib_umad\n")


def test_no_nvswitch_no_fabric_manager_and_debian_packages_cannot_serve_one():
    assert plan_for("ubuntu-24.04", {"nvidia_driver_version": "580"})["fabric_manager"] is None
    plan = plan_for("debian-12", {"nvidia_driver_version": "535.261.03", "nvidia_driver_source": "distribution",
                                  "gpufleet_allow_eol_driver": True}, HGX)
    assert plan["errors"] == ["nvidia_driver_source: this host has 4 NVSwitch(es) and needs NVIDIA Fabric Manager, "
                              "which Debian's packages do not include; use one of: nvidia"]
