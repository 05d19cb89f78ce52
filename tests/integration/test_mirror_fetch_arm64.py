"""fetch-packages.sh's apt part for real, for amd64 and arm64 nodes, in a Debian 12 container.

The container-side script that `mirror_scripts._apt_setup` generates runs in podman (amd64, no
emulation) against a STAND-IN for NVIDIA's flat per-architecture repositories (NVIDIA's servers are
unreachable here): two signed flat repositories, `amd64/` and `arm64/`, served over http on the loopback,
each with a package that depends on an `Architecture: all` package and on Debian's `pciutils`. Debian's
own archive (deb.debian.org) is the real one. The arm64 pass must print and download arm64 packages
only: with foreign-architecture specs (`name:arm64`) apt would have resolved the dependencies of the
`all` package (libpci3) and the `Multi-Arch: foreign` pciutils as amd64."""
import functools
import http.server
import os
import re
import shutil
import subprocess
import threading

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import mirror_manifest, mirror_scripts
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from systemd_node import DEBIAN12, podman
from signed_repo import gnupg_home, new_key, sign_flat_repository

pytestmark = pytest.mark.skipif(not (shutil.which("gpg") and shutil.which("dpkg-deb")),
                                reason="gpg and dpkg-deb are required (Debian packages gnupg, dpkg)")

POOLS = [{"name": "train", "gpu_type": "h100-80gb", "max_nodes": 2},
         {"name": "grace", "gpu_type": "gb200", "gpus_per_node": 4, "max_nodes": 2}]


def build_deb(work, name, arch, depends):
    root = work / ("%s-%s" % (name, arch))
    (root / "DEBIAN").mkdir(parents=True)
    (root / "usr/share/doc" / name).mkdir(parents=True)
    (root / "usr/share/doc" / name / "README").write_text("gpufleet stand-in package\n")
    (root / "DEBIAN/control").write_text(
        "Package: %s\nVersion: 1.0-1\nArchitecture: %s\nMaintainer: gpufleet tests <t@example.invalid>\n"
        "Depends: %s\nDescription: stand-in for a package of NVIDIA's repository\n" % (name, arch, depends))
    deb = work / ("%s_1.0-1_%s.deb" % (name, arch))
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root), str(deb)], check=True,
                   capture_output=True)
    return deb


def flat_repo(repo, debs):
    repo.mkdir(parents=True)
    for deb in debs:
        shutil.copy(deb, repo)
    packages = subprocess.run(["dpkg-scanpackages", "--multiversion", "."], cwd=str(repo), check=True,
                              capture_output=True, text=True).stdout
    (repo / "Packages").write_text(packages)


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    work = tmp_path_factory.mktemp("mirror-arm64")
    home = gnupg_home(work)
    uid, _fpr, pub = new_key(home, "standin")
    www = work / "www"
    common = build_deb(work, "gpufleet-standin-common", "all", "libpci3")
    for arch in ("amd64", "arm64"):
        repo = www / arch
        flat_repo(repo, [build_deb(work, "gpufleet-standin", arch, "gpufleet-standin-common, pciutils"), common])
        sign_flat_repository(str(repo), home, uid)
    (www / "gpgkey").write_bytes(pub)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield work, "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        server.shutdown()


def section(base):
    """The manifest's debian-12 section of a mixed (amd64 + arm64) inventory, its NVIDIA repositories
    replaced by the stand-in (same shape: one key, one flat repository per architecture)."""
    plan = {"platform": "kubeadm", "addons_mode": "standalone", "cluster_name": "c1", "inventory_name": "inv",
            "pools": normalize_pools(POOLS)}
    man = mirror_manifest.manifest(plan, {"nvidia_driver_node_distros": ["debian-12"]}, ["n1"], today="2026-12-01")
    sec = man["os_packages"]["debian-12"]
    assert sec["architectures"] == ["amd64", "arm64"]
    for arch, view in [("amd64", sec)] + list(sec["other_architectures"].items()):
        view["keys"] = [{"component": "toolkit", "url": base + "/gpgkey", "mirror": ""}]
        view["repositories"] = [{"component": "toolkit", "url": base + "/" + arch + "/", "mirror": ""}]
        view["packages"] = [{"name": "gpufleet-standin", "version": "1.0-1", "component": "toolkit"}]
    return sec


def test_arm64_pass_fetches_arm64_packages_and_their_dependencies(standin, tmp_path):
    work, base = standin
    out = tmp_path / "out"
    out.mkdir()
    script = "\n".join(mirror_scripts._apt_setup(section(base)))
    proc = podman("run", "--rm", "--network", "host", "-e", "KERNEL_PKGS=", "-e", "KERNEL_PKGS_ARM64=",
                  "-v", "%s:/out" % out, DEBIAN12, "bash", "-euo", "pipefail", "-c", script, check=False,
                  timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    host = base.split("://", 1)[1]
    amd64 = [os.path.basename(u) for u in (out / ".package-uris").read_text().split()]
    arm64 = [os.path.basename(u) for u in (out / ".package-uris-arm64").read_text().split()]
    assert "gpufleet-standin_1.0-1_amd64.deb" in amd64 and "gpufleet-standin-common_1.0-1_all.deb" in amd64
    assert any(re.match(r"pciutils_.*_amd64\.deb$", f) for f in amd64), amd64
    assert "gpufleet-standin_1.0-1_arm64.deb" in arm64 and "gpufleet-standin-common_1.0-1_all.deb" in arm64
    assert any(re.match(r"pciutils_.*_arm64\.deb$", f) for f in arm64), arm64
    assert any(re.match(r"libpci3_.*_arm64\.deb$", f) for f in arm64), arm64   # a dependency of the `all` package
    assert not [f for f in arm64 if f.endswith("_amd64.deb")], arm64
    # downloaded as <host>/<path>, with each repository's signed index and the key, as the mirror serves them
    for arch in ("amd64", "arm64"):
        repo = out / host / arch
        assert (repo / ("gpufleet-standin_1.0-1_%s.deb" % arch)).stat().st_size > 0
        assert (repo / "InRelease").read_bytes() == (work / "www" / arch / "InRelease").read_bytes()
        assert (repo / "Packages").exists()
    assert (out / host / "gpgkey").read_bytes() == (work / "www" / "gpgkey").read_bytes()
    debs = [p.name for p in out.rglob("*.deb")]
    assert any(re.match(r"pciutils_.*_arm64\.deb$", f) for f in debs), debs
