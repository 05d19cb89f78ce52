"""containerd_config: the nvidia runtime edit, presets, validation and file writes (no binary)."""
import os
import subprocess

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor import tomlkit

from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_plan as cplan
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_presets as presets
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_toml as ctoml
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_validate as cvalidate
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, Problems
from ansible_collections.gpufleet.k8s.plugins.modules import containerd_nvidia_runtime as module
from containerd_configs import USER_V2

ROOT = "/etc/containerd/config.toml"
DROPIN = "/etc/containerd/conf.d/99-nvidia.toml"


def user_config(version):
    if version == 2:
        return USER_V2
    if version == 1:
        return USER_V2.replace("version = 2\n", "").replace('"io.containerd.grpc.v1.cri"', "cri")
    text = USER_V2.replace("version = 2", "version = %d" % version)
    text = text.replace('"io.containerd.grpc.v1.cri"', '"io.containerd.cri.v1.runtime"')
    # v3+ moved registry config out of the runtime plugin; keep a mirror-like table anyway.
    return text.replace('registry.mirrors."docker.io"', 'cni')


def doc(text):
    return ctoml.plain(tomlkit.parse(text))


def runtimes_of(data, version):
    node = data
    for key in ctoml.cri_path(version) + ("containerd", "runtimes"):
        node = node[key]
    return node


@pytest.mark.parametrize("version,path", [
    (1, ("plugins", "cri")),
    (2, ("plugins", "io.containerd.grpc.v1.cri")),
    (3, ("plugins", "io.containerd.cri.v1.runtime")),
    (4, ("plugins", "io.containerd.cri.v1.runtime")),
])
def test_version_and_cri_path(version, path):
    assert ctoml.detect_version(tomlkit.parse(user_config(version))) == version
    assert ctoml.cri_path(version) == path


def test_unknown_version_is_refused():
    with pytest.raises(GpufleetError, match="version: 7 is not a containerd config version"):
        ctoml.detect_version(tomlkit.parse("version = 7\n"))


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_in_place_adds_nvidia_inheriting_runc(version):
    result = ctoml.plan_containerd(user_config(version), ROOT, "in-place")
    new = result["files"][ROOT][1]
    runtimes = runtimes_of(doc(new), version)
    assert runtimes["nvidia"] == {"runtime_type": "io.containerd.runc.v2",
                                  "options": {"SystemdCgroup": True, "BinaryName": "/usr/bin/nvidia-container-runtime"}}
    assert runtimes["runc"] == runtimes_of(doc(user_config(version)), version)["runc"]
    assert runtimes["kata"] == {"runtime_type": "io.containerd.kata.v2"}
    # every original line is still there, in order (only insertions)
    assert_lines_kept(user_config(version), new)
    assert ctoml.plan_containerd(new, ROOT, "in-place")["files"] == {}


def assert_lines_kept(old, new, except_keys=()):
    it = iter(new.splitlines())
    for line in old.splitlines():
        if any(line.strip().startswith(k + " ") for k in except_keys):
            continue
        assert any(candidate == line for candidate in it), "line lost or moved: %r" % line


def test_runtime_type_copied_from_the_default_runtime():
    text = USER_V2.replace('default_runtime_name = "runc"', 'default_runtime_name = "kata"')
    runtimes = runtimes_of(doc(ctoml.plan_containerd(text, ROOT, "in-place")["files"][ROOT][1]), 2)
    assert runtimes["nvidia"]["runtime_type"] == "io.containerd.kata.v2"


def test_set_as_default_and_back():
    first = ctoml.plan_containerd(USER_V2, ROOT, "in-place", set_as_default=True, enable_cdi=True)["files"][ROOT][1]
    data = doc(first)["plugins"]["io.containerd.grpc.v1.cri"]
    assert data["containerd"]["default_runtime_name"] == "nvidia"
    assert data["enable_cdi"] is True
    assert_lines_kept(USER_V2, first, except_keys=("default_runtime_name",))
    # options are still inherited from runc while nvidia is the default
    assert data["containerd"]["runtimes"]["nvidia"]["options"]["SystemdCgroup"] is True
    assert ctoml.plan_containerd(first, ROOT, "in-place", set_as_default=True, enable_cdi=True)["files"] == {}
    back = ctoml.plan_containerd(first, ROOT, "in-place", enable_cdi=True)["files"][ROOT][1]
    assert doc(back)["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"] == "runc"


def test_existing_nvidia_runtime_is_updated_keeping_user_keys():
    text = USER_V2 + (
        '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
        '        runtime_type = "io.containerd.runc.v1"\n'
        '        privileged_without_host_devices = true  # user key\n'
    )
    result = ctoml.plan_containerd(text, ROOT, "in-place")
    nvidia = runtimes_of(doc(result["files"][ROOT][1]), 2)["nvidia"]
    assert nvidia["runtime_type"] == "io.containerd.runc.v2"
    assert nvidia["privileged_without_host_devices"] is True
    assert nvidia["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    assert result["actions"] == ["updated runtime nvidia"]


def test_missing_runc_is_added_because_cri_would_fail_without_it():
    text = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "/usr/lib/cni"\n'
    result = ctoml.plan_containerd(text, ROOT, "in-place")
    runtimes = runtimes_of(doc(result["files"][ROOT][1]), 2)
    assert runtimes["runc"] == {"runtime_type": "io.containerd.runc.v2"}
    assert "added missing default runtime runc" in result["actions"]


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_drop_in_matches_version_and_carries_the_cri_table(version):
    result = ctoml.plan_containerd(user_config(version), ROOT, "drop-in", dropin_path=DROPIN)
    root_new = result["files"][ROOT][1]
    assert doc(root_new)["imports"] == ["/etc/containerd/conf.d/*.toml"]
    assert_lines_kept(user_config(version), root_new)
    dropin = doc(result["files"][DROPIN][1])
    assert ctoml.detect_version(tomlkit.parse(result["files"][DROPIN][1])) == version
    cri = dropin
    for key in ctoml.cri_path(version):
        cri = cri[key]
    original = doc(user_config(version))
    for key in ctoml.cri_path(version):
        original = original[key]
    assert cri["sandbox_image"] == original["sandbox_image"]
    assert cri["containerd"]["runtimes"]["kata"] == original["containerd"]["runtimes"]["kata"]
    assert cri["containerd"]["runtimes"]["nvidia"]["options"]["SystemdCgroup"] is True
    again = ctoml.plan_containerd(root_new, ROOT, "drop-in", dropin_path=DROPIN, dropin_text=result["files"][DROPIN][1])
    assert again["files"] == {}


def test_drop_in_without_carry_holds_only_our_keys():
    result = ctoml.plan_containerd(USER_V2, ROOT, "drop-in", dropin_path=DROPIN, carry_cri_table=False)
    cri = doc(result["files"][DROPIN][1])["plugins"]["io.containerd.grpc.v1.cri"]
    assert set(cri["containerd"]["runtimes"]) == {"nvidia"}
    assert "sandbox_image" not in cri


def test_drop_in_resyncs_when_the_user_changes_the_root_file():
    first = ctoml.plan_containerd(USER_V2, ROOT, "drop-in", dropin_path=DROPIN)
    root_new, dropin = first["files"][ROOT][1], first["files"][DROPIN][1]
    edited = root_new.replace("pause:3.9", "pause:3.10")
    second = ctoml.plan_containerd(edited, ROOT, "drop-in", dropin_path=DROPIN, dropin_text=dropin)
    assert list(second["files"]) == [DROPIN]
    assert doc(second["files"][DROPIN][1])["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"].endswith("3.10")


def test_other_drop_in_of_another_version_is_refused():
    with pytest.raises(GpufleetError, match="mixed versions"):
        ctoml.plan_containerd(USER_V2, ROOT, "drop-in", dropin_path=DROPIN,
                           other_dropins=[("/etc/containerd/conf.d/10-user.toml", "version = 3\n")])


def test_existing_imports_are_extended_not_replaced():
    text = 'version = 2\nimports = ["/etc/containerd/site/*.toml"]  # site\n' + USER_V2.split("\n", 1)[1]
    root_new = ctoml.plan_containerd(text, ROOT, "drop-in", dropin_path=DROPIN)["files"][ROOT][1]
    assert doc(root_new)["imports"] == ["/etc/containerd/site/*.toml", "/etc/containerd/conf.d/*.toml"]
    assert "# site" in root_new


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_missing_config_uses_builtin_defaults_with_runc(version):
    result = ctoml.plan_containerd(None, ROOT, "in-place", config_version=version)
    runtimes = runtimes_of(doc(result["files"][ROOT][1]), version)
    assert set(runtimes) == {"runc", "nvidia"}
    assert result["created_from"] == "built-in default (version %d)" % version
    assert result["files"][ROOT][0] is None


def test_missing_config_prefers_containerd_config_default():
    default = USER_V2.replace("# Site registry mirror: keep this comment.", "# from containerd config default")
    result = ctoml.plan_containerd(None, ROOT, "drop-in", dropin_path=DROPIN, default_text=default)
    assert result["created_from"] == "containerd config default"
    assert "# from containerd config default" in result["files"][ROOT][1]


def test_invalid_toml_is_refused():
    with pytest.raises(GpufleetError, match="not valid TOML, left untouched"):
        ctoml.plan_containerd("version = 2\n[plugins\n", ROOT, "in-place")


# --- presets ------------------------------------------------------------------------------------

def fake_reader(files):
    return lambda path: files.get(path)


def test_unknown_preset_is_refused_with_the_allowed_values():
    with pytest.raises(GpufleetError) as err:
        cplan.plan("docker", read=fake_reader({}))
    assert "preset: 'docker' is not a known runtime preset; use one of: containerd, crio, k0s, k3s, microk8s, rke2" in str(err.value)


def test_k3s_without_template_writes_nothing_and_says_why():
    result = cplan.plan("k3s", read=fake_reader({}))
    assert result["files"] == {}
    assert "adds the nvidia runtime itself" in result["notes"][0]
    assert result["socket"] == "/run/k3s/containerd/containerd.sock"


def test_template_with_go_directives_is_refused():
    path = presets.PRESETS["rke2"]["config"]
    with pytest.raises(GpufleetError, match="Go template directives"):
        cplan.plan("rke2", read=fake_reader({path: '{{ template "base" . }}\n'}))


def test_microk8s_template_edited_in_place_keeps_placeholders():
    path = presets.PRESETS["microk8s"]["config"]
    text = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".cni]\n  bin_dir = "${SNAP_DATA}/opt/cni/bin"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n')
    result = cplan.plan("microk8s", mode="drop-in", read=fake_reader({path: text}))
    assert list(result["files"]) == [path]
    assert "${SNAP_DATA}/opt/cni/bin" in result["files"][path][1]
    assert result["validate"] is False


def test_k0s_standalone_drop_in():
    result = cplan.plan("k0s", read=fake_reader({}), set_as_default=True)
    path = "/etc/k0s/containerd.d/nvidia.toml"
    data = doc(result["files"][path][1])
    cri = data["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
    assert data["version"] == 2
    assert cri["runtimes"]["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    assert cri["default_runtime_name"] == "nvidia"
    again = cplan.plan("k0s", read=fake_reader({path: result["files"][path][1]}), set_as_default=True)
    assert again["files"] == {}


def test_crio_drop_in():
    result = cplan.plan("crio", read=fake_reader({}), set_as_default=True)
    path = "/etc/crio/crio.conf.d/99-nvidia.toml"
    data = doc(result["files"][path][1])
    assert data["crio"]["runtime"] == {
        "default_runtime": "nvidia",
        "runtimes": {"nvidia": {"runtime_path": "/usr/bin/nvidia-container-runtime", "runtime_type": "oci"}}}
    unset = cplan.plan("crio", read=fake_reader({path: result["files"][path][1]}))
    assert "default_runtime" not in doc(unset["files"][path][1])["crio"]["runtime"]


def test_preset_containerd_reads_other_imports(tmp_path):
    root = tmp_path / "config.toml"
    site = tmp_path / "site"
    site.mkdir()
    (site / "10-site.toml").write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "site/pause:1"\n')
    root.write_text('version = 2\nimports = ["site/*.toml"]\n')
    result = cplan.plan("containerd", config_path=str(root), dropin_path=str(tmp_path / "conf.d" / "99-nvidia.toml"),
                     containerd_binary=str(tmp_path / "no-containerd"))
    dropin = doc(result["files"][str(tmp_path / "conf.d" / "99-nvidia.toml")][1])
    assert dropin["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"] == "site/pause:1"
    assert result["validate"] is False


def test_module_docs_list_every_preset_file_and_socket():
    for name, preset in presets.PRESETS.items():
        for path in (preset["config"], preset["dropin"], preset["socket"]):
            if path:
                assert path in module.DOCUMENTATION, (name, path)
        assert "| %s |" % name in presets.table_markdown()


# --- preflight check ----------------------------------------------------------------------------

@pytest.mark.parametrize("extra,platform,errors", [
    ({}, "kubeadm", []),
    ({}, "openshift", []),
    ({"nvidia_container_toolkit_runtime_preset": "docker"}, "kubeadm",
     ["nvidia_container_toolkit_runtime_preset: 'docker' is not a known runtime preset; use one of: containerd, crio, k0s, k3s, microk8s, rke2"]),
    ({"nvidia_container_toolkit_runtime_mode": "merge"}, "k3s",
     ["nvidia_container_toolkit_runtime_mode: 'merge' is not a supported mode; use one of: drop-in, in-place"]),
    ({"nvidia_container_toolkit_runtime_config_version": 9}, "kubeadm",
     ["nvidia_container_toolkit_runtime_config_version: 9 is not a containerd config version; use one of: 1, 2, 3, 4 (0: detect)"]),
])
def test_preflight_check(extra, platform, errors):
    problems = Problems()
    presets.check({"extra": extra}, {"platform": platform}, problems)
    assert problems.errors == errors


# --- validation and writes -----------------------------------------------------------------------

class FakeRun:
    def __init__(self, rc, stdout="", stderr=""):
        self.rc, self.stdout, self.stderr = rc, stdout, stderr
        self.calls = []

    def __call__(self, argv, **kwargs):
        self.calls.append(argv)
        return subprocess.CompletedProcess(argv, self.rc, self.stdout, self.stderr)


def test_validate_runs_config_dump_on_a_copy_and_reports_refusal(tmp_path):
    root = str(tmp_path / "config.toml")
    run = FakeRun(1, stderr="failed to load TOML: invalid type")
    with pytest.raises(GpufleetError, match="refused the candidate config \\(live file left untouched\\): failed to load TOML"):
        cvalidate.validate_candidate("/usr/bin/containerd", root, {root: USER_V2}, run=run)
    argv = run.calls[0]
    assert argv[0:2] == ["/usr/bin/containerd", "--config"] and argv[3:] == ["config", "dump"]
    assert argv[2] != root


def test_validate_requires_nvidia_and_runc_in_the_effective_config(tmp_path):
    root = str(tmp_path / "config.toml")
    no_runc = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\nBinaryName = "/usr/bin/nvidia-container-runtime"\n'
    with pytest.raises(GpufleetError, match="no runc runtime"):
        cvalidate.validate_candidate("c", root, {root: USER_V2}, run=FakeRun(0, stdout=no_runc))
    with pytest.raises(GpufleetError, match="no nvidia runtime"):
        cvalidate.validate_candidate("c", root, {root: USER_V2}, run=FakeRun(0, stdout=USER_V2))


def test_write_files_backs_up_keeps_mode_and_reports_rollback(tmp_path):
    live = tmp_path / "config.toml"
    live.write_text("old\n")
    os.chmod(str(live), 0o600)
    new_file = tmp_path / "conf.d" / "99-nvidia.toml"
    out = cplan.write_files({str(live): ("old\n", "new\n"), str(new_file): (None, "dropin\n")})
    assert live.read_text() == "new\n"
    assert oct(os.stat(str(live)).st_mode & 0o777) == "0o600"
    assert (tmp_path / "config.toml.gpufleet-backup").read_text() == "old\n"
    assert new_file.read_text() == "dropin\n"
    assert sorted(out, key=lambda r: r["path"]) == [
        {"path": str(new_file), "backup": None, "existed": False},
        {"path": str(live), "backup": str(live) + ".gpufleet-backup", "existed": True},
    ]
    assert [p for p in os.listdir(str(tmp_path)) if p.startswith(".tmp-")] == []


def test_containerd_version_parsing():
    run = FakeRun(0, stdout="containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3\n")
    assert cvalidate.containerd_version("c", run=run) == (1, 6)
    assert cvalidate.containerd_version("c", run=FakeRun(0, stdout="containerd github.com/containerd/containerd/v2 v2.1.4 abc\n")) == (2, 1)


def test_module_argspec_matches_the_docs():
    import yaml
    options = yaml.safe_load(module.DOCUMENTATION)["options"]
    spec = module.argspec()
    assert set(options) == set(spec)
    for name, opt in options.items():
        assert opt.get("default") == spec[name].get("default"), name
        assert opt["type"] == spec[name]["type"], name


def test_safety_net_refuses_a_write_that_moves_a_user_line():
    with pytest.raises(GpufleetError, match="would change or move the line '  endpoint = 1'"):
        ctoml.check_preserved("a = 1\n  endpoint = 1\n", "a = 1\nendpoint = 1\n", ROOT)
    ctoml.check_preserved('x = 1\ndefault_runtime_name = "runc"\n', 'x = 1\ndefault_runtime_name = "nvidia"\n', ROOT)


def test_vendored_tomlkit_is_the_pinned_version():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "constraints.txt")) as handle:
        pins = dict(line.strip().split("==") for line in handle if "==" in line)
    assert tomlkit.__version__ == pins["tomlkit"]
    assert tomlkit.__file__.endswith(os.path.join("module_utils", "_vendor", "tomlkit", "__init__.py"))


def test_preflight_runs_the_runtime_check_with_role_variable_names():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
    params = {"platform": "k3s", "cluster_name": "c1", "addons_mode": "standalone",
              "pools": [{"name": "p1", "gpu_type": "l4", "node_group": "gpu_pool_p1"}],
              "extra": {"nvidia_container_toolkit_runtime_preset": "docker"}}
    errors, _warnings, _plan = run_preflight(params)
    assert errors == ["nvidia_container_toolkit_runtime_preset: 'docker' is not a known runtime preset; "
                      "use one of: containerd, crio, k0s, k3s, microk8s, rke2"]
    params["extra"] = {}
    assert run_preflight(params)[0] == []


# ---------------------------------------------------------------------------------------------
# Issue 14: k3s / RKE2 without a template, and the server/agent service names.
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset,path", [("k3s", "/etc/rancher/k3s/config.yaml.d/90-gpufleet-nvidia.yaml"),
                                         ("rke2", "/etc/rancher/rke2/config.yaml.d/90-gpufleet-nvidia.yaml")])
def test_distro_without_template_sets_default_runtime_in_its_config(preset, path):
    """Old code wrote nothing: no restart (k3s/RKE2 add the nvidia runtime only at start) and runc
    stayed the default although set_as_default was asked for."""
    result = cplan.plan(preset, set_as_default=True, read=fake_reader({}))
    assert list(result["files"]) == [path]
    old, new = result["files"][path]
    assert old is None and yaml.safe_load(new) == {"default-runtime": "nvidia"}
    assert "the default runtime is set in its config file " + path in result["notes"][0]
    # second run: nothing to write
    assert cplan.plan(preset, set_as_default=True, read=fake_reader({path: new}))["files"] == {}
    # set_as_default turned off: gpufleet's file is removed
    assert cplan.plan(preset, set_as_default=False, read=fake_reader({path: new}))["files"] == {path: (new, None)}


def test_removing_a_file_keeps_a_backup_for_rollback(tmp_path):
    path = tmp_path / "config.yaml.d" / "90-gpufleet-nvidia.yaml"
    path.parent.mkdir()
    path.write_text("default-runtime: nvidia\n")
    written = cplan.write_files({str(path): ("default-runtime: nvidia\n", None)})
    assert not path.exists()
    assert written == [{"path": str(path), "backup": str(path) + presets.BACKUP_SUFFIX, "existed": True}]
    assert (tmp_path / "config.yaml.d" / ("90-gpufleet-nvidia.yaml" + presets.BACKUP_SUFFIX)).read_text() == \
        "default-runtime: nvidia\n"


@pytest.mark.parametrize("preset,present,expected", [
    ("k3s", ["/etc/systemd/system/k3s.service"], "k3s"),
    ("k3s", ["/etc/systemd/system/k3s-agent.service"], "k3s-agent"),
    ("rke2", ["/usr/local/lib/systemd/system/x", "/usr/lib/systemd/system/rke2-server.service",
              "/usr/lib/systemd/system/rke2-agent.service",
              "/etc/systemd/system/multi-user.target.wants/rke2-agent.service"], "rke2-agent"),
    ("rke2", ["/usr/lib/systemd/system/rke2-server.service", "/usr/lib/systemd/system/rke2-agent.service",
              "/etc/systemd/system/multi-user.target.wants/rke2-server.service"], "rke2-server"),
    ("rke2", [], "rke2-server"),
    ("k0s", ["/etc/systemd/system/k0scontroller.service"], "k0scontroller"),
    ("containerd", [], "containerd"),
])
def test_service_is_the_hosts_server_or_agent_unit(preset, present, expected):
    assert presets.resolve_service(preset, exists=lambda p: p in present) == expected


def test_node_stage_watch_list_covers_every_preset_file_and_service():
    """A file or unit the runtime presets write or restart that the node stamp does not watch would
    let the fast path skip a host whose runtime config was removed or whose service stopped."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "playbooks", "nodes.yml")) as handle:
        play = next(p for p in yaml.safe_load(handle) if "__gpufleet_node_watch" in (p.get("vars") or {}))
    watch = play["vars"]["__gpufleet_node_watch"]
    paths = [p for p in watch["paths"] if not p.startswith("{{")]
    for name, preset in presets.PRESETS.items():
        if preset["kind"] != "containerd" or name == "microk8s":
            continue
        for path in (preset["config"], preset["dropin"], preset.get("distro_config")):
            if path:
                assert any(path == p or path.startswith(p + "/") for p in paths), (name, path)
        for service in preset.get("services") or (preset["service"],):
            assert service + ".service" in watch["services"], (name, service)
