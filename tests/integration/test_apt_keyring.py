"""The keyring gpufleet writes, judged by Debian's own apt (issue 39: the key pin apt agrees with).

Debian 12's apt dearmors every ``-----BEGIN ...-----`` block of an ``.asc`` Signed-By file, whatever its
label. This test runs the machine's real ``apt-get update`` (isolated state, lists and sources under a
temporary folder; nothing of the machine's apt configuration is read or changed) against a local flat
repository signed by a throwaway "attacker" key (a STAND-IN for a compromised mirror; made by gpg in a
temporary GNUPGHOME, nothing private kept):

* the old behaviour, the downloaded text written as it came (the pinned key plus the attacker's key in a
  ``PGP ARMORED FILE`` block): apt accepts the attacker's signature; this is what the check must refuse;
* gpufleet's check refuses that download, and the keyring gpufleet writes for the pinned key alone
  (repo_keys.keyring_text) makes apt refuse the attacker's signature and accept the real one's.
"""
import os
import shutil
import subprocess

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import repo_keys
from signed_repo import gnupg_home, new_key, sign_flat_repository

pytestmark = pytest.mark.skipif(not (shutil.which("gpg") and shutil.which("apt-get")),
                                reason="gpg and apt-get are required (Debian packages gnupg, apt)")


def spec(fingerprint):
    return {"name": "container_toolkit", "description": "the test key", "url": "https://example.invalid/k.asc",
            "fingerprint": fingerprint, "variables": "k_url/k_fingerprint", "advice": "set k_url and k_fingerprint"}


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    work = tmp_path_factory.mktemp("aptkey")
    home = gnupg_home(work)
    return work, home, new_key(home, "pinned"), new_key(home, "attacker")


def _repo(work, home, uid, name):
    repo = work / name
    repo.mkdir()
    (repo / "Packages").write_bytes(b"")
    sign_flat_repository(str(repo), home, uid)
    return repo


def apt_update(work, repo, keyring_text, name):
    """``apt-get update`` of only ``repo`` with ``keyring_text`` as its Signed-By .asc file: (rc, output)."""
    root = work / ("apt-" + name)
    for sub in ("lists/partial", "cache/archives/partial", "etc/sources.list.d", "etc/trusted.gpg.d", "etc/preferences.d"):
        (root / sub).mkdir(parents=True)
    keyring = root / "etc" / "key.asc"
    keyring.write_text(keyring_text)
    (root / "etc" / "sources.list.d" / "t.sources").write_text(
        "Types: deb\nURIs: file:%s\nSuites: ./\nSigned-By: %s\n" % (repo, keyring))
    opts = ["-o", "Dir::Etc=%s" % (root / "etc"), "-o", "Dir::Etc::sourcelist=/dev/null",
            "-o", "Dir::Etc::sourceparts=%s" % (root / "etc" / "sources.list.d"),
            "-o", "Dir::Etc::trusted=/dev/null", "-o", "Dir::Etc::trustedparts=%s" % (root / "etc" / "trusted.gpg.d"),
            "-o", "Dir::State::Lists=%s" % (root / "lists"), "-o", "Dir::Cache=%s" % (root / "cache"),
            "-o", "Dir::State::status=/dev/null", "-o", "APT::Sandbox::User=root", "-o", "Debug::NoLocking=1"]
    done = subprocess.run(["apt-get", "update", "--error-on=any"] + opts, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, LC_ALL="C"))
    return done.returncode, done.stdout + done.stderr


def test_apt_trusts_a_hidden_block_and_gpufleet_refuses_it(keys):
    work, home, (pinned_uid, pinned_fpr, pinned_pub), (attacker_uid, _fpr, attacker_pub) = keys
    evil = _repo(work, home, attacker_uid, "evil")
    download = pinned_pub.decode() + "\n" + attacker_pub.decode().replace("PGP PUBLIC KEY BLOCK", "PGP ARMORED FILE")
    # the threat is real: written as downloaded, apt accepts the attacker's signature
    rc, out = apt_update(work, evil, download, "as-downloaded")
    assert rc == 0, out
    # gpufleet refuses that download before anything is written
    assert "besides one public key block" in repo_keys.key_problem(download, spec(pinned_fpr))
    with pytest.raises(repo_keys.KeyFormatError):
        repo_keys.keyring_text(download, spec(pinned_fpr))


def test_the_keyring_gpufleet_writes_trusts_only_the_pinned_key(keys):
    work, home, (pinned_uid, pinned_fpr, pinned_pub), (attacker_uid, _fpr, _pub) = keys
    keyring = repo_keys.keyring_text(pinned_pub.decode(), spec(pinned_fpr))
    rc, out = apt_update(work, _repo(work, home, attacker_uid, "evil2"), keyring, "written-evil")
    assert rc != 0 and ("NO_PUBKEY" in out or "not signed" in out), out
    rc, out = apt_update(work, _repo(work, home, pinned_uid, "good"), keyring, "written-good")
    assert rc == 0, out
