"""Callback gpufleet.k8s.preload_filters: the collection's filter files are loaded once per run, in the
controller process, instead of once in every task's worker (real ansible-playbook runs, real loader)."""
import configparser
import glob
import os
import re
import subprocess
import sys
import textwrap

import pytest

from ansible_run import CHECKOUT_PATHS, ROOT, ansible, ansible_env

COLLECTIONS = CHECKOUT_PATHS["ANSIBLE_COLLECTIONS_PATH"]
FILTER_DIR = os.path.join(COLLECTIONS, "ansible_collections", "gpufleet", "k8s", "plugins", "filter")
PLAYBOOK = """
- name: Three tasks that use gpufleet filters from two filter files
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Use a filter of cluster_access.py in a loop
      ansible.builtin.debug:
        msg: "{{ {} | gpufleet.k8s.k8s_connection }}"
      loop: [1, 2, 3]
    - name: Use another filter of the same file
      ansible.builtin.debug:
        msg: "{{ {} | gpufleet.k8s.helm_connection }}"
    - name: Use a filter of nodes.py
      ansible.builtin.debug:
        msg: "{{ ['node-a'] | gpufleet.k8s.gpu_node_names({}) }}"
"""


def _env(**extra):
    return ansible_env(ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, **extra)


def test_preload_loads_every_filter_file_of_the_collection():
    code = textwrap.dedent("""
        import json, sys
        from ansible.plugins.loader import init_plugin_loader
        init_plugin_loader([%r])
        from ansible_collections.gpufleet.k8s.plugins.callback.preload_filters import preload
        names = preload()
        mods = sorted(m.rsplit('.', 1)[1] for m in sys.modules
                      if m.startswith('ansible_collections.gpufleet.k8s.plugins.filter.'))
        print(json.dumps({'names': names, 'modules': mods, 'missing': preload('gpufleet.nosuch')}))
    """ % COLLECTIONS)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    import json

    out = json.loads(proc.stdout.strip().splitlines()[-1])
    files = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(FILTER_DIR, "*.py")))
    assert out["modules"] == files
    docs = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(FILTER_DIR, "*.yml")))
    assert out["names"] == docs  # every filter (each has its doc file) was found
    assert out["missing"] == []  # an unknown collection is left to the tasks, not raised here


def _uncached_loads(callbacks, tmp_path):
    book = tmp_path / "probe.yml"
    book.write_text(PLAYBOOK)
    env = _env(ANSIBLE_CALLBACKS_ENABLED=callbacks, ANSIBLE_DEBUG="1")
    proc = ansible("ansible-playbook", "-i", "localhost,", "-e", "ansible_connection=local",
                   "-e", "ansible_python_interpreter=" + sys.executable, book, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    loads = {}
    for line in proc.stdout.splitlines() + proc.stderr.splitlines():
        match = re.search(r"Loading FilterModule 'ansible_collections\.gpufleet\.k8s\.plugins\.filter\.(\w+)' from \S+$", line)
        if match:  # without "(found_in_cache=True ...)": the file was imported (compiled) in this process
            loads[match.group(1)] = loads.get(match.group(1), 0) + 1
    return loads


@pytest.mark.parametrize("callbacks, expected", [
    # preloaded in the controller: each file imported once, the workers find it loaded
    ("gpufleet.k8s.preload_filters", 1),
    # without it every task's worker imports every filter file again (3 tasks)
    ("ansible.posix.timer", 3),
])
def test_workers_import_filter_files_once_per_run_with_the_callback(callbacks, expected, tmp_path):
    loads = _uncached_loads(callbacks, tmp_path)
    files = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(FILTER_DIR, "*.py")))
    assert sorted(loads) == files
    assert set(loads.values()) == {expected}, loads


def test_ansible_cfg_enables_the_callback():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "ansible.cfg"))
    enabled = [c.strip() for c in cfg.get("defaults", "callbacks_enabled").split(",")]
    assert "gpufleet.k8s.preload_filters" in enabled


def test_callback_is_documented():
    proc = ansible("ansible-doc", "-t", "callback", "gpufleet.k8s.preload_filters", env=_env())
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "compiled once per run" in text
    assert "UNDOCUMENTED" not in proc.stdout


class _Task:
    def __init__(self, action):
        self.action = action


def test_the_kubernetes_client_is_imported_when_the_cluster_is_first_reached_and_only_then():
    """Apply mode: the callback imports the client when gpufleet.k8s.cluster_access starts (workers forked later
    inherit it); any other task - all a render-mode run has - imports nothing."""
    from ansible_collections.gpufleet.k8s.plugins.callback import preload_filters as pf
    callback = pf.CallbackModule()
    callback.v2_playbook_on_task_start(_Task("gpufleet.k8s.render_manifests"), False)
    assert "client" not in callback.warmed
    callback.v2_playbook_on_task_start(_Task("gpufleet.k8s.cluster_access"), False)
    assert "client" in callback.warmed
    assert pf.warm_cluster_client() == list(pf.CLIENT_MODULES)
    assert pf.warm_cluster_client(("no_such_module_for_gpufleet",)) == []
