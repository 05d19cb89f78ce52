"""One stage over many clusters (module_utils/fleet/fleet_runner.py and module gpufleet.k8s.fleet_run): real
child processes (a small stand-in for ansible-playbook that prints what its arguments ask for), at most
``parallel`` at a time, failures and timeouts isolated, the PLAY RECAP read back, variables only in a 0600
file. The real ansible-playbook runs in tests/integration/test_fleet_playbook.py and test_cp_fleet.py."""
import json
import os
import stat
import sys
import textwrap
import time

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import fleet_runner as runner
from ansible_collections.gpufleet.k8s.plugins.modules import fleet_run
from ansible_collections.gpufleet.k8s.plugins.plugin_utils.controller_module import run_in_process

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RECAP = """PLAY [x] ****
TASK [y] ****
changed: [localhost]

PLAY RECAP *********************************************************************
localhost                  : ok=12   changed=3    unreachable=0    failed=0    skipped=2    rescued=0    ignored=0
gpu-1.example.internal     : ok=4    changed=1    unreachable=1    failed=1    skipped=0    rescued=1    ignored=0
"""


def test_recap_is_read_per_host_and_summed():
    hosts, totals = runner.parse_recap(RECAP)
    assert hosts["localhost"] == {"ok": 12, "changed": 3, "unreachable": 0, "failed": 0, "skipped": 2,
                                  "rescued": 0, "ignored": 0}
    assert totals == {"ok": 16, "changed": 4, "unreachable": 1, "failed": 1, "skipped": 2, "rescued": 1, "ignored": 0}


def test_only_the_last_recap_counts_and_a_run_without_one_has_none():
    older = RECAP.replace("changed=3", "changed=9")
    assert runner.parse_recap(older + "\n" + RECAP)[1]["changed"] == 4
    assert runner.parse_recap("ERROR! the playbook could not be found") == ({}, {})
    # an ansible-core 2.18 recap without rescued/ignored
    assert runner.parse_recap("PLAY RECAP ***\nh : ok=1 changed=1 unreachable=0 failed=0 skipped=0\n")[1]["changed"] == 1


# A stand-in for ansible-playbook: reads the cluster's vars file (-e @file) and does what its "fake" variable
# says (sleep, fail, print a recap), recording when it ran.
FAKE = textwrap.dedent("""\
    #!%s
    import json, os, sys, time
    args = sys.argv[1:]
    vars_file = args[args.index("-e") + 1][1:]
    with open(vars_file) as f:
        v = json.load(f)
    fake = v.get("fake", {})
    name = v["gpufleet_fleet_cluster"]["name"]
    marks = fake.get("marks")
    if marks:
        with open(os.path.join(marks, name + ".start"), "w") as f:
            f.write(repr(time.time()))
    print("ARGV " + json.dumps(args))
    for i in range(fake.get("lines", 3)):
        print("line %%d of %%s" %% (i, name))
    sys.stdout.flush()
    if fake.get("child_sleep"):
        os.system("sleep %%d &" %% fake["child_sleep"])
    time.sleep(fake.get("sleep", 0))
    print("PLAY RECAP ***")
    print("localhost : ok=5 changed=%%d unreachable=0 failed=%%d skipped=0 rescued=0 ignored=0"
          %% (fake.get("changed", 0), 1 if fake.get("rc") else 0))
    if marks:
        with open(os.path.join(marks, name + ".end"), "w") as f:
            f.write(repr(time.time()))
    sys.exit(fake.get("rc", 0))
    """) % sys.executable


@pytest.fixture()
def project(tmp_path):
    """A project with the real stage playbooks' names, three cluster inventories and the stand-in program."""
    (tmp_path / "playbooks").mkdir()
    for stage in ("site", "provision", "report"):
        (tmp_path / "playbooks" / (stage + ".yml")).write_text("---\n[]\n")
    fleet_dir = tmp_path / "inventories" / "fleet"
    fleet_dir.mkdir(parents=True)
    for name in ("a", "b", "c", "d"):
        (tmp_path / "inventories" / name).mkdir()
    program = tmp_path / "fake-ansible-playbook"
    program.write_text(FAKE)
    program.chmod(0o755)
    return tmp_path


def clusters(fakes):
    out = []
    for index, (name, fake) in enumerate(fakes.items()):
        out.append({"name": name, "inventory": "../" + "abcd"[index], "cloud": "aws", "region": "us-east-1",
                    "tags": ["t%d" % index], "vars": {"fake": fake}})
    return out


def run_module(project, fakes, check_mode=False, diff=False, **args):
    params = dict(project_dir=str(project), fleet_dir=str(project / "inventories" / "fleet"), stage="site",
                  clusters=clusters(fakes), ansible_playbook=str(project / "fake-ansible-playbook"),
                  run_dir=str(project / "run"))
    params.update(args)
    return run_in_process(fleet_run, params, check_mode=check_mode, diff=diff, name="gpufleet.k8s.fleet_run")


def by_name(result):
    return dict((c["name"], c) for c in result["clusters"])


def test_one_failing_cluster_leaves_the_others_done(project):
    result = run_module(project, {"one": {"changed": 2}, "two": {"rc": 2, "lines": 100}, "three": {}})
    assert "failed" not in result, result
    got = by_name(result)
    assert [got[n]["status"] for n in ("one", "two", "three")] == ["ok", "failed", "ok"]
    assert got["one"]["changed"] == 2 and got["one"]["rc"] == 0 and got["one"]["tail"] == []
    assert got["two"]["rc"] == 2 and got["two"]["message"] == "ansible-playbook ended with rc 2"
    assert len(got["two"]["tail"]) == 40 and got["two"]["tail"][-1].startswith("localhost : ok=5")
    assert result["failed_clusters"] == ["two"] and result["changed"] is True
    assert result["summary"] == "3 cluster(s): 2 ok, 1 failed, 0 skipped; failed: two (ansible-playbook ended with rc 2)"
    assert got["two"]["log"] == str(project / "run" / "two" / "site.log")
    assert "line 99 of two" in open(got["two"]["log"]).read()


def test_unselected_clusters_are_skipped_and_listed_for_the_report(project):
    result = run_module(project, {"one": {}, "two": {}, "three": {}}, select=["tag=t1"])
    got = by_name(result)
    assert [got[n]["status"] for n in ("one", "two", "three")] == ["skipped", "ok", "skipped"]
    assert not (project / "run" / "one").exists()
    assert result["overview"][0] == {"name": "one", "cloud": "aws", "region": "us-east-1", "tags": ["t0"],
                                     "report_json": str(project / "build" / "a" / "report" / "fleet.json"),
                                     "status": "skipped", "message": "not selected (fleet_run_select)"}
    assert result["changed"] is False


def test_at_most_parallel_clusters_run_at_once(project):
    marks = project / "marks"
    marks.mkdir()
    fakes = dict((n, {"sleep": 1.0, "marks": str(marks)}) for n in ("one", "two", "three", "four"))
    started = time.monotonic()
    result = run_module(project, fakes, parallel=2)
    took = time.monotonic() - started
    assert all(c["status"] == "ok" for c in result["clusters"]), result["lines"]
    spans = [(float((marks / (n + ".start")).read_text()), float((marks / (n + ".end")).read_text())) for n in fakes]
    overlap = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert overlap == 2, spans
    assert took >= 2.0
    one_at_a_time = run_module(project, dict((n, {"marks": str(marks)}) for n in fakes), parallel=1)
    assert all(c["status"] == "ok" for c in one_at_a_time["clusters"])


def test_a_cluster_past_its_timeout_is_stopped_with_what_it_started(project, tmp_path):
    result = run_module(project, {"slow": {"sleep": 60, "child_sleep": 61}, "quick": {}}, timeout=2)
    got = by_name(result)
    assert got["quick"]["status"] == "ok"
    assert got["slow"]["status"] == "failed" and got["slow"]["rc"] is not None and got["slow"]["rc"] < 0
    assert got["slow"]["message"] == "timed out after 2 s (fleet_run_timeout); the run was stopped"
    assert got["slow"]["duration_s"] < 30
    # the background child of the slow run went with its process group
    leftovers = os.popen("ps -eo args").read()
    assert "sleep 61" not in leftovers


def test_a_program_that_cannot_start_fails_that_cluster_only(project):
    result = run_module(project, {"one": {}}, ansible_playbook=str(project / "missing-program"))
    got = by_name(result)["one"]
    assert got["status"] == "failed" and got["rc"] is None
    assert got["message"].startswith("could not start %s: " % (project / "missing-program"))


def test_variables_reach_the_run_only_through_a_private_file(project):
    secret = "s3cret-token-value"
    result = run_module(project, {"one": {}}, common_vars={"gpufleet_k8s_api_key": secret},
                        check_mode=True, diff=True, extra_args=["--tags", "cluster"])
    vars_file = project / "run" / "one" / "fleet-vars.json"
    assert stat.S_IMODE(os.stat(str(vars_file)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(str(project / "run" / "one")).st_mode) == 0o700
    assert json.loads(vars_file.read_text())["gpufleet_k8s_api_key"] == secret
    log = (project / "run" / "one" / "site.log").read_text()
    argv = json.loads(log.split("ARGV ", 1)[1].splitlines()[0])
    assert argv == ["-i", str(project / "inventories" / "a"), str(project / "playbooks" / "site.yml"),
                    "-e", "@" + str(vars_file), "--check", "--diff", "--tags=cluster"]
    assert secret not in json.dumps(result)
    assert stat.S_IMODE(os.stat(str(project / "run" / "one" / "site.log")).st_mode) == 0o600


def test_a_bad_fleet_file_runs_nothing(project):
    result = run_module(project, {"one": {}, "two": {}}, select=["nope"])
    assert result["failed"] is True
    assert result["msg"] == "fleet_run_select[0]: 'nope' is not a cluster of the fleet; known clusters: one, two"
    assert not (project / "run").exists()


@pytest.mark.parametrize("args,message", [
    ({"parallel": 0}, "fleet_run_parallel: 0; give 1 or more clusters at a time"),
    ({"timeout": 0}, "fleet_run_timeout: 0;"),
    ({"stage": "cluster"}, "fleet_run_stage: cluster has no playbook"),
    ({"extra_args": ["-e", "x=1"]}, "fleet_run_extra_args[0]: '-e' is not passed on"),
])
def test_bad_run_settings_run_nothing(project, args, message):
    result = run_module(project, {"one": {}}, **args)
    assert result["failed"] is True and message in result["msg"]
    assert not (project / "run").exists()


def test_plan_only_checks_and_lists_without_running(project):
    result = run_module(project, {"one": {}, "two": {}}, plan_only=True, select=["two"])
    assert result["changed"] is False and result["selected"] == ["two"]
    assert [c["status"] for c in result["clusters"]] == ["skipped", "planned"]
    assert result["commands"]["two"][1:3] == ["-i", str(project / "inventories" / "b")]
    assert result["summary"] == "1 of 2 cluster(s) selected: two"
    assert not (project / "run").exists()
