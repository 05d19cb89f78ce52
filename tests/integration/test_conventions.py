"""Conventions a user meets first: every stage of site.yml runs alone with --tags <stage>, and
the example inventories parse without a warning (no non-inventory file inside them)."""
import os
import re

import pytest
import yaml

from ansible_run import ROOT, ansible

INVENTORIES = sorted(d for d in os.listdir(os.path.join(ROOT, "inventories"))
                     if os.path.isdir(os.path.join(ROOT, "inventories", d)))


def _site_entries():
    # site.yml at the top imports playbooks/site.yml (the whole run, also gpufleet.k8s.site)
    with open(os.path.join(ROOT, "playbooks", "site.yml")) as handle:
        return yaml.safe_load(handle)


def _site_imports():
    """The stage imports of site.yml (not its always-tagged bookkeeping: the whole-run marker, publish)."""
    return [e for e in _site_entries()
            if re.match(r"(\w+)\.yml$", e.get("ansible.builtin.import_playbook", ""))
            and "always" not in (e.get("tags") or [])]


def _always_plays():
    """Plays that run with every --tags selection: they only mark the run and publish the render."""
    names = {e["name"] for e in _site_entries() if "always" in (e.get("tags") or []) and "hosts" in e}
    with open(os.path.join(ROOT, "playbooks", "publish.yml")) as handle:
        names |= {play["name"] for play in yaml.safe_load(handle)}
    return names


STAGES = [re.match(r"(\w+)\.yml$", entry["ansible.builtin.import_playbook"]).group(1)
          for entry in _site_imports()]


def test_every_stage_import_is_tagged_with_its_name():
    assert STAGES == ["preflight", "provision", "nodes", "cluster", "validate", "report"]
    for entry in _site_imports():
        stage = re.match(r"(\w+)\.yml$", entry["ansible.builtin.import_playbook"]).group(1)
        assert stage in (entry.get("tags") or []), entry


def _play_names(stage):
    with open(os.path.join(ROOT, "playbooks", stage + ".yml")) as handle:
        return [play["name"] for play in yaml.safe_load(handle) if "hosts" in play]


@pytest.mark.parametrize("stage", STAGES)
def test_tags_select_exactly_one_stage(stage):
    """--list-tasks --tags STAGE: tasks are listed under that stage's plays and under no other play."""
    proc = ansible("ansible-playbook", "site.yml", "--list-tasks", "--tags", stage, timeout=300)
    assert proc.returncode == 0, proc.stderr
    plays, current = {}, None
    for line in proc.stdout.splitlines():
        match = re.match(r"\s+play #\d+ \([^)]*\): (.*?)\tTAGS:", line)
        if match:
            current = match.group(1)
            plays[current] = []
        elif current and line.startswith("      ") and line.strip():
            plays[current].append(line.strip())
    own = set(_play_names(stage))
    assert own <= set(plays)
    assert any(plays[name] for name in own), "no task of stage %s runs with --tags %s" % (stage, stage)
    others = {name: tasks for name, tasks in plays.items() if name not in own | _always_plays() and tasks}
    assert not others, "--tags %s also runs %s" % (stage, others)


def test_tags_run_one_stage_for_real(tmp_path):
    """A real render with --tags provision writes the provision tree and nothing of the cluster stage."""
    build = tmp_path / "example"
    proc = ansible("ansible-playbook", "site.yml", "--tags", "provision", "-e", "gpufleet_build_dir=%s" % build)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert sorted(os.listdir(build / "provision" / "nodes"))
    assert not (build / "cluster").exists()
    assert "Validate inputs and publish the plan" in proc.stdout


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_inventory_parses_without_warnings(inventory):
    proc = ansible("ansible-inventory", "-i", os.path.join("inventories", inventory), "--list", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "WARNING" not in proc.stderr and "Failed to parse" not in proc.stderr, proc.stderr


def test_no_kubernetes_manifest_inside_an_inventory_directory():
    """Ansible reads every file under an inventory directory as an inventory source."""
    found = []
    for inventory in INVENTORIES:
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, "inventories", inventory)):
            for name in files:
                path = os.path.join(dirpath, name)
                if "group_vars" in path or "host_vars" in path or name == "hosts.yml":
                    continue
                found.append(os.path.relpath(path, ROOT))
    assert not found
