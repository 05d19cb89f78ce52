"""Property tests: generated user configs of each version keep every non-nvidia key and comment.

The generator writes configs the way people do: comments above and beside keys, indented or
flat tables, registry mirrors, extra runtimes, runc with or without options, top-level keys,
existing imports. Applying the edit must leave every original line in place (in order), the
parsed config minus gpufleet's keys equal to the original, and a second apply a no-op.
"""
import copy

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_toml as ctoml
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils._vendor import tomlkit
from containerd_configs import user_configs

ROOT = "/etc/containerd/config.toml"
DROPIN = "/etc/containerd/conf.d/99-nvidia.toml"


def strip_ours(data, version, had_default_runtime, default_name):
    data = copy.deepcopy(data)
    cri = data
    for key in ctoml.cri_path(version):
        cri = cri.get(key, {})
    ctd = cri.get("containerd", {})
    ctd.get("runtimes", {}).pop("nvidia", None)
    if not had_default_runtime:
        ctd.get("runtimes", {}).pop(default_name, None)
        if not ctd.get("runtimes"):
            ctd.pop("runtimes", None)
    cri.pop("enable_cdi", None)
    return data


def plain(text):
    return ctoml.plain(tomlkit.parse(text))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(user_configs(), st.sampled_from(["in-place", "drop-in"]), st.booleans(), st.booleans())
def test_apply_keeps_user_config_and_is_idempotent(config, mode, set_default, cdi):
    version, text = config
    before = plain(text)
    cri_before = before
    for key in ctoml.cri_path(version):
        cri_before = cri_before.get(key, {})
    default_name = cri_before.get("containerd", {}).get("default_runtime_name", "runc")
    had_default_runtime = default_name in cri_before.get("containerd", {}).get("runtimes", {})

    if mode == "in-place" and tomlkit.dumps(tomlkit.parse(text)) != text:
        # tomlkit re-indents some layouts (indented tables under implicit parents): in-place
        # must then refuse, untouched, and point at drop-in mode, which edits one line as text.
        with pytest.raises(GpufleetError, match="cannot write this file back byte-for-byte"):
            ctoml.plan_containerd(text, ROOT, mode, dropin_path=DROPIN, set_as_default=set_default, enable_cdi=cdi)
        mode = "drop-in"
    result = ctoml.plan_containerd(text, ROOT, mode, dropin_path=DROPIN, set_as_default=set_default, enable_cdi=cdi)
    new_root = result["files"].get(ROOT, (text, text))[1]

    # 1. every original line is still there, in order; only managed keys may be rewritten
    ctoml.check_preserved(text, new_root, ROOT)
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            assert line in new_root.splitlines()

    # 2. the parsed root minus gpufleet's keys equals the original
    after = plain(new_root)
    if mode == "drop-in":
        assert after.pop("imports") == before.pop("imports", []) + ["/etc/containerd/conf.d/*.toml"]
        assert after == before
        effective = plain(result["files"][DROPIN][1])
    else:
        effective = after
        stripped = strip_ours(after, version, had_default_runtime, default_name)
        cri_after = stripped
        for key in ctoml.cri_path(version):
            cri_after = cri_after[key]
        if set_default:
            cri_after["containerd"]["default_runtime_name"] = cri_before.get("containerd", {}).get("default_runtime_name")
            if cri_after["containerd"]["default_runtime_name"] is None:
                del cri_after["containerd"]["default_runtime_name"]
        assert stripped == before

    # 3. the effective config has nvidia, the default runtime, and inherited options
    cri = effective
    for key in ctoml.cri_path(version):
        cri = cri[key]
    runtimes = cri["containerd"]["runtimes"]
    source = runtimes[default_name] if default_name in runtimes else runtimes["runc"]
    assert "runc" in runtimes or default_name in runtimes
    assert runtimes["nvidia"]["runtime_type"] == source["runtime_type"]
    for key, value in (source.get("options") or {}).items():
        if key != "BinaryName":
            assert runtimes["nvidia"]["options"][key] == value
    assert runtimes["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    assert (cri["containerd"].get("default_runtime_name") == "nvidia") == set_default
    assert cri.get("enable_cdi", False) == cdi

    # 4. applying again is a no-op
    again = ctoml.plan_containerd(new_root, ROOT, mode, dropin_path=DROPIN,
                               dropin_text=result["files"].get(DROPIN, (None, None))[1],
                               set_as_default=set_default, enable_cdi=cdi)
    assert again["files"] == {}
