"""playbooks/fleet_overview.yml (role fleet_overview) run by the real ansible-playbook on generated clusters'
reports: first run writes, a re-run and --check --diff change nothing, a changed fleet adds a history point and
the trend charts, and bad input is refused naming the variable before anything is written."""
import json
import time

from ansible_run import recap, run_playbook
from fleet_gen import write_fleet


def vars_file(tmp_path, clusters, dest, name="vars.json", **extra):
    path = tmp_path / name
    path.write_text(json.dumps(dict({"fleet_overview_clusters": clusters, "fleet_overview_dir": str(dest)}, **extra)))
    return "@%s" % path


def test_role_writes_then_changes_nothing_then_adds_a_run(tmp_path):
    dest = tmp_path / "report"
    clusters = write_fleet(tmp_path, 6, failed=(2,), missing=(4,))
    rc, out = run_playbook("playbooks/fleet_overview.yml", "-e", vars_file(tmp_path, clusters, dest))
    assert rc == 0 and recap(out)["changed"] == 1, out[-3000:]
    assert "6 cluster(s)" in out and "without figures: " in out
    assert sorted(p.name for p in dest.iterdir()) == ["history", "index.html", "report.json", "report.md"]
    for args in ([], ["--check", "--diff"]):
        rc, out = run_playbook("playbooks/fleet_overview.yml", "-e", vars_file(tmp_path, clusters, dest), *args)
        assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]
    assert len(list((dest / "history").iterdir())) == 1
    # a different outcome for one cluster: a second run is kept and the trend is drawn (history files are
    # named by the second: make sure the clock has moved on from the first run's)
    time.sleep(1.1)
    clusters[2].update(status="ok", message="")
    rc, out = run_playbook("playbooks/fleet_overview.yml", "-e", vars_file(tmp_path, clusters, dest, "v2.json",
                                                                      fleet_overview_title="Acme GPUs"))
    assert rc == 0 and recap(out)["changed"] == 1, out[-3000:]
    report = json.loads((dest / "report.json").read_text())
    assert report["title"] == "Acme GPUs" and report["totals"]["failed"] == 0
    assert len(list((dest / "history").iterdir())) == 2 and len(report["trend"]) == 2
    assert 'id="chart-trend-gpus"' in (dest / "index.html").read_text()


def test_bad_input_is_refused_naming_the_variable_before_writing(tmp_path):
    dest = tmp_path / "report"
    bad = [{"name": "a", "cloud": "azure", "region": "x"}]
    rc, out = run_playbook("playbooks/fleet_overview.yml", "-e", vars_file(tmp_path, bad, dest), collapse=True)
    assert rc != 0 and "fleet_overview_clusters" in out and "azure" in out, out[-2000:]
    twice = [{"name": "a", "cloud": "aws", "region": "x"}, {"name": "a", "cloud": "gcp", "region": "y"}]
    rc, out = run_playbook("playbooks/fleet_overview.yml", "-e", vars_file(tmp_path, twice, dest), collapse=True)
    assert rc != 0 and "fleet_overview_clusters[1].name: cluster a is listed twice" in out, out[-2000:]
    rc, out = run_playbook("playbooks/fleet_overview.yml", "-e", vars_file(tmp_path, [], dest, fleet_overview_history=0),
                           collapse=True)
    assert rc != 0 and "fleet_overview_history is 0" in out, out[-2000:]
    assert not dest.exists()
