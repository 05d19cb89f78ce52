"""playbooks/onboard.yml for real, from a recorded `kubectl get nodes -o json` (no cluster here):
the written inventory passes preflight and renders with site.yml; a second run refuses to
overwrite it; a bad cluster name is refused before anything is written."""
import os
import re

from ansible_run import ROOT, flat, run_playbook, run_site

NODES = os.path.join(ROOT, "tests", "fixtures", "report", "mig", "nodes.json")


def onboard(dest, *extra):
    return run_site(dest / "unused-build", "-e", "onboard_nodes_file=%s" % NODES, "-e", "onboard_dest=%s" % dest,
                    *extra, playbook="playbooks/onboard.yml")


def test_onboarded_inventory_renders_and_is_never_overwritten(tmp_path):
    inv = tmp_path / "lab"
    rc, out = onboard(inv, "-e", "onboard_cluster_name=lab")
    assert rc == 0, out[-3000:]
    assert "proposed nvidia_driver_version: 580.95.05" in out
    written = {p: p.read_bytes() for p in inv.rglob("*") if p.is_file()}
    assert {p.relative_to(inv).as_posix() for p in written} == {"hosts.yml", "group_vars/all/gpufleet.yml"}

    build = tmp_path / "build"
    rc, out = run_site(build, inventory=str(inv))
    assert rc == 0, out[-3000:]
    assert sorted(os.listdir(build / "provision" / "nodes")) == ["00-node-a100-node-01.example.internal.yaml"]

    rc, out = onboard(inv, "-e", "onboard_cluster_name=lab")
    assert rc != 0
    assert re.search(r"onboard_dest: \S+ already holds (hosts.yml|group_vars)", flat(out)), out[-2000:]
    assert {p: p.read_bytes() for p in inv.rglob("*") if p.is_file()} == written


def test_bad_cluster_name_is_refused(tmp_path):
    rc, out = onboard(tmp_path / "x", "-e", "onboard_cluster_name=Bad_Name")
    assert rc != 0 and "onboard_cluster_name: \"Bad_Name\" is not a cluster name" in out
    assert not (tmp_path / "x").exists()


def test_relative_destination_is_relative_to_where_the_user_runs(tmp_path):
    """-e onboard_dest=inventories/x from a directory: written there, and said so (not under playbooks/)."""
    rc, out = run_playbook(os.path.join(ROOT, "playbooks", "onboard.yml"), "-i", os.path.join(ROOT, "inventories", "example"),
                           "-e", "onboard_nodes_file=%s" % NODES, "-e", "onboard_dest=inventories/x",
                           "-e", "onboard_cluster_name=x", cwd=tmp_path, timeout=300)
    assert rc == 0, out[-3000:]
    assert (tmp_path / "inventories" / "x" / "hosts.yml").is_file()
    assert not os.path.exists(os.path.join(ROOT, "playbooks", "inventories", "x"))
    assert "inventory written to %s" % (tmp_path / "inventories" / "x") in out
