"""AWX surveys: small, typed, no defaults; answers parsed back into typed variables."""
import os

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.awx_survey import (
    STAGE_QUESTIONS, answer_variables, parse_answers, serial_batches, stage_survey_options,
    survey_spec, survey_variable, workflow_survey_spec)
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PARSE = [
    ({"gpufleet_survey_apply": "true"}, {"gpufleet_apply": True}, []),
    ({"gpufleet_survey_apply": "false"}, {"gpufleet_apply": False}, []),
    ({"gpufleet_survey_apply": True}, {"gpufleet_apply": True}, []),
    ({"gpufleet_survey_allow_reboot": " Yes "}, {"gpufleet_allow_reboot": True}, []),
    ({"gpufleet_survey_apply": ""}, {}, []),
    ({"gpufleet_survey_apply": None}, {}, []),
    ({"gpufleet_survey_gpu_pools": "  \n"}, {}, []),
    ({"gpufleet_survey_gpu_pools": "[]"}, {"gpufleet_gpu_pools": []}, []),
    ({"gpufleet_survey_gpu_pools": '[{"name": "a"}]'}, {"gpufleet_gpu_pools": [{"name": "a"}]}, []),
    ({"gpufleet_survey_gpu_pools": "- name: a\n  gpus_per_node: 2\n"},
     {"gpufleet_gpu_pools": [{"name": "a", "gpus_per_node": 2}]}, []),
    ({"gpufleet_survey_addons_mode": "operator"}, {"gpufleet_addons_mode": "operator"}, []),
    ({"gpufleet_survey_fleet_report_window": " 7d "}, {"fleet_report_window": "7d"}, []),
    ({"gpufleet_survey_other": "x", "gpufleet_nodes_serial": "1"}, {}, []),
    ({"gpufleet_survey_apply": "maybe"}, {}, ["gpufleet_survey_apply: 'maybe' is not a boolean; use one of: true, false"]),
    ({"gpufleet_survey_gpu_pools": "name: a"}, {},
     ["gpufleet_survey_gpu_pools: the answer is a dict, gpufleet_gpu_pools needs a list (YAML or JSON)"]),
    ({"gpufleet_survey_gpu_pools": "x: [1"}, {}, ["gpufleet_survey_gpu_pools: not valid YAML or JSON (line 1, column 6)"]),
]


@pytest.mark.parametrize("answers,variables,errors", PARSE)
def test_answers_become_typed_variables(answers, variables, errors):
    got_vars, got_errors = parse_answers(answers)
    assert got_vars == variables
    assert len(got_errors) == len(errors)
    for got, want in zip(got_errors, errors):
        assert got.startswith(want), got


@pytest.mark.parametrize("value,batches", [
    ([1, "25%"], [1, "25%"]), ("1,25%", [1, "25%"]), (" 2 , 50 % ", [2, "50%"]), (3, [3]), ("10%", ["10%"]),
    ("100%", ["100%"]),
])
def test_serial_batches(value, batches):
    assert serial_batches(value) == batches


@pytest.mark.parametrize("value", ["0", "x", "101%", "", [], [True], "-1", "1,,", None])
def test_bad_serial_is_refused_naming_the_variable(value):
    if value == "1,,":
        assert serial_batches(value) == [1]
        return
    with pytest.raises(GpufleetError) as err:
        serial_batches(value)
    assert err.value.msg.startswith("gpufleet_nodes_serial: ")


def test_every_question_is_small_typed_and_documented():
    for stage in STAGE_QUESTIONS:
        spec = survey_spec(stage, stage_survey_options(ROOT, stage))
        assert spec["name"] and spec["description"]
        assert len(spec["spec"]) <= 6
        for q in spec["spec"]:
            assert "default" not in q and q["required"] is False
            assert q["type"] in ("multiplechoice", "textarea", "text", "integer")
            if q["type"] == "multiplechoice":
                assert q["choices"]
        variables = [q["variable"] for q in spec["spec"]]
        assert len(variables) == len(set(variables))


def test_choices_come_from_the_argument_spec():
    spec = survey_spec("cluster", stage_survey_options(ROOT, "cluster"))
    mode = [q for q in spec["spec"] if q["variable"] == "gpufleet_survey_addons_mode"][0]
    assert mode["choices"] == ["standalone", "operator", "none"]


def test_a_question_about_an_undocumented_variable_is_refused():
    with pytest.raises(GpufleetError, match="asks for gpufleet_apply, which no role"):
        survey_spec("cluster", {"gpufleet_addons_mode": {"choices": ["a"]}})
    with pytest.raises(GpufleetError, match="as a list, its argument spec says str"):
        survey_spec("preflight", {"gpufleet_gpu_pools": {"type": "str"}})
    with pytest.raises(GpufleetError, match="no survey for stage"):
        survey_spec("site", {})


def test_survey_options_come_from_argument_specs_not_the_readme(tmp_path):
    """The surveys read only the roles' argument specs (nothing reads README.md at run time): a
    project copy whose README documents an extra variable gives the same options, and every
    question's description is its option's description."""
    import shutil
    shutil.copytree(os.path.join(ROOT, "roles"), str(tmp_path / "roles"))
    shutil.copytree(os.path.join(ROOT, "playbooks"), str(tmp_path / "playbooks"))
    (tmp_path / "README.md").write_text("| `gpufleet_readme_only` | documented only here |\n"
                                        "| `gpufleet_allow_reboot` | README text |\n")
    for stage in STAGE_QUESTIONS:
        options = stage_survey_options(str(tmp_path), stage)
        assert "gpufleet_readme_only" not in options
        assert options.get("gpufleet_allow_reboot", {}).get("description") != "README text"
        spec = survey_spec(stage, options)
        for (variable, _name, _kind, _direct), question in zip(STAGE_QUESTIONS[stage], spec["spec"]):
            description = options[variable]["description"]
            text = " ".join(description) if isinstance(description, list) else description
            assert question["question_description"].startswith(text + " Leave empty"), question


def test_workflow_survey_asks_each_variable_once():
    specs = [survey_spec(s, stage_survey_options(ROOT, s)) for s in STAGE_QUESTIONS]
    flow = workflow_survey_spec(specs)
    variables = [q["variable"] for q in flow["spec"]]
    assert len(variables) == len(set(variables))
    assert set(variables) == {q["variable"] for s in specs for q in s["spec"]}


def test_role_gpufleet_survey_documents_and_sets_every_answer():
    with open(os.path.join(ROOT, "roles", "gpufleet_survey", "meta", "argument_specs.yml")) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    assert set(options) == set(answer_variables())
    with open(os.path.join(ROOT, "roles", "gpufleet_survey", "tasks", "main.yml")) as handle:
        tasks = yaml.safe_load(handle)
    setter = [t for t in tasks if t.get("delegate_facts")][0]["ansible.builtin.set_fact"]
    assert set(setter) == set(answer_variables().values())
    for variable in setter:
        assert "variables.%s |" % variable in setter[variable]


def test_survey_variable_names():
    assert survey_variable("gpufleet_apply") == "gpufleet_survey_apply"
    assert survey_variable("fleet_report_window") == "gpufleet_survey_fleet_report_window"
