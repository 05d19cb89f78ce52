"""module_utils/core/role_specs: the roles' argument specs read as the one source of input defaults."""
import os

import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle) or {}


def test_the_repository_roles_are_found_without_configuration(monkeypatch):
    monkeypatch.delenv(role_specs.ROLES_DIR_ENV, raising=False)
    assert role_specs.roles_dir() == os.path.join(ROOT, "roles")
    assert "gpufleet" in role_specs.roles() and "nvidia_driver" in role_specs.roles()


def test_the_environment_variable_wins(monkeypatch, tmp_path):
    meta = tmp_path / "demo" / "meta"
    meta.mkdir(parents=True)
    (meta / "argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    options:\n"
        "      demo_flag: {type: bool, default: true, description: x}\n"
        "      demo_name: {type: str, description: y}\n")
    monkeypatch.setenv(role_specs.ROLES_DIR_ENV, str(tmp_path))
    assert role_specs.roles_dir() == str(tmp_path)
    assert role_specs.roles() == ["demo"]
    assert role_specs.defaults() == {"demo_flag": True}          # demo_name has no default
    assert role_specs.types("demo") == {"demo_flag": "bool", "demo_name": "str"}
    assert role_specs.bool_vars() == ("demo_flag",)
    assert role_specs.prefixes() == ("demo_",)


def test_defaults_equal_each_roles_defaults_file():
    for role in role_specs.roles():
        path = os.path.join(ROOT, "roles", role, "defaults", "main.yml")
        expected = load("roles", role, "defaults", "main.yml") if os.path.isfile(path) else {}
        assert role_specs.defaults(role) == expected, role


def test_defaults_are_copies():
    first = role_specs.defaults("gpu_node_prep")
    first["gpu_node_prep_packages"].append("changed")
    assert role_specs.defaults("gpu_node_prep")["gpu_node_prep_packages"] == []


def test_prefix_selects_and_mirror_and_node_defaults():
    assert role_specs.mirror_defaults() == {k: v for k, v in load("roles", "gpufleet", "defaults", "main.yml").items()
                                            if k.startswith("gpufleet_mirror_")}
    node = role_specs.node_defaults()
    toolkit = load("roles", "nvidia_container_toolkit", "defaults", "main.yml")
    assert node["nvidia_container_toolkit_version"] == toolkit["nvidia_container_toolkit_version"]
    assert node["gpu_validate_metrics"] is load("roles", "gpu_validate", "defaults", "main.yml")["gpu_validate_metrics"]


def test_project_wide_inputs_are_declared_for_preflight_to_check():
    options = role_specs.options("gpufleet")
    for name in ("gpufleet_allow_reboot", "gpufleet_allow_eol_driver", "gpufleet_node_fast_path",
                 "gpufleet_nodes_serial", "gpufleet_upgrade_drain_force"):
        assert options[name]["type"] == "raw", name     # preflight gives the message, not the spec check
