"""What AWX / Automation Controller sends as extra vars when a job template with a survey is
launched, written from AWX's documented launch rules (awx/main/models/mixins.py,
SurveyJobTemplateMixin): no AWX can run here, so the tests replay these extra vars through the
real playbooks.

- every question that has a ``default`` (not None) which passes the question's own validation is
  sent with that default; answers given at launch replace defaults;
- answers are validated per type: text/textarea/password must be strings within min/max length,
  integer an int within min/max, float a number, multiplechoice one of the choices, multiselect a
  list of choices; a required question without an answer blocks the launch;
- variables that are not survey questions are refused unless ``ask_variables_on_launch``.
"""


def _errors(element, data):
    var = element["variable"]
    if var not in data:
        return ["'%s' value missing" % var] if element.get("required") else []
    value = data[var]
    kind = element["type"]
    if kind in ("text", "textarea", "password"):
        if not isinstance(value, str):
            return ["Value %r for '%s' expected to be a string." % (value, var)]
        if element.get("min") not in ("", None) and len(value) < int(element["min"]):
            return ["'%s' too short" % var]
        if element.get("max") not in ("", None) and len(value) > int(element["max"]):
            return ["'%s' too long" % var]
    elif kind == "integer":
        if type(value) is not int:
            return ["Value %r for '%s' expected to be an integer." % (value, var)]
        if element.get("min") not in ("", None) and value < int(element["min"]):
            return ["'%s' too small" % var]
        if element.get("max") not in ("", None) and value > int(element["max"]):
            return ["'%s' too large" % var]
    elif kind == "float":
        if type(value) not in (int, float):
            return ["Value %r for '%s' expected to be a number." % (value, var)]
    elif kind == "multiplechoice":
        if value not in element["choices"]:
            return ["Value %r for '%s' expected to be one of %s." % (value, var, element["choices"])]
    elif kind == "multiselect":
        if not isinstance(value, list) or any(v not in element["choices"] for v in value):
            return ["'%s' value is expected to be a list of %s." % (var, element["choices"])]
    return []


def launch(survey_spec, answers, ask_variables_on_launch=False, template_extra_vars=None):
    """(extra vars of the job, errors that block the launch)."""
    spec = survey_spec["spec"]
    errors, accepted = [], {}
    extra = dict(answers)
    for element in spec:
        problems = _errors(element, answers)
        if problems:
            errors += problems
            extra.pop(element["variable"], None)
        elif element["variable"] in extra:
            accepted[element["variable"]] = extra.pop(element["variable"])
    if ask_variables_on_launch:
        accepted.update(extra)
        extra = {}
    if extra:
        errors.append("Variables %s are not allowed on launch." % ", ".join(sorted(extra)))
    job_vars = dict(template_extra_vars or {})
    for element in spec:
        default = element.get("default")
        if default is not None and not _errors(element, {element["variable"]: default}):
            job_vars[element["variable"]] = default
    job_vars.update(accepted)
    return job_vars, errors


def ui_blank_answers(survey_spec):
    """What a launch form with every field left empty submits: empty text boxes as "" (choices and
    numbers left unset are not sent)."""
    return {q["variable"]: "" for q in survey_spec["spec"] if q["type"] in ("text", "textarea", "password")}
