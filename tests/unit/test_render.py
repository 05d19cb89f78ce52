"""Render mode output: deterministic files, stale files removed, other files left alone."""
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import object_filename, plan_render, write_planned

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "x"}, "data": {"k": "a\nb\n"}}
NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}


def render(dest, objects):
    wanted, writes, removes = plan_render(str(dest), objects)
    write_planned(str(dest), writes, removes)
    return wanted, writes, removes


def test_render_writes_then_is_a_no_op(tmp_path):
    _, writes, removes = render(tmp_path, [NS, CM])
    assert sorted(writes) == ["00-namespace-x.yaml", "01-configmap-b.yaml"] and removes == []
    text = (tmp_path / "01-configmap-b.yaml").read_text()
    assert "k: |\n    a\n    b\n" in text  # multi-line data as a literal block
    _, writes, removes = render(tmp_path, [NS, CM])
    assert writes == {} and removes == []


def test_render_is_byte_identical_whatever_the_key_order(tmp_path):
    render(tmp_path / "a", [CM])
    reordered = {"data": {"k": "a\nb\n"}, "metadata": {"namespace": "x", "name": "b"}, "kind": "ConfigMap", "apiVersion": "v1"}
    render(tmp_path / "b", [reordered])
    assert (tmp_path / "a" / "00-configmap-b.yaml").read_bytes() == (tmp_path / "b" / "00-configmap-b.yaml").read_bytes()


def test_stale_rendered_files_go_but_user_files_stay(tmp_path):
    render(tmp_path, [NS, CM])
    (tmp_path / "README.md").write_text("mine")
    _, _, removes = render(tmp_path, [NS])
    assert removes == ["01-configmap-b.yaml"]
    assert sorted(os.listdir(tmp_path)) == ["00-namespace-x.yaml", "README.md"]


def test_check_mode_plan_changes_nothing(tmp_path):
    wanted, writes, _ = plan_render(str(tmp_path / "new"), [NS])
    assert list(writes) == ["00-namespace-x.yaml"]
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("obj", [{"kind": "Namespace"}, {"metadata": {"name": "x"}}, "text"])
def test_object_without_kind_or_name_is_refused(obj):
    with pytest.raises(GpufleetError):
        object_filename(0, obj)


def test_plan_files_sees_mode_changes_and_apply_sets_modes(tmp_path):
    from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import file_diffs, plan_files
    modes = {"fetch.sh": 0o755}
    writes = plan_files(str(tmp_path), {"fetch.sh": "#!/bin/sh\n", "a.md": "x\n"}, modes)
    write_planned(str(tmp_path), writes, [], modes)
    assert oct(os.stat(tmp_path / "fetch.sh").st_mode & 0o777) == "0o755"
    assert oct(os.stat(tmp_path / "a.md").st_mode & 0o777) == "0o644"
    assert plan_files(str(tmp_path), {"fetch.sh": "#!/bin/sh\n", "a.md": "x\n"}, modes) == {}
    os.chmod(tmp_path / "fetch.sh", 0o644)
    again = plan_files(str(tmp_path), {"fetch.sh": "#!/bin/sh\n"}, modes)
    assert list(again) == ["fetch.sh"]
    diffs = file_diffs(str(tmp_path), again, ["old.yaml"])
    assert diffs[0]["after"] == "#!/bin/sh\n" and diffs[1]["after_header"] == "(removed)"
