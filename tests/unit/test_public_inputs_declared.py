"""Every gpufleet_* variable the playbooks and roles read with a fallback (``| default(``) is a
public input declared in some role's meta/argument_specs.yml, so it is documented, typed and
reaches the AWX surveys; the few project-set facts that share the prefix are listed here and
must really be set by the project."""
import glob
import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
USED_WITH_DEFAULT = re.compile(r"\b(gpufleet_\w+)\s*\|\s*default\(")
# Facts and play vars the project sets itself (set_fact / vars:), read with a default where a run
# did not set them; not inventory inputs.
# Flags only the project sets carry the __gpufleet_ prefix instead (site.yml's __gpufleet_whole_run, ...);
# the gpufleet role's cluster entry point declares its own options (gpufleet_cluster_*).
PROJECT_FACTS = ("gpufleet_helm_connection", "gpufleet_k8s_connection")


def sources():
    files = [os.path.join(ROOT, "site.yml")]
    for top in ("playbooks", "roles", "awx"):
        for path in glob.glob(os.path.join(ROOT, top, "**", "*"), recursive=True):
            if os.path.isfile(path) and path.endswith((".yml", ".yaml", ".j2")):
                files.append(path)
    return [path for path in files if os.path.isfile(path)]


def read(path):
    with open(path) as handle:
        return handle.read()


def used_with_default():
    found = {}
    for path in sources():
        for match in USED_WITH_DEFAULT.finditer(read(path)):
            found.setdefault(match.group(1), []).append(os.path.relpath(path, ROOT))
    return found


def declared():
    names = set()
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        with open(path) as handle:
            for entry in (yaml.safe_load(handle).get("argument_specs") or {}).values():
                names |= set((entry or {}).get("options") or {})
    return names


def test_the_scan_finds_the_inputs_it_must_check():
    found = used_with_default()
    # inputs known to be read with a fallback: a broken pattern would find nothing and pass
    assert {"gpufleet_allow_reboot", "gpufleet_nodes_serial", "gpufleet_upgrade_serial"} <= set(found)


def test_every_gpufleet_variable_read_with_a_default_is_declared():
    missing = {name: places for name, places in used_with_default().items()
               if name not in declared() and name not in PROJECT_FACTS}
    assert not missing, "declare these in a role's meta/argument_specs.yml: %s" % missing


@pytest.mark.parametrize("name", PROJECT_FACTS)
def test_project_facts_are_set_by_the_project_and_not_declared(name):
    setters = re.compile(r"^\s*%s:" % re.escape(name), re.M)
    assert any(setters.search(read(path)) for path in sources()), "%s is no longer set anywhere" % name
    assert name not in declared()
