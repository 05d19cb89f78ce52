"""Output goes only where it belongs, all or nothing: real ansible-playbook runs on the example
inventory. A run that fails after preflight leaves the build directory byte-identical (every stage
renders into a staging copy that replaces it only after the last stage succeeded)."""
import json
import os
import re
import shutil

import pytest

from ansible_run import run_site

EXAMPLE_POOLS = [
    {"name": "train-a100", "gpu_type": "a100-80gb", "gpus_per_node": 8, "node_group": "gpu_pool_train_a100",
     "min_nodes": 2, "max_nodes": 2, "sharing": {"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.10gb",
                                                                          "mig_preconfigured": True}},
    {"name": "infer-l4", "gpu_type": "l4", "gpus_per_node": 1, "node_group": "gpu_pool_infer_l4",
     "min_nodes": 3, "max_nodes": 3, "sharing": {"mode": "time-slicing", "replicas": 8}},
]


def snapshot(path):
    """Every file and directory under ``path`` with its bytes and mode (links as their target)."""
    out = {}
    for dirpath, dirs, files in os.walk(str(path)):
        for name in dirs + files:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if os.path.islink(full):
                body = "-> " + os.readlink(full)
            elif os.path.isdir(full):
                body = "(dir)"
            else:
                with open(full, "rb") as handle:
                    body = handle.read()
            out[os.path.relpath(full, str(path))] = (body, st.st_mode)
    return out


def test_a_run_that_fails_after_preflight_leaves_the_build_dir_byte_identical(tmp_path):
    build = tmp_path / "example"
    rc, out = run_site(build)
    assert rc == 0, out[-3000:]
    before = snapshot(build)
    assert "provision/nodes" in " ".join(before) and "cluster/device-plugin" in " ".join(before)
    # Changed replicas (the node objects stay, the device-plugin config changes) plus a fault in the last
    # stage: the report folder is in the way of the report (a file, as a user might leave it) - so the
    # provision and cluster stages render new content and then the run fails.
    report = build / "report"
    for name in os.listdir(str(report)):
        os.unlink(str(report / name))
    report.rmdir()
    report.write_text("not a folder\n")
    before = snapshot(build)
    rc, out = run_site(build, "-e", json.dumps({"gpufleet_gpu_pools": EXAMPLE_POOLS}))
    assert rc != 0, out[-3000:]
    assert "PLAY [Cluster" in out and "PLAY [Report" in out
    assert re.search(r"changed: \[localhost\]", out), "the stages before the fault rendered nothing new"
    assert snapshot(build) == before
    # the same input without the fault goes through and changes the device-plugin config
    report.unlink()
    rc, out = run_site(build, "-e", json.dumps({"gpufleet_gpu_pools": EXAMPLE_POOLS}))
    assert rc == 0, out[-3000:]
    assert snapshot(build) != before
    assert sorted(os.listdir(str(tmp_path))) == ["example"], "a staging copy was left behind"


def test_a_pool_that_breaks_a_later_stage_leaves_the_build_dir_byte_identical(tmp_path):
    """The issue's example: a MIG-mixed pool without a profile got through preflight and failed in a filter
    during the provision stage, after the node objects were rewritten. Whether preflight refuses it or a
    stage fails, the build directory stays as it was."""
    build = tmp_path / "example"
    rc, out = run_site(build)
    assert rc == 0, out[-3000:]
    before = snapshot(build)
    pools = [dict(EXAMPLE_POOLS[0], sharing={"mode": "mig", "mig_strategy": "mixed"}), EXAMPLE_POOLS[1]]
    rc, out = run_site(build, "-e", json.dumps({"gpufleet_gpu_pools": pools}))
    assert rc != 0, out[-3000:]
    assert snapshot(build) == before


def test_the_build_dir_is_confined(tmp_path):
    """A directory that holds other files is refused before anything is written or listed there."""
    other = tmp_path / "home-like"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    before = snapshot(other)
    rc, out = run_site(other)
    assert rc != 0
    assert "gpufleet_build_dir" in out and "already holds other files (notes.txt)" in out
    assert snapshot(other) == before
    # once marked as gpufleet's output (as gpufleet marks a directory it creates), it is used
    fresh = tmp_path / "fresh"
    rc, out = run_site(fresh)
    assert rc == 0, out[-3000:]
    assert (fresh / ".gpufleet-build").is_file()
    rc, out = run_site(fresh)
    assert rc == 0 and re.search(r"localhost\s+: ok=\d+\s+changed=0 ", out), out[-2000:]


# Symbolic links in the build directory (issue 30 item 4). Git stores links and GitOps users commit
# build/; a render that followed ``gitops -> elsewhere`` emptied the folder the link named. Each case
# plants a link in a rendered build directory; the next run must refuse naming the link, and neither
# the link's target nor the build directory may change.
LINK_CASES = {
    "symlinked directory": ("gitops", "victim"),
    "symlinked file": ("cluster/device-plugin/00-namespace-nvidia-device-plugin.yaml", "victim/00-user.yaml"),
    "symlink to the parent": ("cluster/device-plugin", ".."),
    "dangling symlink": ("gitops", "victim/not-there-yet"),
}


@pytest.fixture(scope="module")
def rendered_build(tmp_path_factory):
    build = tmp_path_factory.mktemp("links") / "example"
    rc, out = run_site(build)
    assert rc == 0, out[-3000:]
    return build


@pytest.mark.parametrize("case", sorted(LINK_CASES))
def test_a_symlink_in_the_build_dir_is_refused_and_its_target_survives(rendered_build, tmp_path, case):
    build = tmp_path / "example"
    shutil.copytree(str(rendered_build), str(build), symlinks=True)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "important.txt").write_text("keep me\n")
    (victim / "00-user.yaml").write_text("the user's own manifest\n")
    (victim / "kustomization.yaml").write_text("the user's kustomization\n")
    rel, target = LINK_CASES[case]
    link = build / rel
    if link.is_dir():
        shutil.rmtree(str(link))
    else:
        link.unlink()
    os.symlink(target if target == ".." else str(tmp_path / target), str(link))
    before_victim, before_build = snapshot(victim), snapshot(build)
    rc, out = run_site(build)
    assert rc != 0, out[-3000:]
    flat = re.sub(r"\s+", " ", out)
    assert "gpufleet_build_dir: %s holds symbolic links (%s -> " % (build, link) in flat, flat[-3000:]
    assert snapshot(victim) == before_victim
    assert snapshot(build) == before_build
    assert sorted(os.listdir(str(tmp_path))) == ["example", "victim"], "a staging copy was made"
