"""The report stage returns what was rendered as AWX job artifacts (set_stats), read here from
the real run's custom stats (ansible.posix.json callback, as AWX reads them through the runner)."""
import hashlib
import json
import os

import pytest

from ansible_run import ansible, ansible_env



def run(playbook, build, *extra, json_out=False):
    env = ansible_env(ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_SHOW_CUSTOM_STATS="1") if json_out \
        else ansible_env()
    proc = ansible("ansible-playbook", playbook, "-e", "gpufleet_build_dir=%s" % build, *extra, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout) if json_out else proc.stdout


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    path = tmp_path_factory.mktemp("artifacts") / "example"
    run("playbooks/provision.yml", path)
    return path


def on_disk(build):
    """Every rendered file (not gpufleet's own .gpufleet-build marker of the output folder)."""
    out = {}
    for dirpath, _dirs, files in os.walk(build):
        for name in files:
            if dirpath == str(build) and name == ".gpufleet-build":
                continue
            full = os.path.join(dirpath, name)
            out[os.path.relpath(full, build)] = open(full, "rb").read()
    return out


def test_rendered_files_come_back_as_job_artifacts(build):
    stats = run("playbooks/report.yml", build, json_out=True)["global_custom_stats"]["gpufleet_build"]
    files = on_disk(build)
    assert any(k.startswith("provision/nodes/") for k in files) and "plan.md" in files
    assert sorted(stats["contents"]) == sorted(files)
    for rel, data in files.items():
        assert stats["contents"][rel].encode() == data, rel
        assert stats["sha1"][rel] == hashlib.sha1(data).hexdigest()
        assert stats["sizes"][rel] == len(data)
    assert stats["inventory"] == "example" and stats["mode"] == "render" and stats["contents_left_out"] is False


def test_large_builds_return_checksums_only(build):
    stats = run("playbooks/report.yml", build, "-e", "fleet_report_artifacts_max_bytes=100",
                json_out=True)["global_custom_stats"]["gpufleet_build"]
    assert stats["contents"] == {} and stats["contents_left_out"] is True
    assert sorted(stats["sha1"]) == sorted(on_disk(build))
