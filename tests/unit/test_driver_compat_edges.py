"""NVIDIA driver inputs (module_utils/node/driver_compat.py): what mutation testing (scripts/mutation.sh) showed
no test would notice. Valid inputs are accepted (a check that refused them would stop every install),
limits are checked on both sides of their edge (R580 the last branch for Volta and older, R570 the first for
Blackwell, end-of-life dates, the CUDA table), and every problem is reported with its variable, not the first.
validate_driver is what preflight and the nvidia_driver role both call."""
import datetime

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.node import driver_compat as dc
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems

DEFAULTS = dc.defaults()
DEC_2026 = datetime.date(2026, 12, 1)
JAN_2026 = datetime.date(2026, 1, 15)
PARAMS = ("must map nvidia module parameter names to string or integer values; use one of: "
          "{NVreg_PreserveVideoMemoryAllocations: 1}, {}")
MOK = "%r must be an absolute path on the node or empty; use one of: \"\", /var/lib/shim-signed/mok/MOK.priv"


def driver(extra=None, archs=(), distros=(), today=DEC_2026, grace_hopper=False, prefix=""):
    values = dict(DEFAULTS)
    values.update(extra or {})
    problems = dc.validate_driver(values, archs, distros, today=today, grace_hopper=grace_hopper, prefix=prefix)
    return problems.errors, problems.warnings


@pytest.mark.parametrize("extra,archs,distros,today", [
    ({}, (), (), DEC_2026),
    ({"nvidia_driver_mok_key": "/var/lib/mok/MOK.priv", "nvidia_driver_mok_cert": "/var/lib/mok/MOK.der"}, (), (),
     DEC_2026),
    ({"nvidia_driver_module_params": {"NVreg_PreserveVideoMemoryAllocations": 1, "_x9": "on", "NVreg_A": 0}}, (), (),
     DEC_2026),
    ({"nvidia_driver_flavour": "open"}, ("blackwell", "hopper"), (), DEC_2026),
    ({"nvidia_driver_flavour": "auto"}, ("blackwell", "volta"), (), DEC_2026),
    ({"nvidia_driver_flavour": "proprietary"}, ("volta", "pascal", "ampere"), (), DEC_2026),
    ({"nvidia_driver_version": "580.95.05"}, ("volta", "blackwell"), (), DEC_2026),    # R580: the edge for both
    ({"nvidia_driver_version": "570.26"}, ("blackwell",), (), JAN_2026),                # R570: Blackwell's first
    ({"nvidia_driver_version": 595}, ("hopper",), (), DEC_2026),
    ({"nvidia_driver_source": "distribution", "nvidia_driver_version": "580"}, (), ("ubuntu-22.04", "ubuntu-24.04"),
     DEC_2026),
    ({"nvidia_driver_source": "distribution", "nvidia_driver_version": "535.247.01"}, (), ("debian-12",),
     datetime.date(2026, 6, 30)),                                                    # the last day of R535
    ({"nvidia_driver_source": "nvidia"}, (), ["rocky-9", "amazon-2023", "debian-13", "almalinux-8"], DEC_2026),
    (dict((name, True) for name in dc.bool_vars()), (), (), DEC_2026),
    (dict((name, False) for name in dc.bool_vars()), (), (), DEC_2026),
    ({"nvidia_driver_cuda_version": "13.2", "nvidia_driver_version": "595.45.04"}, (), (), DEC_2026),
    ({"nvidia_driver_cuda_version": "12.8", "nvidia_driver_version": "570.26", "gpufleet_allow_eol_driver": False},
     (), (), JAN_2026),
    ({"nvidia_driver_cuda_version": "11.0"}, (), (), DEC_2026),
])
def test_valid_driver_inputs_are_accepted(extra, archs, distros, today):
    assert driver(extra, archs, distros, today) == ([], [])


def test_every_boolean_is_checked_and_named():
    errors, _warnings = driver(dict((name, "yes") for name in dc.bool_vars()))
    assert errors == ["%s: 'yes' is not a boolean; use one of: true, false" % name for name in dc.bool_vars()]
    assert set(dc.bool_vars()) >= {"gpufleet_allow_eol_driver", "gpufleet_allow_reboot", "nvidia_driver_persistence",
                                   "nvidia_driver_blacklist_nouveau", "nvidia_driver_hold_kernel",
                                   "nvidia_driver_replace_preinstalled"}
    assert "nvidia_driver_prepare_node" not in dc.bool_vars()  # k8s_syntax checks it (it takes yes/no)
    errors, _warnings = driver({"gpufleet_allow_eol_driver": None, "nvidia_driver_version": "550"})
    assert errors[0] == "gpufleet_allow_eol_driver: None is not a boolean; use one of: true, false"
    assert "set gpufleet_allow_eol_driver: true" in errors[1]  # a non-boolean does not allow end of life


def test_every_distro_problem_is_reported():
    errors, _warnings = driver({"nvidia_driver_source": "distribution"},
                               distros=["debian-11", "rocky-9", "debian-12", "ubuntu-24.04", "amazon-2023"])
    assert errors == [
        "nvidia_driver_node_distros[0]: 'debian-11' is not a supported node OS; use one of: almalinux-8, almalinux-9, "
        "amazon-2023, debian-12, debian-13, rhel-8, rhel-9, rocky-8, rocky-9, ubuntu-22.04, ubuntu-24.04",
        "nvidia_driver_source: rocky-9 does not ship the NVIDIA driver; use one of: nvidia",
        "nvidia_driver_version: debian-12 ships driver branch(es) 535, not R580; use one of: 535, or set "
        "nvidia_driver_source: nvidia",
        "nvidia_driver_source: amazon-2023 does not ship the NVIDIA driver; use one of: nvidia",
    ]
    # a bad version is reported once, not again per distro
    errors, _warnings = driver({"nvidia_driver_source": "distribution", "nvidia_driver_version": "x"},
                               distros=["debian-12"])
    assert [e.split(":")[0] for e in errors] == ["nvidia_driver_version"]


def test_every_input_problem_is_reported_at_once():
    errors, warnings = driver({"nvidia_driver_flavour": "x", "nvidia_driver_source": "y",
                               "nvidia_driver_version": "abc",
                               "nvidia_driver_cuda_version": "9", "nvidia_driver_mok_key": "k",
                               "nvidia_driver_mok_cert": None, "nvidia_driver_module_params": "x",
                               "nvidia_driver_node_distros": "debian-12"},
                              distros="debian-12")
    assert errors == [
        "nvidia_driver_flavour: 'x' is not a kernel-module flavour; use one of: auto, open, proprietary",
        "nvidia_driver_source: 'y' is not a driver source; use one of: distribution, nvidia",
        "nvidia_driver_version: 'abc' is not a driver version; use one of: a branch such as \"580\", an exact "
        "version such as \"580.95.05\"",
        "nvidia_driver_cuda_version: '9' is not a CUDA version; use one of: \"\" (none), \"12.4\", \"13.0\" (quoted)",
        "nvidia_driver_node_distros: must be a list of node OSes; use one of: almalinux-8, almalinux-9, amazon-2023, "
        "debian-12, debian-13, rhel-8, rhel-9, rocky-8, rocky-9, ubuntu-22.04, ubuntu-24.04",
        "nvidia_driver_mok_key: " + MOK % "k",
        "nvidia_driver_mok_cert: " + MOK % None,
        "nvidia_driver_module_params: " + PARAMS,
    ] and warnings == []


@pytest.mark.parametrize("params", [
    {"1bad": 1}, {"a": True}, {"a": 1.5}, "x", {3: 1}, {"a-b": 1}, None, {"a": None}, {"": 1},
])
def test_module_params_refused(params):
    assert driver({"nvidia_driver_module_params": params}) == (["nvidia_driver_module_params: " + PARAMS], [])


@pytest.mark.parametrize("key,cert,expect", [
    ("", "/c", ["nvidia_driver_mok_key: Secure Boot signing needs both nvidia_driver_mok_key and "
                "nvidia_driver_mok_cert; use one of: both set, both empty"]),
    ("/k", "", ["nvidia_driver_mok_cert: Secure Boot signing needs both nvidia_driver_mok_key and "
                "nvidia_driver_mok_cert; use one of: both set, both empty"]),
    ("/k", "c", ["nvidia_driver_mok_cert: " + MOK % "c"]),
    (1, "", ["nvidia_driver_mok_key: " + MOK % 1]),
])
def test_mok_key_and_cert(key, cert, expect):
    assert driver({"nvidia_driver_mok_key": key, "nvidia_driver_mok_cert": cert}) == (expect, [])


@pytest.mark.parametrize("version,archs,today,expect", [
    ("580", ("maxwell",), DEC_2026, []),
    ("595", ("maxwell", "pascal"), DEC_2026,
     ["nvidia_driver_version: R595 does not support maxwell/pascal GPUs (R580 is their last branch); use one of: "
      "580 or older"]),
    ("570", ("blackwell",), JAN_2026, []),
    ("565", ("blackwell",), JAN_2026,
     ["nvidia_driver_version: R565 is an end-of-life branch; allowed by gpufleet_allow_eol_driver",
      "nvidia_driver_version: R565 does not support blackwell GPUs; use one of: 570 or newer"]),
    ("570", ("blackwell",), datetime.date(2026, 3, 1),
     ["nvidia_driver_version: R570 (production) reached end of life on 2026-02-28; allowed by "
      "gpufleet_allow_eol_driver"]),
])
def test_branch_edges_for_old_and_new_gpus(version, archs, today, expect):
    errors, warnings = driver({"nvidia_driver_version": version, "gpufleet_allow_eol_driver": True}, archs,
                              today=today)
    assert errors == [e for e in expect if "allowed by" not in e]
    assert warnings == [e for e in expect if "allowed by" in e]


@pytest.mark.parametrize("branch,today,expect", [
    ("535", datetime.date(2026, 6, 30), ("supported", None)),
    ("535", datetime.date(2026, 7, 1), ("eol", "R535 (LTS) reached end of life on 2026-06-30")),
    ("595", datetime.date(2040, 1, 1), ("supported", None)),
    ("575", JAN_2026, ("eol", "R575 is an end-of-life branch")),
    ("596", JAN_2026, ("unknown-newer", "R596 is newer than the branches gpufleet knows (up to R595); its CUDA and "
                                        "end-of-life rules are not checked")),
    ("590", JAN_2026, ("unknown", None)),
])
def test_branch_status_edges(branch, today, expect):
    assert dc.branch_status(branch, today) == expect


def test_unknown_and_eol_branches_name_the_supported_ones():
    assert driver({"nvidia_driver_version": "590"})[0] == [
        "nvidia_driver_version: R590 is not an NVIDIA driver branch gpufleet knows; use one of: 535, 570, 580, 595"]
    assert driver({"nvidia_driver_version": "600.10"}) == ([], [
        "nvidia_driver_version: R600 is newer than the branches gpufleet knows (up to R595); its CUDA and end-of-life "
        "rules are not checked"])
    assert driver({"nvidia_driver_version": "570"}, today=datetime.date(2026, 7, 1))[0] == [
        "nvidia_driver_version: R570 (production) reached end of life on 2026-02-28; use one of: 580, 595 "
        "(supported), or set gpufleet_allow_eol_driver: true"]


@pytest.mark.parametrize("version,cuda,today,errors,warnings", [
    ("595.45.04", "13.2", DEC_2026, [], []),
    ("595.45.03", "13.2", DEC_2026, [], ["nvidia_driver_cuda_version: CUDA 13.2's own driver is 595.45.04 or newer; "
                                         "595.45.03 runs it only under minor-version compatibility (no PTX JIT of "
                                         "newer code)"]),
    ("580", "13.1", DEC_2026, [], ["nvidia_driver_cuda_version: CUDA 13.1's own driver is 590.44.01 or newer; R580 "
                                   "runs it only under minor-version compatibility (no PTX JIT of newer code)"]),
    ("580", "13.0", DEC_2026, [], []),
    ("580.65.06", "13.0", DEC_2026, [], []),
    ("580.65.05", "13.0", DEC_2026, [], ["nvidia_driver_cuda_version: CUDA 13.0's own driver is 580.65.06 or newer; "
                                         "580.65.05 runs it only under minor-version compatibility (no PTX JIT of "
                                         "newer code)"]),
    ("580", "12.9", DEC_2026, [], []),
    ("570.26", "12.8", JAN_2026, [], []),
    ("580", "13.4", DEC_2026, ["nvidia_driver_cuda_version: CUDA 13.4 is unknown to gpufleet: its driver table ends "
                               "at CUDA 13.3 (driver 610.43.02), so the driver CUDA 13.4 needs cannot be checked; use "
                               "one of: a CUDA version up to 13.3, \"\" (no CUDA check)"], []),
    ("580", "14.0", DEC_2026, ["nvidia_driver_cuda_version: CUDA 14.0 is not supported by any driver gpufleet "
                               "installs; use one of: 11.x, 12.x, 13.x"], []),
    ("570.26", "13.0", JAN_2026, ["nvidia_driver_cuda_version: CUDA 13.0 needs a driver >= 580, but "
                                  "nvidia_driver_version is 570.26; use one of: a driver version >= 580 (newer drivers "
                                  "run older CUDA too), or a CUDA version R570 supports (11.x, 12.x)"], []),
    ("bad", "13.0", JAN_2026, ["nvidia_driver_version: 'bad' is not a driver version; use one of: a branch such as "
                               "\"580\", an exact version such as \"580.95.05\""], []),
    ("580", 13.0, DEC_2026, ["nvidia_driver_cuda_version: 13.0 is not a CUDA version; use one of: \"\" (none), "
                             "\"12.4\", \"13.0\" (quoted)"], []),
    ("580", None, DEC_2026, [], []),
])
def test_cuda_edges(version, cuda, today, errors, warnings):
    assert driver({"nvidia_driver_version": version, "nvidia_driver_cuda_version": cuda}, today=today) == \
        (errors, warnings)


def test_cuda_older_than_every_branch_names_none():
    errors, _warnings = driver({"nvidia_driver_version": "450", "gpufleet_allow_eol_driver": True,
                                "nvidia_driver_cuda_version": "12.0"})
    assert errors == ["nvidia_driver_cuda_version: CUDA 12.0 needs a driver >= 525, but nvidia_driver_version is R450; "
                      "use one of: a driver version >= 525 (newer drivers run older CUDA too), or a CUDA version R450 "
                      "supports (11.x)"]


def test_flavour_against_architectures_and_grace_hopper():
    assert driver({"nvidia_driver_flavour": "proprietary"}, grace_hopper=True)[0] == [
        "nvidia_driver_flavour: grace-hopper GPUs need the open kernel modules; use one of: open, auto"]
    assert driver({"nvidia_driver_flavour": "open"}, ("volta", "maxwell", "volta"))[0] == [
        "nvidia_driver_flavour: open kernel modules do not support maxwell/volta GPUs; use one of: proprietary, auto"]
    assert driver({"nvidia_driver_flavour": "open"}, ("not-an-arch",)) == ([], [])
    assert driver({"nvidia_driver_flavour": "x"}, ("volta", "blackwell"))[0] == [
        "nvidia_driver_flavour: 'x' is not a kernel-module flavour; use one of: auto, open, proprietary"]


def test_prefix_is_put_before_every_variable():
    errors, _warnings = driver({"nvidia_driver_version": "x", "nvidia_driver_flavour": "x", "nvidia_driver_source": "x",
                                "nvidia_driver_cuda_version": "x", "gpufleet_allow_reboot": "x",
                                "nvidia_driver_module_params": None, "nvidia_driver_mok_key": None},
                               distros=["x"], prefix="hostvars.")
    assert sorted(e.split(":")[0] for e in errors) == [
        "hostvars.gpufleet_allow_reboot", "hostvars.nvidia_driver_cuda_version", "hostvars.nvidia_driver_flavour",
        "hostvars.nvidia_driver_module_params", "hostvars.nvidia_driver_mok_key",
        "hostvars.nvidia_driver_node_distros[0]",
        "hostvars.nvidia_driver_source", "hostvars.nvidia_driver_version"]
    errors, _warnings = driver({"nvidia_driver_mok_key": "/k"}, prefix="p.")
    assert errors[0].startswith("p.nvidia_driver_mok_cert: ")
    errors, _warnings = driver({}, distros="debian-12", prefix="p.")
    assert errors[0].startswith("p.nvidia_driver_node_distros: ")


@pytest.mark.parametrize("value,expect", [
    (580, {"branch": "580", "exact": None, "parts": (580,)}),
    ("570.26", {"branch": "570", "exact": "570.26", "parts": (570, 26)}),
    ("535.261.03", {"branch": "535", "exact": "535.261.03", "parts": (535, 261, 3)}),
])
def test_parse_version_parts(value, expect):
    assert dc.parse_version(value) == expect


@pytest.mark.parametrize("value,message", [
    (None, "is not a driver version"), (False, "is not a driver version"), ([580], "is not a driver version"),
    (580.95, "is a number (580.95); quote it so no digits are lost, e.g. \"580.95.05\""),
    ("0580", "'0580' is not a driver version"), ("580.9", "'580.9' is not a driver version"),
    ("580.95.5", "'580.95.5' is not a driver version"), ("580.1234", "'580.1234' is not a driver version"),
])
def test_parse_version_messages(value, message):
    with pytest.raises(ValueError) as err:
        dc.parse_version(value)
    assert str(err.value) == message


@pytest.mark.parametrize("installed,requested,ok", [
    ("580.95.05", "580", True), ("580.95.05", "580.95.05", True), ("580.95.06", "580.95.05", False),
    ("570.26", "580", False), ("580.95.05", "x", False), ("x", "580", False), ("580", "580.95.05", False),
])
def test_version_satisfies_both_ways(installed, requested, ok):
    assert dc.version_satisfies(installed, requested) is ok


@pytest.mark.parametrize("flavour,archs,grace,expect", [
    ("auto", (), False, "proprietary"), ("auto", ("volta",), False, "proprietary"),
    ("auto", ("turing",), False, "open"),
    ("auto", ("volta", "hopper"), False, "proprietary"), ("auto", ("volta", "blackwell"), False, "open"),
    ("auto", (), True, "open"), ("auto", ("x",), False, "open"),
    ("proprietary", ("blackwell",), True, "proprietary"), ("open", (), False, "open"),
])
def test_resolve_flavour_table(flavour, archs, grace, expect):
    assert dc.resolve_flavour(flavour, archs, grace) == expect


def test_pool_architectures_once_each_in_order():
    plan = {"pools": [{"gpu_type": "b200"}, "x", {"gpu_type": "nope"}, {"gpu_type": "a100-80gb"}, {"gpu_type": "b200"},
                      {}]}
    assert dc.pool_architectures(plan) == ["blackwell", "ampere"]
    assert dc.pool_architectures({"pools": None}) == []


@pytest.mark.parametrize("value,expect", [
    ("2026-12-01", datetime.date(2026, 12, 1)), ("2026-13-01", None), ("2026-12", None), ("x-y-z", None),
    (None, None), ("2026-12-01-1", None),
])
def test_iso_date(value, expect):
    assert dc.iso_date(value) == expect


def run_check(extra, platform="kubeadm", today=None, pools=(), **kwargs):
    problems = Problems()
    params = {"extra": extra}
    if today is not None:
        params["today"] = today
    dc.check(params, {"platform": platform, "pools": list(pools)}, problems, **kwargs)
    return problems.errors, problems.warnings


def test_check_uses_the_given_day_and_skips_cloud_images():
    assert run_check({"nvidia_driver_version": "535"}, today="2026-06-30") == ([], [])
    assert run_check({"nvidia_driver_version": "535"}, today="2026-07-01")[0][0].startswith(
        "nvidia_driver_version: R535 (LTS) reached end of life on 2026-06-30")
    assert run_check({}, today="31.12.2026") == (
        ["today: '31.12.2026' is not a date; use YYYY-MM-DD (empty: the controller's clock)"], [])
    for platform in ("eks", "gke", "gke-autopilot"):
        assert run_check({"gpufleet_allow_reboot": "x"}, platform=platform) == ([], [])
        assert run_check({"nvidia_driver_version": "x"}, platform=platform)[0][0].startswith("nvidia_driver_version: ")
    assert run_check({"nvidia_driver_flavour": "proprietary"}, pools=[{"gpu_type": "b200"}])[0] == [
        "nvidia_driver_flavour: blackwell GPUs need the open kernel modules; use one of: open, auto"]
    assert run_check({"nvidia_driver_node_distros": None, "unrelated": 1}) == ([], [])


def test_check_given_a_day_ignores_the_params_day():
    problems = Problems()
    dc.check({"extra": {"nvidia_driver_version": "535"}, "today": "bad"}, {"platform": "kubeadm"}, problems,
             today=datetime.date(2026, 6, 1))
    assert problems.errors == [] and problems.warnings == []


def test_grace_hopper_is_off_unless_asked_for():
    assert dc.resolve_flavour("auto", ["volta"]) == "proprietary"
    assert dc.resolve_flavour("auto", []) == "proprietary"


def test_messages_list_every_architecture_and_shipped_branch():
    assert driver({"nvidia_driver_flavour": "proprietary"}, ("blackwell",), grace_hopper=True)[0] == [
        "nvidia_driver_flavour: blackwell/grace-hopper GPUs need the open kernel modules; use one of: open, auto"]
    assert driver({"nvidia_driver_source": "distribution", "nvidia_driver_version": "595"},
                  distros=["ubuntu-22.04"])[0] == [
        "nvidia_driver_version: ubuntu-22.04 ships driver branch(es) 535/550/570/575/580, not R595; use one of: 535, "
        "550, 570, 575, 580, or set nvidia_driver_source: nvidia"]


def test_a_branch_below_every_cuda_minimum_supports_none():
    errors, _warnings = driver({"nvidia_driver_version": "390", "nvidia_driver_cuda_version": "11.0"})
    assert errors == [
        "nvidia_driver_version: R390 is not an NVIDIA driver branch gpufleet knows; use one of: 535, 570, 580, 595",
        "nvidia_driver_cuda_version: CUDA 11.0 needs a driver >= 450, but nvidia_driver_version is R390; use one of: a "
        "driver version >= 450 (newer drivers run older CUDA too), or a CUDA version R390 supports (none)"]
