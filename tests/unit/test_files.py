"""files.py, gpufleet's one writer: plan only what differs, check mode writes nothing, diff describes
the change, writes are atomic with the right mode, backups and rollback data for absolute paths."""
import os
import stat

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import files


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def listing(directory):
    return sorted(os.listdir(str(directory))) if os.path.isdir(str(directory)) else None


@pytest.mark.parametrize("existing, wanted, removes, written, removed", [
    # create
    ({}, {"a.txt": "A\n"}, [], ["a.txt"], []),
    # unchanged: nothing planned
    ({"a.txt": "A\n"}, {"a.txt": "A\n"}, [], [], []),
    # modify one, keep the other
    ({"a.txt": "A\n", "b.txt": "B\n"}, {"a.txt": "A2\n", "b.txt": "B\n"}, [], ["a.txt"], []),
    # delete an existing file; a removal of a missing file is no change
    ({"a.txt": "A\n", "old.txt": "O\n"}, {"a.txt": "A\n"}, ["old.txt", "gone.txt"], [], ["old.txt"]),
])
def test_sync_files_check_mode_real_and_idempotent(tmp_path, existing, wanted, removes, written, removed):
    dest = tmp_path / "out"
    if existing:
        dest.mkdir()
        for name, text in existing.items():
            (dest / name).write_text(text)
            os.chmod(str(dest / name), 0o644)
    before = {n: (dest / n).read_text() for n in (listing(dest) or [])}

    checked = files.sync_files(str(dest), wanted, removes, check_mode=True, diff=True)
    assert checked["changed"] == bool(written or removed)
    assert checked["written"] == [str(dest / n) for n in written]
    assert checked["removed"] == [str(dest / n) for n in removed]
    assert {n: (dest / n).read_text() for n in (listing(dest) or [])} == before   # check mode wrote nothing
    assert [d["after_header"] for d in checked["diff"]] == [str(dest / n) for n in written] + ["(removed)"] * len(removed)
    for entry in checked["diff"][:len(written)]:
        name = os.path.basename(entry["before_header"])
        assert entry["before"] == existing.get(name, "") and entry["after"] == wanted[name]

    real = files.sync_files(str(dest), wanted, removes, diff=False)
    assert {k: v for k, v in real.items()} == {k: v for k, v in checked.items() if k != "diff"}
    assert "diff" not in real
    assert {n: (dest / n).read_text() for n in listing(dest)} == wanted
    assert all(mode_of(dest / n) == 0o644 for n in wanted)

    again = files.sync_files(str(dest), wanted, removes, diff=True)
    assert again == {"changed": False, "written": [], "removed": [], "diff": []}


def test_mode_change_alone_is_a_change(tmp_path):
    (tmp_path / "run.sh").write_text("echo\n")
    os.chmod(str(tmp_path / "run.sh"), 0o644)
    out = files.sync_files(str(tmp_path), {"run.sh": "echo\n"}, modes={"run.sh": 0o755})
    assert out["written"] == [str(tmp_path / "run.sh")]
    assert mode_of(tmp_path / "run.sh") == 0o755
    assert files.sync_files(str(tmp_path), {"run.sh": "echo\n"}, modes={"run.sh": 0o755})["changed"] is False


def test_write_changes_backs_up_keeps_mode_and_returns_rollback_data(tmp_path):
    kept = tmp_path / "etc" / "config.toml"
    kept.parent.mkdir()
    kept.write_text("old\n")
    os.chmod(str(kept), 0o600)
    new = tmp_path / "etc" / "conf.d" / "99-nvidia.toml"
    gone = tmp_path / "etc" / "stale.toml"
    gone.write_text("stale\n")
    changes = {str(kept): ("old\n", "new\n"), str(new): (None, "dropin\n"), str(gone): ("stale\n", None)}

    done = files.write_changes(changes, backup_suffix=".bak")

    assert done == [   # in path order
        {"path": str(new), "backup": None, "existed": False},
        {"path": str(kept), "backup": str(kept) + ".bak", "existed": True},
        {"path": str(gone), "backup": str(gone) + ".bak", "existed": True},
    ]
    assert kept.read_text() == "new\n" and mode_of(kept) == 0o600          # existing mode kept
    assert (tmp_path / "etc" / "config.toml.bak").read_text() == "old\n"
    assert new.read_text() == "dropin\n" and mode_of(new) == 0o644
    assert not gone.exists() and (tmp_path / "etc" / "stale.toml.bak").read_text() == "stale\n"
    assert [n for n in os.listdir(str(kept.parent)) if n.startswith(".tmp-")] == []


def test_write_changes_without_backup(tmp_path):
    path = tmp_path / "f"
    path.write_text("a")
    assert files.write_changes({str(path): ("a", "b")}) == [{"path": str(path), "backup": None, "existed": True}]
    assert sorted(os.listdir(str(tmp_path))) == ["f"]


def test_change_diffs_name_absent_sides():
    assert files.change_diffs({"/etc/x": (None, "new"), "/etc/y": ("old", None)}) == [
        {"before": "", "after": "new", "before_header": "(absent)", "after_header": "/etc/x"},
        {"before": "old", "after": "", "before_header": "/etc/y", "after_header": "(absent)"},
    ]


def test_read_text_missing_is_none_other_errors_raise(tmp_path):
    assert files.read_text(str(tmp_path / "missing")) is None
    with pytest.raises((IOError, OSError)):
        files.read_text(str(tmp_path))   # a directory is not a missing file


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "f"
    path.write_text("old")

    def broken_rename(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "rename", broken_rename)
    with pytest.raises(OSError):
        files.write_file(str(path), "new")
    assert path.read_text() == "old"
    assert sorted(os.listdir(str(tmp_path))) == ["f"]


def test_apply_render_is_the_old_name_of_write_planned():
    assert files.apply_render is files.write_planned


def test_write_file_writes_bytes_as_they_are(tmp_path):
    """runtime_removal restores users' files byte for byte through the same writer."""
    data = b"\xff\xfe not utf-8 \r\n\x00"
    files.write_file(str(tmp_path / "d" / "f"), data, 0o600)
    assert (tmp_path / "d" / "f").read_bytes() == data
    assert (tmp_path / "d" / "f").stat().st_mode & 0o777 == 0o600
