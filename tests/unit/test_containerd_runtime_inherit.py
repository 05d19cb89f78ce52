"""containerd_config: the nvidia runtime inherits every setting of the runtime it copies (the default runtime,
normally runc), as `nvidia-ctk runtime configure` does, not only runtime_type and options. Found by
tests/integration/test_nvidia_ctk_contract.py on a Kubespray-style config: runc's base_runtime_spec (the site's
base OCI spec, rlimits) was not copied, so with nvidia as the default runtime (the role's default) every pod lost
it. BinaryName stays nvidia's; keys the nvidia runtime already has are the user's and stay."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor import tomlkit
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_toml as ctoml

ROOT = "/etc/containerd/config.toml"
DROPIN = "/etc/containerd/conf.d/99-nvidia.toml"
RUNC = {"runtime_type": "io.containerd.runc.v2", "runtime_engine": "", "runtime_root": "",
        "base_runtime_spec": "/etc/containerd/cri-base.json", "privileged_without_host_devices": True,
        "pod_annotations": ["io.kubernetes.cri-o.Devices"], "snapshotter": "overlayfs"}


def config(version, nvidia=None):
    cri = ".".join('"%s"' % k if "." in k else k for k in ctoml.cri_path(version))
    lines = ["version = %d" % version] if version > 1 else []
    lines.append("[%s.containerd]" % cri)
    lines.append('  default_runtime_name = "runc"')
    lines.append("  [%s.containerd.runtimes.runc]" % cri)
    lines.extend("    %s = %s" % (k, tomlkit.dumps({"x": v}).split("=", 1)[1].strip()) for k, v in RUNC.items())
    lines.append("    [%s.containerd.runtimes.runc.options]" % cri)
    lines.append("      SystemdCgroup = true")
    lines.append('      BinaryName = "/usr/local/bin/runc"')
    for key, value in (nvidia or {}).items():
        if key == list(nvidia)[0]:
            lines.append("  [%s.containerd.runtimes.nvidia]" % cri)
        lines.append("    %s = %s" % (key, tomlkit.dumps({"x": value}).split("=", 1)[1].strip()))
    return "\n".join(lines) + "\n"


def nvidia_of(text, version):
    return ctoml.plain(ctoml.get_in(tomlkit.parse(text),
                                    ctoml.cri_path(version) + ("containerd", "runtimes", "nvidia")))


@pytest.mark.parametrize("mode", ["in-place", "drop-in"])
@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_nvidia_inherits_every_key_of_runc(version, mode):
    if version == 1 and mode == "drop-in":
        pytest.skip("version 1 has no imports")
    result = ctoml.plan_containerd(config(version), ROOT, mode, dropin_path=DROPIN, set_as_default=True)
    path = ROOT if mode == "in-place" else DROPIN
    nvidia = nvidia_of(result["files"][path][1], version)
    assert nvidia == dict(RUNC, options={"SystemdCgroup": True, "BinaryName": "/usr/bin/nvidia-container-runtime"})
    # idempotent
    again = dict((p, new) for p, (_old, new) in result["files"].items())
    second = ctoml.plan_containerd(again[ROOT] if ROOT in again else config(version), ROOT, mode, dropin_path=DROPIN,
                                   dropin_text=again.get(DROPIN), set_as_default=True)
    assert second["files"] == {}


def test_an_existing_nvidia_runtime_gets_the_missing_keys_and_keeps_its_own():
    text = config(2, nvidia={"runtime_type": "io.containerd.runc.v2", "privileged_without_host_devices": False})
    result = ctoml.plan_containerd(text, ROOT, "in-place")
    nvidia = nvidia_of(result["files"][ROOT][1], 2)
    assert nvidia["base_runtime_spec"] == "/etc/containerd/cri-base.json"
    assert nvidia["privileged_without_host_devices"] is False  # the user's, not runc's
    assert result["actions"] == ["updated runtime nvidia"]
