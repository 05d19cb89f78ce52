# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""What a node's NVIDIA GPUs are: parsed from one ``nvidia-smi -q -x`` call, or, when no driver
answers, read from the PCI bus (sysfs) and mapped to an architecture by PCI device ID.

The architecture decides the driver's kernel-module flavour (see driver_compat), so the PCI path
must work on a bare machine before any driver is installed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import xml.etree.ElementTree as ET

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError

NVIDIA_VENDOR_ID = 0x10DE
NVIDIA_SMI_ARGS = ["-q", "-x"]

# Exact PCI device IDs of data-centre GPUs: (marketing name, architecture).
PCI_DEVICE_IDS = {
    0x13F2: ("Tesla M60", "maxwell"),
    0x17FD: ("Tesla M40 24GB", "maxwell"),
    0x15F7: ("Tesla P100 PCIe 12GB", "pascal"),
    0x15F8: ("Tesla P100 PCIe 16GB", "pascal"),
    0x15F9: ("Tesla P100 SXM2 16GB", "pascal"),
    0x1B38: ("Tesla P40", "pascal"),
    0x1BB3: ("Tesla P4", "pascal"),
    0x1DB1: ("Tesla V100 SXM2 16GB", "volta"),
    0x1DB4: ("Tesla V100 PCIe 16GB", "volta"),
    0x1DB5: ("Tesla V100 SXM2 32GB", "volta"),
    0x1DB6: ("Tesla V100 PCIe 32GB", "volta"),
    0x1DF6: ("Tesla V100S PCIe 32GB", "volta"),
    0x1EB8: ("Tesla T4", "turing"),
    0x20B0: ("A100 SXM4 40GB", "ampere"),
    0x20B2: ("A100 SXM4 80GB", "ampere"),
    0x20B5: ("A100 PCIe 80GB", "ampere"),
    0x20B7: ("A30", "ampere"),
    0x20F1: ("A100 PCIe 40GB", "ampere"),
    0x2235: ("A40", "ampere"),
    0x2236: ("A10", "ampere"),
    0x2237: ("A10G", "ampere"),
    0x26B5: ("L40", "ada"),
    0x26B9: ("L40S", "ada"),
    0x27B8: ("L4", "ada"),
    0x2321: ("H100 NVL", "hopper"),
    0x2330: ("H100 SXM5 80GB", "hopper"),
    0x2331: ("H100 PCIe 80GB", "hopper"),
    0x2335: ("H200 SXM 141GB", "hopper"),
    0x2342: ("GH200 Grace Hopper", "hopper"),
    0x2901: ("B200", "blackwell"),
    0x2941: ("GB200", "blackwell"),
}

# Grace Hopper needs the open kernel modules like Blackwell does.
GRACE_HOPPER_IDS = (0x2342,)

# Device-ID ranges by GPU die family, for IDs not in the exact table (first match wins).
# Coarse on purpose: they decide a flavour, and the exact table covers the data-centre parts.
PCI_DEVICE_RANGES = (
    (0x15F0, 0x15FF, "pascal"),      # GP100
    (0x1DB0, 0x1DBF, "volta"),       # GV100
    (0x1DF0, 0x1DFF, "volta"),       # GV100
    (0x1340, 0x17FF, "maxwell"),     # GM107/GM108/GM200/GM204/GM206
    (0x1B00, 0x1DFF, "pascal"),      # GP102/GP104/GP106/GP107/GP108
    (0x1E00, 0x1FFF, "turing"),      # TU102/TU104/TU106/TU117
    (0x2180, 0x21FF, "turing"),      # TU116
    (0x2080, 0x20FF, "ampere"),      # GA100
    (0x2200, 0x22FF, "ampere"),      # GA102
    (0x2300, 0x234F, "hopper"),      # GH100
    (0x2400, 0x25FF, "ampere"),      # GA103/GA104/GA106/GA107
    (0x2600, 0x28FF, "ada"),         # AD102/AD103/AD104/AD106/AD107
    (0x2900, 0x2FFF, "blackwell"),   # GB100/GB102/GB202/GB203/GB205/GB206/GB207
)

# nvidia-smi writes these where a value does not apply or cannot be read.
_UNAVAILABLE = ("N/A", "[N/A]", "[Not Supported]", "Not Supported", "[Unknown Error]", "None", "")

# What nvidia-smi prints instead of XML, mapped to a short reason.
SMI_FAILURES = (
    ("couldn't communicate with the nvidia driver", "driver-not-loaded"),
    ("no devices were found", "no-devices"),
    ("driver/library version mismatch", "driver-library-mismatch"),
    ("unable to determine the device handle", "device-handle-error"),
    ("insufficient permissions", "insufficient-permissions"),
)


class NvidiaSmiParseError(GpufleetError):
    """nvidia-smi's output was not the XML document it should be."""


def _int_or_none(text):
    try:
        return int(text, 0) if text is not None else None
    except ValueError:
        return None


def arch_for_device_id(device_id):
    """Return ``(architecture or None, source)`` for a PCI device ID (int); source says how."""
    if device_id in PCI_DEVICE_IDS:
        return PCI_DEVICE_IDS[device_id][1], "table"
    for low, high, arch in PCI_DEVICE_RANGES:
        if low <= device_id <= high:
            return arch, "range"
    return None, "unknown"


def _text(node, path):
    """Text at ``path`` below ``node``, stripped; None where absent or not available."""
    found = node.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value in _UNAVAILABLE else value


def _number(node, path, unit):
    """Parse a value such as ``81559 MiB``, ``31 C`` or ``71.03 W``; None when unavailable."""
    value = _text(node, path)
    if value is None:
        return None
    match = re.match(r"^(-?[0-9]+(?:\.[0-9]+)?)\s*%s$" % re.escape(unit), value)
    if not match:
        return None
    number = float(match.group(1))
    return int(number) if number.is_integer() and "." not in match.group(1) else number


def _enabled(node, path):
    value = _text(node, path)
    if value is None:
        return None
    return value.lower() == "enabled"


def _pci_device_id(gpu):
    """nvidia-smi's pci_device_id is ``0xDDDDVVVV`` (device, then vendor): return the device part."""
    raw = _text(gpu, "pci/pci_device_id")
    if raw is None:
        return None
    raw = raw.lower()
    if raw.startswith("0x"):
        raw = raw[2:]
    if not re.match(r"^[0-9a-f]{8}$", raw):
        return None
    return int(raw[:4], 16)


def _mig_device(node):
    return {
        "index": _int_or_none(_text(node, "index")),
        "gpu_instance_id": _int_or_none(_text(node, "gpu_instance_id")),
        "compute_instance_id": _int_or_none(_text(node, "compute_instance_id")),
        "multiprocessor_count": _int_or_none(_text(node, "device_attributes/shared/multiprocessor_count")),
        "memory_total_mib": _number(node, "fb_memory_usage/total", "MiB"),
    }


# Where each power value lives, newest format first. DTD v13 (R580; also late R5xx) has
# gpu_power_readings/{instant,average}_power_draw and no power_draw element; v12 (R530+) has
# gpu_power_readings/power_draw; v11 and older power_readings/power_draw.
_POWER_PATHS = {
    "draw": ("gpu_power_readings/instant_power_draw", "gpu_power_readings/power_draw", "power_readings/power_draw"),
    "draw_average": ("gpu_power_readings/average_power_draw", "power_readings/average_power_draw"),
    "limit": ("gpu_power_readings/current_power_limit", "power_readings/current_power_limit",
              "gpu_power_readings/power_limit", "power_readings/power_limit"),
    "limit_default": ("gpu_power_readings/default_power_limit", "power_readings/default_power_limit"),
    "limit_min": ("gpu_power_readings/min_power_limit", "power_readings/min_power_limit"),
    "limit_max": ("gpu_power_readings/max_power_limit", "power_readings/max_power_limit"),
    "memory_draw_average": ("gpu_memory_power_readings/average_power_draw",),
    "module_draw": ("module_power_readings/instant_power_draw", "module_power_readings/power_draw"),
}


def _power(gpu, field):
    """The first available value among the paths of ``field`` (watts), None when none is."""
    for path in _POWER_PATHS[field]:
        value = _number(gpu, path, "W")
        if value is not None:
            return value
    return None


def _yes(node, path):
    value = _text(node, path)
    if value is None:
        return None
    return value.lower() == "yes"


def _health(gpu):
    """The memory health counters remediation reads (None where the GPU or driver does not report them):
    volatile uncorrectable (double-bit) DRAM ECC errors since the driver loaded, a row remapping waiting for
    a GPU reset, a failed row remapping (Ampere and newer), pages waiting to be retired (older GPUs)."""
    dbe = _int_or_none(_text(gpu, "ecc_errors/volatile/dram_uncorrectable"))
    if dbe is None:  # before R580's nvsmi_device_v13
        dbe = _int_or_none(_text(gpu, "ecc_errors/volatile/double_bit/total"))
    return {
        "ecc_dbe_volatile": dbe,
        "remapped_row_pending": _yes(gpu, "remapped_rows/remapped_row_pending"),
        "remapped_row_failure": _yes(gpu, "remapped_rows/remapped_row_failure"),
        "retired_pages_pending": _yes(gpu, "retired_pages/pending_retirement"),
    }


def _gpu(index, gpu):
    device_id = _pci_device_id(gpu)
    arch, arch_source = arch_for_device_id(device_id) if device_id is not None else (None, "unknown")
    if arch is None and _text(gpu, "product_architecture"):
        arch, arch_source = _text(gpu, "product_architecture").lower(), "nvidia-smi"
    mig_nodes = gpu.findall("mig_devices/mig_device")
    return {
        "index": index,
        "minor_number": _int_or_none(_text(gpu, "minor_number")),
        "uuid": _text(gpu, "uuid"),
        "name": _text(gpu, "product_name"),
        "brand": _text(gpu, "product_brand"),
        "pci_bus_id": _text(gpu, "pci/pci_bus_id") or gpu.get("id"),
        "pci_device_id": "0x%04x" % device_id if device_id is not None else None,
        "architecture": arch,
        "architecture_source": arch_source,
        "vbios_version": _text(gpu, "vbios_version"),
        "virtualization_mode": _text(gpu, "gpu_virtualization_mode/virtualization_mode"),
        "compute_mode": _text(gpu, "compute_mode"),
        "memory_total_mib": _number(gpu, "fb_memory_usage/total", "MiB"),
        "memory_reserved_mib": _number(gpu, "fb_memory_usage/reserved", "MiB"),
        "memory_used_mib": _number(gpu, "fb_memory_usage/used", "MiB"),
        "memory_free_mib": _number(gpu, "fb_memory_usage/free", "MiB"),
        "utilization_gpu_pct": _number(gpu, "utilization/gpu_util", "%"),
        "utilization_memory_pct": _number(gpu, "utilization/memory_util", "%"),
        "mig_mode_current": _text(gpu, "mig_mode/current_mig"),
        "mig_mode_pending": _text(gpu, "mig_mode/pending_mig"),
        "mig_devices": [_mig_device(node) for node in mig_nodes],
        "persistence_mode": _enabled(gpu, "persistence_mode"),
        "ecc_mode_current": _text(gpu, "ecc_mode/current_ecc"),
        "ecc_mode_pending": _text(gpu, "ecc_mode/pending_ecc"),
        "temperature_c": _number(gpu, "temperature/gpu_temp", "C"),
        "memory_temperature_c": _number(gpu, "temperature/memory_temp", "C"),
        "power_state": _text(gpu, "gpu_power_readings/power_state") or _text(gpu, "power_readings/power_state"),
        "power_draw_w": _power(gpu, "draw"),
        "power_draw_average_w": _power(gpu, "draw_average"),
        "power_limit_w": _power(gpu, "limit"),
        "power_limit_default_w": _power(gpu, "limit_default"),
        "power_limit_min_w": _power(gpu, "limit_min"),
        "power_limit_max_w": _power(gpu, "limit_max"),
        "memory_power_draw_average_w": _power(gpu, "memory_draw_average"),
        "module_power_draw_w": _power(gpu, "module_draw"),
        "health": _health(gpu),
    }


def classify_failure(output):
    """Map what nvidia-smi printed instead of XML to a short reason (``unknown`` if unrecognised)."""
    lowered = (output or "").lower()
    for needle, reason in SMI_FAILURES:
        if needle in lowered:
            return reason
    return "unknown"


def parse_smi_xml(text):
    """Parse the whole ``nvidia-smi -q -x`` document into driver, CUDA and per-GPU facts."""
    if not text or "<nvidia_smi_log" not in text:
        raise NvidiaSmiParseError("not an nvidia-smi XML document: %s" % (text or "(empty)").strip()[:200])
    try:
        root = ET.fromstring(text.encode("utf-8") if not isinstance(text, bytes) else text)
    except ET.ParseError as exc:
        raise NvidiaSmiParseError("nvidia-smi XML does not parse: %s" % exc)
    if root.tag != "nvidia_smi_log":
        raise NvidiaSmiParseError("unexpected root element %s" % root.tag)
    gpus = [_gpu(i, node) for i, node in enumerate(root.findall("gpu"))]
    attached = _int_or_none(_text(root, "attached_gpus"))
    return {
        "driver_version": _text(root, "driver_version"),
        "cuda_version": _text(root, "cuda_version"),
        "attached_gpus": attached if attached is not None else len(gpus),
        "gpus": gpus,
    }


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def scan_pci(devices_dir="/sys/bus/pci/devices"):
    """NVIDIA display/3D controllers on the PCI bus, read from sysfs (works without a driver)."""
    found = []
    try:
        names = sorted(os.listdir(devices_dir))
    except OSError:
        return found
    for name in names:
        base = os.path.join(devices_dir, name)
        vendor = _int_or_none(_read(os.path.join(base, "vendor")))
        pci_class = _int_or_none(_read(os.path.join(base, "class")))
        device = _int_or_none(_read(os.path.join(base, "device")))
        if vendor != NVIDIA_VENDOR_ID or pci_class is None or device is None:
            continue
        if (pci_class >> 16) != 0x03:  # base class 0x03: display controller (VGA 0x0300, 3D 0x0302)
            continue
        arch, source = arch_for_device_id(device)
        driver_link = os.path.join(base, "driver")
        driver = os.path.basename(os.readlink(driver_link)) if os.path.islink(driver_link) else None
        found.append({
            "pci_bus_id": name,
            "pci_device_id": "0x%04x" % device,
            "pci_class": "0x%06x" % pci_class,
            "name": PCI_DEVICE_IDS.get(device, (None,))[0],
            "architecture": arch,
            "architecture_source": source,
            "grace_hopper": device in GRACE_HOPPER_IDS,
            "kernel_driver": driver,
        })
    return found


def scan_nvswitches(devices_dir="/sys/bus/pci/devices"):
    """NVIDIA NVSwitch bridges on the PCI bus (vendor 0x10de, class 0x0680 "other bridge"): HGX/DGX
    boards whose GPUs talk over NVSwitch need Fabric Manager, else CUDA fails with error 802."""
    found = []
    try:
        names = sorted(os.listdir(devices_dir))
    except OSError:
        return found
    for name in names:
        base = os.path.join(devices_dir, name)
        if _int_or_none(_read(os.path.join(base, "vendor"))) != NVIDIA_VENDOR_ID:
            continue
        pci_class = _int_or_none(_read(os.path.join(base, "class")))
        device = _int_or_none(_read(os.path.join(base, "device")))
        if pci_class is None or device is None or (pci_class >> 8) != 0x0680:
            continue
        found.append({"pci_bus_id": name, "pci_device_id": "0x%04x" % device})
    return found


def loaded_modules(module_dir="/sys/module"):
    """The nvidia module's loaded version (None when not loaded) and whether nouveau is loaded."""
    nvidia_dir = os.path.join(module_dir, "nvidia")
    return {
        "nvidia_module_loaded": os.path.isdir(nvidia_dir),
        "nvidia_module_version": _read(os.path.join(nvidia_dir, "version")),
        "nouveau_loaded": os.path.isdir(os.path.join(module_dir, "nouveau")),
    }


def gpu_info(run_smi, devices_dir="/sys/bus/pci/devices", module_dir="/sys/module"):
    """Everything the module returns.

    ``run_smi()`` runs ``nvidia-smi -q -x`` once and returns ``(rc, stdout, stderr)``, or None when
    nvidia-smi is not installed. The PCI bus is always read: it needs no driver and gives the
    architecture even where nvidia-smi cannot run.
    """
    pci_gpus = scan_pci(devices_dir)
    nvswitches = scan_nvswitches(devices_dir)
    result = {
        "nvswitches": nvswitches,
        "nvswitch_count": len(nvswitches),
        "driver_loaded": False,
        "source": "pci",
        "nvidia_smi_found": True,
        "nvidia_smi_error": None,
        "nvidia_smi_failure": None,
        "driver_version": None,
        "cuda_version": None,
        "attached_gpus": 0,
        "gpus": [],
        "pci_gpus": pci_gpus,
        "pci_gpu_count": len(pci_gpus),
        "architectures": sorted(set(g["architecture"] for g in pci_gpus if g["architecture"])),
        "grace_hopper": any(g["grace_hopper"] for g in pci_gpus),
    }
    result.update(loaded_modules(module_dir))
    outcome = run_smi()
    if outcome is None:
        result["nvidia_smi_found"] = False
        result["nvidia_smi_error"] = "nvidia-smi is not installed"
        result["nvidia_smi_failure"] = "not-installed"
        return result
    rc, out, err = outcome
    if rc != 0 or "<nvidia_smi_log" not in (out or ""):
        message = ((out or "") + "\n" + (err or "")).strip()
        result["nvidia_smi_error"] = message or "nvidia-smi exited %s" % rc
        result["nvidia_smi_failure"] = classify_failure(message)
        return result
    parsed = parse_smi_xml(out)
    result.update(parsed)
    result["driver_loaded"] = True
    result["source"] = "nvidia-smi"
    archs = set(result["architectures"]) | set(g["architecture"] for g in parsed["gpus"] if g["architecture"])
    result["architectures"] = sorted(archs)
    return result
