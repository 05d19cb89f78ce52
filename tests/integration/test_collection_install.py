"""The installable collection for real: scripts/build_collection.py builds the tarball,
``ansible-galaxy collection install`` puts it into an empty collections path, and the render runs
by FQCN (``ansible-playbook gpufleet.k8s.site``) from a directory outside the repository, with no
ansible.cfg, roles path or collections path of the clone. Its default output (<project>/build/
<inventory>) must equal the clone's render byte for byte."""
import filecmp
import os
import shutil
import subprocess
import sys
import tarfile
import uuid

import pytest

from ansible_run import ROOT, ansible, ansible_env, output, run_playbook

ROLES = sorted(d for d in os.listdir(os.path.join(ROOT, "roles")) if not d.startswith("."))
PLAYBOOKS = sorted(f for f in os.listdir(os.path.join(ROOT, "playbooks")) if f.endswith(".yml"))


def _env(**extra):
    """A user's environment: nothing of the clone (its ansible.cfg, roles/, collections/)."""
    clone = {k for k in os.environ if k.startswith("ANSIBLE_")} - {"ANSIBLE_NOCOLOR", "ANSIBLE_FORCE_COLOR"}
    return ansible_env(**dict(dict.fromkeys(clone | {"ANSIBLE_CONFIG"}), **extra))   # None: removed


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(tarball, collections path, the installed collection's directory)."""
    out = tmp_path_factory.mktemp("dist")
    rc, log = output(subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "build_collection.py"),
                                     "--output-path", str(out)], cwd=ROOT, env=_env(), capture_output=True, text=True,
                                    timeout=600))
    assert rc == 0, log
    tarball = log.strip().splitlines()[-1]
    assert os.path.isfile(tarball), log
    cols = tmp_path_factory.mktemp("collections")
    assert os.listdir(cols) == []
    rc, log = output(ansible("ansible-galaxy", "collection", "install", "--offline", tarball, "-p", cols, cwd=cols,
                             env=_env()))
    assert rc == 0, log
    return tarball, cols, cols / "ansible_collections" / "gpufleet" / "k8s"


def test_tarball_carries_every_role_and_playbook_as_plain_files(installed):
    tarball, _cols, _coll = installed
    with tarfile.open(tarball) as tar:
        members = {m.name: m for m in tar.getmembers()}
    for role in ROLES:
        assert "roles/%s/tasks/main.yml" % role in members, role
        assert "roles/%s/meta/argument_specs.yml" % role in members, role
    for playbook in PLAYBOOKS:
        assert members["playbooks/" + playbook].isfile(), playbook
    assert not [name for name, m in members.items() if m.issym() or m.islnk()]
    assert not [name for name in members if "__pycache__" in name]


def test_installed_copy_equals_the_clone(installed):
    """Same bytes in roles/ and playbooks/ as the top-level folders of the repository."""
    _tarball, _cols, coll = installed
    for top in ("roles", "playbooks"):
        cmp = filecmp.dircmp(os.path.join(ROOT, top), coll / top, ignore=["__pycache__"])
        stack = [cmp]
        while stack:
            c = stack.pop()
            assert not c.left_only and not c.right_only, (c.left, c.left_only, c.right_only)
            _match, mismatch, errors = filecmp.cmpfiles(c.left, c.right, c.common_files, shallow=False)
            assert not mismatch and not errors, (c.left, mismatch, errors)
            stack.extend(c.subdirs.values())


def test_role_runs_by_fqcn_from_the_installed_collection(installed, tmp_path):
    """gpufleet.k8s.nvidia_driver resolves to the installed copy (its tasks are listed)."""
    _tarball, cols, _coll = installed
    playbook = tmp_path / "driver.yml"
    playbook.write_text("---\n- name: Driver by FQCN\n  hosts: localhost\n  gather_facts: false\n"
                        "  roles:\n    - role: gpufleet.k8s.nvidia_driver\n")
    rc, log = run_playbook(playbook, "--list-tasks", cwd=tmp_path, env=_env(ANSIBLE_COLLECTIONS_PATH=str(cols)))
    assert rc == 0, log
    assert "gpufleet.k8s.nvidia_driver : " in log, log


def _tree(path):
    """{relative path: (bytes, mode)} of every file below ``path``."""
    out = {}
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(dirpath, name)
            with open(full, "rb") as handle:
                out[os.path.relpath(full, path)] = (handle.read(), os.stat(full).st_mode)
    return out


def test_site_by_fqcn_outside_the_repository_renders_what_the_clone_renders(installed, tmp_path):
    _tarball, cols, _coll = installed
    # the clone's render: site.yml, relative gpufleet_build_dir below <repository>/build/
    rel = os.path.join("build", "test-collection-install-%s" % uuid.uuid4().hex[:12])
    in_repo = os.path.join(ROOT, rel)
    try:
        rc, log = run_playbook("site.yml", "-i", "inventories/example", "-e", "gpufleet_build_dir=%s" % rel,
                               env=_env(ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg")))
        assert rc == 0, log[-3000:]
        expected = _tree(in_repo)
    finally:
        shutil.rmtree(in_repo, ignore_errors=True)
    assert "plan.md" in expected and any(p.startswith("cluster" + os.sep) for p in expected)

    # a user's project: a copy of the example inventory, nothing else; the default build directory
    project = tmp_path / "project"
    shutil.copytree(os.path.join(ROOT, "inventories", "example"), project / "inventories" / "example")
    rc, log = run_playbook("gpufleet.k8s.site", "-i", "inventories/example", cwd=project,
                           env=_env(ANSIBLE_COLLECTIONS_PATH=str(cols)))
    assert rc == 0, log[-3000:]
    assert sorted(os.listdir(project)) == ["build", "inventories"], os.listdir(project)
    got = _tree(project / "build" / "example")
    assert sorted(got) == sorted(expected)
    assert [p for p in expected if got[p] != expected[p]] == []
    # nothing was written into the installed collection
    assert not list((cols / "ansible_collections" / "gpufleet" / "k8s").glob("build"))


def test_fleet_by_fqcn_runs_the_installed_stage_playbooks_into_the_users_project(installed, tmp_path):
    """gpufleet.k8s.fleet from a user's project: each cluster runs the installed collection's stage playbook from
    the project directory, so the builds and the fleet run folder land in the project, never in the collection."""
    _tarball, cols, coll = installed
    project = tmp_path / "project"
    for name in ("eks", "gke"):
        shutil.copytree(os.path.join(ROOT, "inventories", name), project / "inventories" / name)
    # the eks inventory names a legacy Provisioner file of the project's examples/ (Karpenter migration)
    shutil.copytree(os.path.join(ROOT, "examples", "karpenter"), project / "examples" / "karpenter")
    (project / "inventories" / "fleet" / "group_vars" / "all").mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "inventories", "fleet-example", "hosts.yml"), project / "inventories" / "fleet")
    (project / "inventories" / "fleet" / "group_vars" / "all" / "fleet.yml").write_text(
        "fleet_run_stage: provision\nfleet_run_clusters:\n"
        "  - {name: eks-use1, inventory: ../eks, cloud: aws, region: us-east-1}\n"
        "  - {name: gke-usc1, inventory: ../gke, cloud: gcp, region: us-central1}\n")
    rc, log = run_playbook("gpufleet.k8s.fleet", "-i", "inventories/fleet", cwd=project,
                           env=_env(ANSIBLE_COLLECTIONS_PATH=str(cols)))
    assert rc == 0, log[-3000:]
    assert "eks-use1: ok (rc 0" in log and "gke-usc1: ok (rc 0" in log, log[-3000:]
    assert (project / "build" / "eks" / "provision" / "karpenter").is_dir()
    assert (project / "build" / "gke" / "provision" / "gke" / "autoprovisioning.yaml").is_file()
    assert sorted(os.listdir(project / "build" / "fleet" / "run")) == ["eks-use1", "gke-usc1"]
    assert not list(coll.glob("build"))
