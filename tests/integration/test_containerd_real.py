"""The nvidia runtime edit against the real containerd binary on this host (Debian's 1.6.20).

Each case writes a user config into a temp dir, applies the edit (the module_utils API or the
real module through ``ansible``), then starts containerd by hand on that config with its own
root, state and socket, and asks it: ``ctr plugins ls`` must show the CRI plugin ``ok`` and
``containerd config dump`` must show the nvidia runtime, the user's mirror and runc.
containerd 1.6 accepts config versions 1 and 2; a version 3 config loads there but its CRI
section is ignored, which the validation must catch.
"""
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_plan as cplan
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_toml as ctoml
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_validate as cvalidate
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor import tomlkit
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_run import ROOT, ansible

CONTAINERD = shutil.which("containerd") or "/usr/bin/containerd"
CTR = shutil.which("ctr") or "/usr/bin/ctr"
REPO = ROOT

USER = {
    2: """version = 2

# Site registry mirror: keep this comment.
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.9"  # pinned
    [plugins."io.containerd.grpc.v1.cri".containerd]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = true
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]
        runtime_type = "io.containerd.kata.v2"
    [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
      endpoint = ["https://mirror.example.internal"]
""",
}
USER[1] = USER[2].replace("version = 2\n", "").replace('"io.containerd.grpc.v1.cri"', "cri")


@pytest.fixture(scope="module", autouse=True)
def need_containerd():
    assert os.path.exists(CONTAINERD), "containerd is required: apt-get install containerd (scripts/test.sh does)"


class Containerd:
    """containerd started by hand on a config, with its own root, state and socket."""

    def __init__(self, base, config):
        self.base = base
        self.sock = os.path.join(base, "c.sock")
        self.log = open(os.path.join(base, "containerd.log"), "w")
        self.proc = subprocess.Popen(
            [CONTAINERD, "--config", config, "--root", os.path.join(base, "root"),
             "--state", os.path.join(base, "state"), "--address", self.sock],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("containerd exited: %s" % open(self.log.name).read()[-2000:])
            if os.path.exists(self.sock) and self.ctr("version").returncode == 0:
                return
            time.sleep(0.2)
        raise AssertionError("containerd did not come up")

    def ctr(self, *args):
        return subprocess.run([CTR, "--address", self.sock] + list(args), capture_output=True, text=True, timeout=30)

    def cri_status(self):
        for line in self.ctr("plugins", "ls").stdout.splitlines():
            fields = line.split()
            if fields[:2] == ["io.containerd.grpc.v1", "cri"]:
                return fields[-1]
        return None

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def dump(config):
    proc = subprocess.run([CONTAINERD, "--config", config, "config", "dump"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return ctoml.plain(tomlkit.parse(proc.stdout))


def apply(config, dropin, mode, **kwargs):
    result = cplan.plan("containerd", mode, config, dropin, containerd_binary=CONTAINERD, **kwargs)
    if result["files"]:
        assert result["validate"]
        cvalidate.validate_candidate(CONTAINERD, config, dict((p, n) for p, (_o, n) in result["files"].items()))
        cplan.write_files(result["files"])
    return result


def start_and_check(tmp_path, config):
    runtime = Containerd(str(tmp_path), config)
    try:
        assert runtime.cri_status() == "ok", open(runtime.log.name).read()[-3000:]
    finally:
        runtime.stop()
    effective = dump(config)["plugins"]["io.containerd.grpc.v1.cri"]
    runtimes = effective["containerd"]["runtimes"]
    assert runtimes["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    assert runtimes["nvidia"]["runtime_type"] == "io.containerd.runc.v2"
    assert "runc" in runtimes
    return effective


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("mode", ["in-place", "drop-in"])
def test_each_accepted_version_starts_with_cri_ok(tmp_path, version, mode):
    config = str(tmp_path / "etc" / "config.toml")
    dropin = str(tmp_path / "etc" / "conf.d" / "99-nvidia.toml")
    os.makedirs(os.path.dirname(config))
    with open(config, "w") as handle:
        handle.write(USER[version])
    result = apply(config, dropin, mode, set_as_default=True)
    assert result["version"] == version
    effective = start_and_check(tmp_path, config)
    assert effective["containerd"]["default_runtime_name"] == "nvidia"
    assert effective["containerd"]["runtimes"]["nvidia"]["options"]["SystemdCgroup"] is True
    assert effective["containerd"]["runtimes"]["kata"]["runtime_type"] == "io.containerd.kata.v2"
    assert effective["registry"]["mirrors"]["docker.io"]["endpoint"] == ["https://mirror.example.internal"]
    assert effective["sandbox_image"] == "registry.k8s.io/pause:3.9"
    text = open(config).read()
    assert "# Site registry mirror: keep this comment." in text
    ctoml.check_preserved(USER[version], text, config)
    # a second apply is a no-op
    assert apply(config, dropin, mode, set_as_default=True)["files"] == {}


def test_trap_nvidia_without_runc_starts_but_cri_fails_and_our_output_keeps_runc(tmp_path):
    trap = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
            '  runtime_type = "io.containerd.runc.v2"\n'
            '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
            '    BinaryName = "/usr/bin/nvidia-container-runtime"\n')
    config = str(tmp_path / "trap.toml")
    with open(config, "w") as handle:
        handle.write(trap)
    (tmp_path / "a").mkdir()
    runtime = Containerd(str(tmp_path / "a"), config)
    try:
        assert runtime.cri_status() not in ("ok", None)  # the trap itself, seen on this binary
    finally:
        runtime.stop()
    with pytest.raises(GpufleetError, match="no runc runtime"):
        cvalidate.validate_candidate(CONTAINERD, config, {config: trap})
    apply(config, str(tmp_path / "conf.d" / "99-nvidia.toml"), "in-place")
    assert "runc" in dump(config)["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
    (tmp_path / "b").mkdir()
    start_and_check(tmp_path / "b", config)


def test_missing_config_is_created_from_containerd_defaults(tmp_path):
    config = str(tmp_path / "etc" / "config.toml")
    result = apply(config, str(tmp_path / "etc" / "conf.d" / "99-nvidia.toml"), "drop-in")
    assert result["created_from"] == "containerd config default"
    created = open(config).read()
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]' in created
    assert ctoml.plain(tomlkit.parse(created))["imports"][-1].endswith("/conf.d/*.toml")
    start_and_check(tmp_path, config)


def test_version_3_on_containerd_1_6_is_refused_as_ineffective(tmp_path):
    config = str(tmp_path / "config.toml")
    text = ('version = 3\n# v3 layout\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]\n'
            '  runtime_type = "io.containerd.runc.v2"\n')
    with open(config, "w") as handle:
        handle.write(text)
    with pytest.raises(GpufleetError, match="no nvidia runtime"):
        apply(config, str(tmp_path / "conf.d" / "99-nvidia.toml"), "in-place")
    assert open(config).read() == text


# --- the real module, through ansible --------------------------------------------------------------

def run_module(args, check=False, diff=False):
    cmd = ["localhost", "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=%s" % os.path.realpath(os.path.join(REPO, ".venv", "bin", "python")),
           "-m", "gpufleet.k8s.containerd_nvidia_runtime", "-a", json.dumps(args)]
    cmd += ["--check"] if check else []
    cmd += ["--diff"] if diff else []
    proc = ansible("ansible", *cmd, timeout=120, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, "collections"),
                   ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    data = json.loads(proc.stdout)
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]


def snapshot(path):
    return dict((os.path.relpath(os.path.join(d, f), path), open(os.path.join(d, f), "rb").read())
                for d, _dirs, files in os.walk(path) for f in files)


def test_module_check_mode_diff_then_apply_then_noop(tmp_path):
    etc = tmp_path / "etc"
    etc.mkdir()
    config = etc / "config.toml"
    config.write_text(USER[2])
    args = {"config_path": str(config), "dropin_path": str(etc / "conf.d" / "99-nvidia.toml"), "enable_cdi": True}
    before = snapshot(str(etc))
    checked = run_module(args, check=True, diff=True)
    assert checked["changed"] is True and checked["validated"] is True
    assert snapshot(str(etc)) == before
    assert any("imports" in d["after"] for d in checked["diff"])
    done = run_module(args)
    assert done["changed"] is True
    assert sorted(done["files"]) == sorted([str(config), str(etc / "conf.d" / "99-nvidia.toml")])
    assert (etc / "config.toml.gpufleet-backup").read_text() == USER[2]
    assert {"path": str(config), "backup": str(config) + ".gpufleet-backup", "existed": True} in done["rollback"]
    # containerd 1.6 has no CDI: the key is written (for a later 1.7+) and the module says it is ignored
    assert "enable_cdi = true" in (etc / "conf.d" / "99-nvidia.toml").read_text()
    assert "enable_cdi" not in dump(str(config))["plugins"]["io.containerd.grpc.v1.cri"]
    assert any("ignores it (CDI needs containerd >= 1.7)" in w for w in done["warnings"])
    again = run_module(args)
    assert again["changed"] is False and again["files"] == []


def test_module_refuses_a_broken_candidate_and_leaves_the_live_file(tmp_path):
    etc = tmp_path / "etc"
    etc.mkdir()
    broken = USER[2].replace("version = 2\n", 'version = 2\noom_score = "high"  # wrong type\n')
    (etc / "config.toml").write_text(broken)
    before = snapshot(str(etc))
    result = run_module({"config_path": str(etc / "config.toml"), "dropin_path": str(etc / "conf.d" / "99-nvidia.toml")})
    assert result["failed"] is True
    assert "containerd refused the candidate config (live file left untouched)" in result["msg"]
    assert "Can't convert high(string) to int" in result["msg"]
    assert snapshot(str(etc)) == before


def test_module_refuses_an_unknown_preset_before_any_change(tmp_path):
    result = run_module({"preset": "docker", "config_path": str(tmp_path / "config.toml")})
    assert result["failed"] is True
    assert "preset: 'docker' is not a known runtime preset; use one of: containerd, crio, k0s, k3s, microk8s, rke2" in result["msg"]
    assert os.listdir(str(tmp_path)) == []


# --- generated configs through the real binary ------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from containerd_configs import user_configs  # noqa: E402


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(user_configs().filter(lambda c: c[0] in (1, 2)), st.sampled_from(["in-place", "drop-in"]), st.booleans())
def test_generated_configs_are_accepted_by_containerd_with_nvidia_effective(tmp_path, config, mode, set_default):
    """Every generated v1/v2 user config, once edited, passes the real `config dump` with
    nvidia, runc and every user mirror and runtime effective."""
    version, text = config
    if mode == "in-place" and tomlkit.dumps(tomlkit.parse(text)) != text:
        mode = "drop-in"  # in-place refuses such files (unit-tested); drop-in handles them
    base = pathlib.Path(tempfile.mkdtemp(dir=str(tmp_path)))
    root = str(base / "config.toml")
    with open(root, "w") as handle:
        handle.write(text.replace("/etc/containerd/site.d/*.toml", str(base / "site.d" / "*.toml")))
    result = cplan.plan("containerd", mode, root, str(base / "conf.d" / "99-nvidia.toml"),
                     set_as_default=set_default, containerd_binary=CONTAINERD)
    candidate = dict((p, n) for p, (_o, n) in result["files"].items())
    effective = ctoml.plain(tomlkit.parse(cvalidate.validate_candidate(CONTAINERD, root, candidate)))
    cri = effective["plugins"]["io.containerd.grpc.v1.cri"]
    user = ctoml.plain(tomlkit.parse(text))
    for key in ctoml.cri_path(version):
        user = user.get(key, {})
    for name in (user.get("containerd", {}).get("runtimes") or {}):
        assert cri["containerd"]["runtimes"][name]["runtime_type"] == user["containerd"]["runtimes"][name]["runtime_type"]
    for host, mirror in ((user.get("registry") or {}).get("mirrors") or {}).items():
        assert cri["registry"]["mirrors"][host]["endpoint"] == mirror["endpoint"]
    assert (cri["containerd"]["default_runtime_name"] == "nvidia") == set_default


def test_module_says_when_it_could_not_validate(tmp_path):
    result = run_module({"config_path": str(tmp_path / "config.toml"), "dropin_path": str(tmp_path / "conf.d" / "n.toml"),
                         "containerd_binary": str(tmp_path / "no-containerd"), "config_version": 2})
    assert result["changed"] is True and result["validated"] is False
    assert result["created_from"] == "built-in default (version 2)"
    assert any("not validated with containerd" in w and "binary not found" in w for w in result["warnings"])
    # what it wrote is still accepted by the real binary, runc included
    runtimes = dump(str(tmp_path / "config.toml"))["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
    assert {"runc", "nvidia"} <= set(runtimes)
