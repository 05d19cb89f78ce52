"""Driver compatibility: version format, CUDA ranges, end of life, flavour per architecture, distros.

Bad inputs go through the real preflight (run_preflight) and must name their variable.
"""
import copy
import datetime

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_compat import defaults as driver_defaults
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_compat import (
    branch_status, parse_version, resolve_flavour, validate_driver, version_satisfies)
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from frozen import TODAY

BASE = {"platform": "kubeadm", "cluster_name": "c1", "addons_mode": "standalone", "apply": False,
        "pools": [{"name": "train", "gpu_type": "a100-80gb"}, {"name": "infer", "gpu_type": "l4"}], "extra": {}}
V100 = [{"name": "old", "gpu_type": "v100"}]
B200 = [{"name": "new", "gpu_type": "b200"}]
T4 = [{"name": "t4", "gpu_type": "t4"}]
JAN_2026 = datetime.date(2026, 1, 15)
DEC_2026 = datetime.date(2026, 12, 1)
DEFAULTS = driver_defaults()


def preflight(extra=None, pools=None, platform="kubeadm", today=TODAY):
    params = copy.deepcopy(BASE)
    params["today"] = today
    params["extra"] = dict(extra or {})
    params["platform"] = platform
    if pools is not None:
        params["pools"] = copy.deepcopy(pools)
    return run_preflight(params)


def test_defaults_pass_preflight():
    errors, warnings, _plan = preflight()
    assert errors == [] and warnings == []


# (id, extra, pools, variable named, fragment of the message)
BAD = [
    ("version-word", {"nvidia_driver_version": "latest"}, None, "nvidia_driver_version", "'latest' is not a driver version"),
    ("version-R-prefix", {"nvidia_driver_version": "R580"}, None, "nvidia_driver_version", "not a driver version"),
    ("version-x", {"nvidia_driver_version": "580.x"}, None, "nvidia_driver_version", "not a driver version"),
    ("version-four-parts", {"nvidia_driver_version": "580.95.05.1"}, None, "nvidia_driver_version", "not a driver version"),
    ("version-space", {"nvidia_driver_version": " 580"}, None, "nvidia_driver_version", "not a driver version"),
    ("version-float", {"nvidia_driver_version": 535.5}, None, "nvidia_driver_version", "quote it"),
    ("version-empty", {"nvidia_driver_version": ""}, None, "nvidia_driver_version", "not a driver version"),
    ("version-bool", {"nvidia_driver_version": True}, None, "nvidia_driver_version", "not a driver version"),
    ("version-not-a-branch", {"nvidia_driver_version": "123"}, None, "nvidia_driver_version", "not an NVIDIA driver branch"),
    ("eol-535", {"nvidia_driver_version": "535.261.03"}, None, "nvidia_driver_version", "end of life"),
    ("eol-550", {"nvidia_driver_version": "550"}, None, "nvidia_driver_version", "end-of-life branch"),
    ("eol-470", {"nvidia_driver_version": "470.82.01"}, None, "nvidia_driver_version", "use one of: 580, 595"),
    ("flavour-unknown", {"nvidia_driver_flavour": "closed"}, None, "nvidia_driver_flavour", "use one of: auto, open, proprietary"),
    ("open-on-volta", {"nvidia_driver_flavour": "open"}, V100, "nvidia_driver_flavour", "do not support volta"),
    ("proprietary-on-blackwell", {"nvidia_driver_flavour": "proprietary"}, B200, "nvidia_driver_flavour",
     "blackwell GPUs need the open kernel modules"),
    ("595-on-volta", {"nvidia_driver_version": "595"}, V100, "nvidia_driver_version", "R580 is their last branch"),
    ("old-branch-on-blackwell", {"nvidia_driver_version": "535", "gpufleet_allow_eol_driver": True}, B200,
     "nvidia_driver_version", "does not support blackwell"),
    # GB200 (PCI ID 0x2941) first appears in R570's list of GPUs the open modules support
    ("old-branch-on-gb200", {"nvidia_driver_version": "535", "gpufleet_allow_eol_driver": True},
     [{"name": "nvl", "gpu_type": "gb200"}], "nvidia_driver_version", "does not support blackwell"),
    ("proprietary-on-gb200", {"nvidia_driver_flavour": "proprietary"}, [{"name": "nvl", "gpu_type": "gb200"}],
     "nvidia_driver_flavour", "blackwell GPUs need the open kernel modules"),
    ("cuda13-on-570", {"nvidia_driver_version": "570", "gpufleet_allow_eol_driver": True,
                       "nvidia_driver_cuda_version": "13.0"}, None, "nvidia_driver_cuda_version", "needs a driver >= 580"),
    ("cuda12-on-470", {"nvidia_driver_version": "470", "gpufleet_allow_eol_driver": True,
                       "nvidia_driver_cuda_version": "12.4"}, None, "nvidia_driver_cuda_version", "needs a driver >= 525"),
    ("cuda-format", {"nvidia_driver_cuda_version": "12"}, None, "nvidia_driver_cuda_version", "not a CUDA version"),
    ("cuda-float", {"nvidia_driver_cuda_version": 12.4}, None, "nvidia_driver_cuda_version", "not a CUDA version"),
    ("cuda-unknown-major", {"nvidia_driver_cuda_version": "10.2"}, None, "nvidia_driver_cuda_version", "use one of: 11.x, 12.x, 13.x"),
    ("source-unknown", {"nvidia_driver_source": "runfile"}, None, "nvidia_driver_source", "use one of: distribution, nvidia"),
    ("distro-unsupported", {"nvidia_driver_node_distros": ["debian-11"]}, None, "nvidia_driver_node_distros[0]",
     "not a supported node OS"),
    ("distro-not-list", {"nvidia_driver_node_distros": "debian-12"}, None, "nvidia_driver_node_distros", "must be a list"),
    ("distribution-on-rhel", {"nvidia_driver_source": "distribution", "nvidia_driver_node_distros": ["rocky-9"]}, None,
     "nvidia_driver_source", "rocky-9 does not ship the NVIDIA driver"),
    ("distribution-branch-debian12", {"nvidia_driver_source": "distribution", "nvidia_driver_node_distros": ["debian-12"]},
     None, "nvidia_driver_version", "debian-12 ships driver branch(es) 535, not R580"),
    ("allow-eol-string", {"gpufleet_allow_eol_driver": "yes"}, None, "gpufleet_allow_eol_driver", "not a boolean"),
    ("allow-reboot-string", {"gpufleet_allow_reboot": "true"}, None, "gpufleet_allow_reboot", "not a boolean"),
    ("mok-key-only", {"nvidia_driver_mok_key": "/root/mok.key"}, None, "nvidia_driver_mok_cert", "needs both"),
    ("mok-relative", {"nvidia_driver_mok_key": "mok.key", "nvidia_driver_mok_cert": "/root/mok.der"}, None,
     "nvidia_driver_mok_key", "absolute path"),
    ("module-params-list", {"nvidia_driver_module_params": ["NVreg_X=1"]}, None, "nvidia_driver_module_params",
     "must map nvidia module parameter names"),
]


@pytest.mark.parametrize("extra,pools,var,fragment", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_fails_in_preflight_naming_the_variable(extra, pools, var, fragment):
    errors, _warnings, _plan = preflight(extra, pools)
    matching = [e for e in errors if e.startswith(var + ": ")]
    assert matching, "no error for %s in %s" % (var, errors)
    assert any(fragment in e for e in matching), matching
    assert all("use one of" in e for e in matching), matching


def test_at_least_fifteen_bad_inputs():
    assert len(BAD) >= 15


def test_eol_branch_is_a_warning_when_allowed():
    errors, warnings, _plan = preflight({"nvidia_driver_version": "535.261.03", "gpufleet_allow_eol_driver": True})
    assert errors == []
    assert warnings == ["nvidia_driver_version: R535 (LTS) reached end of life on 2026-06-30; "
                        "allowed by gpufleet_allow_eol_driver"]


@pytest.mark.parametrize("today,errors", [
    ("2026-06-30", []),
    ("2026-07-01", ["nvidia_driver_version: R535 (LTS) reached end of life on 2026-06-30"]),
    ("2026-13-01", ["today: '2026-13-01' is not a date; use YYYY-MM-DD (empty: the controller's clock)"]),
    ("yesterday", ["today: 'yesterday' is not a date; use YYYY-MM-DD (empty: the controller's clock)"]),
])
def test_preflight_judges_end_of_life_on_the_day_it_is_given(today, errors):
    found, _warnings, _plan = preflight({"nvidia_driver_version": "535.261.03"}, today=today)
    assert [e.split(";")[0] if e.startswith("nvidia_driver_version") else e for e in found] == errors


EKS_POOLS = [{"name": "train", "gpu_type": "a100-80gb", "gpus_per_node": 8, "zones": ["us-east-1a"], "max_nodes": 2},
             {"name": "infer", "gpu_type": "l4", "zones": ["us-east-1a"], "max_nodes": 2}]


def test_driver_checks_skip_cloud_platforms_that_ship_the_driver():
    errors, _w, _p = preflight({}, pools=EKS_POOLS, platform="eks")
    assert errors == []
    errors, _w, _p = preflight({"nvidia_driver_version": "latest"}, pools=EKS_POOLS, platform="eks")
    assert errors and errors[0].startswith("nvidia_driver_version: ")


@pytest.mark.parametrize("branch,today,status", [
    ("535", JAN_2026, "supported"), ("535", datetime.date(2026, 6, 30), "supported"),
    ("535", datetime.date(2026, 7, 1), "eol"), ("570", JAN_2026, "supported"),
    ("570", datetime.date(2026, 3, 1), "eol"), ("580", DEC_2026, "supported"),
    ("580", datetime.date(2028, 9, 1), "eol"), ("595", DEC_2026, "supported"),
    ("550", JAN_2026, "eol"), ("470", JAN_2026, "eol"), ("600", DEC_2026, "unknown-newer"),
    ("536", DEC_2026, "unknown"),
])
def test_branch_status_relative_to_today(branch, today, status):
    assert branch_status(branch, today)[0] == status


def test_before_their_end_dates_535_and_570_pass():
    for version in ("535.261.03", "570.172.08"):
        values = dict(DEFAULTS, nvidia_driver_version=version)
        problems = validate_driver(values, ["ampere"], today=JAN_2026)
        assert (problems.errors, problems.warnings) == ([], [])


# version, cuda, today, errors?, warnings?
CUDA = [
    ("580.95.05", "13.0", DEC_2026, False, False),
    ("580.65.06", "13.0", DEC_2026, False, False),
    ("580.60.01", "13.0", DEC_2026, False, True),    # below 13.0 GA driver: minor-version compatibility
    ("580", "13.1", DEC_2026, False, True),         # 13.1's own driver is 590.44.01: minor-version compatibility
    ("595", "13.1", DEC_2026, False, False),
    ("580", "13.2", DEC_2026, False, True),         # 13.2's own driver is 595.45.04
    ("580", "13.4", DEC_2026, True, False),         # newer than the table: unknown, refused
    ("595", "13.3", DEC_2026, False, True),         # 13.3's own driver is 610.43.02: minor-version compatibility
    ("595", "14.0", DEC_2026, True, False),         # no such CUDA major
    ("570.26", "12.8", JAN_2026, False, False),
    ("570", "12.8", JAN_2026, False, False),
    ("550.54.14", "12.4", JAN_2026, True, False),     # R550 is end of life: error without the flag
    ("535.54.03", "12.2", JAN_2026, False, False),
    ("535.261.03", "12.4", JAN_2026, False, True),    # 12.4 wants 550.54.14
    ("535", "12.8", JAN_2026, False, True),
    ("535", "13.0", JAN_2026, True, False),
    ("595", "13.2", DEC_2026, False, False),
    # Issue 15: no upper bound. Newer drivers run older CUDA (measured: CUDA 12.4 on an H200 with 580.159.04).
    ("580.159.04", "12.4", DEC_2026, False, False),
    ("580", "12.8", DEC_2026, False, False),
    ("595", "12.4", DEC_2026, False, False),
    ("580", "11.8", DEC_2026, False, False),
    ("535", "11.8", JAN_2026, False, False),
    ("470", "11.4", JAN_2026, True, False),           # only because R470 is end of life
    ("450.80.02", "12.0", JAN_2026, True, False),     # below 12.x's lowest driver (525)
]


@pytest.mark.parametrize("version,cuda", [("580.159.04", "12.4"), ("595", "11.8"), ("580", "12.0")])
def test_newer_driver_runs_older_cuda_without_any_problem(version, cuda):
    """Issue 15: CUDA_MAJOR_RANGES refused CUDA 12.x with drivers >= 580; only lower bounds hold."""
    values = dict(DEFAULTS, nvidia_driver_version=version, nvidia_driver_cuda_version=cuda)
    problems = validate_driver(values, ["hopper"], today=DEC_2026)
    assert (problems.errors, problems.warnings) == ([], [])


def test_below_the_release_ga_driver_is_a_warning_naming_the_ga_driver():
    values = dict(DEFAULTS, nvidia_driver_version="535.261.03", nvidia_driver_cuda_version="12.4")
    problems = validate_driver(values, ["hopper"], today=JAN_2026)
    assert problems.errors == []
    assert problems.warnings == ["nvidia_driver_cuda_version: CUDA 12.4's own driver is 550.54.14 or newer; "
                                 "535.261.03 runs it only under minor-version compatibility (no PTX JIT of newer code)"]


@pytest.mark.parametrize("version,cuda,today,has_error,has_warning", CUDA)
def test_cuda_driver_matrix(version, cuda, today, has_error, has_warning):
    values = dict(DEFAULTS, nvidia_driver_version=version, nvidia_driver_cuda_version=cuda)
    problems = validate_driver(values, ["hopper"], today=today)
    assert bool(problems.errors) == has_error, problems.errors
    assert bool(problems.warnings) == has_warning, problems.warnings


def test_a_cuda_version_newer_than_the_table_is_refused_naming_the_newest_known():
    """Issue 26: a CUDA newer than the table used to pass silently (judged by 13.0's row); the table
    ends at 13.3 (issue 30 item 7 added it)."""
    values = dict(DEFAULTS, nvidia_driver_version="595", nvidia_driver_cuda_version="13.4")
    problems = validate_driver(values, ["hopper"], today=DEC_2026)
    assert problems.errors == [
        "nvidia_driver_cuda_version: CUDA 13.4 is unknown to gpufleet: its driver table ends at CUDA 13.3 (driver "
        "610.43.02), so the driver CUDA 13.4 needs cannot be checked; use one of: a CUDA version up to 13.3, \"\" "
        "(no CUDA check)"]
    values["nvidia_driver_cuda_version"] = "13.3"
    assert validate_driver(values, ["hopper"], today=DEC_2026).errors == []


@pytest.mark.parametrize("value,branch,exact", [
    ("580", "580", None), (580, "580", None), ("580.95.05", "580", "580.95.05"), ("570.26", "570", "570.26"),
    ("535.261.03", "535", "535.261.03"),
])
def test_parse_version_good(value, branch, exact):
    parsed = parse_version(value)
    assert (parsed["branch"], parsed["exact"]) == (branch, exact)


@pytest.mark.parametrize("value", ["58", "5800", "580.9", "580.95.5", "580.95.05-1", "v580", "580.", None, [], 580.95])
def test_parse_version_refuses(value):
    with pytest.raises(ValueError):
        parse_version(value)


@pytest.mark.parametrize("installed,requested,ok", [
    ("535.261.03", "535", True), ("535.261.03", "535.261.03", True), ("535.309.01", "535.261.03", False),
    ("550.163.01", "535", False), ("garbage", "535", False), ("580.95.05", "bad", False),
])
def test_version_satisfies(installed, requested, ok):
    assert version_satisfies(installed, requested) is ok


@pytest.mark.parametrize("flavour,archs,grace,expected", [
    ("auto", ["hopper"], False, "open"), ("auto", ["turing"], False, "open"), ("auto", ["pascal"], False, "proprietary"),
    ("auto", ["volta", "ampere"], False, "proprietary"), ("auto", ["blackwell"], False, "open"),
    ("auto", [], True, "open"), ("auto", [], False, "proprietary"), ("open", ["ampere"], False, "open"),
    ("proprietary", ["ampere"], False, "proprietary"),
])
def test_resolve_flavour(flavour, archs, grace, expected):
    assert resolve_flavour(flavour, archs, grace) == expected


def test_grace_hopper_needs_open():
    values = dict(DEFAULTS, nvidia_driver_flavour="proprietary")
    problems = validate_driver(values, ["hopper"], grace_hopper=True, today=DEC_2026)
    assert problems.errors == ["nvidia_driver_flavour: grace-hopper GPUs need the open kernel modules; "
                               "use one of: open, auto"]


def test_prefix_names_the_role_context():
    problems = validate_driver(dict(DEFAULTS, nvidia_driver_version="x"), prefix="host1: ", today=DEC_2026)
    assert problems.errors[0].startswith("host1: nvidia_driver_version: ")


def test_t4_with_open_flavour_is_fine():
    errors, _w, _p = preflight({"nvidia_driver_flavour": "open"}, T4)
    assert errors == []


@pytest.mark.parametrize("version,cuda,ga", [
    ("570", "12.9", "575.51.03"),         # issue 39: no 12.9 row, judged by 12.8's 570.26: no verdict
    ("570.124.06", "12.9", "575.51.03"),
    ("550.54.14", "12.5", "555.42.02"),
    ("535.261.03", "12.3", "545.23.06"),
    ("525.60.13", "12.1", "530.30.02"),
])
def test_every_cuda_12_minor_is_judged_by_its_own_release_driver(version, cuda, ga):
    values = dict(DEFAULTS, nvidia_driver_version=version, nvidia_driver_cuda_version=cuda,
                  gpufleet_allow_eol_driver=True)
    problems = validate_driver(values, ["hopper"], today=JAN_2026)
    assert any(w.startswith("nvidia_driver_cuda_version: CUDA %s's own driver is %s or newer" % (cuda, ga))
               for w in problems.warnings), problems.warnings


def test_the_cuda_12_release_driver_itself_passes():
    values = dict(DEFAULTS, nvidia_driver_version="575.51.03", nvidia_driver_cuda_version="12.9",
                  gpufleet_allow_eol_driver=True)
    problems = validate_driver(values, ["hopper"], today=JAN_2026)
    assert not [w for w in problems.warnings if w.startswith("nvidia_driver_cuda_version:")], problems.warnings
