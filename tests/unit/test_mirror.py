"""Air-gap mirror: the manifest logic, the mirror rewrites and the generated fetch scripts."""
import json
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import mirror_manifest, mirror_scripts
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import mirror_urls
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.addons import settings
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_packages import driver_plan
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools

POOLS = [{"name": "train", "gpu_type": "a100-80gb", "gpus_per_node": 8, "max_nodes": 2},
         {"name": "old", "gpu_type": "v100", "max_nodes": 1}]


def plan(platform="kubeadm", mode="standalone", pools=POOLS):
    return {"platform": platform, "addons_mode": mode, "cluster_name": "c1", "inventory_name": "inv",
            "pools": normalize_pools(pools)}


@pytest.mark.parametrize("ref,prefix,want", [
    ("nvcr.io/nvidia/k8s-device-plugin:v0.18.1", "m.local:5000", "m.local:5000/nvidia/k8s-device-plugin:v0.18.1"),
    ("docker.io/curlimages/curl:8.11.1", "m.local/pfx/", "m.local/pfx/curlimages/curl:8.11.1"),
    ("curlimages/curl:8.11.1", "m.local", "m.local/curlimages/curl:8.11.1"),
    ("busybox:1.36", "m.local", "m.local/library/busybox:1.36"),
    ("registry.k8s.io/nfd/nfd:v1@sha256:" + "a" * 64, "m.local", "m.local/nfd/nfd:v1@sha256:" + "a" * 64),
    ("corp.internal:5000/team/img:1", "m.local", "corp.internal:5000/team/img:1"),   # not upstream: kept
    ("nvcr.io/nvidia/x:1", "", "nvcr.io/nvidia/x:1"),
])
def test_mirror_image(ref, prefix, want):
    assert mirror_urls.mirror_image(ref, prefix) == want


@pytest.mark.parametrize("url,base,want", [
    ("https://nvidia.github.io/libnvidia-container/gpgkey", "https://m/x/",
     "https://m/x/nvidia.github.io/libnvidia-container/gpgkey"),
    ("http://deb.debian.org/debian", "file:///srv/m", "file:///srv/m/deb.debian.org/debian"),
    ("https://corp.example/repo", "https://m", "https://corp.example/repo"),
    ("https://developer.download.nvidia.com/compute/cuda/repos", "", "https://developer.download.nvidia.com/compute/cuda/repos"),
])
def test_mirror_url(url, base, want):
    assert mirror_urls.mirror_url(url, base) == want


def test_effective_registry_and_addon_settings():
    s = settings(plan(), {"gpufleet_mirror_registry": "m.local:5000"})
    assert s["gpufleet_registry_prefix"] == "m.local:5000"
    s = settings(plan(), {"gpufleet_registry_prefix": "p.local"})
    assert s["gpufleet_registry_prefix"] == "p.local"
    op = settings(plan(mode="operator"), {"gpufleet_mirror_chart_path": "/srv/charts/"})
    assert op["gpu_operator_chart_path"] == "/srv/charts/gpu-operator-v26.7.0.tgz"
    pinned = settings(plan(mode="operator"), {"gpufleet_mirror_chart_path": "/srv/c", "gpu_operator_chart_version": "v25.10.0"})
    assert pinned["gpu_operator_chart_path"] == "/srv/c/gpu-operator-v25.10.0.tgz"
    ocp = settings(plan("openshift", "operator"), {"gpufleet_mirror_chart_path": "/srv/c"})
    assert ocp["gpu_operator_chart_path"] == ""


@pytest.mark.parametrize("extra,message", [
    ({"gpufleet_mirror_registry": "https://m.local"}, "gpufleet_mirror_registry: 'https://m.local' is not a registry"),
    ({"gpufleet_mirror_registry": "a.local", "gpufleet_registry_prefix": "b.local"},
     "gpufleet_mirror_registry: differs from gpufleet_registry_prefix (b.local)"),
    ({"gpufleet_mirror_package_url": "mirror.local/pkgs"}, "gpufleet_mirror_package_url: 'mirror.local/pkgs' is not a URL"),
    ({"gpufleet_mirror_debian_url": "ftp://x"}, "gpufleet_mirror_debian_url: 'ftp://x' is not a URL"),
    ({"gpufleet_mirror_chart_path": "charts"}, "gpufleet_mirror_chart_path: 'charts' is not an absolute directory"),
    ({"gpufleet_mirror_registry": 5}, "gpufleet_mirror_registry: 5 is not a string"),
])
def test_check_names_the_variable(extra, message):
    problems = Problems()
    p = plan()
    mirror_urls.check({"extra": extra}, p, problems)
    assert any(e.startswith(message) for e in problems.errors), problems.errors


def test_preflight_runs_the_mirror_check_and_publishes_the_plan():
    params = {"platform": "kubeadm", "cluster_name": "c1", "addons_mode": "standalone", "pools": POOLS,
              "extra": {"gpufleet_mirror_registry": "m.local:5000", "nvidia_driver_flavour": "proprietary",
                        "gpufleet_mirror_package_url": "https://m.local/pkgs"}}
    errors, _warnings, p = run_preflight(params)
    assert errors == [], errors
    assert p["mirror"] == {"registry_prefix": "m.local:5000", "package_url": "https://m.local/pkgs",
                           "chart_path": "", "enabled": True}
    params["extra"]["gpufleet_mirror_package_url"] = "nope"
    errors, _w, _p = run_preflight(params)
    assert any(e.startswith("gpufleet_mirror_package_url:") for e in errors)


def test_driver_plan_uses_the_package_mirror_and_debian_mirror():
    base = {"distribution": "Debian", "distribution_version": "12", "distribution_major": "12", "codename": "bookworm",
            "architecture": "x86_64", "gpu_info": {"architectures": ["ampere"]}, "today": "2026-01-01"}
    nv = driver_plan(dict(base, values={"gpufleet_mirror_package_url": "https://m.local/p"}))
    # the mirror serves the packages, never the key: it stays NVIDIA's, checked against the pinned fingerprint
    assert nv["keyring"]["url"] == ("https://developer.download.nvidia.com/compute/cuda/repos/"
                                    "debian12/x86_64/3bf863cc.pub")
    assert nv["keyring"]["check"]["fingerprint"] == "EB693B3035CD5710E231E123A4B469963BF863CC"
    assert "URIs: https://m.local/p/developer.download.nvidia.com/" in nv["repo_files"][0]["content"]
    deb = driver_plan(dict(base, values={"nvidia_driver_source": "distribution", "nvidia_driver_version": "535",
                                         "gpufleet_mirror_debian_url": "http://deb.m.local/debian"}))
    content = deb["repo_files"][0]["content"]
    assert "URIs: http://deb.m.local/debian\n" in content and "URIs: http://deb.m.local/debian-security\n" in content
    assert "deb.debian.org" not in content
    explicit = driver_plan(dict(base, values={"nvidia_driver_source": "distribution", "nvidia_driver_version": "535",
                                              "nvidia_driver_debian_mirror": "http://own/debian",
                                              "gpufleet_mirror_package_url": "https://m.local/p"}))
    text = explicit["repo_files"][0]["content"]
    assert "URIs: http://own/debian\n" in text           # an explicit role value wins
    assert "URIs: https://m.local/p/deb.debian.org/debian-security\n" in text


def test_manifest_standalone_self_managed():
    man = mirror_manifest.manifest(plan(), {"nvidia_driver_node_distros": ["ubuntu-24.04", "rhel-9"],
                                   "nvidia_driver_version": "580.95.05", "nvidia_driver_flavour": "proprietary",
                                   "gpufleet_mirror_registry": "m.local:5000"}, ["n1"])
    assert sorted(man["os_packages"]) == ["rhel-9", "ubuntu-24.04"]
    ubuntu = man["os_packages"]["ubuntu-24.04"]
    assert {"name": "cuda-drivers-580", "version": "580.95.05-*", "component": "driver"} in ubuntu["packages"]
    assert {"name": "nvidia-container-toolkit", "version": "1.20.0-1", "component": "toolkit"} in ubuntu["packages"]
    assert {"name": "pciutils", "version": "(newest)", "component": "node_prep"} in ubuntu["packages"]
    assert ubuntu["repositories"][0]["url"] == "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/"
    rhel = man["os_packages"]["rhel-9"]
    assert rhel["package_manager"] == "dnf"
    assert "nvidia-driver-3:580.95.05" in [p["name"] for p in rhel["packages"]]
    assert rhel["driver"]["module_stream"] == "nvidia-driver:580-dkms"
    assert "https://nvidia.github.io/libnvidia-container/stable/rpm/x86_64" in [r["url"] for r in rhel["repositories"]]
    refs = {i["name"]: i for i in man["images"]}
    digest = "@sha256:a61ba9fd8efb82f3a79f877f7580e02c1e8e7593f62473644bc9c79e315c3312"  # NVIDIA's, for v0.20.0
    assert refs["device_plugin"]["source"] == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0" + digest
    assert refs["device_plugin"]["mirror"] == "m.local:5000/nvidia/k8s-device-plugin:v0.20.0" + digest
    assert refs["probe"]["mirror"] == "m.local:5000/curlimages/curl:8.11.1"
    assert man["charts"] == [] and man["olm_packages"] == []
    assert not any("nvidia_driver_node_distros is not set" in n for n in man["notes"])


def test_manifest_defaults_to_debian_12_and_says_so():
    man = mirror_manifest.manifest(plan(pools=[POOLS[0]]), {}, ["n1"])
    assert list(man["os_packages"]) == ["debian-12"]
    assert any("packages are listed for debian-12" in n for n in man["notes"])
    # the keys are not moved by the package mirror: the manifest says how an air-gapped site points at its copies
    assert any("nvidia_driver_repo_key_url and nvidia_container_toolkit_repo_key_url" in n for n in man["notes"])
    names = [p["name"] for p in man["os_packages"]["debian-12"]["packages"]]
    assert names[0] == "nvidia-open-580"         # Ampere -> open flavour, as the driver role decides


def test_manifest_digest_override_and_cloud_platform():
    digest = "sha256:" + "b" * 64
    man = mirror_manifest.manifest(plan("eks"), {"gpufleet_image_overrides": {"dcgm_exporter": {"digest": digest}}}, [])
    assert man["os_packages"] == {}
    dcgm = [i for i in man["images"] if i["name"] == "dcgm_exporter"][0]
    assert dcgm["digest"] == digest and dcgm["source"].endswith("@" + digest)


def test_manifest_operator_mode_chart_and_openshift_olm():
    man = mirror_manifest.manifest(plan(mode="operator"), {"gpufleet_mirror_chart_path": "/srv/c"}, ["n1"])
    assert man["charts"][0]["version"] == "v26.7.0" and man["charts"][0]["mirror"] == "/srv/c/gpu-operator-v26.7.0.tgz"
    assert not [i for i in man["images"] if i["name"] == "device_plugin"]
    assert any("helm template" in n for n in man["notes"])
    ocp = mirror_manifest.manifest(plan("openshift", "operator"), {}, ["n1"])
    assert ocp["charts"] == [] and [p["package"] for p in ocp["olm_packages"]] == ["gpu-operator-certified", "nfd"]


def test_manifest_is_deterministic():
    values = {"nvidia_driver_node_distros": ["rhel-9", "debian-12", "debian-12"]}
    a = json.dumps(mirror_manifest.manifest(plan(), values, ["n1"]), sort_keys=True)
    b = json.dumps(mirror_manifest.manifest(plan(), dict(values), ["n1"]), sort_keys=True)
    assert a == b
    assert list(mirror_manifest.manifest(plan(), values, ["n1"])["os_packages"]) == ["debian-12", "rhel-9"]


GB200 = {"name": "grace", "gpu_type": "gb200", "gpus_per_node": 4, "max_nodes": 2}
ALL_DISTROS = {"nvidia_driver_node_distros": ["debian-12", "ubuntu-22.04", "rocky-9", "amazon-2023"]}

CASES = [
    (plan(), {"nvidia_driver_node_distros": ["debian-12", "ubuntu-22.04", "rocky-9", "amazon-2023"],
              "nvidia_driver_flavour": "proprietary"}),
    (plan(mode="operator"), {}),
    (plan("openshift", "operator"), {}),
    (plan("gke-autopilot", "none"), {}),
    (plan(pools=[POOLS[1], GB200]), ALL_DISTROS),      # amd64 + arm64 nodes
    (plan(pools=[GB200]), ALL_DISTROS),                # arm64 nodes only
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_scripts_are_valid_bash(case, tmp_path):
    p, values = CASES[case]
    man = mirror_manifest.manifest(p, values, ["n1"])
    for name, text in sorted(mirror_scripts.scripts(man).items()):
        path = tmp_path / name
        path.write_text(text)
        proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, (name, proc.stderr)
        if shutil.which("shellcheck"):
            proc = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True)
            assert proc.returncode == 0, (name, proc.stdout)


def test_operand_awk_reads_cluster_policy_triplets(tmp_path):
    """The awk program of fetch-images.sh on a ClusterPolicy as the chart renders it."""
    rendered = (
        "spec:\n  template:\n    spec:\n      containers:\n        - image: \"nvcr.io/nvidia/gpu-operator:v25.3.4\"\n"
        "---\nkind: ClusterPolicy\nspec:\n  driver:\n    repository: nvcr.io/nvidia\n    image: driver\n"
        "    version: \"570.172.08\"\n  toolkit:\n    repository: nvcr.io/nvidia/k8s\n    image: container-toolkit\n"
        "    version: v1.18.1-ubuntu20.04\n  dcgm:\n    repository: nvcr.io/nvidia/cloud-native\n    image: dcgm\n"
        "    version: sha256:" + "c" * 64 + "\n  validator:\n    version: v1\n")
    proc = subprocess.run(["awk", mirror_scripts.OPERAND_AWK], input=rendered, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["nvcr.io/nvidia/gpu-operator:v25.3.4", "nvcr.io/nvidia/driver:570.172.08",
                                   "nvcr.io/nvidia/k8s/container-toolkit:v1.18.1-ubuntu20.04",
                                   "nvcr.io/nvidia/cloud-native/dcgm@sha256:" + "c" * 64]


def test_markdown_tables():
    man = mirror_manifest.manifest(plan(mode="operator"), {}, ["n1"])
    md = mirror_scripts.manifest_markdown(man)
    assert "| gpu-operator | v26.7.0 | https://helm.ngc.nvidia.com/nvidia | gpu-operator-v26.7.0.tgz | - |" in md
    assert "| nvidia-container-toolkit | 1.20.0-1 | toolkit |" in md


def _inner_scripts(man):
    for distro, sec in sorted(man["os_packages"].items()):
        lines = mirror_scripts._apt_setup(sec) if sec["package_manager"] == "apt" else mirror_scripts._dnf_setup(sec)
        yield distro, ("#!/usr/bin/env bash\nset -euo pipefail\nexport KERNEL_PKGS='' KERNEL_PKGS_ARM64=''\n"
                       + "\n".join(lines) + "\n")


@pytest.mark.parametrize("case", [0, 4, 5])
def test_container_side_scripts_are_valid_bash(case, tmp_path):
    p, values = CASES[case]
    man = mirror_manifest.manifest(p, values, ["n1"])
    seen = []
    for distro, text in _inner_scripts(man):
        path = tmp_path / (distro + ".sh")
        path.write_text(text)
        proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, (distro, proc.stderr)
        if shutil.which("shellcheck"):
            proc = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True)
            assert proc.returncode == 0, (distro, proc.stdout)
        seen.append(distro)
    assert seen == ["amazon-2023", "debian-12", "rocky-9", "ubuntu-22.04"]


def test_apt_index_function_mirrors_signed_lists_and_by_hash(tmp_path):
    """mirror_index on a local repository (file:// URLs; curl is the same for http)."""
    import hashlib
    repo = tmp_path / "up" / "dists" / "bookworm"
    files = {"contrib/binary-amd64/Packages.xz": b"contrib-list", "non-free/binary-amd64/Packages": b"nf-list",
             "main/binary-amd64/Packages.xz": b"main-list", "contrib/binary-arm64/Packages.xz": b"arm-list",
             "non-free/i18n/Translation-en.bz2": b"tr"}
    for name, data in files.items():
        (repo / os.path.dirname(name)).mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    release = "Origin: Debian\nSHA256:\n" + "".join(
        " %s %d %s\n" % (hashlib.sha256(d).hexdigest(), len(d), n) for n, d in sorted(files.items()))
    (repo / "InRelease").write_text(release)
    out = tmp_path / "out"
    out.mkdir()
    script = mirror_scripts.APT_INDEX_FUNCTION.replace("/out/", str(out) + "/") + "\nmirror_index %s %s\n" % (
        "file://" + str(repo), "'^(contrib|non-free|non-free-firmware)/'")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    got = out / str(repo).lstrip("/")
    assert (got / "InRelease").read_text() == release
    assert (got / "contrib/binary-amd64/Packages.xz").read_bytes() == b"contrib-list"
    assert (got / "non-free/i18n/Translation-en.bz2").exists()
    digest = hashlib.sha256(b"nf-list").hexdigest()
    assert (got / "non-free/binary-amd64/by-hash/SHA256" / digest).read_bytes() == b"nf-list"
    assert not (got / "main").exists() and not (got / "contrib/binary-arm64").exists()


# ---------------------------------------------------------------------------------------------
# Node architectures (arm64 pools: gb200)

@pytest.mark.parametrize("pools,want", [
    ([], ["amd64"]),                                   # no pool says otherwise
    ([POOLS[0]], ["amd64"]),
    ([GB200], ["arm64"]),
    ([POOLS[1], GB200], ["amd64", "arm64"]),
    ([{"name": "x", "gpu_type": "unknown-gpu"}], ["amd64"]),
])
def test_node_architectures_follow_the_pools_gpu_types(pools, want):
    assert mirror_manifest.node_architectures({"pools": pools}) == want


def test_manifest_lists_each_node_architecture_with_its_repositories():
    # v100 (amd64) needs the proprietary modules, gb200 (arm64) the open ones: each architecture's driver plan
    # sees only its own pools' GPUs
    man = mirror_manifest.manifest(plan(pools=[POOLS[1], GB200]),
                                   {"nvidia_driver_node_distros": ["debian-12", "ubuntu-24.04", "rhel-9"]}, ["n1"],
                                   today="2026-12-01")
    assert man["node_architectures"] == ["amd64", "arm64"]
    assert any("skopeo copy --all" in n and "amd64, arm64" in n for n in man["notes"])
    deb = man["os_packages"]["debian-12"]
    assert deb["architectures"] == ["amd64", "arm64"] and list(deb["other_architectures"]) == ["arm64"]
    arm = deb["other_architectures"]["arm64"]
    assert [r["url"] for r in deb["repositories"]] == [
        "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/",
        "https://nvidia.github.io/libnvidia-container/stable/deb/amd64"]
    assert [r["url"] for r in arm["repositories"]] == [
        "https://developer.download.nvidia.com/compute/cuda/repos/debian12/sbsa/",
        "https://nvidia.github.io/libnvidia-container/stable/deb/arm64"]
    assert arm["keys"][0]["url"].startswith("https://developer.download.nvidia.com/compute/cuda/repos/debian12/sbsa/")
    assert (deb["driver"]["flavour"], arm["driver"]["flavour"]) == ("proprietary", "open")
    assert "nvidia-open" in [p["name"] for p in arm["packages"]][0]
    rhel = man["os_packages"]["rhel-9"]["other_architectures"]["arm64"]
    assert [r["url"] for r in rhel["repositories"]] == [
        "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/sbsa",
        "https://nvidia.github.io/libnvidia-container/stable/rpm/aarch64"]
    md = mirror_scripts.manifest_markdown(man)
    assert "### arm64 nodes (debian-12)" in md and "| https://nvidia.github.io/libnvidia-container/stable/deb/arm64 |" in md


def test_amd64_only_manifest_and_scripts_name_no_other_architecture():
    man = mirror_manifest.manifest(*CASES[0], node_hosts=["n1"])
    assert man["node_architectures"] == ["amd64"]
    for sec in man["os_packages"].values():
        assert sec["architectures"] == ["amd64"] and sec["other_architectures"] == {}
    text = "".join(mirror_scripts.scripts(man).values()) + mirror_scripts.manifest_markdown(man)
    for word in ("arm64", "aarch64", "forcearch", "APT::Architecture", "KERNEL_PKGS_", "uname -m", "### "):
        assert word not in text, word
    assert "binary-(amd64|all)" in text
    assert "for k in $KERNELS; do kernel_pkgs=\"$kernel_pkgs linux-headers-$k\"; done" in text


def test_apt_script_fetches_arm64_with_apts_native_architecture_switched():
    man = mirror_manifest.manifest(*CASES[4], node_hosts=["n1"])
    deb = "\n".join(mirror_scripts._apt_setup(man["os_packages"]["debian-12"]))
    assert "binary-(amd64|arm64|all)" in deb
    # amd64: the container's own apt, as before; arm64: its own sources list, lists, status and native arch
    assert "apt-get install -y --no-install-recommends --print-uris" in deb
    assert ("echo 'deb [signed-by=/etc/apt/keyrings/gpufleet-2.asc] https://developer.download.nvidia.com/compute/"
            "cuda/repos/debian12/sbsa/ /' >>/etc/apt/gpufleet-arm64/sources.list") in deb
    assert ("echo 'deb [signed-by=/etc/apt/keyrings/gpufleet-1.asc] https://nvidia.github.io/libnvidia-container/"
            "stable/deb/arm64/ /' >>/etc/apt/gpufleet-arm64/sources.list") in deb        # the toolkit key, once
    assert deb.count("https://nvidia.github.io/libnvidia-container/gpgkey") == 1
    assert ("printf '%s\\n' 'deb http://deb.debian.org/debian bookworm main' 'deb http://deb.debian.org/debian "
            "bookworm-updates main' 'deb http://deb.debian.org/debian-security bookworm-security main' "
            ">/etc/apt/gpufleet-arm64/sources.list") in deb
    assert "sed 's/^Architecture: amd64$/Architecture: arm64/' /var/lib/dpkg/status >/var/lib/dpkg/status-arm64" in deb
    assert ("apt_arm64=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o Dir::State::status=/var/lib/dpkg/"
            "status-arm64 -o Dir::State::Lists=/var/lib/apt/lists-arm64 -o Dir::Etc::SourceList=/etc/apt/gpufleet-arm64/"
            "sources.list -o Dir::Etc::SourceParts=/etc/apt/gpufleet-arm64/parts)") in deb
    assert "apt-get \"${apt_arm64[@]}\" install -y --no-install-recommends --print-uris 'nvidia-open" in deb
    assert "$KERNEL_PKGS_ARM64 | awk" in deb and not re.search(r"'[a-z0-9.+-]+:arm64", deb)   # no foreign specs
    ubuntu = "\n".join(mirror_scripts._apt_setup(man["os_packages"]["ubuntu-22.04"]))
    assert "'deb http://ports.ubuntu.com/ubuntu-ports jammy main restricted universe multiverse'" in ubuntu
    assert "ubuntu2204/sbsa/" in ubuntu
    # arm64 nodes only: no amd64 pass, no gpufleet.list for the container's own apt
    arm_only = "\n".join(mirror_scripts._apt_setup(mirror_manifest.manifest(*CASES[5], node_hosts=["n1"])
                                                    ["os_packages"]["debian-12"]))
    assert "binary-(arm64|all)" in arm_only and "sources.list.d/gpufleet.list" not in arm_only
    assert "x86_64" not in arm_only and "stable/deb/amd64" not in arm_only


def test_dnf_script_fetches_aarch64_with_forcearch():
    man = mirror_manifest.manifest(*CASES[4], node_hosts=["n1"])
    rocky = "\n".join(mirror_scripts._dnf_setup(man["os_packages"]["rocky-9"]))
    assert "'[gpufleet-aarch64-0]' 'name=gpufleet driver' 'baseurl=https://developer.download.nvidia.com/compute/cuda/repos/rhel9/sbsa' 'enabled=0'" in rocky
    assert "'baseurl=https://nvidia.github.io/libnvidia-container/stable/rpm/aarch64' 'enabled=0'" in rocky
    assert ("dnf download -q --forcearch aarch64 --disablerepo 'gpufleet-[0-9]*' --enablerepo 'gpufleet-aarch64-*' "
            "--resolve --urls") in rocky
    assert "$KERNEL_PKGS_ARM64 >/out/.package-uris-arm64" in rocky
    assert rocky.count("curl -fsSL 'https://nvidia.github.io/libnvidia-container/gpgkey'") == 1   # one key, both archs
    assert "'https://developer.download.nvidia.com/compute/cuda/repos/rhel9/sbsa/repodata/repomd.xml'" in rocky


@pytest.mark.parametrize("kernels,amd64,arm64", [
    ("6.1.0-37-amd64 6.1.0-37-arm64", "linux-headers-6.1.0-37-amd64", "linux-headers-6.1.0-37-arm64"),
    ("6.1.0-37-cloud-arm64", "", "linux-headers-6.1.0-37-cloud-arm64"),
    ("6.8.0-45-generic", "linux-headers-6.8.0-45-generic", "linux-headers-6.8.0-45-generic"),   # no arch in the name
    ("", "", ""),
])
def test_kernels_follow_the_architecture_their_name_ends_in(kernels, amd64, arm64):
    man = mirror_manifest.manifest(*CASES[4], node_hosts=["n1"])
    script = mirror_scripts.script_packages(man)
    start = script.index("# debian-12 (apt)")
    block = script[start:script.index("mkdir -p", start)]
    proc = subprocess.run(["bash", "-euc", block + 'echo "[$kernel_pkgs]"; echo "[$kernel_pkgs_arm64]"'],
                          env={"KERNELS": kernels, "PATH": os.environ["PATH"]}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert [line.strip("[]").strip() for line in proc.stdout.splitlines()] == [amd64, arm64]
    assert '-e KERNEL_PKGS="$kernel_pkgs" -e KERNEL_PKGS_ARM64="$kernel_pkgs_arm64"' in script
    rocky = script[script.index("# rocky-9 (dnf)"):]
    assert '*arm64|*aarch64) kernel_pkgs_arm64="$kernel_pkgs_arm64 kernel-devel-$k" ;;' in rocky


def test_arm64_only_kernel_of_another_architecture_is_reported():
    script = mirror_scripts.script_packages(mirror_manifest.manifest(*CASES[5], node_hosts=["n1"]))
    start = script.index("# debian-12 (apt)")
    block = script[start:script.index("mkdir -p", start)]
    proc = subprocess.run(["bash", "-euc", block + 'echo "[$kernel_pkgs_arm64]"'],
                          env={"KERNELS": "6.1.0-37-amd64 6.1.0-37-arm64", "PATH": os.environ["PATH"]},
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[ linux-headers-6.1.0-37-arm64]"
    assert "6.1.0-37-amd64 is not a node architecture of this manifest (arm64)" in proc.stderr


def test_images_script_says_all_architectures_are_copied():
    images = mirror_scripts.script_images(mirror_manifest.manifest(*CASES[4], node_hosts=["n1"]))
    assert "# manifest), so one copy serves the amd64 and arm64 nodes of this inventory." in images
    assert images.count("skopeo copy --all") == 2
