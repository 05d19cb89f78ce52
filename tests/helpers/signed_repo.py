"""Throwaway gpg keys and signed flat apt repositories for the tests that check apt's signature path against
local STAND-IN repositories (a temporary GNUPGHOME per test; nothing private is kept)."""
import gzip
import hashlib
import os
import subprocess


def gpg(home, *args, data=None):
    return subprocess.run(["gpg", "--homedir", str(home), "--batch", "--no-tty"] + list(args), input=data,
                          capture_output=True, check=True)


def gnupg_home(work):
    """A private, empty GNUPGHOME under ``work``."""
    home = work / "gnupg"
    home.mkdir(mode=0o700)
    return home


def new_key(home, name):
    uid = "gpufleet %s test key <%s@test.invalid>" % (name, name)
    gpg(home, "--passphrase", "", "--quick-gen-key", uid, "ed25519", "sign", "never")
    colons = gpg(home, "--with-colons", "--list-keys", uid).stdout.decode()
    fpr = [line.split(":")[9] for line in colons.splitlines() if line.startswith("fpr:")][0]
    return uid, fpr, gpg(home, "--armor", "--export", uid).stdout


def sign_flat_repository(repo, home, uid):
    """Release (hashes of Packages and Packages.gz) and its clear-signed InRelease, as apt wants them."""
    with open(os.path.join(repo, "Packages"), "rb") as handle:
        packages = handle.read()
    with open(os.path.join(repo, "Packages.gz"), "wb") as handle:
        handle.write(gzip.compress(packages))
    lines = ["Origin: gpufleet stand-in", "Label: gpufleet stand-in toolkit", "Date: Thu, 01 Jan 2026 00:00:00 UTC",
             "SHA256:"]
    for name in ("Packages", "Packages.gz"):
        with open(os.path.join(repo, name), "rb") as handle:
            data = handle.read()
        lines.append(" %s %d %s" % (hashlib.sha256(data).hexdigest(), len(data), name))
    release = ("\n".join(lines) + "\n").encode()
    with open(os.path.join(repo, "Release"), "wb") as handle:
        handle.write(release)
    signed = gpg(home, "--local-user", uid, "--digest-algo", "SHA512", "--clearsign", data=release).stdout
    with open(os.path.join(repo, "InRelease"), "wb") as handle:
        handle.write(signed)
