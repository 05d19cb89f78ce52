"""The state file of gpufleet's nvidia-smi STAND-INS (nvidia-smi-mig.py, nvidia-smi-health.py): JSON written
atomically, a log of the commands that changed something (<state>.log), and the boot id by which a stand-in
tells that its host rebooted. Copied next to a stand-in wherever it is installed (systemd_node.install_standin)."""
import json
import os


def boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip()
    except OSError:
        return ""


class StateFile(object):
    def __init__(self, path):
        self.path = path

    def exists(self):
        return os.path.exists(self.path)

    def read(self):
        with open(self.path) as handle:
            return json.load(handle)

    def save(self, state):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path + ".tmp", "w") as handle:
            json.dump(state, handle, indent=1, sort_keys=True)
        os.replace(self.path + ".tmp", self.path)

    def log(self, line):
        with open(self.path + ".log", "a") as handle:
            handle.write(line + "\n")

    def rebooted(self, state):
        """True (once) when the host booted since ``state`` was saved; ``state`` then carries the new boot id
        and the log says so (the caller applies what a reboot does, then saves)."""
        now = boot_id()
        if state.get("boot_id", now) == now:
            return False
        state["boot_id"] = now
        self.log("# reboot: boot id %s" % now)
        return True
