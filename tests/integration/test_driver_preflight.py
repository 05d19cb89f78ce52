"""Bad driver input stops the real preflight playbook, naming the variable, before anything is written."""
import os

import pytest

from ansible_run import run_site as render
from frozen import TODAY, TODAY_VARS
from systemd_node import DEBIAN12_DRIVER

R535 = DEBIAN12_DRIVER   # a real R535 driver version (the branch's end of life is what is checked)


def run_site(build_dir, *extra):
    """site.yml on the example inventory on the frozen date (TODAY_VARS)."""
    return render(build_dir, *TODAY_VARS, *extra)


@pytest.mark.parametrize("extra,expected", [
    (["-e", "nvidia_driver_version=latest"], "nvidia_driver_version: 'latest' is not a driver version"),
    (["-e", '{"nvidia_driver_flavour": "open", "gpufleet_gpu_pools": [{"name": "old", "gpu_type": "v100"}]}'],
     "nvidia_driver_flavour: open kernel modules do not support volta GPUs"),
    (["-e", '{"nvidia_driver_version": "%s"}' % R535],
     "nvidia_driver_version: R535 (LTS) reached end of life on 2026-06-30"),
])
def test_site_stops_in_preflight(tmp_path, extra, expected):
    build = tmp_path / "example"
    rc, out = run_site(build, *extra)
    assert rc != 0
    assert expected in out, out[-3000:]
    assert "gpufleet preflight found" in out
    assert not build.exists() or not any(os.scandir(build))


def test_preflight_reads_the_frozen_day_not_the_wall_clock(tmp_path):
    """The same R535 inventory passes preflight on the last day of the branch's support."""
    assert TODAY > "2026-06-30"
    rc, out = run_site(tmp_path / "example", "-e", "__gpufleet_today=2026-06-30",
                       "-e", '{"nvidia_driver_version": "%s"}' % R535, "--tags", "preflight")
    assert rc == 0, out[-3000:]
    assert "reached end of life" not in out
