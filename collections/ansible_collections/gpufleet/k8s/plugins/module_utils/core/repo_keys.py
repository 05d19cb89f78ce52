# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Package repository signing keys: pinned by fingerprint, never taken from a mirror (issue 30 item 1).

Whoever controls the key that signs a repository's index controls what the node installs as root.
So a key is written to a node's keyring only after its fingerprint was checked:

* ``fingerprints`` reads the primary-key fingerprints of an OpenPGP key (ASCII-armored or binary)
  the way GnuPG computes them (RFC 4880 section 12.2 for version 4 keys: SHA-1 over 0x99, the
  two-byte length and the public-key packet body; RFC 9580 for versions 5 and 6: SHA-256 with 0x9A
  or 0x9B and a four-byte length). No gpg is needed on the node or the controller.
* ``key_problem`` is the check the node roles run on the downloaded bytes before writing the keyring:
  every primary key in the file must be the expected one (a second key appended to NVIDIA's would
  otherwise be trusted by apt as well). Its message names the key, the URL, the expected and the
  found fingerprints, and the variables to set.
* ``toolkit_key``/``cuda_key`` decide where a key comes from: the vendor's URL and the fingerprint
  pinned in ``versions.REPO_KEYS``, unless the inventory names its own key (URL or content) with its
  own fingerprint. ``gpufleet_mirror_package_url`` moves the packages, never the key.
* ``check`` (registered in preflight) refuses ``http://`` package repositories and key URLs unless
  ``gpufleet_allow_http_mirrors`` lists the variable (then warns), an unsigned toolkit repository
  (``nvidia_container_toolkit_repo_trusted``) unless ``gpufleet_allow_unsigned_repos`` says this is an
  air-gapped site's own repository, and fingerprints that are not 40 or 64 hex digits.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import hashlib
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import CUDA_REPO_KEY_NAMES, REPO_KEYS

FINGERPRINT = re.compile(r"^(?:[0-9A-F]{40}|[0-9A-F]{64})$")
ARMOR_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
ARMOR_END = "-----END PGP PUBLIC KEY BLOCK-----"
PUBLIC_KEY_TAG = 6
# public key, public subkey, user ID, user attribute, signature, trust (RFC 4880 section 11.1, 5.10)
KEY_PACKET_TAGS = frozenset((6, 14, 13, 17, 2, 12))
# Package repository URLs preflight holds to https:// (or file://): the variable may be listed in
# gpufleet_allow_http_mirrors. Debian archive mirrors are not among them: apt checks the Debian
# archive against the debian-archive-keyring the OS ships, not against a key gpufleet downloads.
# A key URL is held to https:// (or file://) too: the fingerprint pin still guards the key, but an
# http:// key URL says the site's trust path is unencrypted, which is refused unless asked for by name.
KEY_URL_VARS = ("nvidia_driver_repo_key_url", "nvidia_container_toolkit_repo_key_url")
HTTP_CHECKED = ("gpufleet_mirror_package_url", "nvidia_container_toolkit_repo_url") + KEY_URL_VARS
FINGERPRINT_VARS = ("nvidia_driver_repo_key_fingerprint", "nvidia_container_toolkit_repo_key_fingerprint")
KEY_URL = re.compile(r"^(https?|file)://\S+$")


class KeyFormatError(ValueError):
    """The bytes are not an OpenPGP public key gpufleet can read."""


def normalize_fingerprint(text):
    """``eb69 3b30 ...`` -> ``EB693B30...``; None when ``text`` is not 40 or 64 hex digits."""
    if not isinstance(text, str):
        return None
    value = re.sub(r"\s+", "", text).upper()
    if value.startswith("0X"):
        value = value[2:]
    return value if FINGERPRINT.match(value) else None


def _armor_lines(text):
    """The stripped lines of ``text`` with its one public key block located: (lines, begin, end).

    apt (Debian 12, 2.6) dearmors EVERY ``-----BEGIN ...-----`` block of an ``.asc`` keyring, whatever its
    label (a key hidden in a ``PGP ARMORED FILE`` block is trusted too), and rpm imports every key block of
    a key file. So the file must be exactly one public key block: any other armor line, a second block or
    text outside the block is refused."""
    lines = [line.strip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    armor = [i for i, line in enumerate(lines) if line.startswith("-----") and line.endswith("-----")
             and len(line) > 10]
    labels = [lines[i] for i in armor]
    if labels != [ARMOR_BEGIN, ARMOR_END]:
        if ARMOR_BEGIN not in labels or ARMOR_END not in labels:
            raise KeyFormatError("not an ASCII-armored OpenPGP public key block (%s ... %s)" % (ARMOR_BEGIN, ARMOR_END))
        others = [label for label in labels if label not in (ARMOR_BEGIN, ARMOR_END)]
        raise KeyFormatError("the file holds %s besides one public key block (%s); apt and rpm would trust a key "
                             "hidden there, so exactly one public key block is accepted"
                             % (", ".join(others) if others else "%d armor lines" % len(labels),
                                ARMOR_BEGIN))
    begin, end = armor
    outside = [line for i, line in enumerate(lines) if line and (i < begin or i > end)]
    if outside:
        raise KeyFormatError("the file holds text outside its public key block (%r); exactly one public key block "
                             "and nothing else is accepted" % outside[0][:40])
    return lines, begin, end


def dearmor(text):
    """The binary packets of the one ASCII-armored public key block that ``text`` must consist of."""
    lines, begin, end = _armor_lines(text)
    data, body = [], False
    for line in lines[begin + 1:end]:
        if not body:
            # armor headers ("Version: ...") end at the first blank line (RFC 4880 6.2); a body line never
            # holds a colon, so a missing blank line is tolerated as GnuPG does
            if not line or ":" not in line:
                body = True
            if not line or ":" in line:
                continue
        if line.startswith("="):
            break  # the CRC-24 checksum line closes the body
        data.append(line)
    try:
        return base64.b64decode("".join(data).encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise KeyFormatError("the armored key's base64 body is damaged")


def _crc24(data):
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _bit in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def armor(data):
    """``data`` (binary OpenPGP packets) as one ASCII-armored public key block (RFC 4880 section 6)."""
    body = base64.b64encode(data).decode("ascii")
    crc = base64.b64encode(_crc24(data).to_bytes(3, "big")).decode("ascii")
    rows = [body[i:i + 64] for i in range(0, len(body), 64)]
    return "\n".join([ARMOR_BEGIN, ""] + rows + ["=" + crc, ARMOR_END]) + "\n"


def _packets(data):
    """(tag, body) of every OpenPGP packet in ``data`` (old and new packet formats)."""
    pos, size = 0, len(data)
    while pos < size:
        head = data[pos]
        if not head & 0x80:
            raise KeyFormatError("byte %d is not an OpenPGP packet header" % pos)
        pos += 1
        if head & 0x40:                       # new format
            tag = head & 0x3F
            if pos >= size:
                raise KeyFormatError("truncated packet header")
            first = data[pos]
            if first < 192:
                length, pos = first, pos + 1
            elif first < 224:
                if pos + 1 >= size:
                    raise KeyFormatError("truncated packet length")
                length, pos = ((first - 192) << 8) + data[pos + 1] + 192, pos + 2
            elif first == 255:
                if pos + 4 >= size:
                    raise KeyFormatError("truncated packet length")
                length, pos = int.from_bytes(data[pos + 1:pos + 5], "big"), pos + 5
            else:
                raise KeyFormatError("partial-length packets do not occur in keys")
        else:                                 # old format
            tag = (head >> 2) & 0x0F
            kind = head & 0x03
            if kind == 3:
                raise KeyFormatError("indeterminate-length packets do not occur in keys")
            width = (1, 2, 4)[kind]
            if pos + width > size:
                raise KeyFormatError("truncated packet length")
            length, pos = int.from_bytes(data[pos:pos + width], "big"), pos + width
        if pos + length > size:
            raise KeyFormatError("truncated packet (tag %d)" % tag)
        yield tag, data[pos:pos + length]
        pos += length


def fingerprint_of(body):
    """Fingerprint (hex, upper case) of one public-key packet body."""
    if not body:
        raise KeyFormatError("empty public-key packet")
    version = body[0]
    if version == 4:
        return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
    if version in (5, 6):
        prefix = b"\x9a" if version == 5 else b"\x9b"
        return hashlib.sha256(prefix + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    raise KeyFormatError("public-key packet version %d is not supported (4, 5 or 6)" % version)


def key_data(key):
    """The binary OpenPGP packets of ``key`` (armored text, or the bytes of a binary or armored key).

    Only the packets of a transferable public key (RFC 4880 section 11.1) are accepted: a compressed,
    encrypted or secret-key packet could carry what a reader other than this one would take for a key."""
    if isinstance(key, (bytes, bytearray)):
        data = bytes(key)
        if b"-----BEGIN" in data or data[:1].isspace():
            return key_data(data.decode("ascii", "replace"))
    elif isinstance(key, str):
        data = dearmor(key)
    else:
        raise KeyFormatError("no key content")
    for tag, _body in _packets(data):
        if tag not in KEY_PACKET_TAGS:
            raise KeyFormatError("packet type %d is not part of a public key (allowed: %s)"
                                 % (tag, ", ".join(str(t) for t in sorted(KEY_PACKET_TAGS))))
    return data


def fingerprints(key):
    """Primary-key fingerprints in ``key`` (armored text, or the bytes of a binary key), in order."""
    found = [fingerprint_of(body) for tag, body in _packets(key_data(key)) if tag == PUBLIC_KEY_TAG]
    if not found:
        raise KeyFormatError("no public key in it")
    return found


def keyring_text(content, spec):
    """The keyring gpufleet writes for the checked key ``content``: the key's own packets, re-armored by
    gpufleet as one public key block (whatever else the download held is never written). Raises
    KeyFormatError when ``key_problem`` would refuse it, so an unchecked key cannot be written by mistake."""
    problem = key_problem(content, spec)
    if problem:
        raise KeyFormatError(problem)
    return armor(key_data(content))


def gpg_colons_fingerprints(text):
    """Primary-key fingerprints in ``gpg --show-keys --with-colons`` output (the fpr line after each pub)."""
    out, after_pub = [], False
    for line in (text or "").splitlines():
        fields = line.split(":")
        if fields[0] == "pub":
            after_pub = True
        elif fields[0] == "fpr" and after_pub and len(fields) > 9:
            out.append(fields[9].upper())
            after_pub = False
        elif fields[0] in ("sub", "ssb", "sec"):
            after_pub = fields[0] == "sec"
    return out


def key_problem(content, spec):
    """Why the key ``content`` downloaded for ``spec`` must not be written, or "".

    ``spec``: {name, description, url, fingerprint, variables} as ``toolkit_key``/``cuda_key`` return."""
    expected = spec["fingerprint"]
    where = "%s (%s)" % (spec["description"], spec["url"] or "given inline")
    try:
        found = fingerprints(content)
    except KeyFormatError as exc:
        return ("%s: refusing the signing key %s: %s; expected a key with fingerprint %s. Nothing was written: "
                "the keyring and the package sources stay as they were." % (spec["variables"], where, exc, expected))
    if found == [expected]:
        return ""
    return ("%s: refusing the signing key %s: expected fingerprint %s, found %s. Nothing was written: the keyring "
            "and the package sources stay as they were. A mirror serves packages, not the trust anchor: %s"
            % (spec["variables"], where, expected, ", ".join(found), spec["advice"]))


def _spec(name, url, fingerprint, url_var, fp_var, description, content_var=None):
    pinned = REPO_KEYS[name]["fingerprint"] if name in REPO_KEYS else ""
    given = normalize_fingerprint(fingerprint) if fingerprint else None
    own = ("set %s to the key's URL (or %s to its content) and %s to its fingerprint if the repository is signed "
           "by a key of your own" % (url_var, content_var, fp_var) if content_var else
           "set %s to the key's URL and %s to its fingerprint if the repository is signed by a key of your own"
           % (url_var, fp_var))
    return {"name": name, "description": description, "url": url, "fingerprint": given or pinned,
            "pinned": not given, "variables": "%s/%s" % (url_var, fp_var), "advice": own}


def toolkit_key(values):
    """Where the libnvidia-container key comes from and which fingerprint it must have.

    ``values``: nvidia_container_toolkit_repo_key_url, _repo_key_content, _repo_key_fingerprint."""
    values = values or {}
    content = values.get("nvidia_container_toolkit_repo_key_content") or ""
    url = values.get("nvidia_container_toolkit_repo_key_url") or REPO_KEYS["container_toolkit"]["url"]
    spec = _spec("container_toolkit", "" if content else url, values.get("nvidia_container_toolkit_repo_key_fingerprint"),
                 "nvidia_container_toolkit_repo_key_url", "nvidia_container_toolkit_repo_key_fingerprint",
                 REPO_KEYS["container_toolkit"]["description"], "nvidia_container_toolkit_repo_key_content")
    spec["content"] = content
    return spec


def cuda_key_name(repo_dir):
    """The REPO_KEYS entry of the CUDA repository directory ``repo_dir`` (debian12, debian13, ...)."""
    return CUDA_REPO_KEY_NAMES.get(repo_dir, "cuda")


def cuda_key(repo_url, repo_dir, values):
    """The key of NVIDIA's CUDA repository ``repo_dir`` on the vendor's server (``repo_url``: the
    repository's own URL there, ending in /), unless the inventory names its own key and fingerprint.

    ``values``: nvidia_driver_repo_key_url, nvidia_driver_repo_key_fingerprint."""
    values = values or {}
    name = cuda_key_name(repo_dir)
    url = values.get("nvidia_driver_repo_key_url") or repo_url + REPO_KEYS[name]["file"]
    spec = _spec(name, url, values.get("nvidia_driver_repo_key_fingerprint"), "nvidia_driver_repo_key_url",
                 "nvidia_driver_repo_key_fingerprint", REPO_KEYS[name]["description"])
    spec["content"] = ""
    return spec


def _truthy(value):
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "on"))


def check(params, plan, problems):
    """Preflight: http:// package repositories, unsigned repositories, key URLs and fingerprints."""
    extra = params.get("extra") or {}
    allowed = extra.get("gpufleet_allow_http_mirrors", [])
    if not isinstance(allowed, list) or any(a not in HTTP_CHECKED for a in allowed):
        problems.error("gpufleet_allow_http_mirrors", "%r is not a list of repository variables; use a list of: %s "
                                                      "(each allows http:// for that repository only)"
                       % (allowed, ", ".join(HTTP_CHECKED)))
        allowed = []
    for var in HTTP_CHECKED:
        value = extra.get(var)
        # surrounding blanks must not hide the scheme (" http://..." passed this gate before)
        if isinstance(value, str) and value.strip().lower().startswith("http://"):
            if var in allowed:
                problems.warn(var, "http:// repository allowed by gpufleet_allow_http_mirrors: packages and indexes "
                                   "travel unencrypted (their signatures are still checked against the pinned key)")
            else:
                problems.error(var, "%s is http://: anyone on the path can hold back or replay the repository; use "
                                    "one of: https://HOST/PATH, file:///PATH, or list %s in "
                                    "gpufleet_allow_http_mirrors to accept http:// for this repository"
                               % (value, var))
    unsigned = extra.get("gpufleet_allow_unsigned_repos", False)
    if not isinstance(unsigned, bool):
        problems.error("gpufleet_allow_unsigned_repos", "%r is not a boolean; use one of: true, false" % (unsigned,))
        unsigned = False
    if _truthy(extra.get("nvidia_container_toolkit_repo_trusted", False)):
        if unsigned:
            problems.warn("nvidia_container_toolkit_repo_trusted",
                          "the toolkit repository is trusted without a signature (gpufleet_allow_unsigned_repos)")
        else:
            problems.error("nvidia_container_toolkit_repo_trusted", "true installs root-run packages without "
                           "checking any signature; use one of: false (NVIDIA's signed repository, or your mirror "
                           "of it), your own signed repository with nvidia_container_toolkit_repo_key_url (or "
                           "_key_content) and nvidia_container_toolkit_repo_key_fingerprint, or, for an air-gapped "
                           "site's own unsigned repository, gpufleet_allow_unsigned_repos: true")
    for var in FINGERPRINT_VARS:
        value = extra.get(var)
        if value not in (None, "") and normalize_fingerprint(value) is None:
            problems.error(var, "%r is not a key fingerprint; use one of: \"\" (NVIDIA's pinned key), the 40 hex "
                                "digits gpg --show-keys prints for the key (64 for a version 5 or 6 key)" % (value,))
    for var in KEY_URL_VARS:
        value = extra.get(var)
        if value not in (None, "") and not (isinstance(value, str) and KEY_URL.match(value)):
            problems.error(var, "%r is not a key URL; use one of: https://HOST/PATH, file:///PATH (a file on "
                                "the node)" % (value,))
    if extra.get("nvidia_driver_repo_key_url") and not extra.get("nvidia_driver_repo_key_fingerprint") \
            and extra.get("nvidia_driver_node_distros") and len(set(
                cuda_key_name(d.replace("-", "")) for d in extra.get("nvidia_driver_node_distros") or []
                if isinstance(d, str))) > 1:
        problems.error("nvidia_driver_repo_key_url",
                       "one key URL for node OSes whose CUDA repositories NVIDIA signs with different keys; use one "
                       "of: a per-group value, or nvidia_driver_repo_key_fingerprint with it")
