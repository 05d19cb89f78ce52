"""Symbolic links in the build directory (issue 30 item 4), as a hostile table on real directories.

Git stores links and GitOps users commit build/, so a pulled build directory can hold one. Each case
plants a link the way an attacker with write access to the repository would (a folder, a file, the
parent, a dangling link, the build directory itself, the repository's build folder) pointing at a
"victim" folder outside the build tree. Preflight, the staging copy and every writer of the build
tree must refuse, naming the link, and every victim file must survive byte-identical.
"""
import hashlib
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import files
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import gitops
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import output_tree as ot
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import render
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, Problems

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns"}, "data": {"a": "1"}}


def snapshot(root):
    """{relative path: sha256 or '-> target'} of everything under ``root`` (links not followed)."""
    out = {}
    for dirpath, dirs, names in os.walk(str(root)):
        for name in sorted(dirs + names):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, str(root))
            if os.path.islink(full):
                out[rel] = "-> " + os.readlink(full)
            elif os.path.isfile(full):
                with open(full, "rb") as handle:
                    out[rel] = hashlib.sha256(handle.read()).hexdigest()
            else:
                out[rel] = "(dir)"
    return out


@pytest.fixture()
def world(tmp_path):
    """A repository with a rendered build/example, and a victim folder beside it whose file names are
    the ones gpufleet's writers would overwrite or remove (a numbered manifest, a kustomization)."""
    repo = tmp_path / "repo"
    (repo / "roles" / "x").mkdir(parents=True)
    build = repo / "build" / "example"
    (build / "cluster" / "dcgm-exporter").mkdir(parents=True)
    (build / "cluster" / "dcgm-exporter" / "00-configmap-x.yaml").write_text(render.dump_yaml(CM))
    (build / "gitops").mkdir()
    (build / "gitops" / "kustomization.yaml").write_text("resources: []\n")
    (build / "plan.md").write_text("# plan\n")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "important.txt").write_text("keep me\n")
    (victim / "00-configmap-x.yaml").write_text("user's own manifest\n")
    (victim / "05-secret-old.yaml").write_text("a file named like a stale manifest\n")
    (victim / "kustomization.yaml").write_text("the user's kustomization\n")
    return repo, build, victim


def _replace(path, target):
    path = str(path)
    if os.path.isdir(path) and not os.path.islink(path):
        for dirpath, dirs, names in os.walk(path, topdown=False):
            for name in names:
                os.unlink(os.path.join(dirpath, name))
            for name in dirs:
                os.rmdir(os.path.join(dirpath, name))
        os.rmdir(path)
    elif os.path.lexists(path):
        os.unlink(path)
    os.symlink(str(target), path)
    return path


ALL = ("build_files", "gitops plan", "gitops tree", "mark", "render_manifests", "sync_files")
UNDER_GITOPS = ("build_files", "gitops plan", "gitops tree")
UNDER_CLUSTER = ("build_files", "gitops plan", "render_manifests", "sync_files")

# case -> (plants the link in ``world`` and returns the path every refusal must name, the writers
# whose paths go through or below that link)
CASES = {
    "symlinked directory (gitops -> victim)":
        (lambda repo, build, victim: _replace(build / "gitops", victim), UNDER_GITOPS),
    "symlinked component directory (cluster/dcgm-exporter -> victim)":
        (lambda repo, build, victim: _replace(build / "cluster" / "dcgm-exporter", victim), UNDER_CLUSTER),
    "symlinked file (a rendered manifest -> a victim file)":
        (lambda repo, build, victim: _replace(build / "cluster" / "dcgm-exporter" / "00-configmap-x.yaml",
                                              victim / "00-configmap-x.yaml"), UNDER_CLUSTER),
    "symlink to the parent (cluster/dcgm-exporter -> ..)":
        (lambda repo, build, victim: _replace(build / "cluster" / "dcgm-exporter", ".."), UNDER_CLUSTER),
    "dangling symlink (gitops -> a folder not there yet)":
        (lambda repo, build, victim: _replace(build / "gitops", victim / "created-by-gpufleet"), UNDER_GITOPS),
    "the build directory itself (build/example -> victim)":
        (lambda repo, build, victim: _replace(build, victim), ALL),
    "the repository's build folder (build -> elsewhere)":
        (lambda repo, build, victim: _move_build_folder(repo, victim), ALL),
}


def _move_build_folder(repo, victim):
    elsewhere = victim / "build"
    os.rename(str(repo / "build"), str(elsewhere))
    os.symlink(str(elsewhere), str(repo / "build"))
    return str(repo / "build")


@pytest.fixture(params=sorted(CASES))
def hostile(request, world):
    repo, build, victim = world
    link = CASES[request.param][0](repo, build, victim)
    return repo, build, victim, link, snapshot(victim)


def assert_names_link(message, link):
    assert link in message and "symbolic link" in message, message


def test_preflight_refuses_the_build_dir_naming_the_link(hostile):
    repo, _build, victim, link, before = hostile
    problems, plan = Problems(), {}
    ot.check({"inventory": {"name": "example", "repo_root": str(repo)}, "extra": {}}, plan, problems)
    assert len(problems.errors) == 1 and problems.errors[0].startswith("gpufleet_build_dir: "), problems.errors
    assert_names_link(problems.errors[0], link)
    assert "build_dir" not in plan
    assert snapshot(victim) == before


def test_staging_refuses_and_changes_nothing(hostile):
    repo, build, victim, link, before = hostile
    with pytest.raises(GpufleetError) as err:
        ot.stage(str(build))
    assert_names_link(err.value.msg, link)
    assert not os.path.lexists(ot.staging_path(str(build)))
    assert snapshot(victim) == before


WRITERS = {
    "gitops tree": lambda build: gitops.write_tree(str(build / "gitops"), {"kustomization.yaml": "resources: []\n",
                                                                          "argocd/application.yaml": "a: 1\n"}),
    "gitops plan": lambda build: gitops.plan_tree(str(build), "c1", "example"),
    "render_manifests": lambda build: _render(str(build / "cluster" / "dcgm-exporter")),
    "build_files": lambda build: files.sync_tree(str(build), {"cluster/dcgm-exporter/x.yaml": "a: 1\n"},
                                                 absent=["gitops/old"]),
    "sync_files": lambda build: files.sync_files(  # fleet_report, mirror_manifest
        str(build / "cluster" / "dcgm-exporter"), {"00-configmap-x.yaml": "a: 1\n"}, ["05-secret-old.yaml"]),
    "mark": lambda build: ot.mark(str(build)),
}


def _render(dest):
    _wanted, writes, removes = render.plan_render(dest, [dict(CM, metadata={"name": "y"})])
    files.write_planned(dest, writes, removes)


@pytest.mark.parametrize("case, writer", [(c, w) for c in sorted(CASES) for w in CASES[c][1]])
def test_every_writer_refuses_a_link_on_its_way_and_the_victim_survives(world, case, writer):
    repo, build, victim = world
    link = CASES[case][0](repo, build, victim)
    before = snapshot(victim)
    with pytest.raises(GpufleetError) as err:
        WRITERS[writer](build)
    assert_names_link(err.value.msg, link)
    assert snapshot(victim) == before


def test_the_writer_table_is_complete():
    assert sorted(WRITERS) == sorted(ALL)


def test_publish_refuses_a_link_in_the_staging_copy(world, tmp_path):
    _repo, build, victim = world
    before = snapshot(victim)
    staging = ot.stage(str(build))
    os.symlink(str(victim), os.path.join(staging, "gitops-extra"))
    with pytest.raises(GpufleetError) as err:
        ot.publish(str(build))
    assert_names_link(err.value.msg, os.path.join(staging, "gitops-extra"))
    assert snapshot(victim) == before and os.path.isdir(str(build / "gitops"))


def test_without_links_everything_works(world):
    """The control: the same calls on a tree without links succeed (the refusals above are the links')."""
    repo, build, _victim = world
    problems, plan = Problems(), {}
    ot.check({"inventory": {"name": "example", "repo_root": str(repo)}, "extra": {}}, plan, problems)
    assert problems.errors == [] and plan["build_dir"] == str(build)
    for writer in sorted(WRITERS):
        WRITERS[writer](build)
    staging = ot.stage(str(build))
    assert os.path.isdir(staging) and ot.publish(str(build)) in (True, False)


@pytest.mark.parametrize("layout, expected", [
    ({}, []),
    ({"a": "dir", "a/b": "link:/x"}, ["a/b"]),
    ({"l": "link:.."}, ["l"]),
    ({"d": "dir", "d/e": "dir", "d/e/f": "link:/nowhere", "g": "link:d"}, ["d/e/f", "g"]),
])
def test_links_under_lists_every_link_without_following(tmp_path, layout, expected):
    for rel, kind in sorted(layout.items()):
        path = tmp_path / rel
        if kind == "dir":
            path.mkdir()
        else:
            os.symlink(kind[5:], str(path))
    assert files.links_under(str(tmp_path)) == [e.replace("/", os.sep) for e in expected]


def test_first_link_finds_a_link_anywhere_on_the_way(tmp_path):
    (tmp_path / "real" / "sub").mkdir(parents=True)
    os.symlink(str(tmp_path / "real"), str(tmp_path / "via"))
    assert files.first_link(str(tmp_path / "real" / "sub" / "missing" / "x")) is None
    assert files.first_link(str(tmp_path / "via" / "sub" / "x")) == str(tmp_path / "via")
    assert files.first_link(str(tmp_path / "via")) == str(tmp_path / "via")


@pytest.mark.parametrize("sibling", [ot.STAGING_SUFFIX, ot.OLD_SUFFIX])
def test_a_link_in_place_of_the_staging_or_old_copy_is_removed_not_followed(world, sibling):
    """The staging and old copies are siblings of the build directory, outside the tree preflight
    checks: a link planted there is replaced (stage) or removed (publish) as a link; its target stays."""
    _repo, build, victim = world
    before = snapshot(victim)
    os.symlink(str(victim), os.path.join(str(build.parent), "." + build.name + sibling))
    staging = ot.stage(str(build))
    assert os.path.isdir(staging) and not os.path.islink(staging)
    (build.parent / ("." + build.name + ot.STAGING_SUFFIX) / "plan.md").write_text("# changed\n")
    assert ot.publish(str(build)) is True
    assert (build / "plan.md").read_text() == "# changed\n"
    assert snapshot(victim) == before
    assert sorted(os.listdir(str(build.parent))) == ["example"]
