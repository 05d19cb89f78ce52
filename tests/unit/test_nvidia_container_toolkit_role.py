"""nvidia_container_toolkit role: repository files (apt deb822 and dnf), interface, filters.

RHEL-family hosts cannot run here (no image can be obtained), so the dnf repository file is
tested as rendered; the apt source is also exercised for real by molecule/nvidia_container_toolkit.
"""
import configparser
import os

import jinja2
import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.filter import containerd_config as filters

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
ROLE = os.path.join(ROOT, "roles", "nvidia_container_toolkit")


def load(rel):
    with open(os.path.join(ROLE, rel)) as handle:
        return yaml.safe_load(handle)


def render(template, **variables):
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["bool"] = lambda v: v if isinstance(v, bool) else str(v).lower() in ("yes", "true", "1", "on")
    with open(os.path.join(ROLE, "templates", template)) as handle:
        text = handle.read()
    values = dict(load("defaults/main.yml"))
    values.update(variables)
    return env.from_string(text).render(**values)


def deb822(text):
    fields = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def test_apt_source_is_deb822_signed_by_the_keyring():
    text = render("nvidia-container-toolkit.sources.j2",
                  __nvidia_container_toolkit_repo_url="https://nvidia.github.io/libnvidia-container/stable/deb/amd64",
                  __nvidia_container_toolkit_keyring="/etc/apt/keyrings/nvidia-container-toolkit.asc")
    assert deb822(text) == {
        "Types": "deb",
        "URIs": "https://nvidia.github.io/libnvidia-container/stable/deb/amd64",
        "Suites": "/",
        "Signed-By": "/etc/apt/keyrings/nvidia-container-toolkit.asc",
    }


def test_apt_source_for_a_local_mirror_can_be_trusted_instead():
    text = render("nvidia-container-toolkit.sources.j2", nvidia_container_toolkit_repo_url="file:/srv/repo",
                  nvidia_container_toolkit_repo_suite="./", nvidia_container_toolkit_repo_trusted=True,
                  __nvidia_container_toolkit_repo_url="unused", __nvidia_container_toolkit_keyring="unused")
    assert deb822(text) == {"Types": "deb", "URIs": "file:/srv/repo", "Suites": "./", "Trusted": "yes"}


@pytest.mark.parametrize("trusted,expected", [
    (False, {"gpgcheck": "1", "repo_gpgcheck": "1",
             "gpgkey": "file:///etc/pki/rpm-gpg/RPM-GPG-KEY-nvidia-container-toolkit"}),
    (True, {"gpgcheck": "0", "repo_gpgcheck": "0"}),
])
def test_dnf_repository_checks_signatures(trusted, expected):
    text = render("nvidia-container-toolkit.repo.j2", nvidia_container_toolkit_repo_trusted=trusted,
                  __nvidia_container_toolkit_repo_url="https://nvidia.github.io/libnvidia-container/stable/rpm/$basearch",
                  __nvidia_container_toolkit_keyring="/etc/pki/rpm-gpg/RPM-GPG-KEY-nvidia-container-toolkit")
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    repo = dict(parser["nvidia-container-toolkit"])
    assert repo["baseurl"] == "https://nvidia.github.io/libnvidia-container/stable/rpm/$basearch"
    assert repo["enabled"] == "1" and repo["sslverify"] == "1"
    for key, value in expected.items():
        assert repo[key] == value
    assert ("gpgkey" in repo) == (not trusted)


def test_udev_rule_runs_create_dev_char_symlinks_when_the_driver_binds():
    rules = [line for line in render("71-nvidia-dev-char.rules.j2").splitlines() if line and not line.startswith("#")]
    assert rules == ['ACTION=="add", DEVPATH=="/bus/pci/drivers/nvidia", '
                     'RUN+="/usr/bin/nvidia-ctk system create-dev-char-symlinks --create-all"']


def test_argument_specs_match_defaults():
    defaults = load("defaults/main.yml")
    options = load("meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(defaults) == set(options)
    for name, spec in options.items():
        assert spec["default"] == defaults[name], name
        assert name.startswith("nvidia_container_toolkit_")
        if "choices" in spec:
            assert defaults[name] in spec["choices"], name


def test_argument_spec_preset_choices_are_the_module_presets():
    options = load("meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(options["nvidia_container_toolkit_runtime_preset"]["choices"]) - {""} == set(filters.PRESETS)


@pytest.mark.parametrize("preset,platform,expected", [
    ("", "kubeadm", "containerd"),
    ("", "eks", "containerd"),
    ("", "k3s", "k3s"),
    ("", "rke2", "rke2"),
    ("", "k0s", "k0s"),
    ("", "microk8s", "microk8s"),
    ("", "openshift", "crio"),
    ("", "", "containerd"),
    ("k0s", "kubeadm", "k0s"),
])
def test_preset_from_platform(preset, platform, expected):
    assert filters.nvidia_runtime_preset(preset, platform) == expected


def test_input_problems_name_the_role_variables():
    assert filters.nvidia_runtime_input_problems("containerd", "drop-in", 0) == []
    assert filters.nvidia_runtime_input_problems("docker", "sideways", 7) == [
        "nvidia_container_toolkit_runtime_preset: 'docker' is not a known runtime preset; "
        "use one of: containerd, crio, k0s, k3s, microk8s, rke2",
        "nvidia_container_toolkit_runtime_mode: 'sideways' is not a supported mode; use one of: drop-in, in-place",
        "nvidia_container_toolkit_runtime_config_version: 7 is not a containerd config version; "
        "use one of: 1, 2, 3, 4 (0: detect)",
    ]


def test_every_containerd_preset_has_a_ctr_command():
    ctr = load("vars/main.yml")["__nvidia_container_toolkit_ctr"]
    assert set(ctr) == set(name for name, p in filters.PRESETS.items() if p["kind"] == "containerd")


def _version_key(version):
    upstream, _, revision = version.partition("-")
    return tuple(int(part) for part in upstream.split(".")) + (int(revision or 0),)


def test_default_pin_is_a_toolkit_that_reads_runtime_config_source():
    """RUNTIME_CONFIG_SOURCE (and the containerd conf.d drop-in) exist from toolkit 1.18 on; the
    host pin follows the 1.18 line the pinned GPU Operator chart ships."""
    from ansible_collections.gpufleet.k8s.plugins.module_utils.core import versions
    pin = load("defaults/main.yml")["nvidia_container_toolkit_version"]
    assert _version_key(pin) >= (1, 18, 0, 0), pin
    chart_toolkit = versions.OPERATOR_COMPONENTS["NVIDIA Container Toolkit (toolkit.version)"].lstrip("v")
    assert pin.split("-")[0].split(".")[:2] == chart_toolkit.split(".")[:2], (pin, chart_toolkit)


def test_standin_repository_offers_an_older_the_pinned_and_a_newer_toolkit():
    """The stand-in repository's versions (one file) bracket the role's default pin, so the tests
    that install from it can see a pin that does not hold."""
    path = os.path.join(ROOT, "molecule", "nvidia_container_toolkit", "files", "standin-versions.env")
    with open(path) as handle:
        found = dict(line.strip().split("=", 1) for line in handle if line.strip() and not line.startswith("#"))
    pin = load("defaults/main.yml")["nvidia_container_toolkit_version"]
    assert found["TOOLKIT_PINNED"] == pin
    assert _version_key(found["TOOLKIT_OLDER"]) < _version_key(pin) < _version_key(found["TOOLKIT_NEWER"])
