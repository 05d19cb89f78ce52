"""project_dir: where output paths are relative to, for each layout gpufleet runs from."""
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.output_tree import project_dir, resolve_build_dir


@pytest.mark.parametrize("playbook_rel, cwd_rel, expected_rel", [
    ("clone", "elsewhere", "clone"),                                   # a clone's site.yml
    ("clone/playbooks", "elsewhere", "clone"),                         # a clone's playbooks/nodes.yml
    ("proj/cols/ansible_collections/gpufleet/k8s/playbooks", "proj", "proj"),   # gpufleet.k8s.site installed
    ("proj/cols/ansible_collections/gpufleet/k8s/playbooks", "other", "other"),
    ("proj/my-playbooks", "elsewhere", "proj/my-playbooks"),           # a project's own playbook folder
])
def test_project_dir_per_layout(tmp_path, playbook_rel, cwd_rel, expected_rel):
    for rel in (playbook_rel, cwd_rel):
        (tmp_path / rel).mkdir(parents=True, exist_ok=True)
    got = project_dir(str(tmp_path / playbook_rel), str(tmp_path / cwd_rel))
    assert got == os.path.realpath(str(tmp_path / expected_rel))


def test_symlinked_playbook_dir_resolves_to_the_real_project(tmp_path):
    (tmp_path / "real" / "playbooks").mkdir(parents=True)
    os.symlink(str(tmp_path / "real"), str(tmp_path / "link"))
    assert project_dir(str(tmp_path / "link" / "playbooks"), "/") == os.path.realpath(str(tmp_path / "real"))


def test_default_build_dir_of_an_installed_run_lands_in_the_working_directory(tmp_path):
    (tmp_path / "cols" / "ansible_collections" / "gpufleet" / "k8s" / "playbooks").mkdir(parents=True)
    (tmp_path / "proj").mkdir()
    project = project_dir(str(tmp_path / "cols" / "ansible_collections" / "gpufleet" / "k8s" / "playbooks"),
                          str(tmp_path / "proj"))
    path, problems = resolve_build_dir("", "example", project)
    assert problems == []
    assert path == os.path.join(os.path.realpath(str(tmp_path / "proj")), "build", "example")
