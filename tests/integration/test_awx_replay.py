"""AWX replay: for every job template, the exact extra vars AWX would send (tests/helpers/awx_launch.py,
from AWX's launch rules; no AWX runs here) go through the real stage playbooks in render mode."""
import filecmp
import json
import os
import re

import pytest

from ansible_run import ROOT, run_site
from awx_launch import launch, ui_blank_answers
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.awx_survey import (
    STAGE_QUESTIONS, stage_survey_options, survey_spec)

STAGES = list(STAGE_QUESTIONS)


def spec_of(stage):
    return survey_spec(stage, stage_survey_options(ROOT, stage))


def run_stage(stage, build, extra_vars=None, *args):
    cmd = []
    if extra_vars is not None:
        path = str(build) + ".extra-vars.json"
        with open(path, "w") as handle:
            json.dump(extra_vars, handle)       # AWX writes the job's extra vars to a file like this
        cmd += ["-e", "@" + path]
    return run_site(build, *cmd, *args, playbook="playbooks/%s.yml" % stage)


def tree(path):
    out = {}
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(dirpath, name)
            out[os.path.relpath(full, path)] = full
    return out


def test_no_question_has_a_default_so_an_unanswered_launch_sends_nothing():
    for stage in STAGES:
        spec = spec_of(stage)
        assert 1 <= len(spec["spec"]) <= 6, stage
        assert all("default" not in q for q in spec["spec"]), stage
        assert launch(spec, {}) == ({}, [])


@pytest.mark.parametrize("stage", STAGES)
def test_blank_form_launch_renders_exactly_what_the_inventory_says(stage, tmp_path):
    """The launch form submitted with every field empty must not change what the stage does."""
    spec = spec_of(stage)
    extra_vars, errors = launch(spec, ui_blank_answers(spec))
    assert not errors
    rc_base, out_base = run_stage(stage, tmp_path / "base")
    rc, out = run_stage(stage, tmp_path / "awx", extra_vars)
    assert rc_base == 0, out_base[-3000:]
    assert rc == 0, out[-3000:]
    base, awx = tree(tmp_path / "base"), tree(tmp_path / "awx")
    assert sorted(base) == sorted(awx)
    assert all(filecmp.cmp(base[k], awx[k], shallow=False) for k in base)
    if stage in ("provision", "cluster"):
        assert base, "the %s stage renders files" % stage


def test_typed_answers_take_effect(tmp_path):
    """provision: "false" for apply and a YAML pool list replace the inventory values."""
    spec = spec_of("provision")
    pools = "- name: solo\n  gpu_type: l4\n  gpus_per_node: 1\n  node_group: gpu_pool_infer_l4\n"
    extra_vars, errors = launch(spec, {"gpufleet_survey_apply": "false", "gpufleet_survey_gpu_pools": pools})
    assert not errors
    rc, out = run_stage("provision", tmp_path / "b", extra_vars)
    assert rc == 0, out[-3000:]
    files = sorted(tree(tmp_path / "b"))
    assert "provision/examples/01-job-gpu-example-solo.yaml" in files
    assert not any("a100" in f for f in files), files


def test_json_answer_is_parsed_too(tmp_path):
    spec = spec_of("preflight")
    pools = json.dumps([{"name": "solo", "gpu_type": "l4", "gpus_per_node": 1, "node_group": "gpu_pool_infer_l4"}])
    extra_vars, errors = launch(spec, {"gpufleet_survey_gpu_pools": pools})
    assert not errors
    rc, out = run_stage("preflight", tmp_path / "b", extra_vars, "-v")
    assert rc == 0, out[-3000:]


@pytest.mark.parametrize("answer,message", [
    ("name: solo\ngpu_type: l4\n", "gpufleet_survey_gpu_pools: the answer is a dict, gpufleet_gpu_pools needs a list"),
    ("[oops", "gpufleet_survey_gpu_pools: not valid YAML or JSON (line 1, column 6)"),
])
def test_wrong_answers_fail_before_anything_is_written(tmp_path, answer, message):
    extra_vars, errors = launch(spec_of("provision"), {"gpufleet_survey_gpu_pools": answer})
    assert not errors
    rc, out = run_stage("provision", tmp_path / "b", extra_vars)
    assert rc != 0
    assert message in re.sub(r"\s+", " ", out), out[-3000:]
    assert not (tmp_path / "b").exists()


def _attempted(out):
    return sorted(set(re.findall(r"fatal: \[([^\]]+)\]: UNREACHABLE", out)))


def test_nodes_rollout_starts_with_one_canary_and_stops_on_its_failure(tmp_path):
    """Apply mode against hosts that refuse SSH (nothing listens on port 1): the default batches
    try one canary host, and its failure stops the rollout before any other host is touched."""
    extra_vars, errors = launch(spec_of("nodes"), {"gpufleet_survey_apply": "true"}, ask_variables_on_launch=True)
    assert not errors
    rc, out = run_stage("nodes", tmp_path / "b", dict(extra_vars, ansible_host="127.0.0.1", ansible_port=1))
    assert rc != 0
    assert len(_attempted(out)) == 1, out[-3000:]


def test_nodes_batch_size_from_the_survey(tmp_path):
    """A text answer "3,50%": the first batch holds three hosts. Every host of it fails, which ends
    the play whatever the failure budget (Ansible stops when a whole batch failed)."""
    extra_vars, errors = launch(spec_of("nodes"), {"gpufleet_survey_apply": "true", "gpufleet_nodes_serial": "3,50%",
                                                   "gpufleet_nodes_max_fail_percentage": 50},
                                ask_variables_on_launch=True)
    assert not errors
    rc, out = run_stage("nodes", tmp_path / "b", dict(extra_vars, ansible_host="127.0.0.1", ansible_port=1))
    assert rc != 0
    assert len(_attempted(out)) == 3, out[-3000:]


def test_nodes_bad_batch_size_is_refused_before_any_host(tmp_path):
    extra_vars, _ = launch(spec_of("nodes"), {"gpufleet_survey_apply": "true", "gpufleet_nodes_serial": "0,x"},
                           ask_variables_on_launch=True)
    rc, out = run_stage("nodes", tmp_path / "b", dict(extra_vars, ansible_host="127.0.0.1", ansible_port=1))
    assert rc != 0
    assert "gpufleet_nodes_serial: '0' is not a batch size" in out
    assert not _attempted(out)
