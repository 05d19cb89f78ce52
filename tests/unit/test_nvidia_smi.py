"""nvidia_gpu_info: one nvidia-smi -q -x call parsed, and the PCI bus read without a driver.

No GPU machine was available: the XML fixtures follow the documented format (see
tests/fixtures/nvidia-smi/README.md); the driver-not-loaded output and the container's PCI list
are real recordings from the Debian nvidia-smi package in a podman container.
"""
import json
import os
import sys

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_run import CHECKOUT_PATHS, ansible
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.nvidia_smi import (
    NvidiaSmiParseError, arch_for_device_id, classify_failure, gpu_info, loaded_modules, parse_smi_xml, scan_pci)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "nvidia-smi")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def make_sysfs(tmp_path, listing, drivers=None):
    """Materialise a ``bus vendor device class`` listing as a sysfs-like tree."""
    root = tmp_path / "devices"
    root.mkdir()
    for line in fixture(listing).splitlines():
        bus, vendor, device, pci_class = line.split()
        node = root / bus
        node.mkdir()
        (node / "vendor").write_text(vendor + "\n")
        (node / "device").write_text(device + "\n")
        (node / "class").write_text(pci_class + "\n")
        if drivers and bus in drivers:
            target = tmp_path / "drivers" / drivers[bus]
            target.mkdir(parents=True, exist_ok=True)
            (node / "driver").symlink_to(target)
    return str(root)


# fixture, driver, cuda, count, [(index, name, bus, arch, mem MiB, mig cur, mig pend, #mig, persist, ecc, temp, power, limit)]
XML_CASES = [
    ("h100-sxm-8x.xml", "570.172.08", "12.8", 8, [
        (0, "NVIDIA H100 80GB HBM3", "00000000:18:00.0", "hopper", 81559, "Disabled", "Disabled", 0, True,
         "Enabled", 29, 68.5, 700),
        (7, "NVIDIA H100 80GB HBM3", "00000000:DB:00.0", "hopper", 81559, "Disabled", "Disabled", 0, True,
         "Enabled", 32, 78.09, 700),
    ]),
    ("a100-mig.xml", "535.216.03", "12.2", 2, [
        (0, "NVIDIA A100-SXM4-40GB", "00000000:07:00.0", "ampere", 40960, "Enabled", "Enabled", 3, True,
         "Enabled", 33, 52.19, 400),
        (1, "NVIDIA A100-SXM4-40GB", "00000000:0F:00.0", "ampere", 40960, "Disabled", "Enabled", 0, True,
         "Enabled", 30, 55.64, 400),
    ]),
    ("t4.xml", "525.147.05", "12.0", 1, [
        (0, "Tesla T4", "00000000:00:1E.0", "turing", 15360, "Disabled", "Disabled", 0, False,
         "Enabled", 26, 13.98, 70),
    ]),
    # REAL recording (issue 15): one H200, driver 580.159.04, DTD v13 (power only as instant/average)
    ("h200-580-recorded.xml", "580.159.04", "13.0", 1, [
        (0, "NVIDIA H200", "00000000:00:06.0", "hopper", 143771, "Disabled", "Disabled", 0, True,
         "Enabled", 39, 82.38, 700),
    ]),
    ("l4.xml", "550.90.07", "12.4", 1, [
        (0, "NVIDIA L4", "00000000:00:03.0", "ada", 23034, "Disabled", "Disabled", 0, True,
         "Enabled", 44, 16.21, 72),
    ]),
]


@pytest.mark.parametrize("name,driver,cuda,count,gpus", XML_CASES, ids=[c[0] for c in XML_CASES])
def test_parse_recorded_format(name, driver, cuda, count, gpus):
    parsed = parse_smi_xml(fixture(name))
    assert (parsed["driver_version"], parsed["cuda_version"], parsed["attached_gpus"]) == (driver, cuda, count)
    assert len(parsed["gpus"]) == count
    assert [g["index"] for g in parsed["gpus"]] == list(range(count))
    assert len({g["uuid"] for g in parsed["gpus"]}) == count
    assert all(g["uuid"].startswith("GPU-") for g in parsed["gpus"])
    for idx, pname, bus, arch, mem, mig_cur, mig_pend, n_mig, persist, ecc, temp, power, limit in gpus:
        gpu = parsed["gpus"][idx]
        got = (gpu["name"], gpu["pci_bus_id"], gpu["architecture"], gpu["architecture_source"], gpu["memory_total_mib"],
               gpu["mig_mode_current"], gpu["mig_mode_pending"], len(gpu["mig_devices"]), gpu["persistence_mode"],
               gpu["ecc_mode_current"], gpu["temperature_c"], gpu["power_draw_w"], gpu["power_limit_w"])
        assert got == (pname, bus, arch, "table", mem, mig_cur, mig_pend, n_mig, persist, ecc, temp, power, limit)


def test_every_field_of_the_real_r580_h200_recording():
    """Issue 15: R580's XML (nvsmi_device_v13) has no power_draw element; every field is read from it."""
    parsed = parse_smi_xml(fixture("h200-580-recorded.xml"))
    assert (parsed["driver_version"], parsed["cuda_version"], parsed["attached_gpus"]) == ("580.159.04", "13.0", 1)
    assert parsed["gpus"] == [{
        "index": 0, "minor_number": 0, "uuid": "GPU-9d4eb449-e4d2-b47d-6500-8b3ffdbdb530",
        "name": "NVIDIA H200", "brand": "NVIDIA", "pci_bus_id": "00000000:00:06.0", "pci_device_id": "0x2335",
        "architecture": "hopper", "architecture_source": "table", "vbios_version": "96.00.A5.00.1A",
        "virtualization_mode": "Pass-Through", "compute_mode": "Default",
        "memory_total_mib": 143771, "memory_reserved_mib": 616, "memory_used_mib": 0, "memory_free_mib": 143156,
        "utilization_gpu_pct": 0, "utilization_memory_pct": 0,
        "mig_mode_current": "Disabled", "mig_mode_pending": "Disabled", "mig_devices": [],
        "persistence_mode": True, "ecc_mode_current": "Enabled", "ecc_mode_pending": "Enabled",
        "temperature_c": 39, "memory_temperature_c": 38, "power_state": "P0",
        "power_draw_w": 82.38, "power_draw_average_w": 82.18, "power_limit_w": 700.0,
        "power_limit_default_w": 700.0, "power_limit_min_w": 200.0, "power_limit_max_w": 700.0,
        "memory_power_draw_average_w": 48.96, "module_power_draw_w": None,
        "health": {"ecc_dbe_volatile": 0, "remapped_row_pending": False, "remapped_row_failure": False,
                   "retired_pages_pending": None},
    }]


@pytest.mark.parametrize("name", ["h100-sxm-8x.xml", "a100-mig.xml", "t4.xml", "l4.xml", "h200-580-recorded.xml"])
def test_power_draw_is_read_in_every_format(name):
    """v11 power_readings, v12 gpu_power_readings/power_draw, v13 instant_power_draw: never null on a GPU."""
    for gpu in parse_smi_xml(fixture(name))["gpus"]:
        assert isinstance(gpu["power_draw_w"], (int, float)) and gpu["power_draw_w"] > 0
        assert isinstance(gpu["power_limit_w"], (int, float)) and gpu["power_limit_w"] >= gpu["power_draw_w"]


def test_mig_devices_are_parsed_per_instance():
    gpu = parse_smi_xml(fixture("a100-mig.xml"))["gpus"][0]
    assert gpu["mig_devices"] == [
        {"index": 0, "gpu_instance_id": 2, "compute_instance_id": 0, "multiprocessor_count": 42, "memory_total_mib": 19968},
        {"index": 1, "gpu_instance_id": 3, "compute_instance_id": 0, "multiprocessor_count": 28, "memory_total_mib": 9984},
        {"index": 2, "gpu_instance_id": 5, "compute_instance_id": 0, "multiprocessor_count": 28, "memory_total_mib": 9984},
    ]


def test_h100_bus_ids_and_device_ids_in_order():
    gpus = parse_smi_xml(fixture("h100-sxm-8x.xml"))["gpus"]
    assert [g["pci_bus_id"][9:11] for g in gpus] == ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]
    assert {g["pci_device_id"] for g in gpus} == {"0x2330"}


@pytest.mark.parametrize("text", [
    "", "No devices were found\n", "<nvidia_smi_log><driver_version>1</driver_version>",
    "<?xml version='1.0'?><other><nvidia_smi_log/></other>",
])
def test_bad_xml_is_refused(text):
    with pytest.raises(NvidiaSmiParseError) as err:
        parse_smi_xml(text)
    assert isinstance(err.value, GpufleetError)


@pytest.mark.parametrize("device_id,arch,source", [
    (0x2330, "hopper", "table"), (0x2342, "hopper", "table"), (0x2901, "blackwell", "table"),
    (0x20B2, "ampere", "table"), (0x1EB8, "turing", "table"), (0x1DB4, "volta", "table"),
    (0x15F8, "pascal", "table"), (0x13F2, "maxwell", "table"), (0x27B8, "ada", "table"),
    (0x1DB7, "volta", "range"), (0x15FA, "pascal", "range"), (0x1B80, "pascal", "range"),
    (0x1380, "maxwell", "range"), (0x2184, "turing", "range"), (0x2204, "ampere", "range"),
    (0x2684, "ada", "range"), (0x2B85, "blackwell", "range"), (0x2339, "hopper", "range"),
    (0x0FFF, None, "unknown"), (0x3000, None, "unknown"),
])
def test_architecture_from_pci_device_id(device_id, arch, source):
    assert arch_for_device_id(device_id) == (arch, source)


@pytest.mark.parametrize("output,reason", [
    (None, "unknown"),
    ("No devices were found", "no-devices"),
    ("Failed to initialize NVML: Driver/library version mismatch", "driver-library-mismatch"),
    ("Unable to determine the device handle for GPU0000:18:00.0: Unknown Error", "device-handle-error"),
    ("Failed to initialize NVML: Insufficient Permissions", "insufficient-permissions"),
    ("Segmentation fault", "unknown"),
])
def test_failure_classification(output, reason):
    assert classify_failure(output) == reason


def test_recorded_driver_not_loaded_output_is_classified():
    assert classify_failure(fixture("driver-not-loaded.stdout")) == "driver-not-loaded"


# listing, expected [(bus, device id, arch, grace hopper)]
PCI_CASES = [
    ("pci-container-no-gpu.txt", []),
    ("pci-hgx-h100-bare.txt", [("0000:%s:00.0" % b, "0x2330", "hopper", False)
                               for b in ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")]),
    ("pci-mixed-workstation.txt", [("0000:01:00.0", "0x1b80", "pascal", False),
                                   ("0000:02:00.0", "0x1db4", "volta", False),
                                   ("0000:03:00.0", "0x2b85", "blackwell", False),
                                   ("0000:04:00.0", "0x0fff", None, False)]),
]


@pytest.mark.parametrize("listing,expected", PCI_CASES, ids=[c[0] for c in PCI_CASES])
def test_pci_scan_keeps_only_nvidia_display_controllers(tmp_path, listing, expected):
    found = scan_pci(make_sysfs(tmp_path, listing))
    assert [(g["pci_bus_id"], g["pci_device_id"], g["architecture"], g["grace_hopper"]) for g in found] == expected


@pytest.mark.parametrize("listing,count", [("pci-hgx-h100-bare.txt", 4), ("pci-mixed-workstation.txt", 0),
                                           ("pci-container-no-gpu.txt", 0)])
def test_nvswitches_are_found_on_the_pci_bus(tmp_path, listing, count):
    """Issue 15 item 6: NVSwitch bridges (class 0x0680) tell an HGX board, which needs Fabric Manager."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.node.nvidia_smi import scan_nvswitches
    devices = make_sysfs(tmp_path, listing)
    found = scan_nvswitches(devices)
    assert len(found) == count
    assert all(s["pci_device_id"] == "0x22a3" for s in found)
    assert gpu_info(lambda: None, devices, str(tmp_path / "nomodule"))["nvswitch_count"] == count


def test_pci_scan_reports_bound_kernel_driver(tmp_path):
    root = make_sysfs(tmp_path, "pci-mixed-workstation.txt", drivers={"0000:01:00.0": "nouveau"})
    found = {g["pci_bus_id"]: g["kernel_driver"] for g in scan_pci(root)}
    assert found["0000:01:00.0"] == "nouveau" and found["0000:02:00.0"] is None


def test_pci_scan_of_missing_dir_is_empty(tmp_path):
    assert scan_pci(str(tmp_path / "absent")) == []


class FakeSmi:
    """Stands in for nvidia-smi; counts calls so the one-call rule is tested."""

    def __init__(self, outcome):
        self.outcome = outcome
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.outcome


# smi outcome, pci listing, driver loaded, failure, #gpus, #pci gpus, architectures
INFO_CASES = [
    ("h100", (0, fixture("h100-sxm-8x.xml"), ""), "pci-hgx-h100-bare.txt", True, None, 8, 8, ["hopper"]),
    ("not-installed", None, "pci-hgx-h100-bare.txt", False, "not-installed", 0, 8, ["hopper"]),
    ("driver-not-loaded", (9, fixture("driver-not-loaded.stdout"), ""), "pci-mixed-workstation.txt", False,
     "driver-not-loaded", 0, 4, ["blackwell", "pascal", "volta"]),
    ("no-devices", (6, fixture("no-devices.stdout"), ""), "pci-container-no-gpu.txt", False, "no-devices", 0, 0, []),
    ("rc0-but-no-xml", (0, "garbage", ""), "pci-container-no-gpu.txt", False, "unknown", 0, 0, []),
]


@pytest.mark.parametrize("case,outcome,listing,loaded,failure,n_gpus,n_pci,archs", INFO_CASES,
                         ids=[c[0] for c in INFO_CASES])
def test_gpu_info_calls_nvidia_smi_once_and_falls_back_to_pci(tmp_path, case, outcome, listing, loaded, failure,
                                                               n_gpus, n_pci, archs):
    smi = FakeSmi(outcome)
    info = gpu_info(smi, make_sysfs(tmp_path, listing))
    assert smi.calls == 1
    assert (info["driver_loaded"], info["nvidia_smi_failure"], len(info["gpus"]), info["pci_gpu_count"]) == \
        (loaded, failure, n_gpus, n_pci)
    assert info["architectures"] == archs
    assert info["source"] == ("nvidia-smi" if loaded else "pci")
    assert (info["nvidia_smi_error"] is None) == loaded


def _run_module(tmp_path, smi_stdout, smi_rc, listing, check=False):
    """Run the real module through ansible with a fake nvidia-smi that logs its arguments."""
    calls = tmp_path / "calls.log"
    out_file = tmp_path / "smi.out"
    out_file.write_text(smi_stdout)
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho \"$*\" >> %s\ncat %s\nexit %d\n" % (calls, out_file, smi_rc))
    smi.chmod(0o755)
    sysfs = make_sysfs(tmp_path, listing)
    cmd = ["localhost", "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable,
           "-m", "gpufleet.k8s.nvidia_gpu_info", "-a", "nvidia_smi_path=%s pci_devices_dir=%s" % (smi, sysfs)]
    if check:
        cmd.append("--check")
    proc = ansible("ansible", *cmd, ANSIBLE_COLLECTIONS_PATH=CHECKOUT_PATHS["ANSIBLE_COLLECTIONS_PATH"],
                   ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    return result, calls.read_text().splitlines()


@pytest.mark.parametrize("check", [False, True], ids=["run", "check-mode"])
def test_module_end_to_end_one_call(tmp_path, check):
    result, calls = _run_module(tmp_path, fixture("a100-mig.xml"), 0, "pci-container-no-gpu.txt", check)
    assert calls == ["-q -x"]
    assert result["changed"] is False
    assert result["driver_version"] == "535.216.03"
    assert [len(g["mig_devices"]) for g in result["gpus"]] == [3, 0]


def test_module_end_to_end_driver_not_loaded_does_not_fail(tmp_path):
    result, calls = _run_module(tmp_path, fixture("driver-not-loaded.stdout"), 9, "pci-hgx-h100-bare.txt")
    assert calls == ["-q -x"]
    assert result["driver_loaded"] is False
    assert result["nvidia_smi_failure"] == "driver-not-loaded"
    assert "couldn't communicate with the NVIDIA driver" in result["nvidia_smi_error"]
    assert result["architectures"] == ["hopper"] and result["pci_gpu_count"] == 8


@pytest.mark.parametrize("modules,version,expected", [
    ([], None, {"nvidia_module_loaded": False, "nvidia_module_version": None, "nouveau_loaded": False}),
    (["nouveau"], None, {"nvidia_module_loaded": False, "nvidia_module_version": None, "nouveau_loaded": True}),
    (["nvidia"], "535.261.03\n", {"nvidia_module_loaded": True, "nvidia_module_version": "535.261.03",
                                   "nouveau_loaded": False}),
])
def test_loaded_modules_from_sys_module(tmp_path, modules, version, expected):
    for name in modules:
        (tmp_path / name).mkdir()
    if version:
        (tmp_path / "nvidia" / "version").write_text(version)
    assert loaded_modules(str(tmp_path)) == expected


def test_health_counters_of_a_gpu_that_needs_a_reset():
    """The real recording with a pending row remap, a failed remap and two double-bit errors written in."""
    text = fixture("h200-580-recorded.xml")
    text = text.replace("<remapped_row_pending>No</remapped_row_pending>", "<remapped_row_pending>Yes</remapped_row_pending>")
    text = text.replace("<remapped_row_failure>No</remapped_row_failure>", "<remapped_row_failure>Yes</remapped_row_failure>")
    text = text.replace("<dram_uncorrectable>0</dram_uncorrectable>", "<dram_uncorrectable>2</dram_uncorrectable>", 1)
    assert parse_smi_xml(text)["gpus"][0]["health"] == {
        "ecc_dbe_volatile": 2, "remapped_row_pending": True, "remapped_row_failure": True, "retired_pages_pending": None}
