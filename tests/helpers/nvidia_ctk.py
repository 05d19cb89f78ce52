"""NVIDIA's real ``nvidia-ctk`` (built from the Go module proxy by scripts/nvidia-ctk-build.sh at the toolkit
version the nvidia_container_toolkit role pins) and the containerd side of the comparison with gpufleet:
the effective config containerd would load from a root file and its imports, and the nvidia runtime's
settings in it, flattened for comparison.

A missing build is built here (it takes about a minute and a half cold); a failed build fails the test.
"""
import fnmatch
import glob
import os
import subprocess
import tomllib

from ansible_run import ROOT

BUILD_SCRIPT = os.path.join(ROOT, "scripts", "nvidia-ctk-build.sh")
CRI = {1: ("plugins", "cri"), 2: ("plugins", "io.containerd.grpc.v1.cri"),
       3: ("plugins", "io.containerd.cri.v1.runtime"), 4: ("plugins", "io.containerd.cri.v1.runtime")}
# containerd's own value when the key is absent: enable_cdi is off in 1.7 and on from 2.0; runc is the
# default runtime in both.
ENABLE_CDI_DEFAULT = {1: False, 2: False, 3: True, 4: True}
ZERO = ("", False, 0, [], {})
# A runtime's key containerd fills in when absent with a value other than the zero value: the sandbox
# implementation (1.7: sandbox_mode, 2.x: sandboxer), "podsandbox" in both.
RUNTIME_DEFAULTS = {2: {"sandbox_mode": "podsandbox"}, 3: {"sandboxer": "podsandbox"}, 4: {"sandboxer": "podsandbox"}}

_binary = []


def binary():
    """Path of the nvidia-ctk binary, built (and cached outside the repository) when missing."""
    if not _binary:
        proc = subprocess.run(["bash", BUILD_SCRIPT], capture_output=True, text=True, timeout=1800, check=False)
        assert proc.returncode == 0, "scripts/nvidia-ctk-build.sh failed:\n%s" % proc.stderr[-4000:]
        path = proc.stdout.strip().splitlines()[-1]
        assert os.access(path, os.X_OK), "scripts/nvidia-ctk-build.sh printed %r, not an executable" % path
        _binary.append(path)
    return _binary[0]


def configure(config, dropin=None, set_as_default=False, enable_cdi=False, source="file", executable=None):
    """``nvidia-ctk runtime configure --runtime=containerd --config=CONFIG``: into DROPIN, or in place
    when DROPIN is None (``--drop-in-config=""``; the flag is always given so that the machine's own
    /etc/containerd is never touched)."""
    argv = [binary(), "runtime", "configure", "--runtime=containerd", "--config=" + config,
            "--drop-in-config=" + (dropin or ""), "--config-source=" + source]
    if executable:
        argv.append("--executable-path=" + executable)
    if set_as_default:
        argv.append("--set-as-default")
    if enable_cdi:
        argv.append("--cdi.enabled")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, "%s failed:\n%s" % (" ".join(argv), proc.stderr)
    return proc


def load(path):
    with open(path, "rb") as handle:
        return tomllib.load(handle)


def _deep_merge(dst, src):
    for key, value in src.items():
        if isinstance(value, dict) and isinstance(dst.get(key), dict):
            _deep_merge(dst[key], value)
        else:
            dst[key] = value


def effective(root_path, deep_merge):
    """The config containerd loads from ROOT_PATH and its imports, in order. ``deep_merge``: containerd
    >= 2.1 merges imported plugin tables key by key; before, an imported file replaces each plugin table
    (and each other top-level key) it defines as a whole."""
    data = load(root_path)
    imports = data.get("imports") or []
    for entry in imports:
        pattern = entry if os.path.isabs(entry) else os.path.join(os.path.dirname(root_path), entry)
        for path in sorted(glob.glob(pattern)):
            if os.path.abspath(path) == os.path.abspath(root_path):
                continue
            other = load(path)
            if deep_merge:
                _deep_merge(data, other)
                continue
            for key, value in other.items():
                if key == "plugins":
                    data.setdefault("plugins", {}).update(value)
                elif key != "imports":
                    data[key] = value
    data["imports"] = imports
    return data


def _flatten(prefix, value, out):
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            _flatten("%s.%s" % (prefix, key) if prefix else key, sub, out)
    else:
        out[prefix] = value
    return out


def nvidia_fields(config, version, runtime_name="nvidia"):
    """What the comparison looks at, as {field: value}: the nvidia runtime's table (runtime_type,
    runtime_path, privileged_without_host_devices, options.BinaryName and every inherited key),
    default_runtime_name and enable_cdi with containerd's defaults filled in, and the rest of the CRI
    table (what neither tool should change) under ``cri.``."""
    cri = config
    for key in CRI[version]:
        cri = (cri or {}).get(key) or {}
    containerd = dict(cri.get("containerd") or {})
    runtimes = dict((name, dict(RUNTIME_DEFAULTS.get(version, {}), **table))
                    for name, table in (containerd.pop("runtimes", None) or {}).items())
    nvidia = runtimes.pop(runtime_name, None)
    out = {"runtimes.%s" % runtime_name: "present" if nvidia is not None else "missing",
           "default_runtime_name": containerd.pop("default_runtime_name", None) or "runc"}
    rest = dict(cri)
    rest.pop("containerd", None)
    out["enable_cdi"] = rest.pop("enable_cdi", ENABLE_CDI_DEFAULT[version])
    if nvidia:
        _flatten("runtimes.%s" % runtime_name, nvidia, out)
    _flatten("cri", rest, out)
    _flatten("cri.containerd", containerd, out)
    _flatten("cri.containerd.runtimes", runtimes, out)
    return out


def differences(ours, theirs):
    """{field: (ours, theirs)} where the two differ; a key one side lacks equals containerd's zero value
    (empty string, false, 0, empty list or table) on the other, as containerd reads it."""
    diffs = {}
    for field in sorted(set(ours) | set(theirs)):
        a, b = ours.get(field, ZERO), theirs.get(field, ZERO)
        if a is ZERO and b in ZERO or b is ZERO and a in ZERO:
            continue
        if a is ZERO or b is ZERO or a != b:
            diffs[field] = (None if a is ZERO else a, None if b is ZERO else b)
    return diffs


def match_allowlist(found, allowlist):
    """Check {(case, field): (ours, theirs)} against the allow-list entries ({field, cases, reason}; glob
    patterns). Returns (new differences, stale entries)."""
    used = [False] * len(allowlist)
    new = {}
    for (case, field), values in sorted(found.items()):
        hit = False
        for i, entry in enumerate(allowlist):
            if fnmatch.fnmatchcase(field, entry["field"]) and any(fnmatch.fnmatchcase(case, c) for c in entry["cases"]):
                used[i] = hit = True
        if not hit:
            new[(case, field)] = values
    stale = [entry for entry, u in zip(allowlist, used) if not u]
    return new, stale
