"""The nvidia_driver role's interface: argument specs, role defaults and preflight's defaults agree."""
import os

import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.node.driver_compat import defaults as driver_defaults

ROLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "roles", "nvidia_driver")


def load(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


def test_argument_specs_defaults_equal_role_defaults():
    defaults = load("defaults", "main.yml")
    options = load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(options) == sorted(defaults)
    assert {name: spec["default"] for name, spec in options.items()} == defaults


def test_every_public_variable_is_prefixed():
    assert all(name.startswith("nvidia_driver_") for name in load("defaults", "main.yml"))


def test_preflight_applies_the_same_defaults_as_the_role():
    defaults = load("defaults", "main.yml")
    shared = {k: v for k, v in driver_defaults().items() if k.startswith("nvidia_driver_")}
    assert set(shared) <= set(defaults)
    assert {k: defaults[k] for k in shared} == shared
