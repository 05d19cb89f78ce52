"""The older supported ansible-core line (README: ansible-core 2.18 and 2.19; the lock is 2.19).

Every inventory is rendered with ansible-core 2.18 (scripts/ansible-core-218.sh, its own pinned venv)
and must give the same build tree, byte for byte, as the locked 2.19 render. 2.18 differs where it
matters here: it turns a templated text that reads as a Python literal into a list before a module
sees it, hands filters and in-process modules AnsibleUnsafeText (a str subclass YAML cannot dump),
and templates a task's vars even when no argument uses them."""
import filecmp
import os
import subprocess

import pytest

from render_cache import rendered_site
from ansible_run import ROOT, ansible_env
from inventories import cluster_inventories

# the inventories that render a cluster (fleet inventories name clusters and render nothing)
INVENTORIES = cluster_inventories()


def tree(build):
    out = {}
    for dirpath, _dirs, files in os.walk(build):
        for name in files:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, build)] = path
    return out


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_ansible_core_218_renders_the_same_tree_as_219(inventory, tmp_path, tmp_path_factory):
    rc, log, locked = rendered_site(tmp_path_factory, inventory="inventories/" + inventory)
    assert rc == 0, log[-3000:]
    build = tmp_path / inventory
    # the script's own venv and its ansible-playbook (PATH as it is: not the 2.19 venv first), the checkout's ansible.cfg
    env = ansible_env(PATH=os.environ.get("PATH", ""))
    proc = subprocess.run(["bash", "scripts/ansible-core-218.sh", "site.yml", "-i", "inventories/" + inventory,
                           "-e", "gpufleet_build_dir=%s" % build], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "core 2.18." in subprocess.run(["bash", "scripts/ansible-core-218.sh", "--version"], cwd=ROOT,
                                          capture_output=True, text=True).stdout
    old, new = tree(build), tree(locked)
    assert sorted(old) == sorted(new)
    differ = [rel for rel in sorted(new) if not filecmp.cmp(old[rel], new[rel], shallow=False)]
    assert differ == []
