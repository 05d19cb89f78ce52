"""gpu_node_prep's per-host plan (module_utils/node/node_prep.py) and the preflight of its inputs (issue 15).

The Debian path runs for real in molecule/gpu_node_prep; the Rocky 9 path runs the real rpm/dnf
against stand-in repositories in tests/integration/test_node_prep_redhat.py.
"""
import copy

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.node.node_prep import node_prep_plan
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight

BASE = {"platform": "kubeadm", "cluster_name": "c1", "addons_mode": "standalone", "apply": False,
        "pools": [{"name": "infer", "gpu_type": "l4"}], "extra": {}}


def plan(family, dist, major, values=None, mirror="", arch="x86_64"):
    return node_prep_plan({"os_family": family, "distribution": dist, "distribution_major": major,
                           "architecture": arch, "values": values or {}, "mirror": mirror})


@pytest.mark.parametrize("family,dist,major,packages,initramfs,crb,epel", [
    ("Debian", "Debian", "12", ["pciutils", "kmod", "gnupg", "initramfs-tools"], "update-initramfs", None, None),
    ("Debian", "Ubuntu", "24", ["pciutils", "kmod", "gnupg", "initramfs-tools"], "update-initramfs", None, None),
    ("RedHat", "Rocky", "9", ["pciutils", "kmod", "dracut", "dnf-plugins-core"], "dracut", "crb", "epel-release"),
    ("RedHat", "AlmaLinux", "8", ["pciutils", "kmod", "dracut", "dnf-plugins-core"], "dracut", "powertools",
     "epel-release"),
    ("RedHat", "RedHat", "9", ["pciutils", "kmod", "dracut", "dnf-plugins-core"], "dracut",
     "codeready-builder-for-rhel-9-x86_64-rpms",
     "https://dl.fedoraproject.org/pub/epel/epel-release-latest-9.noarch.rpm"),
    ("RedHat", "Amazon", "2023", ["pciutils", "kmod", "dracut", "dnf-plugins-core"], "dracut", None, None),
])
def test_plan_per_distribution(family, dist, major, packages, initramfs, crb, epel):
    result = plan(family, dist, major)
    assert result["errors"] == []
    assert (result["packages"], result["initramfs_command"][0], result["crb_repo"], result["epel_package"]) == (
        packages, initramfs, crb, epel)


def test_dracut_regenerates_every_initramfs():
    assert plan("RedHat", "Rocky", "9")["initramfs_command"] == ["dracut", "--force", "--regenerate-all"]


def test_epel_off_own_package_and_mirror():
    assert plan("RedHat", "Rocky", "9", {"gpu_node_prep_epel": False})["crb_repo"] is None
    assert plan("RedHat", "RedHat", "9", {"gpu_node_prep_epel_package": "https://m.internal/epel.rpm"})[
        "epel_package"] == "https://m.internal/epel.rpm"
    assert plan("RedHat", "RedHat", "9", mirror="https://mirror.internal/pkgs", arch="aarch64") == dict(
        plan("RedHat", "RedHat", "9", mirror="https://mirror.internal/pkgs", arch="aarch64"),
        epel_package="https://mirror.internal/pkgs/dl.fedoraproject.org/pub/epel/epel-release-latest-9.noarch.rpm",
        crb_repo="codeready-builder-for-rhel-9-aarch64-rpms")


def test_own_package_list_replaces_the_default_and_extras_add():
    result = plan("RedHat", "Rocky", "9", {"gpu_node_prep_packages": ["pciutils"], "gpu_node_prep_extra_packages": ["vim"]})
    assert result["packages"] == ["pciutils", "vim"]


@pytest.mark.parametrize("family,dist", [("Suse", "SLES"), ("RedHat", "Fedora"), ("Archlinux", "Archlinux")])
def test_unsupported_os_is_refused_naming_what_is_supported(family, dist):
    errors = plan(family, dist, "1")["errors"]
    assert len(errors) == 1 and "is not supported; use one of: Debian (Debian), Ubuntu (Debian), RedHat (RedHat)" in errors[0]


BAD = [
    ({"gpu_node_prep_epel": "yes"}, "gpu_node_prep_epel", "'yes' is not a boolean; use one of: true, false"),
    ({"gpu_node_prep_blacklist_nouveau": "no"}, "gpu_node_prep_blacklist_nouveau", "is not a boolean"),
    ({"gpu_node_prep_packages": "pciutils"}, "gpu_node_prep_packages", "is not a list of package names"),
    ({"gpu_node_prep_extra_packages": ["vim", "rm -rf /"]}, "gpu_node_prep_extra_packages[1]",
     "'rm -rf /' is not a package name"),
    ({"gpu_node_prep_epel_package": "ftp://x/epel.rpm"}, "gpu_node_prep_epel_package",
     "is neither a package name nor an .rpm URL"),
]


@pytest.mark.parametrize("extra,var,fragment", BAD, ids=[b[1] for b in BAD])
def test_bad_inputs_are_refused_in_preflight(extra, var, fragment):
    params = copy.deepcopy(BASE)
    params["extra"] = extra
    errors, _warnings, _plan = run_preflight(params)
    assert any(e.startswith(var + ": ") and fragment in e and "use one of" in e for e in errors), errors


def test_good_inputs_pass_preflight():
    params = copy.deepcopy(BASE)
    params["extra"] = {"gpu_node_prep_epel": False, "gpu_node_prep_packages": ["pciutils", "kmod=30+20221128-1"],
                       "gpu_node_prep_epel_package": "https://mirror.internal/epel-release-latest-9.noarch.rpm"}
    assert run_preflight(params)[0] == []
