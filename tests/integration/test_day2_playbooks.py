"""Day-2 playbooks on the example inventory: the report in render mode, and the upgrade plan in
check mode. No cluster exists here: the Kubernetes steps are covered by the logic tests."""
import json
import re

from ansible_run import run_site


def test_report_playbook_writes_the_three_files_in_render_mode(tmp_path):
    build = tmp_path / "example"
    rc, out = run_site(build, playbook="playbooks/report.yml")
    assert rc == 0, out[-3000:]
    report = json.loads((build / "report" / "fleet.json").read_text())
    assert [p["pool"] for p in report["pools"]] == ["train-a100", "infer-l4"]
    assert report["totals"]["gpus"] == 19 and report["totals"]["capacity"] == 124
    html = (build / "report" / "fleet.html").read_text()
    assert "<td>train-a100</td>" in html and 'id="capacity">124<' in html
    assert "| infer-l4 | l4 | 1 | time-slicing | 3 | 3 | 3 | 12 |" in (build / "report" / "fleet.md").read_text()
    rc, out = run_site(build, playbook="playbooks/report.yml")
    assert rc == 0 and re.search(r"localhost\s+: ok=\d+\s+changed=0", out), out[-2000:]


def test_upgrade_check_mode_lists_batches_and_touches_nothing(tmp_path):
    build = tmp_path / "example"
    rc, out = run_site(build, "--check", "-e", "gpufleet_apply=true", "-e", "gpufleet_upgrade_serial=50%",
                       "-e", "nvidia_driver_version=580.95.05", "-e", "gpufleet_upgrade_drain=false",
                       playbook="playbooks/upgrade_driver.yml")
    flat = re.sub(r"\s+", " ", out)
    assert rc == 0, out[-3000:]
    assert "batch 1/3: a100-node-01.example.internal, a100-node-02.example.internal -> cordon -> drain" in flat
    assert "batch 3/3: l4-node-03.example.internal" in flat
    assert flat.count("would cordon, drain, install driver 580.95.05") == 5
    assert "changed=0" in flat and not build.exists()


def test_upgrade_with_bad_serial_fails_naming_the_variable(tmp_path):
    rc, out = run_site(tmp_path / "example", "-e", "gpufleet_upgrade_serial=0", playbook="playbooks/upgrade_driver.yml")
    flat = re.sub(r"\s+", " ", out)
    assert rc != 0 and "gpufleet_upgrade_serial: '0' is not allowed; use an integer >= 1" in flat, flat[-2000:]
    assert "preflight found 1 problem" in flat
