"""containerd_config, mode in-place: a file the root config imports is applied after the root file, so it can
override what gpufleet writes into the root (found by tests/integration/test_nvidia_ctk_contract.py). Before
containerd 2.1 an imported file that has the CRI table replaces it whole (the nvidia runtime is gone); from 2.1
its keys win (a default_runtime_name of its own keeps runc the default). The edit is refused naming the file,
with or without a containerd binary to validate the candidate, instead of reporting a change that does not
take effect."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_plan as cplan
from ansible_collections.gpufleet.k8s.plugins.module_utils.runtime import containerd_toml as ctoml
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError

ROOT = "/etc/containerd/config.toml"
SITE = "/etc/containerd/site.d/10-site.toml"
CRI = {2: '"io.containerd.grpc.v1.cri"', 3: '"io.containerd.cri.v1.runtime"'}
USER = """version = %(v)d
imports = ["/etc/containerd/site.d/*.toml"]

[plugins.%(cri)s.containerd]
  default_runtime_name = "runc"
  [plugins.%(cri)s.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
"""
SITE_DEFAULT = """version = %(v)d
[plugins.%(cri)s.containerd]
  default_runtime_name = "runc"
"""
SITE_CDI_OFF = """version = %(v)d
[plugins.%(cri)s]
  enable_cdi = false
"""
SITE_NVIDIA = """version = %(v)d
[plugins.%(cri)s.containerd.runtimes.nvidia.options]
  BinaryName = "/opt/old/nvidia-container-runtime"
"""
SITE_OTHER = """version = %(v)d
[plugins."io.containerd.snapshotter.v1.overlayfs"]
  mount_options = ["nodev"]
[metrics]
  address = "127.0.0.1:1338"
"""


def text(template, version):
    return template % dict(v=version, cri=CRI[version])


def plan(version, site, carry, **settings):
    return ctoml.plan_containerd(text(USER, version), ROOT, "in-place", other_dropins=[(SITE, text(site, version))],
                                 carry_cri_table=carry, **settings)


@pytest.mark.parametrize("version", [2, 3])
def test_before_2_1_an_import_with_the_cri_table_replaces_the_edit(version):
    with pytest.raises(GpufleetError, match=r"10-site\.toml.*(?s:.*)mode drop-in"):
        plan(version, SITE_DEFAULT, carry=True)


@pytest.mark.parametrize("site, settings, key", [
    (SITE_DEFAULT, dict(set_as_default=True), "default_runtime_name"),
    (SITE_CDI_OFF, dict(enable_cdi=True), "enable_cdi"),
    (SITE_NVIDIA, dict(), "BinaryName"),
], ids=["default-runtime", "cdi", "binary"])
def test_from_2_1_an_import_overriding_our_keys_is_refused(site, settings, key):
    with pytest.raises(GpufleetError, match=r"10-site\.toml.*%s" % key):
        plan(3, site, carry=False, **settings)


@pytest.mark.parametrize("site, settings", [
    (SITE_DEFAULT, dict(set_as_default=False)),   # runc stays the default: the import agrees
    (SITE_CDI_OFF, dict(enable_cdi=False)),       # CDI not asked for
    (SITE_OTHER, dict(set_as_default=True, enable_cdi=True)),  # other plugins and keys only
], ids=["same-default", "cdi-not-asked", "other-plugins"])
def test_from_2_1_an_import_that_leaves_our_keys_alone_is_fine(site, settings):
    result = plan(3, site, carry=False, **settings)
    assert list(result["files"]) == [ROOT]


def test_an_import_without_the_cri_table_is_fine_before_2_1_too():
    assert list(plan(2, SITE_OTHER, carry=True, set_as_default=True)["files"]) == [ROOT]


def test_module_entry_point_reads_the_imports_in_place_too(tmp_path):
    site = tmp_path / "site.d"
    site.mkdir()
    (site / "10-site.toml").write_text(text(SITE_DEFAULT, 2))
    root = tmp_path / "config.toml"
    root.write_text(text(USER, 2).replace("/etc/containerd/site.d", str(site)))
    with pytest.raises(GpufleetError, match="10-site.toml"):
        cplan.plan("containerd", "in-place", config_path=str(root), dropin_path=str(tmp_path / "conf.d" / "99.toml"),
                   set_as_default=True, containerd_binary=str(tmp_path / "no-containerd"))
