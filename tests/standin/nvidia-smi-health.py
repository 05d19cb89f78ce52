#!/usr/bin/env python3
"""STAND-IN for nvidia-smi (no GPU on the test machines): GPU health and GPU reset only, state in a JSON file.

Not NVIDIA's program. It answers the calls GPU health remediation makes on a host, in nvidia-smi's formats:
  -q -x      the REAL recorded H200 document (tests/fixtures/nvidia-smi/h200-580-recorded.xml, given as
             $NVIDIA_SMI_STANDIN_XML), one <gpu> per GPU of the state, with the state's bus id, UUID,
             persistence mode, volatile DRAM uncorrectable ECC count and pending row remapping written in;
             a lost GPU makes it print "Unable to determine the device handle for GPU<bus>: Unknown Error"
             and exit 15 (nvidia-smi's "GPU is lost" status)
  --query-gpu=index,pci.bus_id,uuid,persistence_mode --format=csv,noheader
  -pm 0|1 -i BUS[,BUS]   persistence mode off / on
  --gpu-reset -i BUS[,BUS]  refused (exit 255, "In use by another client") while persistence mode is on for a
             target or the state's "clients" hold it, as nvidia-smi does; else the volatile ECC count starts
             again and a pending row remapping takes effect
A reboot (the boot id in /proc/sys/kernel/random/boot_id differs from the one the state last saw) does what a
reset does to every GPU, brings a lost GPU back, drops the clients and turns persistence mode on again
(nvidia-persistenced starts at boot).
State: $NVIDIA_SMI_STANDIN_STATE (default /var/lib/nvidia-smi-standin/health.json), created with two H200s,
persistence on, healthy. Every command that changes something is appended to <state>.log.
"""
import copy
import os
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from standin_state import StateFile, boot_id  # noqa: E402 (installed next to this file)

STATE = os.environ.get("NVIDIA_SMI_STANDIN_STATE", "/var/lib/nvidia-smi-standin/health.json")
STORE = StateFile(STATE)
XML = os.environ.get("NVIDIA_SMI_STANDIN_XML", "/usr/share/nvidia-smi-standin/h200.xml")


def heal(gpu):
    gpu["dbe"] = 0
    gpu["remap_pending"] = False


def save(state):
    STORE.save(state)


def log(line):
    STORE.log(line)


def load():
    if not STORE.exists():
        gpus = [{"bus": "00000000:%02X:00.0" % (0x18 + i), "uuid": "GPU-5tand1n0-0000-4000-8000-00000000001%d" % i,
                 "persistence": True, "dbe": 0, "remap_pending": False, "lost": False} for i in range(2)]
        save({"gpus": gpus, "clients": [], "boot_id": boot_id()})
    state = STORE.read()
    if STORE.rebooted(state):
        for gpu in state["gpus"]:
            heal(gpu)
            gpu["lost"] = False
            gpu["persistence"] = True
        state["clients"] = []
        save(state)
    return state


def lost_gpu(state):
    for gpu in state["gpus"]:
        if gpu["lost"]:
            sys.stdout.write("Unable to determine the device handle for GPU%s: Unknown Error\n" % gpu["bus"][4:])
            sys.exit(15)


def text(parent, path, value):
    node = parent.find(path)
    if node is not None:
        node.text = value


def query_xml(state):
    lost_gpu(state)
    root = ET.parse(XML).getroot()
    template = root.find("gpu")
    for old in root.findall("gpu"):
        root.remove(old)
    for i, gpu in enumerate(state["gpus"]):
        node = copy.deepcopy(template)
        node.set("id", gpu["bus"])
        text(node, "uuid", gpu["uuid"])
        text(node, "minor_number", str(i))
        text(node, "pci/pci_bus_id", gpu["bus"])
        text(node, "persistence_mode", "Enabled" if gpu["persistence"] else "Disabled")
        text(node, "ecc_errors/volatile/dram_uncorrectable", str(gpu["dbe"]))
        text(node, "remapped_rows/remapped_row_pending", "Yes" if gpu["remap_pending"] else "No")
        root.append(node)
    text(root, "attached_gpus", str(len(state["gpus"])))
    sys.stdout.write('<?xml version="1.0" ?>\n' + ET.tostring(root, encoding="unicode") + "\n")


def targets(state, argv):
    if "-i" not in argv:
        return list(state["gpus"])
    wanted = argv[argv.index("-i") + 1].split(",")
    out = [g for g in state["gpus"] if any(w.upper()[-12:] == g["bus"][-12:] or w == g["uuid"] for w in wanted)]
    if len(out) != len(wanted):
        sys.stdout.write("No devices were found\n")
        sys.exit(6)
    return out


def main(argv):
    state = load()
    if argv[:2] == ["-q", "-x"]:
        return query_xml(state)
    if argv and argv[0].startswith("--query-gpu=index,pci.bus_id,uuid,persistence_mode"):
        lost_gpu(state)
        for i, gpu in enumerate(state["gpus"]):
            sys.stdout.write("%d, %s, %s, %s\n" % (i, gpu["bus"], gpu["uuid"],
                                                    "Enabled" if gpu["persistence"] else "Disabled"))
        return None
    if argv and argv[0] == "-pm":
        log("nvidia-smi " + " ".join(argv))
        for gpu in targets(state, argv):
            gpu["persistence"] = argv[1] == "1"
            sys.stdout.write("%s persistence mode for GPU %s.\n" % ("Enabled" if gpu["persistence"] else "Disabled", gpu["bus"]))
        save(state)
        sys.stdout.write("All done.\n")
        return None
    if argv and argv[0] in ("-r", "--gpu-reset"):
        log("nvidia-smi " + " ".join(argv))
        chosen = targets(state, argv)
        held = [g for g in chosen if g["persistence"] or g["bus"] in state["clients"]]
        if held:
            sys.stdout.write("The following GPUs could not be reset:\n" + "".join(
                "  GPU %s: In use by another client\n" % g["bus"] for g in held))
            sys.stdout.write("\n%d device is currently being used by one or more other processes (e.g., Fabric Manager, "
                             "CUDA application, graphics application such as an X server, or a monitoring application "
                             "such as another instance of nvidia-smi). Please first kill all processes using this device "
                             "and all compute applications running in the system.\n" % len(held))
            sys.exit(255)
        for gpu in chosen:
            heal(gpu)
            sys.stdout.write("GPU %s was successfully reset.\n" % gpu["bus"])
        save(state)
        return None
    sys.stdout.write("nvidia-smi STAND-IN (gpufleet tests): %s is not one of the calls it answers\n" % " ".join(argv))
    sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
