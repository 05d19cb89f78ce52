"""The node stage partitions a standalone MIG pool's GPUs (issue 28 section 2): playbooks/nodes.yml with a pool
whose sharing.mig_manager is gpufleet.

Real: playbooks/nodes.yml over the podman connection in a Debian 12 systemd container (preflight, the node
prep, Debian's real nvidia-driver package - no GPU, the driver role knows it runs in a container - the toolkit
from the local stand-in repository, see test_node_remove.py), the gpu_mig role and its systemd unit.
STAND-IN (no GPU here): tests/standin/nvidia-smi-mig.py as /usr/local/sbin/nvidia-smi-standin (gpu_mig_nvidia_smi),
two H200 GPUs with their MIG state in a JSON file; Debian's own nvidia-smi stays for the driver role.
The cordon and drain are tested on the real control plane in test_cp_gpu_mig_drain.py; this node is in no
cluster (gpu_mig_drain: false).
"""
import json
import os

import pytest

from systemd_node import (DEBIAN12_DRIVER, NODE_STAGE_VARS, converge, install_standin, per_worker, remove, shell_of,
                         toolkit_node)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE = per_worker("gpufleet-i28-migstage")
STANDIN = "/usr/local/sbin/nvidia-smi-standin"
STATE = "/var/lib/nvidia-smi-standin/state.json"

sh = shell_of(NODE)


def pools(profile=None):
    sharing = {"mode": "mig", "mig_strategy": "single", "mig_profile": profile, "mig_manager": "gpufleet"} \
        if profile else {"mode": "none"}
    return [{"name": "train-h200", "gpu_type": "h200-141gb", "gpus_per_node": 2, "node_group": "gpu_nodes",
             "sharing": sharing}]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    work = tmp_path_factory.mktemp("migstage")
    toolkit_node(NODE, work)
    install_standin(NODE, "nvidia-smi-mig.py", STANDIN)
    text = NODE_STAGE_VARS % {"driver": DEBIAN12_DRIVER, "cluster": "migstage", "name": NODE}
    text = text.replace("    gpufleet_gpu_pools: [{name: infer-t4, gpu_type: t4, node_group: gpu_nodes}]\n",
                        "    gpufleet_gpu_pools: %s\n" % json.dumps(pools("1g.18gb")))
    assert "h200-141gb" in text
    text += "".join("          %s: %s\n" % (k, json.dumps(v)) for k, v in (
        ("ansible_connection", "containers.podman.podman"), ("gpu_mig_nvidia_smi", STANDIN), ("gpu_mig_drain", False)))
    (work / "hosts.yml").write_text(text)
    yield {"inventory": str(work / "hosts.yml")}
    remove(NODE)


def stage(node, *args):
    return converge(node["inventory"], "playbooks/nodes.yml", NODE, *args, timeout=1500)


def changed_tasks(out):
    """The task headers followed by a change, and the fast path's reasons, from a collapsed recap."""
    return [t[:300] for t in out.split("TASK [")[1:] if " changed: [" in t]


def layout():
    return [(g["mig"], sorted(i["profile"] for i in g["gis"] if i["ci"])) for g in json.loads(sh("cat " + STATE).stdout)["gpus"]]


def test_the_pool_profile_on_every_gpu_then_a_new_profile_then_no_mig(node):
    changed, out = stage(node)
    assert changed > 5, out[-3000:]
    assert layout() == [(True, ["1g.18gb"] * 7)] * 2
    assert sh("systemctl is-enabled gpufleet-mig.service").stdout.strip() == "enabled"
    assert "Environment=GPUFLEET_NVIDIA_SMI=%s" % STANDIN in sh("cat /etc/systemd/system/gpufleet-mig.service").stdout
    # re-runs: the fast path, and the roles themselves with it off
    changed, out = stage(node)
    assert changed == 0, changed_tasks(out)
    changed, out = stage(node, "-e", "gpufleet_node_fast_path=false")
    assert changed == 0, changed_tasks(out)

    # the pool's profile changes
    changed, out = stage(node, "-e", json.dumps({"gpufleet_gpu_pools": pools("3g.71gb")}))
    assert changed >= 2, out[-3000:]
    assert layout() == [(True, ["3g.71gb"] * 2)] * 2

    # the pool no longer uses MIG: gpufleet's layout is taken down with its unit
    changed, out = stage(node, "-e", json.dumps({"gpufleet_gpu_pools": pools(None)}))
    assert changed >= 2, out[-3000:]
    assert layout() == [(False, [])] * 2
    assert sh("test -e /etc/systemd/system/gpufleet-mig.service", check=False).returncode == 1
    assert stage(node, "-e", json.dumps({"gpufleet_gpu_pools": pools(None)}), "-e", "gpufleet_node_fast_path=false")[0] == 0


def test_node_removal_disables_mig_first(node):
    stage(node)
    assert layout() == [(True, ["1g.18gb"] * 7)] * 2
    changed, out = stage(node, "-e", "gpufleet_node_state=absent")
    assert changed > 3
    assert layout() == [(False, [])] * 2
    assert sh("test -e /etc/gpufleet/mig-config.json", check=False).returncode == 1
