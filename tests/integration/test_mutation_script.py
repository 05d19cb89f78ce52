"""scripts/mutation.sh works for any module_utils file (issue 39: it exited 2 without a word for every file,
the default three included, because under pipefail ``ls -- */f.py f.py | head`` failed on the name that does
not exist; and the tests of repo_keys failed in its workspace, which had the roles' meta and defaults but not
their tasks). One small file is mutated for real here (mutmut in its cached venv, about 30 s)."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*files, timeout=900):
    done = subprocess.run(["bash", "scripts/mutation.sh"] + list(files), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, MUTATION_JOBS="2"))
    return done.returncode, done.stdout + done.stderr


def test_one_small_file_is_mutated_and_scored():
    rc, out = run("plan_summary")
    assert rc == 0, out[-3000:]
    row = re.search(r"^plan_summary\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+)%$", out, re.M)
    assert row, out
    mutants, killed, survived, message, equivalent = (int(row.group(i)) for i in range(1, 6))
    assert mutants > 50 and killed + survived + message + equivalent == mutants, out
    # the unit tests of plan_summary kill every counted mutant (a weakened test shows here as a survivor)
    assert float(row.group(6)) >= 95.0, out


def test_an_unknown_file_is_named():
    rc, out = run("no_such_module_file")
    assert rc == 2 and "mutation: no " in out and "no_such_module_file" in out, out
