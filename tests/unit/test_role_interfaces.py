"""Every role's interface is strict and documented: argument specs match defaults, names are
prefixed (the README variables sections generated from the specs: test_generated_docs.py)."""
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(r for r in os.listdir(os.path.join(ROOT, "roles")) if os.path.isdir(os.path.join(ROOT, "roles", r)))


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle) or {}


@pytest.mark.parametrize("role", ROLES)
def test_role_has_argument_specs_matching_defaults(role):
    spec_path = os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")
    assert os.path.isfile(spec_path), "role %s has no meta/argument_specs.yml" % role
    options = load(spec_path)["argument_specs"]["main"].get("options") or {}
    defaults_path = os.path.join(ROOT, "roles", role, "defaults", "main.yml")
    defaults = load(defaults_path) if os.path.isfile(defaults_path) else {}
    undocumented = sorted(set(defaults) - set(options))
    assert not undocumented, "defaults without argument spec in %s: %s" % (role, undocumented)
    for var, value in defaults.items():
        assert "default" in options[var], "%s: %s has a default in defaults/main.yml but not in the spec" % (role, var)
        assert options[var]["default"] == value, "%s: %s default differs: spec %r, defaults %r" % (
            role, var, options[var]["default"], value)
        assert not options[var].get("required"), "%s: %s is required yet has a default" % (role, var)
    for var, option in options.items():
        if "default" in option:
            assert var in defaults, "%s: %s has a default in the spec but not in defaults/main.yml" % (role, var)
        assert option.get("description"), "%s: %s has no description" % (role, var)
        assert "type" in option, "%s: %s has no type" % (role, var)


@pytest.mark.parametrize("role", ROLES)
def test_public_variables_carry_the_role_prefix(role):
    spec_path = os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")
    options = load(spec_path)["argument_specs"]["main"].get("options") or {}
    prefixes = (role + "_",) if role != "gpufleet" else ("gpufleet_",)
    # a few roles read the project-wide gpufleet_* inputs too
    bad = [v for v in options if not v.startswith(prefixes) and not v.startswith("gpufleet_")]
    assert not bad, "%s: variables without the %s prefix: %s" % (role, prefixes[0], bad)


def test_playbooks_do_not_read_role_defaults_or_vars_files_by_path():
    """A play that needs roles' defaults without running them asks the argument specs (lookup
    gpufleet.k8s.inputs with defaults=true), not the files."""
    import glob
    import re
    pattern = re.compile(r"roles/[^'\"\s]*/(defaults|vars)/")
    offenders = []
    for path in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")) + [os.path.join(ROOT, "site.yml")]:
        with open(path) as handle:
            if pattern.search(handle.read()):
                offenders.append(os.path.relpath(path, ROOT))
    assert not offenders, offenders
