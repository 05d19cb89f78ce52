"""Where output goes (gpufleet_build_dir, the inventory name) and the staged, all-or-nothing render
(module_utils/core/output_tree.py), on real directories under tmp_path."""
import os
import tempfile

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import output_tree as ot


@pytest.fixture()
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "roles" / "x").mkdir(parents=True)
    (root / "build").mkdir()
    return root


def resolve(repo, build_dir, name="example"):
    return ot.resolve_build_dir(build_dir, name, str(repo))


def test_default_is_build_slash_inventory(repo):
    assert resolve(repo, "") == (os.path.join(str(repo), "build", "example"), [])


@pytest.mark.parametrize("name", ["../evil", "a/b", "..", ".", "", ".hidden", "-x", None, "x" * 101])
def test_inventory_names_refused(repo, name):
    path, problems = resolve(repo, "", name)
    assert path is None and problems[0][0] == "gpufleet_inventory_name"


@pytest.mark.parametrize("build_dir,fragment", [
    ("/", "system or home directory"),
    ("/etc", "system or home directory"),
    ("/etc/gpufleet", "system or home directory"),
    ("/usr/share/x", "system or home directory"),
    ("/tmp", "system or home directory"),
    ("/var", "system or home directory"),
    ("~", "system or home directory"),
    (".", "the repository or one of its parents"),
    ("..", "the repository or one of its parents"),
    ("build", "is the folder of every inventory's output"),
    ("roles", "already holds other files"),
    ("roles/x/../..", "the repository or one of its parents"),
    ("/nonexistent-parent-gpufleet/x", "parent directory /nonexistent-parent-gpufleet does not exist"),
    ("a\nb", "is not a directory path"),
])
def test_build_dirs_refused(repo, build_dir, fragment):
    path, problems = resolve(repo, build_dir)
    assert path is None
    assert problems and problems[0][0] == "gpufleet_build_dir" and fragment in problems[0][1], problems


def test_a_symlink_into_a_system_directory_is_refused(repo, tmp_path):
    os.symlink("/etc", str(tmp_path / "link"))
    path, problems = resolve(repo, str(tmp_path / "link"))
    assert path is None and "system or home directory" in problems[0][1]


def test_build_dirs_accepted(repo, tmp_path):
    assert resolve(repo, "build/prod")[0] == os.path.join(str(repo), "build", "prod")
    assert resolve(repo, str(tmp_path / "new"))[0] == str(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    assert resolve(repo, str(tmp_path / "empty"))[0] == str(tmp_path / "empty")
    marked = tmp_path / "marked"
    marked.mkdir()
    (marked / ot.MARKER).write_text("x")
    (marked / "plan.md").write_text("x")
    assert resolve(repo, str(marked))[0] == str(marked)
    # a file where the directory should be
    (tmp_path / "file").write_text("x")
    assert resolve(repo, str(tmp_path / "file"))[0] is None


def test_marker_only_outside_the_repository_build_folder(repo, tmp_path):
    assert not ot.needs_marker(os.path.join(str(repo), "build", "x"), str(repo))
    assert ot.needs_marker(str(tmp_path / "out"), str(repo))


def tree(path):
    out = {}
    for dirpath, _dirs, files in os.walk(str(path)):
        for name in files:
            full = os.path.join(dirpath, name)
            with open(full, "rb") as handle:
                out[os.path.relpath(full, str(path))] = (handle.read(), os.stat(full).st_mode)
    return out


def test_stage_copies_and_publish_swaps(tmp_path):
    final = tmp_path / "out"
    (final / "cluster").mkdir(parents=True)
    (final / "cluster" / "a.yaml").write_text("a: 1\n")
    before = tree(final)
    staging = ot.stage(str(final), marker=True)
    assert staging == str(tmp_path / ".out.gpufleet-staging")
    assert tree(staging) == dict(before, **{ot.MARKER: (ot.MARKER_TEXT.encode(), tree(staging)[ot.MARKER][1])})
    with open(os.path.join(staging, "cluster", "a.yaml"), "w") as handle:
        handle.write("a: 2\n")
    assert tree(final) == before  # nothing reaches the build directory before publish
    assert ot.publish(str(final)) is True
    assert tree(final)["cluster/a.yaml"][0] == b"a: 2\n"
    assert sorted(os.listdir(str(tmp_path))) == ["out"]


def test_publish_of_an_unchanged_tree_changes_nothing(tmp_path):
    final = tmp_path / "out"
    final.mkdir()
    (final / "plan.md").write_text("x")
    inode = os.stat(str(final)).st_ino
    ot.stage(str(final))
    assert ot.publish(str(final)) is False
    assert os.stat(str(final)).st_ino == inode
    assert sorted(os.listdir(str(tmp_path))) == ["out"]


def test_a_leftover_staging_copy_of_a_failed_run_is_replaced(tmp_path):
    final = tmp_path / "out"
    final.mkdir()
    (final / "plan.md").write_text("good")
    staging = ot.stage(str(final))
    with open(os.path.join(staging, "plan.md"), "w") as handle:
        handle.write("half written")
    # the run failed here: no publish; the next run starts from the build directory again
    staging = ot.stage(str(final))
    with open(os.path.join(staging, "plan.md")) as handle:
        assert handle.read() == "good"


def test_mode_changes_count_as_changes(tmp_path):
    final = tmp_path / "out"
    final.mkdir()
    (final / "f").write_text("x")
    staging = ot.stage(str(final))
    os.chmod(os.path.join(staging, "f"), 0o600)
    assert ot.publish(str(final)) is True


def test_a_run_that_rendered_nothing_creates_no_build_dir(tmp_path):
    final = tmp_path / "out"
    ot.stage(str(final), marker=True)
    assert ot.publish(str(final)) is False
    assert os.listdir(str(tmp_path)) == []


def test_mark_writes_the_mark_once_into_an_existing_directory(tmp_path):
    assert ot.mark(str(tmp_path / "missing")) is False
    out = tmp_path / "out"
    out.mkdir()
    assert ot.mark(str(out)) is True
    assert ot.mark(str(out)) is False
    assert ot.resolve_build_dir(str(out), "x", str(tmp_path / "repo"))[0] == str(out)


def test_a_system_directory_that_holds_the_repository_gets_both_reasons():
    """A clone directly in /tmp (as CI's fresh clones are): '..' is /tmp, a system directory and
    the repository's parent; the message names both (the bad-input table expects the second)."""
    clone = tempfile.mkdtemp(prefix="gpufleet-clone-", dir="/tmp")
    try:
        path, problems = resolve(clone, "..")
        assert path is None
        message = problems[0][1]
        assert "is a system or home directory" in message and "is the repository or one of its parents" in message
        path, problems = resolve(clone, "/etc")
        assert "one of its parents" not in problems[0][1]
    finally:
        os.rmdir(clone)
