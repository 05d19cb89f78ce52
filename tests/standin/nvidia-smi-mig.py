#!/usr/bin/env python3
"""STAND-IN for nvidia-smi (no GPU on the test machines): MIG commands only, state kept in a JSON file.

Not NVIDIA's program. It prints the formats NVIDIA documents (and tests/fixtures/nvidia-smi/mig holds)
for the commands gpufleet's MIG partitioning (module_utils/node/mig_layout.py) runs:
  --query-gpu=index,uuid,name,mig.mode.current,mig.mode.pending --format=csv,noheader
  -i N -mig 0|1        (pending until -r when the GPU's "needs_reset" is true, as on Ampere / in VMs)
  -i N -r              (GPU reset: a pending MIG mode takes effect; a GPU with "reset_supported": false
                        refuses it, exit 3, as a pass-through GPU in a VM does)
A reboot (the boot id in /proc/sys/kernel/random/boot_id differs from the one the state last saw) makes
pending MIG modes take effect and loses every GPU instance, as on a real GPU.
  mig [-i N] -lgip | -lgipp | -lgi | -lci | -cgi P[:START][,P[:START]...] [-C] | -dci | -dgi
GPU instances go only where NVIDIA's MIG user guide places them (START = first memory slice; without one, the
first free documented start, as the driver does), so a mix the GPU cannot hold fails at -cgi here too.
State file: $NVIDIA_SMI_STANDIN_STATE (default /var/lib/nvidia-smi-standin/state.json), created with
$NVIDIA_SMI_STANDIN_GPUS (default 2) H200 GPUs, MIG disabled. Every command that changes something
is appended to <state>.log.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from standin_state import StateFile, boot_id  # noqa: E402 (installed next to this file)

STATE = os.environ.get("NVIDIA_SMI_STANDIN_STATE", "/var/lib/nvidia-smi-standin/state.json")
STORE = StateFile(STATE)

# H200 GPU instance profiles: (name, profile id, most instances, memory GiB, compute slices, memory slices)
H200 = [("1g.18gb", 19, 7, "16.00", 1, 1), ("1g.18gb+me", 20, 1, "16.00", 1, 1), ("1g.35gb", 15, 4, "32.50", 1, 2),
        ("2g.35gb", 14, 3, "32.50", 2, 2), ("3g.71gb", 9, 2, "70.00", 3, 4), ("4g.71gb", 5, 1, "70.00", 4, 4),
        ("7g.141gb", 0, 1, "139.00", 7, 8)]
PROFILES = dict((p[0], p) for p in H200)
# Documented placement starts per memory-slice count of H200 profiles (MIG user guide, -lgipp output):
# 1 slice 0-6, 1g with 2 slices 0/2/4/6, 2g 0/2/4, 3g 0/4, 4g 0, 7g 0.
STARTS = {"1g.18gb": [0, 1, 2, 3, 4, 5, 6], "1g.18gb+me": [0, 1, 2, 3, 4, 5, 6], "1g.35gb": [0, 2, 4, 6],
          "2g.35gb": [0, 2, 4], "3g.71gb": [0, 4], "4g.71gb": [0], "7g.141gb": [0]}
# compute instance profile ids by compute slices (full-size compute instance of a GPU instance)
CI_ID = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4}


def load():
    if not STORE.exists():
        count = int(os.environ.get("NVIDIA_SMI_STANDIN_GPUS", "2"))
        gpus = [{"name": "NVIDIA H200", "uuid": "GPU-5tand1n0-0000-4000-8000-00000000000%d" % i,
                 "bus": "00000000:%02X:00.0" % (0x18 + i), "mig": False, "mig_pending": False, "needs_reset": False,
                 "reset_supported": True, "gis": []} for i in range(count)]
        save({"gpus": gpus, "next_gi": 1, "boot_id": boot_id()})
    state = STORE.read()
    if STORE.rebooted(state):   # the host rebooted since the last call
        for gpu in state["gpus"]:
            gpu["mig"] = gpu["mig_pending"]
            gpu["gis"] = []
        save(state)
    return state


def save(state):
    STORE.save(state)


def log(argv):
    STORE.log("nvidia-smi " + " ".join(argv))


def fail(msg, rc=6):
    sys.stdout.write(msg + "\n")
    sys.exit(rc)


def targets(state, index):
    if index is None:
        return list(enumerate(state["gpus"]))
    if index >= len(state["gpus"]):
        fail("No devices were found", 6)
    return [(index, state["gpus"][index])]


def onoff(value):
    return "Enabled" if value else "Disabled"


def box(title, header, rows, width):
    line = "+" + "-" * width + "+"
    out = [line, "| %-*s|" % (width - 1, title)]
    out += ["| %-*s|" % (width - 1, h) for h in header]
    out.append("|" + "=" * width + "|")
    for i, row in enumerate(rows):
        if i:
            out.append(line)
        out += ["| %-*s|" % (width - 1, r) for r in row]
    out.append(line)
    return "\n".join(out)


def lgip(state, index):
    rows = []
    for i, gpu in targets(state, index):
        if not gpu["mig"]:
            continue
        used_c = sum(PROFILES[g["profile"]][4] for g in gpu["gis"])
        for name, pid, most, mem, cs, ms in H200:
            taken = len([g for g in gpu["gis"] if g["profile"] == name])
            free = max(0, min(most - taken, (7 - used_c) // cs))
            me = 1 if name.endswith("+me") else 0
            rows.append(["%3d  MIG %-13s%3d     %-10s %-10s No     %-6d %-5d %-4d" % (
                i, name, pid, "%d/%d" % (free, most), mem, cs * 16 + (cs == 7) * 20, cs, 0),
                "%59s %-5d %-5d %-3d" % ("", cs, me, me)])
    if not rows:
        fail("No MIG-enabled devices found.")
    print(box("GPU instance profiles:", ["GPU   Name             ID    Instances   Memory     P2P    SM    DEC   ENC",
                                         "                             Free/Total   GiB              CE    JPEG  OFA"],
              rows, 77))


def lgi(state, index):
    if not any(g["mig"] for _, g in targets(state, index)):
        fail("No MIG-enabled devices found.")
    rows = [["%3d  MIG %-13s %4d %8d %9d:%d     " % (i, g["profile"], PROFILES[g["profile"]][1], g["id"], g["start"],
                                                     PROFILES[g["profile"]][5])]
            for i, gpu in targets(state, index) for g in gpu["gis"]]
    if not rows:
        fail("No GPU instances found: Not Found")
    print(box("GPU instances:", ["GPU   Name             Profile  Instance   Placement",
                                 "                         ID       ID       Start:Size"], rows, 55))


def lci(state, index):
    if not any(g["mig"] for _, g in targets(state, index)):
        fail("No MIG-enabled devices found.")
    rows = [["%3d %6d       MIG %-13s %4d %9d %10d:%d      " % (i, g["id"], g["profile"], CI_ID[PROFILES[g["profile"]][4]],
                                                             0, 0, PROFILES[g["profile"]][4])]
            for i, gpu in targets(state, index) for g in gpu["gis"] if g["ci"]]
    if not rows:
        fail("No compute instances found: Not Found")
    print(box("Compute instances:", ["GPU     GPU       Name             Profile   Instance   Placement",
                                     "      Instance                       ID        ID       Start:Size",
                                     "        ID"], rows, 68))


def place(gpu, profile, wanted=None):
    cs, ms = PROFILES[profile][4], PROFILES[profile][5]
    if sum(PROFILES[g["profile"]][4] for g in gpu["gis"]) + cs > 7 or \
            len([g for g in gpu["gis"] if g["profile"] == profile]) >= PROFILES[profile][2]:
        return None
    used = set()
    for g in gpu["gis"]:
        used.update(range(g["start"], g["start"] + PROFILES[g["profile"]][5]))
    for start in STARTS[profile] if wanted is None else [wanted]:
        if start in STARTS[profile] and not used & set(range(start, start + ms)):
            return start
    return None


def lgipp(state, index):
    lines = []
    for i, gpu in targets(state, index):
        if not gpu["mig"]:
            continue
        for name, pid, _most, _mem, _cs, ms in H200:
            starts = STARTS[name]
            lines.append("GPU %2d Profile ID %2d %s {%s}:%d" % (i, pid, "Placements:" if len(starts) > 1 else "Placement :",
                                                               ",".join(str(x) for x in starts), ms))
    if not lines:
        fail("No MIG-enabled devices found.")
    print("\n".join(lines))


def cgi(state, index, names, with_ci):
    for i, gpu in targets(state, index):
        if not gpu["mig"]:
            fail("Unable to create a GPU instance on GPU %d: MIG mode is not enabled" % i, 15)
        for name in names:
            name = name[4:] if name.startswith("MIG ") else name
            name, _sep, wanted = name.partition(":")
            if name not in PROFILES or (wanted and not wanted.isdigit()):
                fail("Unable to create a GPU instance on GPU %d using profile %s: Invalid Argument" % (i, name), 2)
            start = place(gpu, name, int(wanted) if wanted else None)
            if start is None:
                fail("Unable to create a GPU instance on GPU %d using profile %s: Insufficient Resources" % (i, name), 2)
            gid = state["next_gi"]
            state["next_gi"] += 1
            gpu["gis"].append({"id": gid, "profile": name, "start": start, "ci": with_ci})
            print("Successfully created GPU instance ID %2d on GPU %2d using profile MIG %s (ID %2d)"
                  % (gid, i, name, PROFILES[name][1]))
            if with_ci:
                print("Successfully created compute instance ID  0 on GPU %2d GPU instance ID %2d using profile MIG %s "
                      "(ID %2d)" % (i, gid, name, CI_ID[PROFILES[name][4]]))


def main(argv):
    state = load()
    index = None
    if "-i" in argv:
        pos = argv.index("-i")
        index = int(argv[pos + 1])
        rest = argv[:pos] + argv[pos + 2:]
    else:
        rest = list(argv)
    if rest and rest[0].startswith("--query-gpu="):
        for i, gpu in targets(state, index):
            print("%d, %s, %s, %s, %s" % (i, gpu["uuid"], gpu["name"], onoff(gpu["mig"]), onoff(gpu["mig_pending"])))
        return 0
    if rest[:1] == ["-mig"]:
        log(argv)
        want = rest[1] == "1"
        for i, gpu in targets(state, index):
            if not want and gpu["gis"]:
                fail("Unable to disable MIG Mode for GPU %s: In use by another client" % gpu["bus"], 1)
            gpu["mig_pending"] = want
            if gpu["needs_reset"] and gpu["mig"] != want:
                print("Warning: MIG mode is in pending %s state for GPU %s:Not Supported\nReboot the system or "
                      "try nvidia-smi --gpu-reset to make MIG mode effective on GPU %s"
                      % ("enable" if want else "disable", gpu["bus"], gpu["bus"]))
            else:
                gpu["mig"] = want
                print("%s MIG Mode for GPU %s" % ("Enabled" if want else "Disabled", gpu["bus"]))
        save(state)
        print("All done.")
        return 0
    if rest[:1] in (["-r"], ["--gpu-reset"]):
        log(argv)
        for i, gpu in targets(state, index):
            if not gpu.get("reset_supported", True):
                fail("Resetting GPU %s is not supported." % gpu["bus"], 3)
            gpu["mig"] = gpu["mig_pending"]
            print("GPU %s was successfully reset." % gpu["bus"])
        save(state)
        print("All done.")
        return 0
    if rest[:1] != ["mig"]:
        fail("stand-in nvidia-smi: unsupported arguments %r" % (argv,), 2)
    rest = rest[1:]
    if rest == ["-lgip"]:
        lgip(state, index)
    elif rest == ["-lgipp"]:
        lgipp(state, index)
    elif rest == ["-lgi"]:
        lgi(state, index)
    elif rest == ["-lci"]:
        lci(state, index)
    elif rest[:1] == ["-cgi"]:
        log(argv)
        try:
            cgi(state, index, rest[1].split(","), "-C" in rest)
        finally:
            save(state)
    elif rest == ["-dci"]:
        log(argv)
        found = False
        for i, gpu in targets(state, index):
            for g in gpu["gis"]:
                if g["ci"]:
                    found = True
                    g["ci"] = False
                    print("Successfully destroyed compute instance ID  0 from GPU %2d GPU instance ID %2d" % (i, g["id"]))
        save(state)
        if not found:
            fail("No compute instances found: Not Found")
    elif rest == ["-dgi"]:
        log(argv)
        found = False
        for i, gpu in targets(state, index):
            if any(g["ci"] for g in gpu["gis"]):
                fail("Unable to destroy GPU instance on GPU %d: In use by another client" % i, 19)
            for g in gpu["gis"]:
                found = True
                print("Successfully destroyed GPU instance ID %2d from GPU %2d" % (g["id"], i))
            gpu["gis"] = []
        save(state)
        if not found:
            fail("No GPU instances found: Not Found")
    else:
        fail("stand-in nvidia-smi: unsupported mig arguments %r" % (rest,), 2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
