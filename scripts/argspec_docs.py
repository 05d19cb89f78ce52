"""Role argument specs (meta/argument_specs.yml) -> the variables section of each role's README
(developer tool, used by scripts/gen-role-docs.py; not shipped in the collection). Reading the
specs at run time is module_utils/role_specs.py."""
import json

README_BEGIN = "<!-- BEGIN generated from meta/argument_specs.yml -->"
README_END = "<!-- END generated from meta/argument_specs.yml -->"


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def role_readme_section(spec):
    """Markdown table of a role's variables from its argument spec."""
    lines = [README_BEGIN, "", "| variable | type | default | required | choices | description |",
             "|---|---|---|---|---|---|"]
    for var in sorted(spec.get("options") or {}):
        opt = spec["options"][var]
        desc = opt.get("description", "")
        if isinstance(desc, list):
            desc = " ".join(desc)
        default = "" if "default" not in opt else "`%s`" % json.dumps(opt["default"], sort_keys=True)
        choices = ", ".join("`%s`" % c for c in opt.get("choices") or [])
        typ = opt.get("type", "str") + (("[%s]" % opt["elements"]) if opt.get("elements") else "")
        lines.append("| `%s` | %s | %s | %s | %s | %s |" % (var, typ, _cell(default),
                                                          "yes" if opt.get("required") else "no",
                                                          _cell(choices), _cell(desc)))
    lines += ["", README_END]
    return "\n".join(lines)


def render_role_readme(current, role, spec):
    """Return README text with the generated section replaced (or a new README)."""
    section = role_readme_section(spec)
    if current and README_BEGIN in current and README_END in current:
        head, rest = current.split(README_BEGIN, 1)
        _old, tail = rest.split(README_END, 1)
        return head + section + tail
    short = spec.get("short_description", "")
    intro = current.rstrip() + "\n\n" if current else "# Role %s\n\n%s\n\n" % (role, short)
    return intro + "## Variables\n\n" + section + "\n"
