"""runtime_removal: the nvidia runtime taken out of a runtime config again (state absent).

Real files in a temp dir, written by the real apply path (containerd_plan.plan + write_files,
with the originals recorded as the module records them), then removed; the containerd binary of
this machine validates candidates where it is installed.
"""
import json
import os
import shutil

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_plan as cplan
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_toml as ctoml
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import runtime_removal as rr
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError

# scripts/harness-setup.sh installs Debian's containerd: validation runs for real, never skipped.
CONTAINERD = shutil.which("containerd") or "/usr/bin/containerd"

USER_V2 = (b"version = 2\r\n"  # CRLF on the first line: text mode would lose it
           b"\n# Site registry mirror: keep this comment.\n"
           b"[plugins]\n"
           b"  [plugins.\"io.containerd.grpc.v1.cri\"]\n"
           b"    sandbox_image = \"registry.k8s.io/pause:3.9\"  # pinned\n"
           b"    [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
           b"      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
           b"        runtime_type = \"io.containerd.runc.v2\"\n"
           b"        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
           b"          SystemdCgroup = true\n")
NO_RUNC = b"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"pause:3.9\"\n"


def paths(tmp_path):
    return dict(root=str(tmp_path / "config.toml"), dropin=str(tmp_path / "conf.d" / "99-nvidia.toml"),
                record=str(tmp_path / "state" / "originals.json"), backups=str(tmp_path / "state" / "backups"))


def install(tmp_path, mode="drop-in", set_as_default=True, enable_cdi=False, binary="/nonexistent"):
    """What the module does for state present."""
    p = paths(tmp_path)
    result = cplan.plan("containerd", mode, p["root"], p["dropin"], set_as_default=set_as_default,
                     enable_cdi=enable_cdi, containerd_binary=binary)
    files = result["files"]
    if files:
        record = rr.load_record(p["record"])
        rr.record_writes(record, files)
        rr.save_record(p["record"], record)
        cplan.write_files(files)
        rr.record_written(record, files)
        rr.save_record(p["record"], record)
    return files


def remove(tmp_path, binary=None):
    p = paths(tmp_path)
    result = rr.plan("containerd", p["record"], config_path=p["root"], dropin_path=p["dropin"])
    if result["files"] and binary:
        result["validated"] = rr.validate_removal(binary, result["root"], result["files"])
    result["rollback"] = rr.apply(result["files"], result["record"], p["backups"])
    return result


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


@pytest.mark.parametrize("original", [USER_V2, NO_RUNC, None], ids=["user-v2-crlf", "no-runc", "absent"])
@pytest.mark.parametrize("mode", ["drop-in", "in-place"])
@pytest.mark.parametrize("set_as_default,enable_cdi", [(True, False), (False, True)])
def test_untouched_file_gets_its_original_back_byte_for_byte(tmp_path, original, mode, set_as_default, enable_cdi):
    p = paths(tmp_path)
    if original is not None:
        with open(p["root"], "wb") as handle:
            handle.write(original)
        os.chmod(p["root"], 0o640)
    assert install(tmp_path, mode, set_as_default, enable_cdi)  # the install did change something
    assert b"nvidia" in read(p["root"] if mode == "in-place" else p["dropin"])
    if original is not None:
        os.chmod(p["root"], 0o644)  # gpufleet keeps modes; the original mode is what comes back
    result = remove(tmp_path, CONTAINERD)
    assert result["recorded"] and result["notes"] == []
    assert result["validated"] is (original is not None)  # nothing to validate when the root file goes
    if original is None:
        assert not os.path.exists(p["root"])
    else:
        assert read(p["root"]) == original
        assert os.stat(p["root"]).st_mode & 0o777 == 0o640
    assert not os.path.exists(p["dropin"])
    assert not os.path.exists(os.path.dirname(p["dropin"]))  # conf.d: gpufleet created it, empty now
    # the rollback list points at backups of what was there before the removal
    assert all(read(r["backup"]) for r in result["rollback"]) and result["rollback"]
    # a second removal changes nothing
    assert rr.plan("containerd", p["record"], config_path=p["root"], dropin_path=p["dropin"])["files"] == {}


def test_edited_file_loses_only_gpufleets_keys(tmp_path):
    p = paths(tmp_path)
    with open(p["root"], "wb") as handle:
        handle.write(USER_V2.replace(b"\r\n", b"\n"))
    install(tmp_path, "in-place", set_as_default=True, enable_cdi=True)
    edited = read(p["root"]) + b"\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n" \
                               b"  endpoint = [\"https://mirror.example.internal\"]\n"
    with open(p["root"], "wb") as handle:
        handle.write(edited)
    result = remove(tmp_path, CONTAINERD)
    text = read(p["root"]).decode()
    assert "nvidia" not in text and "default_runtime_name" not in text and "enable_cdi" not in text
    assert "mirror.example.internal" in text and "# Site registry mirror: keep this comment." in text
    assert 'sandbox_image = "registry.k8s.io/pause:3.9"  # pinned' in text and "SystemdCgroup = true" in text
    assert "only gpufleet's keys were taken out" in " ".join(result["notes"])
    assert any("removed runtime nvidia" in a for a in result["actions"])


def test_edited_root_in_drop_in_mode_loses_the_import_and_keeps_users_imports(tmp_path):
    p = paths(tmp_path)
    with open(p["root"], "wb") as handle:
        handle.write(b'version = 2\nimports = ["/etc/site/*.toml"]\n' + NO_RUNC.split(b"\n", 1)[1])
    install(tmp_path, "drop-in")
    assert b"conf.d/*.toml" in read(p["root"])
    with open(p["root"], "ab") as handle:
        handle.write(b"# a later user edit\n")
    remove(tmp_path)
    text = read(p["root"]).decode()
    assert 'imports = ["/etc/site/*.toml"]' in text and "conf.d" not in text and "# a later user edit" in text
    assert not os.path.exists(p["dropin"])


@pytest.mark.parametrize("orig_default,expected", [
    (None, None),              # gpufleet set it: the key goes
    ("kata", "kata"),          # the user's default comes back
])
def test_default_runtime_name_goes_back_to_what_it_was(orig_default, expected):
    head = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
    original = head + ('  default_runtime_name = "%s"\n' % orig_default if orig_default else "")
    current = head + '  default_runtime_name = "nvidia"\n' \
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
    new, _actions = rr.strip_owned(current, original, "config.toml")
    ctd = ctoml.plain(ctoml.parse(new))["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
    assert ctd.get("default_runtime_name") == expected
    assert "nvidia" not in (ctd.get("runtimes") or {})


def test_users_own_nvidia_runtime_is_kept():
    text = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
            '  runtime_type = "io.containerd.runc.v2"\n')
    assert rr.strip_owned(text, text, "config.toml") == (text, [])


def test_created_file_edited_since_is_removed_with_a_note(tmp_path):
    p = paths(tmp_path)
    with open(p["root"], "wb") as handle:
        handle.write(USER_V2)
    install(tmp_path, "drop-in")
    with open(p["dropin"], "a") as handle:
        handle.write("# edit\n")
    result = remove(tmp_path)
    assert not os.path.exists(p["dropin"]) and read(p["root"]) == USER_V2
    assert any("gpufleet created it, so it is removed" in n for n in result["notes"])


def test_no_record_cleans_by_key_and_removes_gpufleets_drop_in(tmp_path):
    """A host converged by a gpufleet without the record."""
    p = paths(tmp_path)
    with open(p["root"], "wb") as handle:
        handle.write(USER_V2)
    install(tmp_path, "drop-in")
    os.unlink(p["record"])
    result = remove(tmp_path, CONTAINERD)
    assert not result["recorded"]
    text = read(p["root"]).decode()
    assert "conf.d" not in text and "SystemdCgroup = true" in text  # runc stays: not known to be gpufleet's
    assert not os.path.exists(p["dropin"])
    assert any("no record of its original" in n for n in result["notes"])


def test_users_file_in_the_drop_in_place_is_kept_without_record(tmp_path):
    p = paths(tmp_path)
    os.makedirs(os.path.dirname(p["dropin"]))
    with open(p["dropin"], "w") as handle:
        handle.write("# my own\nversion = 2\n")
    assert rr.plan("containerd", p["record"], config_path=p["root"], dropin_path=p["dropin"])["files"] == {}


def test_record_keeps_the_first_original_across_later_writes(tmp_path):
    p = paths(tmp_path)
    with open(p["root"], "wb") as handle:
        handle.write(USER_V2)
    install(tmp_path, "in-place", set_as_default=False)
    first = json.load(open(p["record"]))
    install(tmp_path, "in-place", set_as_default=True)
    second = json.load(open(p["record"]))
    assert first["files"][p["root"]]["original"] == second["files"][p["root"]]["original"]
    assert first["files"][p["root"]]["written"] != second["files"][p["root"]]["written"]
    remove(tmp_path)
    assert read(p["root"]) == USER_V2


def test_broken_record_is_refused_by_path(tmp_path):
    p = paths(tmp_path)
    os.makedirs(os.path.dirname(p["record"]))
    with open(p["record"], "w") as handle:
        handle.write("{not json")
    with pytest.raises(GpufleetError, match="originals.json is not valid JSON"):
        rr.plan("containerd", p["record"], config_path=p["root"], dropin_path=p["dropin"])


def test_validation_refuses_a_candidate_containerd_rejects(tmp_path):
    root = str(tmp_path / "config.toml")
    with pytest.raises(GpufleetError, match="containerd refused the config without the nvidia runtime"):
        rr.validate_removal(CONTAINERD, root, {root: (b"", b'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n'
                                                         b'  sandbox_image = 5\n')})


def test_validation_refuses_when_another_file_still_adds_nvidia(tmp_path):
    root = str(tmp_path / "config.toml")
    os.makedirs(str(tmp_path / "site"))
    with open(str(tmp_path / "site" / "x.toml"), "w") as handle:
        handle.write('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
                     '  runtime_type = "io.containerd.runc.v2"\n')
    text = ('version = 2\nimports = ["%s/site/*.toml"]\n' % tmp_path).encode()
    with pytest.raises(GpufleetError, match="still defines the nvidia runtime"):
        rr.validate_removal(CONTAINERD, root, {root: (b"", text)})


def test_leftover_backups_are_listed(tmp_path):
    p = paths(tmp_path)
    with open(p["root"], "wb") as handle:
        handle.write(USER_V2)
    install(tmp_path, "in-place")
    install(tmp_path, "in-place", set_as_default=False)  # a second write: the backup exists now
    record = rr.load_record(p["record"])
    assert rr.leftover_backups(record, "containerd", p["backups"], config_path=p["root"], dropin_path=p["dropin"]) == [
        p["root"] + ".gpufleet-backup"]
    remove(tmp_path)
    assert rr.leftover_backups(record, "containerd", p["backups"], config_path=p["root"], dropin_path=p["dropin"]) == [
        p["root"] + ".gpufleet-backup", p["backups"]]


@pytest.mark.parametrize("var,value,expected", [
    ("gpufleet_node_state", "removed", "gpufleet_node_state: 'removed' is not a state; use one of: present, absent"),
    ("nvidia_container_toolkit_state", "purged", "nvidia_container_toolkit_state: 'purged' is not a state"),
    ("nvidia_driver_package_state", "latest", "nvidia_driver_package_state: 'latest' is not a state"),
    ("gpu_node_prep_state", False, "gpu_node_prep_state: False is not a state"),
    ("gpu_node_prep_remove_nouveau_blacklist", "sometimes",
     "gpu_node_prep_remove_nouveau_blacklist: 'sometimes' is not a boolean; use one of: true, false"),
])
def test_preflight_refuses_bad_state_values(var, value, expected):
    from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
    base = dict(platform="kubeadm", cluster_name="c1", addons_mode="standalone", apply=False, inventory={},
                pools=[{"name": "p", "gpu_type": "l4", "node_group": "gpu_pool_p"}])
    assert run_preflight(dict(base, extra={var: "absent" if "state" in var else True}))[0] == []
    errors = run_preflight(dict(base, extra={var: value}))[0]
    assert any(e.startswith(expected) for e in errors), errors
