# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""AWX / Automation Controller surveys: a few typed questions per job template, and the answers
turned back into typed variables.

How AWX builds a job's extra vars (awx/main/models/mixins.py, ``_update_unified_job_kwargs``):
every survey question with a ``default`` that passes its own validation is sent as an extra var,
then the answers given at launch; extra vars outrank every inventory variable. Hence:

- no question has a default (an unanswered question must leave the inventory value alone);
- a question whose answer needs parsing or may arrive empty (AWX UIs send ``""`` for an empty
  text box, ``"true"``/``"false"`` strings for a choice) is asked under a survey name
  (``gpufleet_survey_<variable without gpufleet_>``), never under the real variable: role
  ``gpufleet_survey`` turns non-empty answers into the real variable (bool, int, list or dict
  parsed from YAML/JSON) before preflight validates it;
- a few play keywords (``serial``, ``max_fail_percentage``) can only read extra vars, so their
  questions use the real variable and the playbook treats an empty answer as unset.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.role_specs import stage_options
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.remediation_metrics import has_credentials

SURVEY_PREFIX = "gpufleet_survey_"
TEXT_MAX = 1024
TEXTAREA_MAX = 65536

# Per stage: (variable, question, kind, direct). kind: bool | list | dict (YAML/JSON text) | choice | text |
# int | serial.
# ``direct``: asked under the real variable name (play keywords).
STAGE_QUESTIONS = {
    "preflight": [
        ("gpufleet_gpu_pools", "GPU pools to check instead of the inventory's (YAML or JSON)", "list", False),
    ],
    "provision": [
        ("gpufleet_apply", "Apply (true) or only render (false)?", "bool", False),
        ("gpufleet_gpu_pools", "GPU pools instead of the inventory's (YAML or JSON)", "list", False),
    ],
    "nodes": [
        ("gpufleet_apply", "Apply (true) or only render (false)?", "bool", False),
        ("gpufleet_allow_reboot", "May hosts that need it be rebooted?", "bool", False),
        ("gpufleet_node_fast_path", "Skip hosts unchanged since their last converge?", "bool", False),
        ("gpufleet_nodes_serial", "Batch sizes, first one the canary (e.g. 1,25%)", "serial", True),
        ("gpufleet_nodes_max_fail_percentage", "Stop after this % of a batch failed", "int", True),
    ],
    "cluster": [
        ("gpufleet_apply", "Apply (true) or only render (false)?", "bool", False),
        ("gpufleet_addons_mode", "Who manages the GPU add-ons?", "choice", False),
    ],
    "validate": [
        ("gpufleet_apply", "Run the checks against the cluster (true)?", "bool", False),
    ],
    "report": [
        ("fleet_report_prometheus_url", "Prometheus base URL for utilisation", "text", False),
        ("fleet_report_window", "Utilisation window (PromQL range, e.g. 24h)", "text", False),
    ],
    "remediate": [
        ("gpufleet_apply", "Read the cluster (true; remediation needs apply mode)?", "bool", False),
        ("gpu_remediation_dry_run", "Only report what would be done (true) or act (false)?", "bool", False),
        ("gpu_remediation_prometheus_url", "Prometheus base URL for the DCGM metrics", "text", False),
    ],
}
BOOL_TRUE = ("true", "yes", "on", "1")
BOOL_FALSE = ("false", "no", "off", "0")
YAML_TYPES = {"list": list, "dict": dict}


def survey_variable(variable):
    """The name a survey asks ``variable`` under."""
    short = variable[len("gpufleet_"):] if variable.startswith("gpufleet_") else variable
    return SURVEY_PREFIX + short


def answer_variables():
    """{survey variable: real variable} over every stage (mapped questions only)."""
    out = {}
    for questions in STAGE_QUESTIONS.values():
        for variable, _q, _kind, direct in questions:
            if not direct:
                out[survey_variable(variable)] = variable
    return out


def _description(option):
    text = option.get("description", "")
    return " ".join(text) if isinstance(text, list) else str(text)


def survey_spec(stage, options):
    """The AWX survey_spec of one stage. ``options``: {variable: argument-spec option} of what the
    stage's roles and the project document (a question about an unknown variable is refused)."""
    if stage not in STAGE_QUESTIONS:
        raise GpufleetError("no survey for stage %r; stages: %s" % (stage, ", ".join(sorted(STAGE_QUESTIONS))))
    spec = []
    for variable, name, kind, direct in STAGE_QUESTIONS[stage]:
        if variable not in options:
            raise GpufleetError("survey of stage %s asks for %s, which no role of the stage documents"
                                % (stage, variable))
        option = options[variable]
        question = {
            "question_name": name,
            "question_description": _description(option) + " Leave empty to keep the inventory value.",
            "variable": variable if direct else survey_variable(variable),
            "required": False,
        }
        if kind == "bool":
            question.update(type="multiplechoice", choices=["true", "false"])
        elif kind == "choice":
            question.update(type="multiplechoice", choices=[str(c) for c in option["choices"]])
        elif kind in YAML_TYPES:
            if option.get("type") not in (kind, "raw", None):
                raise GpufleetError("survey of stage %s asks for %s as a %s, its argument spec says %s"
                                    % (stage, variable, kind, option.get("type")))
            question.update(type="textarea", min=0, max=TEXTAREA_MAX)
            question["question_description"] += " YAML or JSON."
        elif kind == "int":
            question.update(type="integer", min=0, max=100)
        elif kind in ("text", "serial"):
            question.update(type="text", min=0, max=TEXT_MAX)
        else:
            raise GpufleetError("survey question kind %r of %s has no AWX type" % (kind, variable))
        spec.append(question)
    return {"name": "gpufleet " + stage,
            "description": "What a person answers when launching the %s stage; everything else comes "
                           "from the inventory" % stage,
            "spec": spec}


def _kinds():
    out = {}
    for questions in STAGE_QUESTIONS.values():
        for variable, _q, kind, direct in questions:
            if not direct:
                out[variable] = kind
    return out


def parse_answers(answers):
    """Typed variables from survey answers. ``answers``: {survey variable: value} as AWX sent them.
    Returns (variables, errors); an empty or missing answer leaves its variable out."""
    kinds = _kinds()
    mapping = answer_variables()
    variables, errors = {}, []
    for survey_var in sorted(answers or {}):
        if survey_var not in mapping:
            continue
        value = answers[survey_var]
        variable = mapping[survey_var]
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        kind = kinds[variable]
        if kind == "bool":
            if isinstance(value, bool):
                variables[variable] = value
            elif str(value).strip().lower() in BOOL_TRUE + BOOL_FALSE:
                variables[variable] = str(value).strip().lower() in BOOL_TRUE
            else:
                errors.append("%s: %r is not a boolean; use one of: true, false" % (survey_var, value))
        elif kind in YAML_TYPES:
            parsed = value
            if isinstance(value, str):
                try:
                    parsed = yaml.safe_load(value)
                except yaml.YAMLError as exc:
                    mark = getattr(exc, "problem_mark", None)
                    where = " (line %d, column %d)" % (mark.line + 1, mark.column + 1) if mark else ""
                    errors.append("%s: not valid YAML or JSON%s: %s"
                                  % (survey_var, where, getattr(exc, "problem", exc)))
                    continue
            if not isinstance(parsed, YAML_TYPES[kind]):
                errors.append("%s: the answer is a %s, %s needs a %s (YAML or JSON)"
                              % (survey_var, type(parsed).__name__, variable, kind))
                continue
            variables[variable] = parsed
        elif kind == "int":
            try:
                variables[variable] = int(value)
            except (TypeError, ValueError):
                errors.append("%s: %r is not an integer" % (survey_var, value))
        elif variable.endswith("_prometheus_url") and has_credentials(str(value).strip()):
            # the answer is never repeated: it is shown with the facts this sets
            errors.append("%s: credentials in the URL (user:password@) are refused, they would be printed in the "
                          "job's log; give Prometheus's credentials to %s_username and %s_password (or "
                          "%s_bearer_token) through an AWX credential or a vault" % (
                              survey_var, variable[:-4], variable[:-4], variable[:-4]))
        else:
            variables[variable] = str(value).strip() if kind == "text" else value
    return variables, errors


def stage_survey_options(project_dir, stage):
    """{variable: option} a stage's survey may ask about: the argument-spec options of the roles the
    stage playbook includes, then the project-wide ``gpufleet_*`` inputs wherever their one
    declaration lives (``gpufleet_gpu_pools`` in the gpu_pools role, which preflight reads first).
    Nothing is read from the README."""
    options = dict(stage_options(project_dir, "playbooks/%s.yml" % stage))
    for role in role_specs.input_roles():
        for name, option in role_specs.options(role).items():
            if name.startswith("gpufleet_"):
                options.setdefault(name, option)
    return options


def _batch(item, variable):
    text = str(item).strip()
    if isinstance(item, bool):
        raise GpufleetError("%s: %r is not a batch size; use a number of hosts (1, 5) or a percentage (10%%)"
                            % (variable, item))
    if text.endswith("%"):
        number = text[:-1].strip()
        if number.isdigit() and 0 < int(number) <= 100:
            return "%d%%" % int(number)
    elif text.isdigit() and int(text) > 0:
        return int(text)
    raise GpufleetError("%s: %r is not a batch size; use a number of hosts (1, 5) or a percentage (10%%)"
                        % (variable, item))


def serial_batches(value, variable="gpufleet_nodes_serial"):
    """The play's ``serial`` list from a list, a number, a percentage or comma-separated text
    (``"1,25%"``, what an AWX text answer holds)."""
    if isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, str):
        items = [part for part in value.split(",") if part.strip()]
    else:
        items = [value]
    if not items:
        raise GpufleetError("%s: no batch size given; use for example 1,25%%" % variable)
    return [_batch(item, variable) for item in items]


def workflow_survey_spec(stage_specs):
    """The workflow template's survey: every stage question once (AWX passes workflow answers to
    every node of the workflow)."""
    spec, seen = [], set()
    for stage_spec in stage_specs:
        for question in stage_spec["spec"]:
            if question["variable"] not in seen:
                seen.add(question["variable"])
                spec.append(dict(question))
    return {"name": "gpufleet site",
            "description": "What a person answers when launching every stage; everything else comes from the inventory",
            "spec": spec}


def check(params, plan, problems):
    """Preflight: the node stage's batch inputs (play keywords, read from extra vars only)."""
    extra = params.get("extra") or {}
    serial = extra.get("gpufleet_nodes_serial")
    if serial not in (None, "", []):
        try:
            serial_batches(serial)
        except GpufleetError as exc:
            problems.error("gpufleet_nodes_serial", exc.msg.partition(": ")[2])
    budget = extra.get("gpufleet_nodes_max_fail_percentage")
    if budget not in (None, ""):
        try:
            number = int(budget)
        except (TypeError, ValueError):
            number = -1
        if isinstance(budget, bool) or not 0 <= number <= 100:
            problems.error("gpufleet_nodes_max_fail_percentage", "%r; use a percentage from 0 to 100" % (budget,))


def workflow_nodes(stages, organization, prefix="gpufleet "):
    """AWX workflow nodes running the stage job templates one after another (on success)."""
    nodes = []
    for index, stage in enumerate(stages):
        node = {
            "identifier": stage,
            "unified_job_template": {"name": prefix + stage, "type": "job_template",
                                     "organization": {"name": organization}},
        }
        if index + 1 < len(stages):
            node["related"] = {"success_nodes": [{"identifier": stages[index + 1]}]}
        nodes.append(node)
    return nodes
