"""Every module's documentation renders with the real ansible-doc and declares its attributes."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES_DIR = os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "k8s", "plugins", "modules")
MODULES = sorted(f[:-3] for f in os.listdir(MODULES_DIR) if f.endswith(".py") and not f.startswith("_"))


@pytest.mark.parametrize("module", MODULES)
def test_ansible_doc_renders(module):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "-t", "module", "--json",
                           "gpufleet.k8s." + module], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    import json
    doc = json.loads(proc.stdout)["gpufleet.k8s." + module]
    assert doc["doc"]["version_added"]
    assert set(doc["doc"]["attributes"]) >= {"check_mode", "diff_mode"}
    assert doc["examples"].strip() and "gpufleet.k8s." + module in doc["examples"]
    assert doc["return"] is not None


@pytest.mark.parametrize("module", MODULES)
def test_plain_ansible_doc_renders(module):
    """The plain text renderer reads every description as text: a notes line YAML parses as a mapping
    ("word: rest") passes --json but fails here."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "collections"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-doc"), "-t", "module",
                           "gpufleet.k8s." + module], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and "ERROR" not in proc.stderr, proc.stderr
    assert "> MODULE gpufleet.k8s.%s " % module in proc.stdout
    assert "EXAMPLES:" in proc.stdout and "RETURN VALUES:" in proc.stdout
