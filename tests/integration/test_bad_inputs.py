"""Every bad input in tests/bad_inputs.yml, through the real preflight stage in apply mode,
against a real Debian 12 systemd container standing in for a GPU node: the run fails, the
message names the variable, and nothing on the node changed (packages, /etc, services)."""
import concurrent.futures
import json
import os
import re
import uuid

import pytest
import yaml

from ansible_run import ROOT, ansible, run_playbook
from frozen import TODAY_VARS
from systemd_node import boot, podman, remove

INVENTORY = os.path.join(ROOT, "tests", "integration", "inventories", "bad_input")
# unique per run: parallel checkouts on one machine must not share the container
NODE = os.environ.setdefault("GPUFLEET_BADINPUT_NODE", "gpufleet-badinput-%s" % uuid.uuid4().hex[:8])
with open(os.path.join(ROOT, "tests", "bad_inputs.yml")) as _handle:
    CASES = yaml.safe_load(_handle)
STATE = ("dpkg-query -W -f='${Package} ${Version}\\n' | md5sum; "
         "find /etc -xdev -type f -print0 | sort -z | xargs -0 md5sum | md5sum; "
         "systemctl list-units --type=service --state=active --no-legend --plain | awk '{print $1}' | md5sum")


@pytest.fixture(scope="module")
def node():
    boot(NODE)
    yield NODE
    remove(NODE)


def node_state():
    return podman("exec", NODE, "sh", "-c", STATE).stdout


def run(playbook, extra, build_dir):
    return run_playbook(playbook, "-i", INVENTORY, "-e", "gpufleet_build_dir=%s" % build_dir, "-e", json.dumps(extra),
                        *TODAY_VARS, timeout=300, collapse=True, GPUFLEET_TEST_NODE=NODE)


def test_there_are_enough_cases():
    assert len(CASES) >= 100
    assert len({c["id"] for c in CASES}) == len(CASES)


def test_baseline_passes_preflight_and_reaches_the_node(node, tmp_path):
    rc, out = run("playbooks/preflight.yml", {}, tmp_path / "b")
    assert rc == 0, out[-2000:]
    ping = ansible("ansible", "gpufleet-badinput-node", "-i", INVENTORY, "-m", "ansible.builtin.ping")
    assert ping.returncode == 0 and "ping: pong" in ping.stdout, ping.stdout + ping.stderr


@pytest.fixture(scope="module")
def refused(node, tmp_path_factory, request):
    """Every case through ``site.yml``, a few ansible-playbook runs at a time (each run is a separate
    process with its own extra vars; most of a run's time is process start and waiting, so running
    them side by side keeps the file fast as cases are added). After each run the node's state is
    read again; each case's test compares it with the state before the first run, so a case that
    changed anything fails (and so does every case that ended after it)."""
    before = node_state()
    root = tmp_path_factory.mktemp("bad-inputs")

    def one(case):
        build = root / uuid.uuid4().hex
        rc, out = run("site.yml", case["vars"], build)
        return case["id"], (rc, out, build, node_state())

    selected = [item.callspec.params["case"] for item in request.session.items
                if getattr(item, "originalname", "") == "test_bad_input_is_refused_in_preflight_and_changes_nothing"]
    workers = int(os.environ.get("GPUFLEET_BAD_INPUT_WORKERS", "4"))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        results = dict(pool.map(one, selected))
    return before, results


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_bad_input_is_refused_in_preflight_and_changes_nothing(refused, case):
    before, results = refused
    rc, out, build, after = results[case["id"]]
    assert rc != 0, out[-2000:]
    assert "Preflight" in out
    # the message names the variable and says what is allowed (argument-spec or preflight wording)
    named = [m.start() for m in re.finditer(re.escape(case["variable"]), out)]
    assert named, "variable %s not named: %s" % (case["variable"], out[-2500:])
    assert case["expect"] in out, out[-2500:]
    assert "PLAY [Provision" not in out and "PLAY [Nodes" not in out
    assert not build.exists()
    assert after == before
