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
    if fake.get("say_build_dir"):
        with open(v["gpufleet_fleet_build_dir_file"], "w") as f:
            f.write(fake["say_build_dir"] + "\\n")
    if "show_env" in fake:
        print("ENV " + json.dumps(dict((k, os.environ[k]) for k in fake["show_env"] if k in os.environ)))
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


# Issue 39 item 3: fleet isolation. Real child processes (the stand-in above prints the environment it got).
CONTROLLER_ENV = {"K8S_AUTH_API_KEY": "controller-token-1f2e", "K8S_AUTH_HOST": "https://controller-cluster:6443",
                  "KUBECONFIG": "/root/.kube/controller", "AWS_SECRET_ACCESS_KEY": "aws-secret-9a8b",
                  "AWS_PROFILE": "fleet-admin", "GOOGLE_APPLICATION_CREDENTIALS": "/root/gcp.json",
                  "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE": "/root/gcloud-token", "AZURE_CLIENT_SECRET": "azure-secret",
                  "VAULT_TOKEN": "vault-token", "REGISTRY_PASSWORD": "registry-pass", "LANG": "C.UTF-8",
                  "HTTPS_PROXY": "http://proxy.internal:3128", "ANSIBLE_VAULT_PASSWORD_FILE": "/root/.vault-pass"}


def seen_env(result, name):
    log = open(by_name(result)[name]["log"]).read()
    return json.loads(log.split("ENV ", 1)[1].splitlines()[0])


def test_a_cluster_run_gets_no_credential_of_the_controller_unless_its_entry_names_it(project, monkeypatch):
    """The controller's K8S_AUTH_API_KEY reached every cluster's run: a cluster whose inventory leaves out the token
    sent the controller's token to its own API server (and without a host too, was applied to the controller's
    cluster). Now only the names a cluster's ``environment`` lists pass; cloud SDK variables likewise."""
    for key, value in CONTROLLER_ENV.items():
        monkeypatch.setenv(key, value)
    show = sorted(CONTROLLER_ENV)
    entries = clusters({"plain": {"show_env": show}, "named": {"show_env": show}})
    entries[1]["environment"] = ["K8S_AUTH_API_KEY", "AWS_PROFILE"]
    result = run_module(project, {}, clusters=entries)
    assert [c["status"] for c in result["clusters"]] == ["ok", "ok"], result["lines"]
    kept = {"LANG": "C.UTF-8", "HTTPS_PROXY": "http://proxy.internal:3128",
            "ANSIBLE_VAULT_PASSWORD_FILE": "/root/.vault-pass"}
    assert seen_env(result, "plain") == kept
    assert seen_env(result, "named") == dict(kept, K8S_AUTH_API_KEY="controller-token-1f2e", AWS_PROFILE="fleet-admin")
    assert "controller-token-1f2e" not in json.dumps(result)


@pytest.mark.parametrize("name", ["K8S_AUTH_API_KEY", "K8S_AUTH_KUBECONFIG", "KUBECONFIG", "AWS_ACCESS_KEY_ID",
                                  "AWS_SESSION_TOKEN", "GOOGLE_OAUTH_ACCESS_TOKEN", "CLOUDSDK_CORE_ACCOUNT",
                                  "AZURE_CLIENT_ID", "ARM_CLIENT_SECRET", "OS_PASSWORD", "GITHUB_TOKEN",
                                  "MY_API_KEY", "DB_SECRET", "CONTROLLER_OAUTH_TOKEN"])
def test_credential_variables_are_withheld(name):
    assert runner.is_credential_variable(name)
    assert name not in runner.child_env({name: "x", "PATH": "/bin"})
    assert runner.child_env({name: "x"}, allow=[name])[name] == "x"


@pytest.mark.parametrize("name", ["PATH", "HOME", "LANG", "HTTPS_PROXY", "NO_PROXY", "ANSIBLE_CONFIG",
                                  "ANSIBLE_VAULT_PASSWORD_FILE", "SSH_AUTH_SOCK", "PYTHONPATH", "TMPDIR"])
def test_ordinary_variables_pass(name):
    assert not runner.is_credential_variable(name)
    assert runner.child_env({name: "x"})[name] == "x"


@pytest.mark.parametrize("planted", ["site.log", "fleet-vars.json", "build-dir"])
def test_a_link_planted_in_a_run_folder_is_refused_and_its_target_untouched(project, planted):
    """A planted log link overwrote an outside file; a fleet-vars.json link received the fleet's secret vars."""
    outside = project / "outside.txt"
    outside.write_text("precious\n")
    folder = project / "run" / "one"
    folder.mkdir(parents=True)
    (folder / planted).symlink_to(outside)
    result = run_module(project, {"one": {}, "two": {}}, common_vars={"gpufleet_k8s_api_key": "fleet-secret-77"})
    assert result["failed"] is True
    assert result["msg"] == ("cannot prepare the fleet run folders (no cluster ran): fleet run folder: %s is a "
                             "symbolic link (to %s); gpufleet never writes, reads or deletes through a symbolic link "
                             "in its output; remove the link (the next run recreates what belongs there) or replace "
                             "it by a real directory" % (folder / planted, outside))
    assert outside.read_text() == "precious\n"
    assert os.path.islink(str(folder / planted))
    assert not (project / "run" / "two").exists() or not os.listdir(str(project / "run" / "two"))


@pytest.mark.parametrize("linked", ["run", "run/one"])
def test_a_run_folder_that_is_a_link_is_refused(project, linked):
    elsewhere = project / "elsewhere"
    elsewhere.mkdir()
    (project / linked).parent.mkdir(parents=True, exist_ok=True)
    (project / linked).symlink_to(elsewhere, target_is_directory=True)
    result = run_module(project, {"one": {}}, common_vars={"gpufleet_k8s_api_key": "fleet-secret-77"})
    assert result["failed"] is True
    assert "fleet run folder: %s is a symbolic link (to %s)" % (project / linked, elsewhere) in result["msg"]
    assert os.listdir(str(elsewhere)) == []


def test_a_run_folder_is_made_private_and_an_old_log_replaced(project):
    folder = project / "run" / "one"
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    (folder / "site.log").write_text("an older run\n")
    (folder / "site.log").chmod(0o644)
    result = run_module(project, {"one": {}})
    assert by_name(result)["one"]["status"] == "ok", result
    assert stat.S_IMODE(os.stat(str(folder)).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(str(folder / "site.log")).st_mode) == 0o600
    assert "an older run" not in (folder / "site.log").read_text()


def test_one_inventory_in_two_spellings_is_refused_naming_both(project):
    (project / "inventories" / "a" / "hosts.yml").write_text("all: {}\n")
    entries = clusters({"one": {}, "two": {}})
    entries[1]["inventory"] = "../a/hosts.yml"
    result = run_module(project, {}, clusters=entries)
    assert result["failed"] is True
    assert ("fleet_run_clusters[1].inventory: ../a (fleet_run_clusters[0], one) and ../a/hosts.yml "
            "(fleet_run_clusters[1], two) are the same inventory (%s)" % (project / "inventories" / "a")
            ) in result["msg"]
    assert not (project / "run").exists()


@pytest.mark.parametrize("where", ["cluster-vars", "fleet-vars", "inventory-name"])
def test_two_clusters_writing_one_build_folder_are_refused_naming_both(project, where):
    entries = clusters({"one": {}, "two": {}, "three": {}})
    common = {}
    if where == "cluster-vars":
        entries[0]["vars"]["gpufleet_build_dir"] = "build/shared"
        entries[2]["vars"]["gpufleet_build_dir"] = str(project / "build" / "shared")
        pair, path = ("one", "three"), project / "build" / "shared"
    elif where == "fleet-vars":
        common = {"gpufleet_build_dir": "build/every-cluster"}
        pair, path = ("one", "two"), project / "build" / "every-cluster"
    else:
        (project / "inventories" / "c" / "group_vars" / "all").mkdir(parents=True)
        (project / "inventories" / "c" / "group_vars" / "all" / "main.yml").write_text("gpufleet_inventory_name: b\n")
        pair, path = ("two", "three"), project / "build" / "b"
    result = run_module(project, {}, clusters=entries, common_vars=common)
    assert result["failed"] is True
    # fleet_run_vars is no_log (it may hold credentials): its values, this path too, are masked in the message
    shown = project / "********" if where == "fleet-vars" else path
    assert ("clusters %s and %s would both write the build folder %s" % (pair[0], pair[1], shown)) in result["msg"]
    assert not (project / "run").exists()


def test_two_runs_that_said_one_build_folder_are_both_failed(project):
    """A templated gpufleet_build_dir cannot be predicted: when two runs then say one build folder, both are marked
    failed naming the other (the fleet report would show one cluster's data under the other's name)."""
    shared = str(project / "build" / "templated")
    entries = clusters({"one": {"say_build_dir": shared}, "two": {"say_build_dir": shared}, "three": {}})
    for entry in entries[:2]:
        entry["vars"]["gpufleet_build_dir"] = "{{ 'build/templated' }}"
    result = run_module(project, {}, clusters=entries)
    got = by_name(result)
    assert [got[n]["status"] for n in ("one", "two", "three")] == ["failed", "failed", "ok"], result["lines"]
    assert got["one"]["message"] == ("its run wrote the build folder %s, as did two; give each cluster its own "
                                     "(gpufleet_build_dir / gpufleet_inventory_name)" % shared)
    assert result["failed_clusters"] == ["one", "two"]
