"""Every module's documentation renders with the real ansible-doc and declares its attributes."""
import json
import os

import pytest

from ansible_run import CHECKOUT_PATHS, ROOT, ansible

MODULES_DIR = os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "k8s", "plugins", "modules")
MODULES = sorted(f[:-3] for f in os.listdir(MODULES_DIR) if f.endswith(".py") and not f.startswith("_"))


@pytest.mark.parametrize("module", MODULES)
def test_ansible_doc_renders(module):
    proc = ansible("ansible-doc", "-t", "module", "--json", "gpufleet.k8s." + module,
                   ANSIBLE_COLLECTIONS_PATH=CHECKOUT_PATHS["ANSIBLE_COLLECTIONS_PATH"])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["gpufleet.k8s." + module]
    assert doc["doc"]["version_added"]
    assert set(doc["doc"]["attributes"]) >= {"check_mode", "diff_mode"}
    assert doc["examples"].strip() and "gpufleet.k8s." + module in doc["examples"]
    assert doc["return"] is not None


@pytest.mark.parametrize("module", MODULES)
def test_plain_ansible_doc_renders(module):
    """The plain text renderer reads every description as text: a notes line YAML parses as a mapping
    ("word: rest") passes --json but fails here."""
    proc = ansible("ansible-doc", "-t", "module", "gpufleet.k8s." + module,
                   ANSIBLE_COLLECTIONS_PATH=CHECKOUT_PATHS["ANSIBLE_COLLECTIONS_PATH"])
    assert proc.returncode == 0 and "ERROR" not in proc.stderr, proc.stderr
    assert "> MODULE gpufleet.k8s.%s " % module in proc.stdout
    assert "EXAMPLES:" in proc.stdout and "RETURN VALUES:" in proc.stdout
