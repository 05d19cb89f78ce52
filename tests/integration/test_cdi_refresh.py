"""The CDI spec is generated again when the driver version changes (issue 15 item 8).

Real: the role's CDI tasks (roles/nvidia_container_toolkit/tasks/cdi.yml) over the podman
connection in a Debian 12 container, dpkg. STAND-INS (no GPU, NVIDIA's repository unreachable): the
toolkit packages from molecule/nvidia_container_toolkit/files/build-standin-repo.sh (their nvidia-ctk
writes a small spec), an nvidia-smi script, and the driver's library as an empty
libnvidia-ml.so.<version> file, which is what the role reads the installed driver version from.
"""
import os

import pytest

from systemd_node import (per_worker, DEBIAN12_DRIVER, TOOLKIT_PINNED, converge, podman, podman_inventory, remove, shell_of, start,
                         standin_toolkit_repo)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE = per_worker("gpufleet-i15-cdi")
SPEC = "/etc/cdi/nvidia.yaml"
RECORD = "/var/lib/gpufleet/cdi-nvidia-driver-version"
LIB = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so."
DRIVER = DEBIAN12_DRIVER   # the installed driver before it moves to 580 (any R535 version would do)


sh = shell_of(NODE)   # a shell command in the node container


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    work = tmp_path_factory.mktemp("cdi")
    repo = standin_toolkit_repo(work / "repo")
    start(NODE)
    podman("cp", repo, NODE + ":/srv/repo")
    sh("dpkg -i /srv/repo/*_%s_amd64.deb >/dev/null" % TOOLKIT_PINNED +
       " && printf '#!/bin/sh\\necho stand-in nvidia-smi\\n' > /usr/local/bin/nvidia-smi && chmod 755 /usr/local/bin/nvidia-smi"
       " && touch %s%s" % (LIB, DRIVER))
    inv = podman_inventory(work / "hosts.yml", NODE)
    playbook = work / "cdi.yml"
    playbook.write_text("""- name: CDI tasks of the toolkit role
  hosts: all
  gather_facts: false
  tasks:
    - name: Generate the CDI spec
      ansible.builtin.include_role:
        name: nvidia_container_toolkit
        tasks_from: cdi.yml
""")
    yield {"inventory": inv, "playbook": str(playbook)}
    remove(NODE)


def play(node, *args):
    return converge(node["inventory"], node["playbook"], NODE, *args)


def test_generated_once_then_again_only_when_the_driver_version_changes(node):
    changed, out = play(node)
    assert changed == 3 and "Generate the CDI specification of the GPUs (driver %s)" % DRIVER in out
    assert "cdiVersion" in sh("cat " + SPEC).stdout
    assert sh("cat " + RECORD).stdout == DRIVER + "\n"
    assert play(node)[0] == 0

    # the driver moves to 580: the spec (marked here to see it replaced) is generated again
    sh("echo '# stale spec of driver 535' > %s && rm %s%s && touch %s580.159.04" % (SPEC, LIB, DRIVER, LIB))
    before = sh("cat %s %s" % (SPEC, RECORD)).stdout
    changed, out = play(node, "--check", "--diff")
    assert changed == 1 and sh("cat %s %s" % (SPEC, RECORD)).stdout == before   # check mode: reported, not done
    assert "would be generated for driver 580.159.04 (last generated for: %s)" % DRIVER in out
    changed, out = play(node)
    assert changed == 2 and "(driver 580.159.04)" in out
    assert "stale spec" not in sh("cat " + SPEC).stdout and "cdiVersion" in sh("cat " + SPEC).stdout
    assert sh("cat " + RECORD).stdout == "580.159.04\n"
    assert play(node)[0] == 0


def test_no_driver_no_spec(node):
    sh("rm -f /usr/local/bin/nvidia-smi %s %s" % (SPEC, RECORD))
    changed, _out = play(node)
    assert changed == 0
    assert sh("test -e " + SPEC, check=False).returncode != 0
