"""A Prometheus URL with credentials in it is refused by preflight, the first task of the gpufleet role, through the
real ansible-playbook at -vvv (issue 30, item 3): the run stops there, naming the variable and what to use instead,
before any later task (the build directory is not even staged), and the password appears nowhere in the output.
The role-time checks (fleet_report's task, the gpu_remediate module) stay behind it as a second line; they are run
in tests/integration/test_cp_no_secrets_in_logs.py against a real Prometheus."""
import re
import shutil

import pytest

from ansible_run import ROOT, recap, run_site
from frozen import TODAY_VARS

PREFLIGHT_TASK = "TASK [gpufleet : Validate the inventory before anything changes]"


@pytest.mark.parametrize("playbook,variable,where", [
    ("site.yml", "gpu_remediation_prometheus_url", "extra vars"),
    ("playbooks/report.yml", "fleet_report_prometheus_url", "extra vars"),
    ("site.yml", "fleet_report_prometheus_url", "inventory"),
])
def test_credentials_in_a_prometheus_url_stop_the_run_in_preflight_unprinted(tmp_path, playbook, variable, where):
    url = "http://u:secret@prom:9090"
    inventory = "inventories/example"
    extra = list(TODAY_VARS) + ["-vvv"]
    if where == "inventory":
        inventory = str(tmp_path / "example")
        shutil.copytree("%s/inventories/example" % ROOT, inventory)
        (tmp_path / "example" / "group_vars" / "all" / "prometheus.yml").write_text("%s: %s\n" % (variable, url))
    else:
        extra += ["-e", "%s=%s" % (variable, url)]
    build = tmp_path / "build"
    rc, out = run_site(str(build), *extra, playbook=playbook, inventory=inventory)
    flat = re.sub(r"\s+", " ", out)
    assert rc != 0
    assert ("gpufleet preflight found 1 problem(s): - %s: credentials in the URL (user:password@) are refused" % variable
            in flat), flat[-3000:]
    prefix = variable[:-len("_prometheus_url")]
    assert "put the user name in %s_prometheus_username and the password in %s_prometheus_password" % (
        prefix, prefix) in flat
    # preflight was the task that failed, and no task ran after it
    tasks = re.findall(r"^TASK \[.*?\]", out, re.M)
    assert tasks and tasks[-1] == PREFLIGHT_TASK, tasks
    assert out.index("fatal: [localhost]") > out.index(PREFLIGHT_TASK)
    assert recap(out)["failed"] == 1 and recap(out)["changed"] == 0
    assert not build.exists()
    assert "secret" not in out and "u:secret" not in out
