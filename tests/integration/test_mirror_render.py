"""playbooks/mirror.yml for real on every example inventory, and the "no upstream left" render:
site.yml with the gpufleet_mirror_* variables set must name no upstream registry or URL in any
rendered file (the mirror/ folder itself lists the upstream sources on purpose).

No download happens here (no internet in the test environment): the fetch scripts are checked
with bash -n (and shellcheck when installed); their download logic (apt --print-uris, dnf
download --urls, skopeo, helm) runs on the user's connected machine."""
import json
import os
import re
import shutil
import subprocess

import pytest

from systemd_node import TOOLKIT_PINNED
from ansible_run import ROOT, recap, run_site
from inventories import cluster_inventories

# the inventories that render a cluster (fleet inventories name clusters and render nothing)
INVENTORIES = cluster_inventories()
UPSTREAM = re.compile(r"nvcr\.io|registry\.k8s\.io|docker\.io|quay\.io|ghcr\.io|gcr\.io|helm\.ngc\.nvidia\.com|"
                      r"nvidia\.github\.io|developer\.download\.nvidia\.com|deb\.debian\.org")
MIRROR_VARS = ["-e", "gpufleet_mirror_registry=registry.mirror.internal:5000/gpufleet",
               "-e", "gpufleet_mirror_package_url=https://pkgs.mirror.internal/gpufleet",
               "-e", "gpufleet_mirror_chart_path=/srv/gpufleet-mirror/charts"]


def mirror_run(build, inventory, *extra):
    return run_site(build, *extra, playbook="playbooks/mirror.yml", inventory="inventories/" + inventory)


@pytest.fixture(scope="module", params=INVENTORIES)
def manifest_of(request, tmp_path_factory):
    build = tmp_path_factory.mktemp("mirror") / request.param
    rc, out = mirror_run(build, request.param)
    assert rc == 0, out[-3000:]
    with open(build / "mirror" / "manifest.json") as handle:
        return request.param, build, json.load(handle), out


def test_every_example_inventory_gets_a_manifest(manifest_of):
    inv, build, man, _out = manifest_of
    assert man["inventory"] == inv
    images = {i["name"]: i for i in man["images"]}
    assert images["example"]["source"] == "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    if man["addons_mode"] == "standalone" and man["platform"] not in ("gke", "gke-autopilot"):
        assert images["device_plugin"]["source"] == ("nvcr.io/nvidia/k8s-device-plugin:v0.20.0@sha256:"
                                                     "a61ba9fd8efb82f3a79f877f7580e02c1e8e7593f62473644bc9c79e315c3312")
        assert images["device_plugin"]["tag"] == "v0.20.0"
    if man["platform"] in ("eks", "gke", "gke-autopilot"):
        assert man["os_packages"] == {}
    else:
        for distro, section in man["os_packages"].items():
            kit = {p["name"]: p["version"] for p in section["packages"] if p["component"] == "toolkit"}
            assert kit == {"nvidia-container-toolkit": TOOLKIT_PINNED, "nvidia-container-toolkit-base": TOOLKIT_PINNED,
                           "libnvidia-container-tools": TOOLKIT_PINNED, "libnvidia-container1": TOOLKIT_PINNED}, distro
            assert [p for p in section["packages"] if p["component"] == "driver"], distro
    if man["platform"] == "openshift":
        assert [p["package"] for p in man["olm_packages"]] == ["gpu-operator-certified", "nfd"]
    md = (build / "mirror" / "manifest.md").read_text()
    for img in man["images"]:
        assert "| %s |" % img["tag"] in md
    for name in ("fetch-packages.sh", "fetch-images.sh", "fetch-charts.sh"):
        path = build / "mirror" / name
        assert os.access(path, os.X_OK)
        proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, (name, proc.stderr)
        if shutil.which("shellcheck"):
            proc = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True)
            assert proc.returncode == 0, (name, proc.stdout)


def test_second_run_changes_nothing(manifest_of):
    inv, build, man, _out = manifest_of
    before = {p: open(os.path.join(build, "mirror", p), "rb").read() for p in os.listdir(build / "mirror")}
    rc, out = mirror_run(build, inv)
    assert rc == 0, out[-3000:]
    assert recap(out)["changed"] == 0
    assert {p: open(os.path.join(build, "mirror", p), "rb").read() for p in os.listdir(build / "mirror")} == before


def test_operator_mode_lists_the_chart_and_fetches_its_operands(tmp_path):
    build = tmp_path / "example"
    rc, out = mirror_run(build, "example", "-e", "gpufleet_addons_mode=operator", *MIRROR_VARS)
    assert rc == 0, out[-3000:]
    man = json.loads((build / "mirror" / "manifest.json").read_text())
    assert man["charts"][0]["name"] == "gpu-operator" and man["charts"][0]["version"] == "v26.7.0"
    assert man["charts"][0]["mirror"] == "/srv/gpufleet-mirror/charts/gpu-operator-v26.7.0.tgz"
    images = (build / "mirror" / "fetch-images.sh").read_text()
    assert "helm template gpufleet" in images and "--version 'v26.7.0'" in images
    assert "MIRROR=${MIRROR:-registry.mirror.internal:5000/gpufleet}" in images
    charts = (build / "mirror" / "fetch-charts.sh").read_text()
    assert "helm pull 'gpu-operator' --repo 'https://helm.ngc.nvidia.com/nvidia' --version 'v26.7.0'" in charts
    pkgs = json.loads((build / "mirror" / "manifest.json").read_text())["os_packages"]["debian-12"]
    assert pkgs["repositories"][0]["mirror"].startswith("https://pkgs.mirror.internal/gpufleet/developer.download.nvidia.com/")


def test_bad_mirror_input_fails_in_preflight(tmp_path):
    rc, out = mirror_run(tmp_path / "example", "example", "-e", "gpufleet_mirror_registry=https://m.local")
    assert rc != 0
    assert "gpufleet_mirror_registry: 'https://m.local' is not a registry" in out
    assert not (tmp_path / "example").exists()


# Each inventory as written, and in operator mode (GKE Autopilot refuses the operator in preflight).
NO_UPSTREAM_CASES = [(inv, "inventory") for inv in INVENTORIES] + [
    (inv, "operator") for inv in INVENTORIES if inv != "gke-autopilot"]


@pytest.mark.parametrize("inventory,mode", NO_UPSTREAM_CASES)
def test_no_upstream_left_with_mirror_variables(inventory, mode, tmp_path):
    extra = list(MIRROR_VARS)
    if mode == "operator":
        extra += ["-e", "gpufleet_addons_mode=operator"]
    build = tmp_path / inventory
    rc, out = run_site(build, *extra, inventory="inventories/" + inventory)
    assert rc == 0, out[-3000:]
    rc, out = mirror_run(build, inventory, *extra)
    assert rc == 0, out[-3000:]
    leaks, files = [], 0
    for dirpath, _dirs, names in os.walk(build):
        if os.path.relpath(dirpath, build).split(os.sep)[0] == "mirror":
            continue
        for name in names:
            files += 1
            with open(os.path.join(dirpath, name), errors="replace") as handle:
                for number, line in enumerate(handle, 1):
                    if UPSTREAM.search(line):
                        leaks.append("%s:%d: %s" % (os.path.relpath(os.path.join(dirpath, name), build), number,
                                                    line.strip()))
    assert files > 3
    assert not leaks, "\n".join(leaks)
    # the mirror folder does list the upstream sources and the mirror references
    man = json.loads((build / "mirror" / "manifest.json").read_text())
    for img in man["images"]:
        assert img["mirror"].startswith("registry.mirror.internal:5000/gpufleet/"), img


def test_check_mode_on_a_fresh_dir_writes_nothing(tmp_path):
    build = tmp_path / "example"
    rc, out = mirror_run(build, "example", "--check", "--diff")
    assert rc == 0, out[-3000:]
    assert recap(out)["changed"] == 1
    assert "+++ after: %s/mirror/manifest.md" % build in out
    assert not build.exists()


def test_toolkit_repository_follows_the_package_mirror(tmp_path):
    """The toolkit role's own vars (vars/Debian.yml, vars/RedHat.yml) with the package mirror set."""
    playbook = tmp_path / "pb.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.setup: {gather_subset: [min]}\n"
        "    - ansible.builtin.include_vars: {file: %s/roles/nvidia_container_toolkit/vars/%s.yml}\n"
        "    - ansible.builtin.debug: {msg: 'URL={{ __nvidia_container_toolkit_repo_url }}'}\n"
        % (ROOT, "Debian") +
        "    - ansible.builtin.include_vars: {file: %s/roles/nvidia_container_toolkit/vars/RedHat.yml}\n"
        "    - ansible.builtin.debug: {msg: 'URL={{ __nvidia_container_toolkit_repo_url }}'}\n" % ROOT)

    def urls(*extra):
        rc, out = run_site(tmp_path / "b", *extra, playbook=str(playbook))
        assert rc == 0, out[-3000:]
        return re.findall(r"URL=(\S+?)['\"]?$", out, re.M)

    assert urls() == ["https://nvidia.github.io/libnvidia-container/stable/deb/amd64",
                      "https://nvidia.github.io/libnvidia-container/stable/rpm/$basearch"]
    assert urls("-e", "gpufleet_mirror_package_url=https://pkgs.internal/m") == [
        "https://pkgs.internal/m/nvidia.github.io/libnvidia-container/stable/deb/amd64",
        "https://pkgs.internal/m/nvidia.github.io/libnvidia-container/stable/rpm/$basearch"]


def test_arm64_pool_gets_arm64_packages(tmp_path):
    """A self-managed host group declared as a GB200 pool (arm64 Grace hosts) beside the amd64 L4 pool."""
    pools = tmp_path / "pools.json"
    pools.write_text(json.dumps({"gpufleet_gpu_pools": [
        {"name": "grace", "gpu_type": "gb200", "gpus_per_node": 4, "node_group": "gpu_pool_train_a100",
         "min_nodes": 2, "max_nodes": 2},
        {"name": "infer-l4", "gpu_type": "l4", "gpus_per_node": 1, "node_group": "gpu_pool_infer_l4",
         "min_nodes": 3, "max_nodes": 3}]}))
    build = tmp_path / "example"
    rc, out = mirror_run(build, "example", "-e", "@%s" % pools)
    assert rc == 0, out[-3000:]
    man = json.loads((build / "mirror" / "manifest.json").read_text())
    assert man["node_architectures"] == ["amd64", "arm64"]
    arm = man["os_packages"]["debian-12"]["other_architectures"]["arm64"]
    assert [r["url"] for r in arm["repositories"]] == [
        "https://developer.download.nvidia.com/compute/cuda/repos/debian12/sbsa/",
        "https://nvidia.github.io/libnvidia-container/stable/deb/arm64"]
    script = (build / "mirror" / "fetch-packages.sh").read_text()
    assert "apt_arm64=(-o APT::Architecture=arm64" in script and "binary-(amd64|arm64|all)" in script
    for name in ("fetch-packages.sh", "fetch-images.sh"):
        proc = subprocess.run(["bash", "-n", str(build / "mirror" / name)], capture_output=True, text=True)
        assert proc.returncode == 0, (name, proc.stderr)
        if shutil.which("shellcheck"):
            proc = subprocess.run(["shellcheck", str(build / "mirror" / name)], capture_output=True, text=True)
            assert proc.returncode == 0, (name, proc.stdout)
    assert "### arm64 nodes (debian-12)" in (build / "mirror" / "manifest.md").read_text()
