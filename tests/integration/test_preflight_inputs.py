"""Issue 26 through the real playbooks (no node needed: preflight and the Karpenter migration run on
the controller): a missing gpufleet_platform is named with the platforms to choose from, and the
migration playbook refuses two Provisioners with one name and keeps the GPU AMI off a CPU pool.
The other refusals run in tests/bad_inputs.yml (test_bad_inputs.py)."""
import json
import os
import re
import shutil

import pytest
import yaml

from frozen import TODAY_VARS
from ansible_run import run_site

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BAD_INPUT_INVENTORY = os.path.join(ROOT, "tests", "integration", "inventories", "bad_input")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "karpenter")


def inventory_without_platform(tmp_path):
    """A copy of the bad-input inventory under tmp_path/inv without gpufleet_platform."""
    inventory = tmp_path / "inv"
    shutil.copytree(BAD_INPUT_INVENTORY, str(inventory))
    group_vars = inventory / "group_vars" / "all" / "gpufleet.yml"
    values = yaml.safe_load(group_vars.read_text())
    del values["gpufleet_platform"]
    group_vars.write_text(yaml.safe_dump(values))
    return inventory


def test_a_missing_platform_is_named_with_the_platforms(tmp_path):
    inventory = inventory_without_platform(tmp_path)
    rc, out = run_site(str(tmp_path / "build"), *TODAY_VARS, playbook="playbooks/preflight.yml",
                       inventory=str(inventory))
    out = re.sub(r"\s+", " ", out)
    assert rc != 0
    assert ("gpufleet_platform: is not set; use one of: eks, gke, gke-autopilot, kubeadm, k3s, rke2, k0s, "
            "microk8s, openshift") in out, out[-3000:]
    assert "missing required arguments" not in out
    assert not (tmp_path / "build").exists()


def test_migration_playbook_refuses_one_name_twice(tmp_path):
    src = os.path.join(FIXTURES, "v1alpha5-same-name-twice.yaml")
    rc, out = run_site(str(tmp_path / "unused"), "-e", "karpenter_migrate_src=%s" % src, "-e",
                       "karpenter_migrate_dest=%s" % (tmp_path / "v1"), playbook="playbooks/karpenter_migrate.yml")
    out = re.sub(r"\s+", " ", out)
    assert rc != 0
    assert "documents 0 and 1 are both Provisioner gpu; one name would become two NodePool objects" in out, out[-3000:]
    assert not (tmp_path / "v1").exists()


def test_migration_playbook_gives_a_cpu_pool_no_gpu_ami(tmp_path):
    src = os.path.join(FIXTURES, "v1alpha5-cpu-pool-excluding-gpus.yaml")
    dest = tmp_path / "v1"
    rc, out = run_site(str(tmp_path / "unused"), "-e", "karpenter_migrate_src=%s" % src, "-e",
                       "karpenter_migrate_dest=%s" % dest, "-e", "karpenter_migrate_cluster_name=ml-prod",
                       playbook="playbooks/karpenter_migrate.yml")
    assert rc == 0, out[-3000:]
    classes = {}
    for name in sorted(os.listdir(str(dest))):
        if name.endswith(".yaml"):
            with open(str(dest / name)) as handle:
                for doc in yaml.safe_load_all(handle):
                    if doc and doc["kind"] == "EC2NodeClass":
                        classes[doc["metadata"]["name"]] = doc["spec"]["amiSelectorTerms"]
    assert classes["general"] == [{"alias": "al2023@latest"}]
    assert "nvidia" in classes["gpu"][0]["ssmParameter"]


def test_a_plan_given_as_an_extra_var_is_refused_before_preflight_could_be_skipped(tmp_path):
    """An extra var wins over set_fact: ``-e gpufleet_plan=...`` used to stand for the plan and skip preflight
    (here an inventory without gpufleet_platform would have rendered on the forged plan). Inline and as @file."""
    inventory = inventory_without_platform(tmp_path)
    forged = {"gpufleet_plan": {"platform": "kubeadm", "apply": False, "pools": [], "build_dir": str(tmp_path / "b")}}
    extra_file = tmp_path / "extra.yml"
    extra_file.write_text(yaml.safe_dump(forged))
    for given in (yaml.safe_dump(forged, default_flow_style=True).strip(), "@%s" % extra_file):
        rc, out = run_site(str(tmp_path / "build"), *TODAY_VARS, "-e", given, inventory=str(inventory))
        out = re.sub(r"\s+", " ", out)
        assert rc != 0
        assert "Given as an extra var (-e): gpufleet_plan. The gpufleet role publishes these" in out, out[-3000:]
        assert "Refuse a plan or connection given as an extra var" in out
        assert not (tmp_path / "build").exists() and not (tmp_path / "b").exists()


INLINE_TOKEN = "sentinel-inline-kubeconfig-token-5c2d"
INLINE_KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "c",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    "users": [{"name": "u", "user": {"token": INLINE_TOKEN}}],
}


@pytest.mark.parametrize("form", ["mapping", "json"])
@pytest.mark.parametrize("verbosity", [[], ["-vvv"]], ids=["default", "vvv"])
def test_an_inline_kubeconfig_is_refused_without_showing_its_token(tmp_path, form, verbosity):
    """Issue 39 item 1: an inline kubeconfig (a mapping, or one-line JSON text) used to pass preflight and be printed,
    token and all, in "gpufleet cannot reach the Kubernetes cluster (kubeconfig {...})". Preflight now refuses it,
    naming the variable and the allowed form, and the token is in no output, at default verbosity or at -vvv."""
    value = INLINE_KUBECONFIG if form == "mapping" else json.dumps(INLINE_KUBECONFIG)
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({"gpufleet_apply": True, "gpufleet_k8s_kubeconfig": value}))
    rc, out = run_site(str(tmp_path / "build"), *TODAY_VARS, "-e", "@%s" % extra, *verbosity,
                       inventory=BAD_INPUT_INVENTORY)
    assert rc != 0, out[-3000:]
    assert INLINE_TOKEN not in out
    text = re.sub(r"\s+", " ", out)
    assert "gpufleet_k8s_kubeconfig: is an inline kubeconfig" in text, text[-3000:]
    assert "allowed: the path of a kubeconfig file on the controller" in text
    assert not (tmp_path / "build").exists()


def forged_plan(victim):
    """A plan in the shape the gpufleet role publishes, pointing at an unrelated folder (``victim``)."""
    return {"platform": "kubeadm", "cluster_name": "x", "apply": False, "addons_mode": "standalone", "pools": [],
            "build_dir": str(victim), "output_dir": str(victim), "staged": False, "inventory_name": "inv"}


def victim_folder(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep\n")
    return victim


def assert_untouched(tmp_path, victim):
    assert sorted(os.listdir(str(victim))) == ["keep.txt"]
    assert (victim / "keep.txt").read_text() == "keep\n"
    assert not (tmp_path / "build").exists()


@pytest.mark.parametrize("given", ["plan-and-connection", "connection"])
def test_a_connection_extra_var_does_not_skip_preflight(tmp_path, given):
    """Issue 39 item 2: ``-e gpufleet_k8s_connection={}`` beside a forged ``-e gpufleet_plan`` made every stage's
    first play match no host, so the role (and its extra-var check) never ran and site.yml rendered into and published
    over an unrelated folder. Each stage now reuses a plan only when the role recorded this run's id beside it; the role
    runs and refuses both extra vars, and nothing is written."""
    victim = victim_folder(tmp_path)
    inventory = tmp_path / "inv"
    shutil.copytree(os.path.join(ROOT, "inventories", "example"), str(inventory))
    extra = {"gpufleet_k8s_connection": {}}
    if given == "plan-and-connection":
        extra["gpufleet_plan"] = forged_plan(victim)
    rc, out = run_site(str(tmp_path / "build"), *TODAY_VARS, "-e", json.dumps(extra), inventory=str(inventory))
    text = re.sub(r"\s+", " ", out)
    assert rc != 0, text[-3000:]
    names = "gpufleet_k8s_connection, gpufleet_plan" if given == "plan-and-connection" else "gpufleet_k8s_connection"
    assert "Given as an extra var (-e): %s. The gpufleet role publishes these" % names in text, text[-3000:]
    assert_untouched(tmp_path, victim)


@pytest.mark.parametrize("with_connection", [False, True], ids=["plan", "plan-and-connection-extra-var"])
def test_a_plan_in_group_vars_is_refused(tmp_path, with_connection):
    """Issue 39 item 2: a gpufleet_plan in group_vars stood for the plan (the stages' plays and the role's tasks only
    asked whether it was defined): preflight was skipped and the render went to the forged plan's folder. The role now
    refuses a plan it did not publish in this run, before anything is written."""
    victim = victim_folder(tmp_path)
    inventory = tmp_path / "inv"
    shutil.copytree(os.path.join(ROOT, "inventories", "example"), str(inventory))
    (inventory / "group_vars" / "all" / "forged.yml").write_text(yaml.safe_dump({"gpufleet_plan": forged_plan(victim)}))
    extra = ["-e", json.dumps({"gpufleet_k8s_connection": {}})] if with_connection else []
    for playbook in ("site.yml", "playbooks/preflight.yml"):
        rc, out = run_site(str(tmp_path / "build"), *TODAY_VARS, *extra, inventory=str(inventory), playbook=playbook)
        text = re.sub(r"\s+", " ", out)
        assert rc != 0, text[-3000:]
        expected = ("Given as an extra var (-e): gpufleet_k8s_connection" if with_connection else
                    "gpufleet_plan is set outside the gpufleet role (group_vars, host_vars, a vars file or a fact "
                    "cache)")
        assert expected in text, text[-3000:]
        assert_untouched(tmp_path, victim)


def test_a_stage_reuses_the_plan_its_run_published(tmp_path):
    """The other side: within one site.yml run the role runs once (the stages' first plays match no host), and a
    second run publishes again (its id differs from the first run's)."""
    for _ in range(2):
        rc, out = run_site(str(tmp_path / "build"), *TODAY_VARS)
        assert rc == 0, out[-3000:]
        assert out.count("TASK [gpufleet : Validate the inventory before anything changes]") == 1, out[-3000:]
        assert out.count("validate inputs and publish the plan] ***") == 5
        assert out.count("skipping: no hosts matched") >= 5
