"""The node containers of the integration tests (podman, images from scripts/harness-setup.sh): a real Debian
12/13 with systemd as PID 1 (boot), one without systemd (start), and STAND-INS for what cannot be obtained
here, built on Debian: a Rocky Linux 9 host (rocky_standin), a local toolkit apt repository."""
import hashlib
import json
import os
import shutil
import subprocess
import time

from ansible_run import CHECKOUT_PATHS, ROOT, recap, run_playbook

DEBIAN12 = "localhost/gpufleet-debian:12"


def _standin_versions():
    path = os.path.join(ROOT, "molecule", "nvidia_container_toolkit", "files", "standin-versions.env")
    with open(path) as handle:
        return dict(line.strip().split("=", 1) for line in handle if line.strip() and not line.startswith("#"))


# The toolkit versions the stand-in repository offers (read from the one file that names them, which
# build-standin-repo.sh and the molecule verifier read too): older than the pin, the role's default
# pin, newer than the pin.
_VERSIONS = _standin_versions()
TOOLKIT_OLDER = _VERSIONS["TOOLKIT_OLDER"]
TOOLKIT_PINNED = _VERSIONS["TOOLKIT_PINNED"]
TOOLKIT_NEWER = _VERSIONS["TOOLKIT_NEWER"]

# The nvidia-driver version Debian 12's non-free archive (bookworm) offers, which the node-stage tests
# install for real; the other tests use it as a realistic R535 version. The one place to change when
# Debian moves it (molecule/nvidia_driver names it too, see its molecule.yml).
DEBIAN12_DRIVER = "535.261.03"
DEBIAN12_DRIVER_PACKAGE = DEBIAN12_DRIVER + "-1"


def per_worker(name):
    """``name`` made unique per checkout and per pytest-xdist worker: two clones tested at once, or
    two workers of one run, each boot their own container instead of removing each other's."""
    tag = hashlib.sha256(ROOT.encode()).hexdigest()[:6]
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return "-".join([name, tag] + ([worker] if worker else []))


def podman(*args, check=True, **kw):
    return subprocess.run(["podman"] + list(args), capture_output=True, text=True, check=check, **kw)


def boot(name, *run_args, image=DEBIAN12, timeout=60):
    """Start ``name`` fresh (``run_args`` go to ``podman run``) and wait until systemd is up."""
    if not shutil.which("podman"):
        raise RuntimeError("podman is required (scripts/harness-setup.sh installs it)")
    podman("rm", "-f", "-t", "0", name, check=False)
    podman("run", "-d", "--name", name, "--hostname", name, *run_args, "--systemd=always", image, "/sbin/init")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if podman("exec", name, "systemctl", "is-system-running", check=False).stdout.strip() in ("running", "degraded"):
            return
        time.sleep(0.5)
    raise RuntimeError("%s: systemd did not come up within %d s" % (name, timeout))


# A boot id per container start: a container shares the host kernel's boot id, by which
# ansible.builtin.reboot (and the nvidia-smi stand-ins) tell that the host rebooted.
BOOT_ID_STANDIN = """[Unit]
Description=STAND-IN: a fresh boot id for each start of this container (it shares the host kernel's)
DefaultDependencies=no
Before=sysinit.target
[Service]
Type=oneshot
RemainAfterExit=true
ExecStart=/bin/sh -c 'cat /proc/sys/kernel/random/uuid > /run/standin-boot-id && mount --bind /run/standin-boot-id /proc/sys/kernel/random/boot_id'
[Install]
WantedBy=sysinit.target
"""

# ansible.builtin.reboot runs `shutdown -r 0 ...`. Over SSH, a host that goes down under that command drops the
# connection, which the reboot action expects and handles. Over podman exec, a container that stops under it
# may lose the exec session instead, and podman then reports a failed command ("exec died event ... not found":
# seen in CI), which the reboot action reports as "Reboot command failed". This STAND-IN shutdown hands the real
# one (systemctl, by the name `shutdown`, with the same arguments) to a transient systemd timer one second later
# and returns at once, as the real command returns once the reboot is scheduled.
SHUTDOWN_STANDIN = """#!/bin/sh
# STAND-IN (gpufleet tests): the real shutdown, one second later, so that the podman exec returns first.
exec systemd-run --quiet --collect --on-active=1 /usr/local/lib/standin-shutdown/shutdown "$@"
"""


def boot_rebootable(name, work):
    """Boot the systemd node ``name`` so that ansible.builtin.reboot works on it: podman's restart policy boots
    it again after ``shutdown -r``, and standin-boot-id.service (BOOT_ID_STANDIN, written under ``work``)
    gives each boot its own boot id, and SHUTDOWN_STANDIN lets the podman exec of ``shutdown -r`` return before the
    container stops. Runs --privileged for that bind mount."""
    boot(name, "--privileged", "--restart=always")
    unit = os.path.join(str(work), "standin-boot-id.service")
    with open(unit, "w") as handle:
        handle.write(BOOT_ID_STANDIN)
    podman("cp", unit, name + ":/etc/systemd/system/standin-boot-id.service")
    shell(name, "systemctl daemon-reload && systemctl enable --now standin-boot-id.service 2>/dev/null")
    script = os.path.join(str(work), "standin-shutdown")
    with open(script, "w") as handle:
        handle.write(SHUTDOWN_STANDIN)
    shell(name, "mkdir -p /usr/local/lib/standin-shutdown && ln -sf /bin/systemctl /usr/local/lib/standin-shutdown/shutdown"
          " && rm -f /usr/sbin/shutdown")
    podman("cp", script, name + ":/usr/sbin/shutdown")
    shell(name, "chmod 755 /usr/sbin/shutdown")


def install_standin(name, script, dest="/usr/local/bin/nvidia-smi"):
    """Install the STAND-IN ``script`` (a file of tests/standin) at ``dest`` in the container ``name``, executable,
    with the state module the stand-ins import (tests/standin/standin_state.py) next to it."""
    folder = os.path.join(ROOT, "tests", "standin")
    podman("cp", os.path.join(folder, script), name + ":" + dest)
    podman("cp", os.path.join(folder, "standin_state.py"), "%s:%s/standin_state.py" % (name, os.path.dirname(dest)))
    shell(name, "chmod 755 " + dest)


def boot_id(name):
    return shell(name, "cat /proc/sys/kernel/random/boot_id").stdout.strip()


def remove(name):
    podman("rm", "-f", "-t", "0", name, check=False)


def start(name, *run_args, image=DEBIAN12):
    """Start ``name`` fresh WITHOUT systemd: PID 1 is ``sleep infinity`` (``run_args`` go to ``podman run``)."""
    remove(name)
    podman("run", "-d", "--name", name, *run_args, image, "sleep", "infinity")


def shell(name, cmd, check=True):
    """Run ``cmd`` with sh inside the container ``name``."""
    return podman("exec", name, "sh", "-c", cmd, check=check)


def shell_of(name):
    """``sh(cmd, check=True)``: shell() bound to the container ``name``."""
    return lambda cmd, check=True: shell(name, cmd, check)


def apt_install(*packages):
    """The shell command that refreshes the package lists and installs ``packages`` quietly (stdout dropped)."""
    return ("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
            + " ".join(packages) + " >/dev/null")


def standin_apt_node(name, build):
    """A plain Debian 12 container (no systemd) with apt-utils, where the shell script ``build`` has
    built and registered a local stand-in apt repository."""
    start(name)
    shell(name, apt_install("apt-utils") + " 2>&1")
    shell(name, build)


# The RHEL-family STAND-IN (no RHEL-family image can be obtained here): a Debian 12 container whose
# /etc/os-release and /etc/redhat-release name Rocky Linux 9.4, with Debian's real rpm and dnf, and the
# BaseOS, CRB and EPEL repositories built by tests/standin/build-el-standin-repos.sh (real package names,
# stand-in contents) under /srv/rpm.
ROCKY_OS_RELEASE = """NAME="Rocky Linux"
VERSION="9.4 (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux 9.4 (Blue Onyx) - gpufleet STAND-IN on a Debian userland"
"""
ROCKY_REPO = """[baseos]
name=Rocky 9 BaseOS (gpufleet stand-in)
baseurl=file:///srv/rpm/baseos
enabled=1
gpgcheck=0

[crb]
name=Rocky 9 CRB (gpufleet stand-in)
baseurl=file:///srv/rpm/crb
enabled=0
gpgcheck=0
"""


def rocky_standin(name):
    """Start ``name`` fresh as the Rocky Linux 9 STAND-IN (see ROCKY_OS_RELEASE above; no systemd as PID 1)."""
    start(name, "--hostname", name)
    shell(name, apt_install("dnf", "rpm", "createrepo-c", "python3-dnf", "dnf-plugins-core", "file") + " 2>&1")
    podman("cp", os.path.join(ROOT, "tests", "standin", "build-el-standin-repos.sh"), name + ":/usr/local/bin/")
    shell(name, "build-el-standin-repos.sh /srv/rpm")
    shell(name, "cat > /etc/os-release <<'EOF'\n%sEOF\necho 'Rocky Linux release 9.4 (Blue Onyx)' > /etc/redhat-release;"
          " mkdir -p /etc/yum.repos.d /etc/dnf/vars && echo 9 > /etc/dnf/vars/releasever;"
          " cat > /etc/yum.repos.d/rocky.repo <<'EOF'\n%sEOF\n" % (ROCKY_OS_RELEASE, ROCKY_REPO))


def _host_vars(host_vars, indent):
    return "".join("%s%s: %s\n" % (" " * indent, key, json.dumps(value)) for key, value in host_vars.items())


def podman_inventory(path, name, **host_vars):
    """Write at ``path`` an inventory of the one container ``name`` reached with the podman connection."""
    path.write_text("all:\n  hosts:\n    %s:\n      ansible_connection: containers.podman.podman\n"
                    "      ansible_python_interpreter: /usr/bin/python3\n%s" % (name, _host_vars(host_vars, 6)))
    return str(path)


# The node stage's inputs on a Debian 12 node: Debian's own R535 driver (past end of life, allowed on
# purpose), the toolkit from the stand-in repository copied to /srv/repo (unsigned: allowed with the
# air-gap setting gpufleet_allow_unsigned_repos, which preflight requires for it), a self-managed cluster
# in apply mode with one pool.
NODE_STAGE_VARS = """all:
  vars:
    ansible_python_interpreter: /usr/bin/python3
    nvidia_driver_version: "%(driver)s"
    nvidia_driver_source: distribution
    nvidia_driver_flavour: proprietary
    gpufleet_allow_eol_driver: true
    nvidia_container_toolkit_repo_url: file:/srv/repo
    nvidia_container_toolkit_repo_suite: ./
    nvidia_container_toolkit_repo_trusted: true
    gpufleet_allow_unsigned_repos: true
    nvidia_container_toolkit_repo_key_url: ""
    gpufleet_platform: kubeadm
    gpufleet_cluster_name: %(cluster)s
    gpufleet_apply: true
    gpufleet_gpu_pools: [{name: infer-t4, gpu_type: t4, node_group: gpu_nodes}]
  children:
    gpu_nodes:
      hosts:
        %(name)s:
"""


def node_stage_inventory(path, name, cluster, **host_vars):
    """Write at ``path`` the node stage's inventory (NODE_STAGE_VARS) of the one GPU node ``name``."""
    path.write_text(NODE_STAGE_VARS % {"driver": DEBIAN12_DRIVER, "cluster": cluster, "name": name}
                    + _host_vars(host_vars, 10))
    return str(path)


def standin_toolkit_repo(path):
    """The local apt repository standing in for NVIDIA's unreachable toolkit repository (real package
    names; versions TOOLKIT_OLDER, TOOLKIT_PINNED and TOOLKIT_NEWER; see
    molecule/nvidia_container_toolkit/files/build-standin-repo.sh)."""
    subprocess.run([os.path.join(ROOT, "molecule", "nvidia_container_toolkit", "files", "build-standin-repo.sh"), str(path)],
                   check=True, capture_output=True)
    return str(path)


def toolkit_node(name, work, containerd="enable"):
    """Boot the systemd node ``name`` with containerd installed (``containerd``: the systemctl verb for it,
    "enable" or "enable --now") and the stand-in toolkit repository (standin_toolkit_repo, built under
    ``work``) at /srv/repo, as the node-stage tests start."""
    repo = standin_toolkit_repo(os.path.join(str(work), "repo"))
    boot(name)
    shell(name, apt_install("containerd") + " && systemctl %s containerd" % containerd)
    podman("cp", repo, name + ":/srv/repo")
    return repo


def converge(inventory, playbook, host, *args, timeout=600):
    """Run the real ansible-playbook of this checkout on ``playbook`` against ``inventory``; it must
    succeed. Returns (changed count of ``host`` from the recap, the output with whitespace collapsed)."""
    rc, out = run_playbook(playbook, "-i", inventory, *args, timeout=timeout, collapse=True, **CHECKOUT_PATHS)
    assert rc == 0, out[-6000:]
    counts = recap(out, host)
    assert (counts["unreachable"], counts["failed"]) == (0, 0), out[-3000:]
    return counts["changed"], out
