"""Apply mode before any cluster is reached, through the real playbooks and the real kubernetes client:
a closed port on 127.0.0.1 (nothing listens) is the real "unreachable cluster" case; a missing kubeconfig
and retired variables are refused first. Everything that talks to a cluster runs on the real control plane
of tests/helpers/controlplane.py (test_cp_*.py).
"""
import re

import pytest

from ansible_run import flat, run_site
from controlplane import free_port


@pytest.mark.parametrize("playbook", ["playbooks/provision.yml", "playbooks/cluster.yml", "playbooks/validate.yml"])
def test_unreachable_cluster_stops_with_a_clear_message_before_anything(tmp_path, playbook):
    """Real client, real closed port: the stage stops at its first step with what to change."""
    port = free_port()  # nothing listens there
    build = tmp_path / "example"
    rc, out = run_site(build, "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_host=http://127.0.0.1:%d" % port,
                       "-e", "gpufleet_k8s_api_key=x", playbook=playbook)
    text = flat(out)
    assert rc == 2, out[-3000:]
    assert ("gpufleet cannot reach the Kubernetes cluster (API server http://127.0.0.1:%d): the connection was "
            "refused" % port) in text, text[-3000:]
    assert "This step applied nothing" in text and "Set gpufleet_k8s_kubeconfig" in text
    assert "TASK [gpufleet : Reach the Kubernetes cluster once before anything is applied]" in text
    assert "Max retries" not in text.split("gpufleet cannot reach")[0]  # no raw urllib3 error first
    assert not build.exists()  # not even a render: it stopped before the stage's roles ran


def test_missing_kubeconfig_names_the_file(tmp_path):
    rc, out = run_site(tmp_path / "example", "-e", "gpufleet_apply=true",
                       "-e", "gpufleet_k8s_kubeconfig=%s" % (tmp_path / "nope.yaml"), playbook="playbooks/cluster.yml")
    text = flat(out)
    assert rc == 2 and "(kubeconfig %s)" % (tmp_path / "nope.yaml") in text, text[-3000:]
    assert "This step applied nothing" in text


@pytest.mark.parametrize("var, playbook", [("k8s_apply_kubeconfig", "playbooks/cluster.yml"),
                                           ("fleet_report_kubeconfig", "playbooks/report.yml")])
def test_retired_per_role_connection_variable_is_refused(tmp_path, var, playbook):
    rc, out = run_site(tmp_path / "example", "-e", "%s=/root/.kube/config" % var, playbook=playbook)
    assert rc == 2 and "%s: replaced by gpufleet_k8s_kubeconfig" % var in flat(out), out[-3000:]


def test_upgrade_host_unreachable_mid_role_is_caught_and_explained(tmp_path):
    """Real SSH attempt to hosts that do not resolve (the example inventory's names): the driver role
    meets an unreachable host; the rollout must stop through rescue with what to do, not vanish."""
    rc, out = run_site(tmp_path / "example", "-e", "gpufleet_apply=true", "-e", "gpufleet_upgrade_drain=false",
                       "-e", "nvidia_driver_version=580.95.05", playbook="playbooks/upgrade_driver.yml")
    text = flat(out)
    assert rc == 2, out[-3000:]
    assert "The rollout stopped at node a100-node-01.example.internal" in text, text[-3000:]
    assert "host a100-node-01.example.internal did not answer over SSH, unreachable (" in text
    assert "Finalization of task args" not in text
    assert "Host a100-node-01.example.internal became unreachable: check it is up" in text
    assert "resume with ansible-playbook playbooks/upgrade_driver.yml --limit localhost,a100-node-01.example.internal" \
        in text
    assert re.search(r"a100-node-01\.example\.internal : ok=\d+ changed=0 unreachable=0 failed=1 skipped=\d+ rescued=1",
                     text), text[-1500:]
