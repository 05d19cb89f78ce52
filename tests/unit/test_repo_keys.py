"""Repository signing keys pinned by fingerprint (issue 30 item 1): the OpenPGP fingerprint reader
against the real gpg, the refusal messages, where each key comes from, and the preflight refusals
of http:// repositories and unsigned toolkit repositories.

The keys here are throwaway keys made by gpg in a temporary GNUPGHOME for the test run; nothing
private is kept."""
import os
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import repo_keys
from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_packages import driver_plan
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import REPO_KEYS

CUDA = "https://developer.download.nvidia.com/compute/cuda/repos"
POOLS = [{"name": "p1", "gpu_type": "l4"}]

needs_gpg = pytest.mark.skipif(not shutil.which("gpg"), reason="gpg is required (Debian package gnupg)")


def gpg(home, *args, data=None):
    return subprocess.run(["gpg", "--homedir", str(home), "--batch", "--no-tty"] + list(args), input=data,
                          capture_output=True, check=True)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """Three throwaway public keys (two ed25519, one RSA 2048): armored text, binary bytes and gpg's fingerprint."""
    # scripts/harness-setup.sh installs it: a missing gpg fails here rather than skipping the comparison
    assert shutil.which("gpg"), "gpg is required (Debian package gnupg; scripts/harness-setup.sh installs it)"
    home = tmp_path_factory.mktemp("gnupg")
    os.chmod(str(home), 0o700)
    out = {}
    for name, algo in (("one", "ed25519"), ("two", "ed25519"), ("rsa", "rsa2048")):
        uid = "gpufleet test %s <%s@test.invalid>" % (name, name)
        gpg(home, "--passphrase", "", "--quick-gen-key", uid, algo, "sign", "never")
        armored = gpg(home, "--armor", "--export", uid).stdout.decode()
        binary = gpg(home, "--export", uid).stdout
        colons = gpg(home, "--show-keys", "--with-colons", data=armored.encode()).stdout.decode()
        out[name] = {"armored": armored, "binary": binary, "fpr": repo_keys.gpg_colons_fingerprints(colons)[0]}
    return out


def spec(fingerprint, url="https://example.invalid/key.asc"):
    return {"name": "container_toolkit", "description": "the test key", "url": url, "fingerprint": fingerprint,
            "variables": "k_url/k_fingerprint", "advice": "set k_url and k_fingerprint"}


@needs_gpg
@pytest.mark.parametrize("name", ["one", "two", "rsa"])
@pytest.mark.parametrize("form", ["armored", "binary"])
def test_fingerprint_is_the_one_gpg_prints(keys, name, form):
    assert len(keys[name]["fpr"]) == 40
    assert repo_keys.fingerprints(keys[name][form]) == [keys[name]["fpr"]]


@needs_gpg
def test_a_keyring_of_two_keys_lists_both(keys):
    both = [keys["one"]["fpr"], keys["two"]["fpr"]]
    assert repo_keys.fingerprints(keys["one"]["binary"] + keys["two"]["binary"]) == both
    # two armored blocks in one file: apt would trust both, so such a file is refused outright
    with pytest.raises(repo_keys.KeyFormatError, match="besides one public key block"):
        repo_keys.fingerprints(keys["one"]["armored"] + "\n" + keys["two"]["armored"])


@needs_gpg
def test_the_expected_key_passes(keys):
    assert repo_keys.key_problem(keys["one"]["armored"], spec(keys["one"]["fpr"])) == ""


@needs_gpg
def test_another_key_is_refused_naming_key_url_and_both_fingerprints(keys):
    message = repo_keys.key_problem(keys["two"]["armored"], spec(keys["one"]["fpr"]))
    for part in ("k_url/k_fingerprint", "the test key", "https://example.invalid/key.asc",
                 "expected fingerprint " + keys["one"]["fpr"], "found " + keys["two"]["fpr"],
                 "Nothing was written"):
        assert part in message, message


@needs_gpg
@pytest.mark.parametrize("form", ["armored", "binary"])
def test_the_expected_key_with_another_appended_is_refused(keys, form):
    """apt trusts every key in a Signed-By file: an extra key beside NVIDIA's is as bad as a wrong one."""
    data = keys["one"][form] + ("\n" if form == "armored" else b"") + keys["two"][form]
    message = repo_keys.key_problem(data, spec(keys["one"]["fpr"]))
    expected = ("found %s, %s" % (keys["one"]["fpr"], keys["two"]["fpr"]) if form == "binary"
                else "besides one public key block")
    assert expected in message, message


@pytest.mark.parametrize("content,reason", [
    ("", "not an ASCII-armored"),
    ("<html>404 Not Found</html>", "not an ASCII-armored"),
    ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!!!!\n-----END PGP PUBLIC KEY BLOCK-----\n", "base64 body is damaged"),
    ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n-----END PGP PUBLIC KEY BLOCK-----\n", "not an OpenPGP packet"),
    ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQ==\n", "not an ASCII-armored"),     # no end line
    (b"\x99\x00\x09\x04abcd", "truncated packet"),
    (b"\x99\x00\x05\x03abcd", "version 3 is not supported"),
    (b"\xb4\x00", "no public key"),
    (None, "no key content"),
])
def test_what_is_not_a_key_is_refused(content, reason):
    message = repo_keys.key_problem(content, spec(REPO_KEYS["container_toolkit"]["fingerprint"]))
    assert reason in message and REPO_KEYS["container_toolkit"]["fingerprint"] in message, message


@pytest.mark.parametrize("text,want", [
    ("EB69 3B30 35CD 5710 E231  E123 A4B4 6996 3BF8 63CC", "EB693B3035CD5710E231E123A4B469963BF863CC"),
    ("0xeb693b3035cd5710e231e123a4b469963bf863cc", "EB693B3035CD5710E231E123A4B469963BF863CC"),
    ("a" * 64, "A" * 64),
    ("3BF863CC", None),                 # a short key id is not a fingerprint
    ("G" * 40, None),
    ("", None),
    (42, None),
])
def test_normalize_fingerprint(text, want):
    assert repo_keys.normalize_fingerprint(text) == want


def test_pinned_fingerprints_are_normalized():
    for name, key in REPO_KEYS.items():
        assert repo_keys.normalize_fingerprint(key["fingerprint"]) == key["fingerprint"], name


@pytest.mark.parametrize("values,url,content,fingerprint,pinned", [
    ({}, "https://nvidia.github.io/libnvidia-container/gpgkey", "", "C95B321B61E88C1809C4F759DDCAE044F796ECB0", True),
    # a key URL of its own without a fingerprint: still NVIDIA's key, fetched from elsewhere
    ({"nvidia_container_toolkit_repo_key_url": "https://m.local/gpgkey"}, "https://m.local/gpgkey", "",
     "C95B321B61E88C1809C4F759DDCAE044F796ECB0", True),
    ({"nvidia_container_toolkit_repo_key_url": "https://m.local/own.asc",
      "nvidia_container_toolkit_repo_key_fingerprint": "aa" * 20}, "https://m.local/own.asc", "", "AA" * 20, False),
    ({"nvidia_container_toolkit_repo_key_content": "KEY", "nvidia_container_toolkit_repo_key_fingerprint": "bb" * 20},
     "", "KEY", "BB" * 20, False),
    # the package mirror is not an input here at all: it never moves the key
    ({"gpufleet_mirror_package_url": "https://m.local/p"}, "https://nvidia.github.io/libnvidia-container/gpgkey", "",
     "C95B321B61E88C1809C4F759DDCAE044F796ECB0", True),
])
def test_toolkit_key(values, url, content, fingerprint, pinned):
    key = repo_keys.toolkit_key(values)
    assert (key["url"], key["content"], key["fingerprint"], key["pinned"]) == (url, content, fingerprint, pinned)


def plan_for(version, release, values=None):
    base = {"distribution": "Debian", "distribution_version": release, "distribution_major": release,
            "codename": {"12": "bookworm", "13": "trixie"}[release], "architecture": "x86_64",
            "gpu_info": {"architectures": ["ampere"]}, "today": "2026-01-01"}
    return driver_plan(dict(base, values=dict({"nvidia_driver_version": version}, **(values or {}))))


@pytest.mark.parametrize("release,version,key_file,fingerprint", [
    ("12", "580", "3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC"),
    ("13", "580", "8793F200.pub", "02182E60104FCDC26EAE1B8597A5D4CB8793F200"),
    ("13", "595", "8793F200.pub", "02182E60104FCDC26EAE1B8597A5D4CB8793F200"),
])
def test_cuda_key_per_repository_and_never_through_the_mirror(release, version, key_file, fingerprint):
    plan = plan_for(version, release, {"gpufleet_mirror_package_url": "https://m.local/p"})
    assert plan["errors"] == [], plan["errors"]
    want = "%s/debian%s/x86_64/%s" % (CUDA, release, key_file)
    assert plan["keyring"]["url"] == want
    assert (plan["keyring"]["check"]["url"], plan["keyring"]["check"]["fingerprint"]) == (want, fingerprint)
    assert "URIs: https://m.local/p/developer.download.nvidia.com/" in plan["repo_files"][0]["content"]


@pytest.mark.parametrize("distribution,release,repo", [
    ("RedHat", "9", "rhel9"), ("Rocky", "8", "rhel8"), ("Amazon", "2023", "amzn2023")])
def test_rhel_family_cuda_key_is_pinned_by_fingerprint_and_is_the_one_dnf_imports(distribution, release, repo):
    """The RHEL-family key (D42D0685.pub) was named by file only: dnf imported whatever the URL served."""
    plan = driver_plan({"distribution": distribution, "distribution_version": release, "distribution_major": release,
                        "os_family": "RedHat", "architecture": "x86_64", "gpu_info": {"architectures": ["ampere"]},
                        "today": "2026-01-01", "values": {"nvidia_driver_version": "580",
                                                          "gpufleet_mirror_package_url": "https://m.local/p"}})
    assert plan["errors"] == [], plan["errors"]
    want = "%s/%s/x86_64/D42D0685.pub" % (CUDA, repo)
    assert (plan["keyring"]["url"], plan["keyring"]["check"]["fingerprint"]) == (
        want, "610C7B14E068A878070DA4E99CD0A493D42D0685")
    assert "gpgkey=file://%s\n" % plan["keyring"]["path"] in plan["repo_files"][0]["content"]


@needs_gpg
def test_rhel_family_cuda_key_of_another_signer_is_refused(keys):
    plan = driver_plan({"distribution": "RedHat", "distribution_version": "9", "distribution_major": "9",
                        "os_family": "RedHat", "architecture": "x86_64", "gpu_info": {"architectures": ["ampere"]},
                        "today": "2026-01-01", "values": {"nvidia_driver_version": "580"}})
    message = repo_keys.key_problem(keys["one"]["armored"], plan["keyring"]["check"])
    assert "refusing the signing key" in message and "610C7B14E068A878070DA4E99CD0A493D42D0685" in message, message
    assert keys["one"]["fpr"] in message and "nvidia_driver_repo_key_url/nvidia_driver_repo_key_fingerprint" in message


def test_cuda_key_of_the_inventory():
    plan = plan_for("580", "12", {"nvidia_driver_repo_key_url": "https://m.local/own.asc",
                                  "nvidia_driver_repo_key_fingerprint": "cc" * 20})
    assert (plan["keyring"]["url"], plan["keyring"]["check"]["fingerprint"]) == ("https://m.local/own.asc", "CC" * 20)
    assert "nvidia_driver_repo_key_url/nvidia_driver_repo_key_fingerprint" == plan["keyring"]["check"]["variables"]


def preflight(**extra):
    params = {"platform": "kubeadm", "cluster_name": "c1", "addons_mode": "standalone", "pools": POOLS,
              "extra": dict({"nvidia_driver_flavour": "proprietary"}, **extra)}
    errors, warnings, _plan = run_preflight(params)
    return errors, warnings


@pytest.mark.parametrize("extra,variable,fragment", [
    ({"gpufleet_mirror_package_url": "http://m.local/p"}, "gpufleet_mirror_package_url", "is http://"),
    ({"gpufleet_mirror_package_url": "HTTP://m.local/p"}, "gpufleet_mirror_package_url", "gpufleet_allow_http_mirrors"),
    ({"nvidia_container_toolkit_repo_url": "http://m.local/kit"}, "nvidia_container_toolkit_repo_url", "is http://"),
    # issue 39: a leading blank hid the scheme, and key URLs were not held to https:// at all
    ({"nvidia_container_toolkit_repo_url": " http://m.local/kit"}, "nvidia_container_toolkit_repo_url", "is http://"),
    ({"nvidia_driver_repo_key_url": "http://m.local/k.pub"}, "nvidia_driver_repo_key_url", "is http://"),
    ({"nvidia_container_toolkit_repo_key_url": "http://m.local/gpgkey"}, "nvidia_container_toolkit_repo_key_url",
     "gpufleet_allow_http_mirrors"),
    # allowing one repository does not allow the other
    ({"gpufleet_mirror_package_url": "http://m.local/p", "nvidia_container_toolkit_repo_url": "http://m.local/kit",
      "gpufleet_allow_http_mirrors": ["gpufleet_mirror_package_url"]}, "nvidia_container_toolkit_repo_url", "is http://"),
    ({"gpufleet_allow_http_mirrors": True}, "gpufleet_allow_http_mirrors", "gpufleet_mirror_package_url, "
                                                                           "nvidia_container_toolkit_repo_url"),
    ({"gpufleet_allow_http_mirrors": ["nvidia_driver_debian_mirror"]}, "gpufleet_allow_http_mirrors", "list of"),
    ({"nvidia_container_toolkit_repo_trusted": True}, "nvidia_container_toolkit_repo_trusted",
     "gpufleet_allow_unsigned_repos: true"),
    ({"nvidia_container_toolkit_repo_trusted": True, "gpufleet_allow_unsigned_repos": "yes"},
     "gpufleet_allow_unsigned_repos", "not a boolean"),
    ({"nvidia_container_toolkit_repo_key_fingerprint": "F796ECB0"}, "nvidia_container_toolkit_repo_key_fingerprint",
     "40 hex digits"),
    ({"nvidia_driver_repo_key_fingerprint": "not-hex"}, "nvidia_driver_repo_key_fingerprint", "40 hex digits"),
    ({"nvidia_driver_repo_key_url": "ftp://m.local/k"}, "nvidia_driver_repo_key_url", "https://HOST/PATH"),
    ({"nvidia_driver_repo_key_url": "https://m.local/k", "nvidia_driver_node_distros": ["debian-12", "debian-13"]},
     "nvidia_driver_repo_key_url", "different keys"),
])
def test_preflight_refuses(extra, variable, fragment):
    errors, _warnings = preflight(**extra)
    assert any(e.startswith(variable + ":") and fragment in e for e in errors), errors


@pytest.mark.parametrize("extra,variable", [
    ({"gpufleet_mirror_package_url": "http://m.local/p", "gpufleet_allow_http_mirrors": ["gpufleet_mirror_package_url"]},
     "gpufleet_mirror_package_url"),
    ({"nvidia_container_toolkit_repo_url": "http://m.local/kit",
      "gpufleet_allow_http_mirrors": ["nvidia_container_toolkit_repo_url"]}, "nvidia_container_toolkit_repo_url"),
    ({"nvidia_container_toolkit_repo_key_url": "http://m.local/gpgkey",
      "gpufleet_allow_http_mirrors": ["nvidia_container_toolkit_repo_key_url"]}, "nvidia_container_toolkit_repo_key_url"),
    ({"nvidia_container_toolkit_repo_trusted": True, "gpufleet_allow_unsigned_repos": True},
     "nvidia_container_toolkit_repo_trusted"),
])
def test_preflight_allows_explicitly_with_a_warning(extra, variable):
    errors, warnings = preflight(**extra)
    assert errors == [], errors
    assert any(w.startswith(variable + ":") for w in warnings), warnings


@pytest.mark.parametrize("extra", [
    {"gpufleet_mirror_package_url": "https://m.local/p"},
    {"gpufleet_mirror_package_url": "file:///srv/mirror"},
    {"nvidia_container_toolkit_repo_url": "file:/srv/repo"},
    {"nvidia_container_toolkit_repo_key_fingerprint": "C95B 321B 61E8 8C18 09C4  F759 DDCA E044 F796 ECB0"},
    {"nvidia_driver_repo_key_url": "file:///srv/keys/3bf863cc.pub", "nvidia_driver_node_distros": ["debian-12"]},
    # Debian's archive is checked by apt against the OS's own keyring: http:// stays the Debian default
    {"nvidia_driver_debian_mirror": "http://deb.debian.org/debian"},
])
def test_preflight_accepts(extra):
    errors, _warnings = preflight(**extra)
    assert errors == [], errors


ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


def task_names(role, tasks_file):
    with open(os.path.join(ROLES, role, "tasks", tasks_file)) as handle:
        return [t.get("name", "") for t in yaml.safe_load(handle)]


def position(names, fragment):
    found = [i for i, n in enumerate(names) if fragment in n]
    assert len(found) == 1, (fragment, names)
    return found[0]


@pytest.mark.parametrize("role,tasks_file,check,later", [
    # the key is read and checked before anything on the host changes: node preparation, kernel guard, sources
    ("nvidia_driver", "main.yml", "Check the signing key's fingerprint", "Prepare the node"),
    ("nvidia_driver", "main.yml", "Check the signing key's fingerprint", "Install the pinned driver"),
    ("nvidia_container_toolkit", "repo-key.yml", "Check the signing key's fingerprint", "Create the keyring directory"),
    ("nvidia_container_toolkit", "repo-key.yml", "Check the signing key's fingerprint", "Write the checked"),
    ("nvidia_container_toolkit", "setup-Debian.yml", "after checking its fingerprint", "Configure the libnvidia-container"),
    ("nvidia_container_toolkit", "setup-RedHat.yml", "after checking its fingerprint", "Configure the libnvidia-container"),
])
def test_the_key_is_checked_before_anything_is_written(role, tasks_file, check, later):
    names = task_names(role, tasks_file)
    assert position(names, check) < position(names, later)


def test_no_role_downloads_a_key_without_checking_it():
    """get_url wrote keys straight into the keyring (through the package mirror): no task does that any more."""
    for role in ("nvidia_driver", "nvidia_container_toolkit"):
        for name in os.listdir(os.path.join(ROLES, role, "tasks")):
            with open(os.path.join(ROLES, role, "tasks", name)) as handle:
                text = handle.read()
            assert "get_url" not in text and "key_url | gpufleet.k8s.mirror_url" not in text, (role, name)


# ------------------------------------------------------------------ one public key block, and nothing else
def _block(label, armored):
    """``armored``'s body re-labelled: what apt (Debian 12) still dearmors and trusts as a key."""
    return armored.replace("PGP PUBLIC KEY BLOCK", label)


@needs_gpg
@pytest.mark.parametrize("label", ["PGP ARMORED FILE", "PGP PUBLIC KEY BLOCK", "PGP MESSAGE", "ANYTHING"])
def test_a_key_hidden_in_another_armored_block_is_refused(keys, label):
    """Issue 39: NVIDIA's key plus a second key in a ``PGP ARMORED FILE`` block passed the check, and
    apt then trusted the second key."""
    data = keys["one"]["armored"] + "\n" + _block(label, keys["two"]["armored"])
    message = repo_keys.key_problem(data, spec(keys["one"]["fpr"]))
    assert "besides one public key block" in message and "Nothing was written" in message, message
    with pytest.raises(repo_keys.KeyFormatError):
        repo_keys.keyring_text(data, spec(keys["one"]["fpr"]))


@needs_gpg
@pytest.mark.parametrize("extra", ["comment before\n", "", "\ntrailing text"])
def test_text_outside_the_block_is_refused(keys, extra):
    data = (extra if extra.endswith("\n") else "") + keys["one"]["armored"] + (extra if extra.startswith("\n") else "")
    message = repo_keys.key_problem(data, spec(keys["one"]["fpr"]))
    if extra:
        assert "outside its public key block" in message, message
    else:
        assert message == ""


@needs_gpg
def test_a_compressed_packet_is_refused(keys):
    """A compressed-data packet (tag 8) could carry a key another reader unpacks; only key packets pass."""
    packet = bytes([0xC0 | 8, 3, 0, 0x78, 0x9C])  # new-format tag 8, length 3
    message = repo_keys.key_problem(keys["one"]["binary"] + packet, spec(keys["one"]["fpr"]))
    assert "packet type 8 is not part of a public key" in message, message


@needs_gpg
@pytest.mark.parametrize("form", ["armored", "binary"])
def test_the_keyring_written_holds_exactly_the_checked_key(keys, form, tmp_path):
    """What gpufleet writes is its own armor of the key's packets: gpg reads one key with the pinned
    fingerprint and a valid armor checksum, the same for armored and binary input."""
    text = repo_keys.keyring_text(keys["one"][form], spec(keys["one"]["fpr"]))
    assert text.count("-----BEGIN") == 1 and text.startswith(repo_keys.ARMOR_BEGIN)
    assert text == repo_keys.keyring_text(keys["one"]["armored"], spec(keys["one"]["fpr"]))
    home = tmp_path / "g"
    home.mkdir(mode=0o700)
    colons = gpg(home, "--show-keys", "--with-colons", data=text.encode()).stdout.decode()
    assert repo_keys.gpg_colons_fingerprints(colons) == [keys["one"]["fpr"]]
    # gpg --dearmor checks the CRC-24 line: a damaged checksum is an error there
    assert gpg(home, "--dearmor", data=text.encode()).stdout == keys["one"]["binary"]


def test_keyring_text_refuses_what_key_problem_refuses():
    with pytest.raises(repo_keys.KeyFormatError, match="refusing the signing key"):
        repo_keys.keyring_text("<html>404</html>", spec(REPO_KEYS["container_toolkit"]["fingerprint"]))
