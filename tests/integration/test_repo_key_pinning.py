"""Repository signing keys pinned by fingerprint, on the real package path (issue 30 item 1).

A real Debian 12 systemd container (host network) runs the nvidia_container_toolkit role with real
apt against the labelled STAND-IN toolkit repository (NVIDIA's repository is unreachable here;
molecule/nvidia_container_toolkit/files/build-standin-repo.sh builds packages with the real names
and versions). The stand-in repository is SIGNED for this test with a throwaway key made by gpg in
a temporary GNUPGHOME (nothing private is kept), and a second throwaway key plays the attacker. Both
public keys are served by a local HTTP server the container reaches on 127.0.0.1.

* The documented mirror/air-gap path: the inventory names the stand-in key's URL and fingerprint;
  the role checks the key, writes it, and apt installs the pinned packages verifying the signed index.
* The refusal: the same URL now serves the attacker's key (a compromised mirror); the role fails
  naming the key, the URL and both fingerprints, and /etc/apt (keyrings, sources) is byte-identical.
* The default: a key URL without a fingerprint is checked against NVIDIA's pinned key, so a
  key that is not NVIDIA's is refused even when the inventory points at it.
* The driver role on NVIDIA's CUDA repository path (branch 580, Debian 12): the key served at the
  inventory's key URL is not NVIDIA's cudatools key, so the role stops before anything changes (no
  keyring, no sources, no node preparation, no package) naming both fingerprints.
"""
import functools
import http.server
import os
import shutil
import threading

import pytest

from ansible_run import CHECKOUT_PATHS, ROOT, run_playbook
from signed_repo import gnupg_home, new_key, sign_flat_repository
from systemd_node import (TOOLKIT_PINNED, apt_install, boot, per_worker, podman, podman_inventory, remove,
                          shell_of, standin_toolkit_repo)

NODE = per_worker("gpufleet-repokey-node")
PLAYBOOK = os.path.join(ROOT, "tests", "integration", "playbooks", "toolkit.yml")
NVIDIA_TOOLKIT_FPR = "C95B321B61E88C1809C4F759DDCAE044F796ECB0"
KEYRING = "/etc/apt/keyrings/nvidia-container-toolkit.asc"
SOURCES = "/etc/apt/sources.list.d/nvidia-container-toolkit.sources"

sh = shell_of(NODE)

pytestmark = pytest.mark.skipif(not shutil.which("gpg"), reason="gpg is required (Debian package gnupg)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    work = tmp_path_factory.mktemp("repokey")
    home = gnupg_home(work)
    standin_uid, standin_fpr, standin_pub = new_key(home, "standin")
    _uid, attacker_fpr, attacker_pub = new_key(home, "attacker")
    repo = standin_toolkit_repo(work / "repo")
    sign_flat_repository(repo, home, standin_uid)
    www = work / "www"
    www.mkdir()
    (www / "gpgkey").write_bytes(standin_pub)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    boot(NODE, "--network", "host")
    sh(apt_install("containerd") + " && systemctl enable --now containerd")
    podman("cp", repo, NODE + ":/srv/repo")
    try:
        yield {"work": work, "www": www, "url": "http://127.0.0.1:%d/gpgkey" % server.server_address[1],
               "standin_fpr": standin_fpr, "standin_pub": standin_pub,
               "attacker_fpr": attacker_fpr, "attacker_pub": attacker_pub}
    finally:
        server.shutdown()
        remove(NODE)


DRIVER_PLAYBOOK = """---
- name: Install NVIDIA's driver from the CUDA repository
  hosts: all
  gather_facts: false
  tasks:
    - name: Run the driver role
      ansible.builtin.include_role:
        name: nvidia_driver
"""


def play(site, playbook=PLAYBOOK, **host_vars):
    inventory = podman_inventory(site["work"] / "hosts.yml", NODE, nvidia_container_toolkit_repo_url="file:/srv/repo",
                                 nvidia_container_toolkit_repo_suite="./",
                                 nvidia_container_toolkit_repo_key_url=site["url"], **host_vars)
    return run_playbook(playbook, "-i", inventory, collapse=True, **CHECKOUT_PATHS)


def etc_apt():
    """Every file under /etc/apt with its sha256 (keyrings, sources, preferences)."""
    return sh("find /etc/apt -type f -print0 | sort -z | xargs -0 sha256sum").stdout


def node_state():
    """/etc/apt file by file, every file under /etc and every installed package (as digests)."""
    return etc_apt() + sh("find /etc -xdev -type f -print0 | sort -z | xargs -0 md5sum | md5sum; "
                          "dpkg-query -W -f='${Package} ${Version}\\n' | md5sum").stdout


def test_own_key_with_its_fingerprint_is_written_and_apt_verifies_the_signed_repository(site):
    rc, out = play(site, nvidia_container_toolkit_repo_key_fingerprint=site["standin_fpr"])
    assert rc == 0, out[-3000:]
    assert sh("cat " + KEYRING).stdout.encode() == site["standin_pub"]
    assert "Signed-By: %s" % KEYRING in sh("cat " + SOURCES).stdout
    assert sh("dpkg-query -W -f='${Version}' nvidia-container-toolkit").stdout == TOOLKIT_PINNED
    # apt really checked the signature: the index came from InRelease, not as an unsigned repository
    assert "Trusted" not in sh("cat " + SOURCES).stdout
    update = sh("apt-get update 2>&1").stdout
    assert "NO_PUBKEY" not in update and "not signed" not in update, update


def test_a_mirror_serving_another_key_is_refused_and_nothing_changes(site):
    (site["www"] / "gpgkey").write_bytes(site["attacker_pub"])
    before = node_state()
    assert KEYRING in before        # the keyring of the run before is there, and must stay as it is
    rc, out = play(site, nvidia_container_toolkit_repo_key_fingerprint=site["standin_fpr"])
    assert rc != 0, out[-3000:]
    for part in ("nvidia_container_toolkit_repo_key_url/nvidia_container_toolkit_repo_key_fingerprint",
                 site["url"], "expected fingerprint " + site["standin_fpr"], "found " + site["attacker_fpr"],
                 "Nothing was written"):
        assert part in out, (part, out[-3000:])
    assert node_state() == before
    assert sh("cat " + KEYRING).stdout.encode() == site["standin_pub"]


def test_a_key_url_without_fingerprint_must_be_nvidias_key(site):
    (site["www"] / "gpgkey").write_bytes(site["standin_pub"])
    before = node_state()
    rc, out = play(site)
    assert rc != 0, out[-3000:]
    for part in ("expected fingerprint " + NVIDIA_TOOLKIT_FPR, "found " + site["standin_fpr"], site["url"]):
        assert part in out, (part, out[-3000:])
    assert node_state() == before


def test_driver_role_refuses_a_cuda_key_that_is_not_nvidias_before_anything_changes(site):
    (site["www"] / "gpgkey").write_bytes(site["attacker_pub"])
    playbook = site["work"] / "driver.yml"
    playbook.write_text(DRIVER_PLAYBOOK)
    before = node_state()
    rc, out = play(site, playbook, nvidia_driver_version="580", nvidia_driver_source="nvidia",
                   nvidia_driver_flavour="open", nvidia_driver_repo_key_url=site["url"])
    assert rc != 0, out[-3000:]
    for part in ("nvidia_driver_repo_key_url/nvidia_driver_repo_key_fingerprint", site["url"],
                 "expected fingerprint EB693B3035CD5710E231E123A4B469963BF863CC", "found " + site["attacker_fpr"]):
        assert part in out, (part, out[-3000:])
    assert "Prepare the node" not in out        # stopped before gpu_node_prep ran
    assert node_state() == before
