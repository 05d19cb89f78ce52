# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Run one stage on many clusters: one ``ansible-playbook`` process per cluster, at most ``parallel`` at a
time, each with its own log file and timeout. A cluster that fails, times out or cannot start is recorded
and the others go on; the caller decides what the whole run means from the per-cluster results.

Variables reach a cluster's run only through its private vars file (mode 0600, ``-e @file``): a command
line is readable by every user of the machine, so nothing secret is ever put there.

Isolation (issue 39): each cluster's run gets the controller's environment without its credential variables
(``K8S_AUTH_*``, ``KUBECONFIG``, cloud SDK variables, anything named like a token, secret, password or key) unless
the cluster's entry names them (``environment``): a cluster whose inventory leaves out the token or the API server
would otherwise talk to the controller's cluster with the controller's token. Its run folder and the files in it
are created without following a symbolic link (a planted link is refused, naming it) and readable by the owner only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import re
import signal
import subprocess
import threading
import time

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.files import link_message

RECAP_LINE = re.compile(r"^(?P<host>\S+)\s*:\s*ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+"
                        r"unreachable=(?P<unreachable>\d+)\s+failed=(?P<failed>\d+)"
                        r"(?:\s+skipped=(?P<skipped>\d+))?(?:\s+rescued=(?P<rescued>\d+))?"
                        r"(?:\s+ignored=(?P<ignored>\d+))?", re.M)
COUNTS = ("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored")
# A child that ignores SIGTERM this long after its timeout is killed.
KILL_GRACE = 10


def parse_recap(text):
    """(per-host counts {host: {ok, changed, ...}}, totals) from the last PLAY RECAP in ``text``; both
    empty when the run never reached its recap."""
    start = text.rfind("PLAY RECAP")
    hosts = {}
    if start >= 0:
        for match in RECAP_LINE.finditer(text[start:]):
            hosts[match.group("host")] = dict((k, int(match.group(k) or 0)) for k in COUNTS)
    totals = dict((k, sum(h[k] for h in hosts.values())) for k in COUNTS) if hosts else {}
    return hosts, totals


def tail(path, lines=40, max_bytes=65536):
    """The last ``lines`` lines of the file at ``path`` (read from its last ``max_bytes``)."""
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | _NOFOLLOW), "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return []
    return data.splitlines()[-lines:]


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def _is_link(name, fd):
    """Whether ``name`` in the folder open as ``fd`` is a symbolic link (never followed); None when it is not there."""
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise
    return (info.st_mode & 0o170000) == 0o120000


def _link_error(path):
    return GpufleetError("fleet run folder: %s" % link_message(path))


def _open_dir(path):
    """An fd of the directory ``path`` (absolute), each component opened relative to the one before without
    following a symbolic link; missing ones are created (the last with mode 0700). A link on the way raises
    GpufleetError naming it; nothing is created or changed through it."""
    parts = [part for part in os.path.abspath(path).split(os.sep) if part]
    fd = os.open(os.sep, os.O_RDONLY | _DIRECTORY)
    walked = os.sep
    try:
        for index, part in enumerate(parts):
            walked = os.path.join(walked, part)
            last = index == len(parts) - 1
            try:
                os.mkdir(part, 0o700 if last else 0o777, dir_fd=fd)
            except OSError as exc:
                if exc.errno != errno.EEXIST:
                    raise
            try:
                child = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except OSError:
                if os.path.islink(walked):
                    raise _link_error(walked)
                raise
            os.close(fd)
            fd = child
        os.fchmod(fd, 0o700)
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_dir(path, names=()):
    """Create the run folder ``path`` (and parents) readable by the owner only, never through a symbolic link, and
    refuse a symbolic link planted in it under one of ``names`` (the log, the vars file, ...)."""
    fd = _open_dir(path)
    try:
        for name in names:
            if _is_link(name, fd):
                raise _link_error(os.path.join(path, name))
    finally:
        os.close(fd)


def _create_private(path):
    """A new file at ``path`` opened for writing, mode 0600 from the first byte: an older regular file there is
    removed first; a symbolic link (or anything but a regular file) is refused, its target untouched."""
    folder, name = os.path.split(path)
    fd = _open_dir(folder)
    try:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
        else:
            if (info.st_mode & 0o170000) == 0o120000:
                raise _link_error(path)
            if (info.st_mode & 0o170000) != 0o100000:
                raise GpufleetError("fleet run folder: %s is not a regular file; remove it" % path)
            os.unlink(name, dir_fd=fd)
        try:
            out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ELOOP):
                raise GpufleetError("fleet run folder: %s appeared while gpufleet wrote it (another process writes "
                                    "in the run folder); nothing was written there" % path)
            raise
    finally:
        os.close(fd)
    os.fchmod(out, 0o600)
    return out


def write_private(path, text):
    """Write ``text`` to the new file ``path`` with mode 0600 from the first byte (never world-readable, not even
    briefly, never through a symbolic link)."""
    fd = _create_private(path)
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def write_vars(path, variables):
    write_private(path, json.dumps(variables, indent=2, sort_keys=True) + "\n")


def remove_private(path):
    """Remove ``path`` from the run folder when it is there (a symbolic link is refused, its target untouched)."""
    folder, name = os.path.split(path)
    fd = _open_dir(folder)
    try:
        link = _is_link(name, fd)
        if link is None:
            return
        if link:
            raise _link_error(path)
        os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


# Environment variables that carry credentials or pick a cluster or cloud account: withheld from a cluster's run
# unless its fleet entry names them (``environment``).
CREDENTIAL_PREFIXES = ("K8S_AUTH_", "AWS_", "GOOGLE_", "CLOUDSDK_", "GCE_", "GCP_", "AZURE_", "ARM_", "OS_",
                       "KUBE", "OPENSHIFT_", "OCP_", "CONTROLLER_", "TOWER_", "AWX_", "VAULT_", "DIGITALOCEAN_",
                       "HCLOUD_", "LINODE_", "ALICLOUD_", "IBMCLOUD_", "OCI_", "GITHUB_", "GITLAB_")
CREDENTIAL_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "APIKEY", "ACCESS_KEY",
                    "PRIVATE_KEY", "AUTH")
# gpufleet's own and Ansible's settings are not credentials (an ANSIBLE_VAULT_PASSWORD_FILE names a file every
# cluster's run needs to read its vault-encrypted inventory)
KEPT_PREFIXES = ("ANSIBLE_", "GPUFLEET_", "PYTHON", "LC_", "SSH_AUTH_SOCK")


def is_credential_variable(name):
    """True for an environment variable withheld from a cluster's run unless its entry names it."""
    upper = name.upper()
    if upper.startswith(KEPT_PREFIXES):
        return False
    return upper.startswith(CREDENTIAL_PREFIXES) or any(word in upper for word in CREDENTIAL_WORDS)


def child_env(base=None, allow=()):
    """The environment of a cluster's run: the controller's without its credential variables
    (:func:`is_credential_variable`) except those named in ``allow`` (the cluster's ``environment``), plain text
    output so that the log and its PLAY RECAP read the same everywhere."""
    source = os.environ if base is None else base
    allowed = set(allow or ())
    env = dict((k, v) for k, v in source.items() if k in allowed or not is_credential_variable(k))
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_STDOUT_CALLBACK="default",
               PYTHONUNBUFFERED="1")
    env.pop("ANSIBLE_INVENTORY", None)
    return env


def _stop(proc):
    """End ``proc`` and everything it started (it leads its own process group)."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, KILL_GRACE)):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_one(job, timeout, env, tail_lines=40, clock=time.monotonic):
    """Run one job {name, argv, cwd, log, env (optional: this job's environment, else ``env``)}; return {rc, status,
    duration_s, message, recap, hosts, tail}. The log is a new file, never written through a symbolic link."""
    started = clock()
    result = {"rc": None, "status": "failed", "message": "", "recap": {}, "hosts": {}, "tail": []}
    env = job.get("env", env)
    log_fd = _create_private(job["log"])
    try:
        try:
            proc = subprocess.Popen(job["argv"], cwd=job["cwd"], env=env, stdin=subprocess.DEVNULL,
                                    stdout=log_fd, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            result["message"] = "could not start %s: %s" % (job["argv"][0], exc.strerror or exc)
            os.write(log_fd, (result["message"] + "\n").encode("utf-8"))
        else:
            try:
                result["rc"] = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                _stop(proc)
                result["rc"] = proc.returncode
                result["message"] = "timed out after %d s (fleet_run_timeout); the run was stopped" % timeout
                os.write(log_fd, ("\n[fleet_run] %s\n" % result["message"]).encode("utf-8"))
    finally:
        os.close(log_fd)
    result["duration_s"] = round(clock() - started, 1)
    with os.fdopen(os.open(job["log"], os.O_RDONLY | _NOFOLLOW), "rb") as handle:
        text = handle.read().decode("utf-8", "replace")
    result["hosts"], result["recap"] = parse_recap(text)
    if result["rc"] == 0 and not result["message"]:
        result["status"] = "ok"
    else:
        if not result["message"]:
            result["message"] = "ansible-playbook ended with rc %s" % result["rc"]
        result["tail"] = tail(job["log"], tail_lines)
    return result


def run_all(jobs, parallel, timeout, env, tail_lines=40, on_done=None):
    """Run ``jobs`` with at most ``parallel`` at once; results in the order of ``jobs``. A failing job
    never stops the others. ``on_done(index, result)`` is called as each one ends."""
    results = [None] * len(jobs)
    lock = threading.Lock()
    queue = list(range(len(jobs)))

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                index = queue.pop(0)
            try:
                outcome = run_one(jobs[index], timeout, env, tail_lines)
            except Exception as exc:  # one cluster's surprise must not stop the others
                outcome = {"rc": None, "status": "failed", "message": "fleet run error: %s" % getattr(exc, "msg", exc),
                           "recap": {}, "hosts": {}, "tail": [], "duration_s": 0.0}
            results[index] = outcome
            if on_done is not None:
                on_done(index, outcome)

    threads = [threading.Thread(target=worker) for _i in range(max(1, min(parallel, len(jobs))))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def summary(results):
    """One line: how many clusters ran, how many failed (named) and were skipped."""
    failed = [r["name"] for r in results if r["status"] == "failed"]
    ok = [r["name"] for r in results if r["status"] == "ok"]
    skipped = [r["name"] for r in results if r["status"] == "skipped"]
    text = "%d cluster(s): %d ok, %d failed, %d skipped" % (len(results), len(ok), len(failed), len(skipped))
    if failed:
        text += "; failed: %s" % ", ".join(
            "%s (%s)" % (r["name"], r["message"]) for r in results if r["status"] == "failed")
    return text


def line(entry):
    """One line about a cluster's run: ``eks-use1: ok (rc 0, 41.2 s, changed 3) log build/...``."""
    if entry["status"] in ("skipped", "planned"):
        return "%s: %s%s" % (entry["name"], entry["status"], " (%s)" % entry["message"] if entry["message"] else "")
    text = "%s: %s (rc %s, %.1f s, changed %d) log %s" % (entry["name"], entry["status"], entry["rc"],
                                                          entry["duration_s"], entry["changed"], entry["log"])
    if entry["status"] == "failed":
        text += " - " + entry["message"]
    return text


def overview_entry(entry):
    """A cluster as the fleet report (role fleet_overview, fleet_overview_clusters) takes it."""
    return dict((k, entry[k]) for k in ("name", "cloud", "region", "tags", "report_json", "status", "message"))
