"""Air-gap mirror: the manifest logic, the mirror rewrites and the generated fetch scripts."""
import json
import os
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


CASES = [
    (plan(), {"nvidia_driver_node_distros": ["debian-12", "ubuntu-22.04", "rocky-9", "amazon-2023"],
              "nvidia_driver_flavour": "proprietary"}),
    (plan(mode="operator"), {}),
    (plan("openshift", "operator"), {}),
    (plan("gke-autopilot", "none"), {}),
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
        yield distro, "#!/usr/bin/env bash\nset -euo pipefail\nKERNEL_PKGS=''\n" + "\n".join(lines) + "\n"


def test_container_side_scripts_are_valid_bash(tmp_path):
    p, values = CASES[0]
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
