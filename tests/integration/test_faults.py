"""Injected faults against a real Debian 12 systemd container running Debian's containerd, with
the nvidia_container_toolkit role and the local stand-in toolkit repository (NVIDIA's repository
is unreachable here; molecule/nvidia_container_toolkit/files/build-standin-repo.sh builds packages
with the real names and versions). Each test says what it injects and what it checks.

Faults covered elsewhere, with the real components: broken containerd candidate and containerd
failing to restart (rolled back) in molecule/nvidia_container_toolkit and
tests/integration/test_containerd_real.py; bad input before any change in test_bad_inputs.py;
a reboot that is needed but not allowed is reported, not performed (driver role, molecule
nvidia_driver verifier + tests/unit/test_driver_packages.py).
"""
import os
import re
import signal
import time

import pytest

from ansible_run import CHECKOUT_PATHS, ROOT, ansible_env, popen, recap, run_playbook
from systemd_node import (TOOLKIT_NEWER, TOOLKIT_PINNED, per_worker, podman, podman_inventory, remove, shell_of,
                         toolkit_node)

NODE = per_worker("gpufleet-faults-node")
PLAYBOOK = os.path.join(ROOT, "tests", "integration", "playbooks", "toolkit.yml")
HOLD_LOCK = ("import fcntl, sys, time\n"
             "handles = [open(p, 'w') for p in ('/var/lib/dpkg/lock-frontend', '/var/lib/dpkg/lock')]\n"
             "for h in handles:\n    fcntl.lockf(h, fcntl.LOCK_EX)\n"
             "open('/run/lock-held', 'w').close()\n"
             "time.sleep(float(sys.argv[1]))\n")


sh = shell_of(NODE)   # a shell command in the node container


def packages():
    return sh("dpkg-query -W -f='${Package} ${Version} ${Status}\\n' | sort").stdout


def audit():
    """dpkg --audit prints nothing when no package is half-installed or half-configured."""
    return sh("dpkg --audit").stdout.strip()


def toolkit_version():
    return sh("dpkg-query -W -f='${Version}' nvidia-container-toolkit", check=False).stdout.strip()


@pytest.fixture(scope="module")
def inventory(tmp_path_factory):
    work = tmp_path_factory.mktemp("faults")
    toolkit_node(NODE, work, containerd="enable --now")
    yield podman_inventory(work / "hosts.yml", NODE, nvidia_container_toolkit_repo_suite="./",
                           nvidia_container_toolkit_repo_trusted=True)
    remove(NODE)


def play(inventory, *extra, background=False):
    args = [PLAYBOOK, "-i", inventory] + [a for item in extra for a in ("-e", item)]
    if background:
        return popen("ansible-playbook", *args, start_new_session=True, env=ansible_env(**CHECKOUT_PATHS))
    return run_playbook(*args, collapse=True, **CHECKOUT_PATHS)


def recap_changed(out):
    counts = recap(out, NODE)
    assert counts["unreachable"] == 0, out[-2000:]
    return counts["changed"], counts["failed"]


def test_repository_unreachable_fails_clearly_and_removes_nothing(inventory):
    """Injected: the toolkit repository URL points at a closed port on the loopback address.
    Checked: the run fails naming the repository, no package is removed or half-installed,
    containerd's config is untouched and containerd still runs."""
    before, config = packages(), sh("cat /etc/containerd/config.toml 2>/dev/null; true").stdout
    rc, out = play(inventory, "nvidia_container_toolkit_repo_url=http://127.0.0.1:9/libnvidia-container")
    assert rc != 0
    assert "127.0.0.1:9" in out, out[-2000:]
    assert packages() == before and audit() == ""
    assert sh("cat /etc/containerd/config.toml 2>/dev/null; true").stdout == config
    assert sh("systemctl is-active containerd").stdout.strip() == "active"


def test_apt_lock_held_briefly_waits_then_succeeds(inventory):
    """Injected: another process holds the dpkg locks for 20 s when the run starts.
    Checked: the run waits for the lock (takes >= ~20 s) and succeeds; the pinned version is installed."""
    podman("exec", "-d", NODE, "python3", "-c", HOLD_LOCK, "20")
    for _ in range(50):
        if sh("test -e /run/lock-held", check=False).returncode == 0:
            break
        time.sleep(0.2)
    start = time.monotonic()
    rc, out = play(inventory, "nvidia_container_toolkit_repo_url=file:/srv/repo")
    assert rc == 0, out[-3000:]
    assert time.monotonic() - start >= 15
    assert toolkit_version() == TOOLKIT_PINNED and audit() == ""
    sh("rm -f /run/lock-held")


def test_apt_lock_held_too_long_fails_clearly_without_half_installed_packages(inventory):
    """Injected: the dpkg locks are held for 120 s while the pin moves to TOOLKIT_NEWER and the role's
    apt waits at most 5 s. Checked: a clear lock failure, the old version still installed, nothing
    half-installed."""
    podman("exec", "-d", NODE, "python3", "-c", HOLD_LOCK, "120")
    for _ in range(50):
        if sh("test -e /run/lock-held", check=False).returncode == 0:
            break
        time.sleep(0.2)
    rc, out = play(inventory, "nvidia_container_toolkit_repo_url=file:/srv/repo", "fault_apt_lock_timeout=5",
                   "nvidia_container_toolkit_version=" + TOOLKIT_NEWER)
    sh("pkill -f lock-frontend; rm -f /run/lock-held", check=False)
    assert rc != 0
    assert re.search(r"lock", out, re.I), out[-2000:]
    assert toolkit_version() == TOOLKIT_PINNED and audit() == ""


def not_installed():
    """Packages dpkg records in a state other than installed (half-installed, unpacked, ...)."""
    return sorted(line.split()[0] for line in sh(
        "dpkg-query -W -f='${Package} ${db:Status-Status}\\n'").stdout.splitlines()
        if len(line.split()) == 2 and line.split()[1] not in ("installed", "not-installed", "config-files"))


# Stands between dpkg and its archive extractor: while dpkg unpacks a package (the package already
# recorded half-installed), the extraction waits until the test has killed dpkg.
SLOW_DPKG_DEB = """#!/bin/sh
if [ "$1" = "--fsys-tarfile" ]; then touch /run/dpkg-unpacking; sleep 300; fi
exec /usr/bin/dpkg-deb.real "$@"
"""


def test_interrupted_converge_recovers_on_rerun(inventory):
    """Injected: the play moving the pin to TOOLKIT_NEWER is killed (SIGKILL to the play's process group
    and to dpkg and apt inside the node) while dpkg is unpacking a package. Checked first that dpkg
    really was interrupted (dpkg --audit complains and a package is left half-installed/unpacked);
    then a re-run converges (TOOLKIT_NEWER installed, containerd active with the nvidia runtime), a
    third run changes nothing, dpkg has nothing half-done."""
    sh("rm -f /run/dpkg-unpacking && dpkg-divert --quiet --local --rename --divert /usr/bin/dpkg-deb.real --add /usr/bin/dpkg-deb"
       " && cat > /usr/bin/dpkg-deb <<'EOF'\n%sEOF\nchmod 755 /usr/bin/dpkg-deb" % SLOW_DPKG_DEB)
    try:
        proc = play(inventory, "nvidia_container_toolkit_repo_url=file:/srv/repo",
                    "nvidia_container_toolkit_version=" + TOOLKIT_NEWER, background=True)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if sh("test -e /run/dpkg-unpacking", check=False).returncode == 0:
                break
            time.sleep(0.1)
        unpacking = sh("test -e /run/dpkg-unpacking", check=False).returncode == 0
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        sh("pkill -KILL -x dpkg; pkill -KILL -x apt-get; pkill -KILL -x apt; pkill -KILL -x dpkg-deb; true")
        proc.wait()
        assert unpacking, "the play ended before dpkg unpacked anything: %s" % proc.stdout.read()[-2000:]
    finally:
        sh("rm -f /usr/bin/dpkg-deb /run/dpkg-unpacking"
           " && dpkg-divert --quiet --local --rename --divert /usr/bin/dpkg-deb.real --remove /usr/bin/dpkg-deb")
    assert audit() != "", "dpkg --audit finds nothing: dpkg was not interrupted"
    assert not_installed(), packages()
    time.sleep(1)
    rc, out = play(inventory, "nvidia_container_toolkit_repo_url=file:/srv/repo", "nvidia_container_toolkit_version=" + TOOLKIT_NEWER)
    assert rc == 0, out[-3000:]
    assert toolkit_version() == TOOLKIT_NEWER and audit() == ""
    assert sh("systemctl is-active containerd").stdout.strip() == "active"
    assert "nvidia" in sh("containerd config dump").stdout
    rc, out = play(inventory, "nvidia_container_toolkit_repo_url=file:/srv/repo", "nvidia_container_toolkit_version=" + TOOLKIT_NEWER)
    assert rc == 0 and recap_changed(out) == (0, 0), out[-2000:]
