"""The collection README (shown on Galaxy and by ansible-galaxy) lists every module, filter, role and
playbook the built collection carries, and nothing that is gone."""
import glob
import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTION = os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "k8s")


def _listed(section):
    with open(os.path.join(COLLECTION, "README.md")) as handle:
        text = handle.read()
    match = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % section, text, re.M | re.S)
    assert match, "README.md has no '## %s' section" % section
    return re.findall(r"^\| `gpufleet\.k8s\.(\w+)` \|", match.group(1), re.M)


def _filters():
    names = []
    for path in glob.glob(os.path.join(COLLECTION, "plugins", "filter", "*.yml")):
        with open(path) as handle:
            names.append(yaml.safe_load(handle)["DOCUMENTATION"]["name"])
    return names


def _names(pattern, strip):
    return [os.path.basename(p)[:-len(strip)] for p in glob.glob(pattern) if not os.path.basename(p).startswith("_")]


def test_every_module_is_listed_once():
    modules = _names(os.path.join(COLLECTION, "plugins", "modules", "*.py"), ".py")
    assert modules
    assert sorted(_listed("Modules")) == sorted(modules)


def test_every_filter_is_listed_once():
    filters = _filters()
    assert filters
    assert sorted(_listed("Filters")) == sorted(filters)


def test_every_role_and_playbook_is_listed_once():
    roles = [r for r in os.listdir(os.path.join(ROOT, "roles"))
             if os.path.isfile(os.path.join(ROOT, "roles", r, "tasks", "main.yml"))]
    assert sorted(_listed("Roles")) == sorted(roles)
    assert sorted(_listed("Playbooks")) == sorted(_names(os.path.join(ROOT, "playbooks", "*.yml"), ".yml"))
