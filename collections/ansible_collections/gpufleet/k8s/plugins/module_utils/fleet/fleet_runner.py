# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Run one stage on many clusters: one ``ansible-playbook`` process per cluster, at most ``parallel`` at a
time, each with its own log file and timeout. A cluster that fails, times out or cannot start is recorded
and the others go on; the caller decides what the whole run means from the per-cluster results.

Variables reach a cluster's run only through its private vars file (mode 0600, ``-e @file``): a command
line is readable by every user of the machine, so nothing secret is ever put there.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import signal
import subprocess
import threading
import time

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
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return []
    return data.splitlines()[-lines:]


def private_dir(path):
    """Create ``path`` (and parents) readable by the owner only."""
    if not os.path.isdir(path):
        os.makedirs(path, 0o700)
    os.chmod(path, 0o700)


def write_private(path, text):
    """Write ``text`` to ``path`` with mode 0600 from the first byte (never world-readable, not even briefly)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def write_vars(path, variables):
    write_private(path, json.dumps(variables, indent=2, sort_keys=True) + "\n")


def child_env(base=None):
    """The environment of a cluster's run: the controller's (credentials stay in the environment), plain
    text output so that the log and its PLAY RECAP read the same everywhere."""
    env = dict(os.environ if base is None else base)
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
    """Run one job {name, argv, cwd, log}; return {rc, status, duration_s, message, recap, hosts, tail}."""
    started = clock()
    result = {"rc": None, "status": "failed", "message": "", "recap": {}, "hosts": {}, "tail": []}
    log_fd = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
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
    with open(job["log"], "rb") as handle:
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
                outcome = {"rc": None, "status": "failed", "message": "fleet run error: %s" % exc,
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
