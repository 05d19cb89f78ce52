"""The project_dir filter: playbook_dir in, the project directory out; anything else refused."""
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.k8s.plugins.filter.project import FilterModule

PROJECT_DIR = FilterModule().filters()["project_dir"]


def test_installed_collection_playbook_gives_the_working_directory(tmp_path, monkeypatch):
    playbooks = tmp_path / "ansible_collections" / "gpufleet" / "k8s" / "playbooks"
    playbooks.mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert PROJECT_DIR(str(playbooks)) == os.path.realpath(str(tmp_path / "work"))


def test_clone_playbooks_folder_gives_the_clone(tmp_path):
    (tmp_path / "playbooks").mkdir()
    assert PROJECT_DIR(str(tmp_path / "playbooks")) == os.path.realpath(str(tmp_path))


@pytest.mark.parametrize("value", ["", None, 3, ["/x"]])
def test_non_path_input_is_refused(value):
    with pytest.raises(AnsibleFilterError, match="project_dir: the input must be the playbook directory"):
        PROJECT_DIR(value)
