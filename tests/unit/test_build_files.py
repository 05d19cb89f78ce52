"""module_utils.core.files.sync_tree, the work of module build_files: writes only what differs, removes files
and whole directories, lists the tree, never leaves the destination, honours check mode."""
import hashlib
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import inside, listing_artifacts, select_listing, sync_tree


def _tree(root):
    return sorted((os.path.relpath(os.path.join(d, f), root), open(os.path.join(d, f)).read())
                  for d, _, fs in os.walk(root) for f in fs)


def test_writes_sub_directories_then_reports_no_change(tmp_path):
    first = sync_tree(str(tmp_path / "out"), {"a/b.yaml": "x: 1\n", "c.md": "hi\n"})
    assert first["changed"] and len(first["written"]) == 2
    assert _tree(tmp_path / "out") == [("a/b.yaml", "x: 1\n"), ("c.md", "hi\n")]
    assert oct(os.stat(tmp_path / "out" / "a" / "b.yaml").st_mode & 0o777) == "0o644"
    again = sync_tree(str(tmp_path / "out"), {"a/b.yaml": "x: 1\n", "c.md": "hi\n"})
    assert again == {"changed": False, "written": [], "removed": []}


def test_a_changed_mode_alone_is_a_change(tmp_path):
    sync_tree(str(tmp_path), {"f": "x"})
    os.chmod(tmp_path / "f", 0o600)
    assert sync_tree(str(tmp_path), {"f": "x"})["changed"]
    assert os.stat(tmp_path / "f").st_mode & 0o777 == 0o644


def test_removes_files_and_whole_directories_and_says_which(tmp_path):
    sync_tree(str(tmp_path), {"keep.yaml": "k", "gone/a.yaml": "a", "gone/sub/b.yaml": "b", "f.yaml": "f"})
    result = sync_tree(str(tmp_path), {}, absent=["gone", "f.yaml", "never-there"], diff=True)
    assert result["changed"]
    assert _tree(tmp_path) == [("keep.yaml", "k")]
    assert sorted(result["removed"]) == sorted([str(tmp_path / n) for n in ["gone/a.yaml", "gone/sub/b.yaml", "f.yaml"]] + [str(tmp_path) + "/gone/"])
    assert {d["before_header"] for d in result["diff"]} == {str(tmp_path / n) for n in ["gone/a.yaml", "gone/sub/b.yaml", "f.yaml"]}
    assert sync_tree(str(tmp_path), {}, absent=["gone", "f.yaml"])["changed"] is False


def test_check_mode_changes_nothing_but_reports_what_would(tmp_path):
    sync_tree(str(tmp_path), {"old/x": "1"})
    before = _tree(tmp_path)
    result = sync_tree(str(tmp_path), {"new": "2"}, absent=["old"], check_mode=True)
    assert result["changed"] and result["written"] == [str(tmp_path / "new")]
    assert _tree(tmp_path) == before
    assert not os.path.exists(tmp_path / "missing") and sync_tree(str(tmp_path / "missing"), {"a": "b"}, check_mode=True)["changed"]
    assert not os.path.exists(tmp_path / "missing")


def test_listing_has_path_size_and_sha1_sorted(tmp_path):
    result = sync_tree(str(tmp_path), {"b/z.yaml": "zz", "a.json": "{}", ".mark": "m", ".hidden/x": "x"}, listing=True)
    assert result["listing"] == [
        {"path": str(tmp_path / "a.json"), "size": 2, "checksum": hashlib.sha1(b"{}").hexdigest()},
        {"path": str(tmp_path / "b" / "z.yaml"), "size": 2, "checksum": hashlib.sha1(b"zz").hexdigest()},
    ]
    assert sync_tree(str(tmp_path / "none"), {}, listing=True, check_mode=True)["listing"] == []


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/../../x", "..", ".", ""])
def test_names_outside_the_destination_are_refused_before_anything_changes(tmp_path, name):
    with pytest.raises(GpufleetError, match="not a path inside"):
        sync_tree(str(tmp_path / "d"), {"ok": "1", name: "x"} if name else {"ok": "1", "": "x"})
    with pytest.raises(GpufleetError):
        sync_tree(str(tmp_path / "d"), {}, absent=[name])
    assert not os.path.exists(tmp_path / "d")


def test_inside_accepts_nested_relative_names(tmp_path):
    assert inside(str(tmp_path), "a/./b") == str(tmp_path / "a" / "b")


def test_listing_as_job_artifacts_with_and_without_contents(tmp_path):
    listing, names = select_listing(str(tmp_path), sync_tree(str(tmp_path), {"b/z.yaml": "zz", "a.json": "{}",
                                                                           ".mark": "m"}, listing=True)["listing"])
    small = listing_artifacts(listing, names, 4)
    assert small == {"sizes": {"a.json": 2, "b/z.yaml": 2},
                     "sha1": {"a.json": hashlib.sha1(b"{}").hexdigest(), "b/z.yaml": hashlib.sha1(b"zz").hexdigest()},
                     "contents": {"a.json": "{}", "b/z.yaml": "zz"}, "contents_left_out": False}
    assert list(small["sizes"]) == ["a.json", "b/z.yaml"]          # the listing's order
    large = listing_artifacts(listing, names, 3)
    assert large["contents"] == {} and large["contents_left_out"] is True
    assert large["sha1"] == small["sha1"] and large["sizes"] == small["sizes"]


def test_select_listing_by_suffix_and_skipped_names(tmp_path):
    files = {"a.yaml": "a", "b.json": "b", "c.md": "c", "gitops/x.yaml": "x", "gitopsy/y.yml": "y", "d/e.yml": "e"}
    listing = sync_tree(str(tmp_path), files, listing=True)["listing"]
    kept, names = select_listing(str(tmp_path), listing, [".yaml", ".yml", ".json"], ["gitops"])
    assert names == ["a.yaml", "b.json", "d/e.yml", "gitopsy/y.yml"]
    assert [e["path"] for e in kept] == [str(tmp_path / n) for n in names]
    assert select_listing(str(tmp_path), listing)[1] == sorted(files)
