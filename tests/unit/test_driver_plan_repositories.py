"""driver_plan returns its repositories and signing keys as data, the repository files are rendered
from that data, and the mirror manifest takes its URLs from it (never parsed back from the text)."""
import configparser

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import mirror_manifest
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_packages import driver_plan

FACTS = {
    "debian-12": ("Debian", "12", "12", "bookworm"), "ubuntu-24.04": ("Ubuntu", "24.04", "24", "noble"),
    "rhel-9": ("RedHat", "9.6", "9", ""), "amazon-2023": ("Amazon", "2023", "2023", ""),
}
CUDA = "https://developer.download.nvidia.com/compute/cuda/repos"


def plan_for(distro, values=None, arch="x86_64"):
    dist, version, major, codename = FACTS[distro]
    return driver_plan({"values": values or {}, "distribution": dist, "distribution_version": version,
                        "distribution_major": major, "codename": codename, "architecture": arch,
                        "gpu_info": {"architectures": ["hopper"]}, "today": "2026-01-01"})


def deb822_stanzas(text):
    stanzas = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith("#"))
        stanzas.append(fields)
    return stanzas


@pytest.mark.parametrize("distro, values, repositories, keys", [
    ("debian-12", {},
     [{"type": "apt", "url": CUDA + "/debian12/x86_64/", "suites": ["/"], "components": [],
       "key_url": CUDA + "/debian12/x86_64/3bf863cc.pub", "keyring": "/etc/apt/keyrings/gpufleet-nvidia-cuda.asc"}],
     [{"url": CUDA + "/debian12/x86_64/3bf863cc.pub", "path": "/etc/apt/keyrings/gpufleet-nvidia-cuda.asc"}]),
    ("debian-12", {"nvidia_driver_source": "distribution", "nvidia_driver_version": "535"},
     [{"type": "apt", "url": "http://deb.debian.org/debian", "suites": ["bookworm", "bookworm-updates"],
       "components": ["contrib", "non-free", "non-free-firmware"], "key_url": None, "keyring": None},
      {"type": "apt", "url": "http://deb.debian.org/debian-security", "suites": ["bookworm-security"],
       "components": ["contrib", "non-free", "non-free-firmware"], "key_url": None, "keyring": None}],
     []),
    ("ubuntu-24.04", {"nvidia_driver_source": "distribution"}, [], []),
    ("rhel-9", {},
     [{"type": "dnf", "name": "gpufleet-nvidia-cuda", "description": "NVIDIA CUDA repository (rhel9)",
       "url": CUDA + "/rhel9/x86_64", "key_url": CUDA + "/rhel9/x86_64/D42D0685.pub",
       "keyring": "/etc/pki/rpm-gpg/RPM-GPG-KEY-gpufleet-nvidia-cuda"}],
     [{"url": CUDA + "/rhel9/x86_64/D42D0685.pub", "path": "/etc/pki/rpm-gpg/RPM-GPG-KEY-gpufleet-nvidia-cuda"}]),
])
def test_repositories_and_keys_are_data(distro, values, repositories, keys):
    plan = plan_for(distro, values)
    assert plan["errors"] == []
    assert plan["repositories"] == repositories
    assert plan["keys"] == keys


def test_apt_repository_file_is_rendered_from_the_data():
    plan = plan_for("debian-12", {"nvidia_driver_source": "distribution", "nvidia_driver_version": "535"})
    (repo_file,) = plan["repo_files"]
    stanzas = deb822_stanzas(repo_file["content"])
    assert [(s["URIs"], s["Suites"].split(), s["Components"].split()) for s in stanzas] == [
        (r["url"], r["suites"], r["components"]) for r in plan["repositories"]]
    cuda = plan_for("debian-12")
    (stanza,) = deb822_stanzas(cuda["repo_files"][0]["content"])
    assert stanza["Signed-By"] == cuda["keys"][0]["path"] == cuda["keyring"]["path"]
    assert cuda["keyring"]["url"] == cuda["keys"][0]["url"]


def test_dnf_repository_file_is_rendered_from_the_data():
    plan = plan_for("amazon-2023", arch="aarch64")
    parser = configparser.ConfigParser()
    parser.read_string(plan["repo_files"][0]["content"])
    (repo,) = plan["repositories"]
    assert repo["url"].endswith("/amzn2023/sbsa")
    assert dict(parser[repo["name"]]) == {"name": repo["description"], "baseurl": repo["url"], "enabled": "1",
                                          "gpgcheck": "1", "repo_gpgcheck": "0", "gpgkey": "file://" + repo["keyring"]}
    # dnf imports only the key the role checked: NVIDIA's cudatools key D42D0685, pinned by fingerprint
    assert plan["keyring"] == {"url": repo["key_url"], "path": repo["keyring"], "check": plan["key_check"]}
    assert repo["key_url"].endswith("/amzn2023/sbsa/D42D0685.pub")
    assert plan["key_check"]["fingerprint"] == "610C7B14E068A878070DA4E99CD0A493D42D0685" and plan["key_check"]["pinned"]


def test_package_mirror_rewrites_the_structured_urls_but_not_the_key():
    plan = plan_for("rhel-9", {"gpufleet_mirror_package_url": "https://m.local/p"})
    assert plan["repositories"][0]["url"] == "https://m.local/p/developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64"
    # a mirror serves packages, never the trust anchor (issue 30 item 1)
    assert plan["keys"][0]["url"] == "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/D42D0685.pub"
    own = plan_for("rhel-9", {"gpufleet_mirror_package_url": "https://m.local/p",
                              "nvidia_driver_repo_key_url": "file:///srv/keys/D42D0685.pub"})
    # read from there on the node and checked against the pinned fingerprint before it is written where
    # the .repo file points
    assert own["keyring"]["url"] == "file:///srv/keys/D42D0685.pub"
    assert own["keyring"]["check"]["fingerprint"] == "610C7B14E068A878070DA4E99CD0A493D42D0685"
    assert "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-gpufleet-nvidia-cuda" in own["repo_files"][0]["content"]


def test_manifest_lists_the_driver_plans_repositories_and_keys():
    pools = [{"name": "p", "gpu_type": "h100-80gb", "gpus_per_node": 8, "sharing": {}}]
    plan = {"platform": "kubeadm", "addons_mode": "standalone", "pools": pools, "inventory_name": "i"}
    values = {"nvidia_driver_node_distros": ["debian-12", "rhel-9"]}
    man = mirror_manifest.manifest(plan, values, ["n1"], today="2026-01-01")
    for distro in ("debian-12", "rhel-9"):
        driver = plan_for(distro)
        section = man["os_packages"][distro]
        assert [r["url"] for r in section["repositories"] if r["component"] == "driver"] == [
            r["url"] for r in driver["repositories"]]
        assert [k["url"] for k in section["keys"] if k["component"] == "driver"] == [k["url"] for k in driver["keys"]]


def test_manifest_today_decides_the_branch_support():
    """The date is an argument: a branch past its end of life fails on a later day only."""
    pools = [{"name": "p", "gpu_type": "h100-80gb", "gpus_per_node": 8, "sharing": {}}]
    plan = {"platform": "kubeadm", "addons_mode": "standalone", "pools": pools, "inventory_name": "i"}
    values = {"nvidia_driver_node_distros": ["debian-12"], "nvidia_driver_version": "535"}
    early = mirror_manifest.manifest(plan, values, ["n1"], today="2024-01-01")["os_packages"]["debian-12"]
    late = mirror_manifest.manifest(plan, values, ["n1"], today="2035-01-01")["os_packages"]["debian-12"]
    assert "errors" not in early
    assert "errors" in late and any("535" in e for e in late["errors"])
