"""Line breaks and control characters in inputs (issue 30 item 2): a property over every string input
of every role, a hostile-input table through preflight, and the two safe paths into a rendered file
(the comment writer and the YAML dumper).

The property: a value holding any line-breaking character, in any string input (a plain value, a
list item, a mapping key or value, at any depth), either is refused by preflight naming the
variable, or (only where multi-line text is allowed) cannot change the number or kinds of the
documents rendered from it.
"""
import copy

import pytest
import yaml

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.k8s.plugins.filter.pools import gpu_pools_nap_yaml
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import dcgm_exporter, gpu_monitoring, gpu_operator
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import input_text, role_specs
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import check_header, comment, comments, dump_yaml

# What YAML 1.1 readers (PyYAML, go-yaml) or Python's splitlines take for the end of a line.
LINE_BREAKS = ["\n", "\r", "\r\n", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
# The payload of the injection the review found: a second document granting cluster-admin.
PAYLOAD = ("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: pwn}\n"
           "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n"
           "subjects: [{kind: User, name: eve}]\n")
POOLS = [{"name": "p", "gpu_type": "l4", "node_group": "g", "sharing": {"mode": "time-slicing", "replicas": 2}}]
TOP_LEVEL = dict((var, key) for key, var in input_text.TOP_LEVEL)


def params(addons_mode="standalone", **extra):
    out = dict(platform="kubeadm", cluster_name="c1", addons_mode=addons_mode, pools=copy.deepcopy(POOLS),
               apply=False, extra=extra)
    for var, value in extra.items():
        if var in TOP_LEVEL:
            out[TOP_LEVEL[var]] = value
    return out


def errors_for(var, value):
    return run_preflight(params(**{var: value}))[0]


def string_inputs():
    """(variable, type, elements) of every option of every input role that can hold a string."""
    out = []
    for role in role_specs.input_roles():
        for var, option in sorted(role_specs.options(role).items()):
            if option.get("type", "str") in ("str", "path", "raw", "list", "dict"):
                out.append((var, option.get("type", "str"), option.get("elements")))
    return out


INPUTS = string_inputs()


def shapes(var, kind, elements, text):
    """The places a string can take in the input ``var``: the value itself, a list item, a mapping
    key and a mapping value (nested), as the option's type allows."""
    if kind in ("str", "path", "raw"):
        yield "value", text
    if kind in ("list", "raw"):
        yield "list item", [text] if elements != "dict" else [{"name": text}]
    if kind in ("dict", "raw"):
        yield "mapping value", {"a": {"b": text}}
        yield "mapping key", {text: "x"}
    if kind == "list" and elements == "dict":
        yield "key in a list item", [{text: "x"}]


def test_every_input_role_option_is_in_the_property():
    """The sweep reads the roles' argument specs: a new input is covered without editing this test."""
    assert len(INPUTS) > 100
    assert {"gitops_repo_url", "gitops_path", "gitops_flux_source", "gpufleet_cluster_name",
            "gpu_operator_values_overrides", "nvidia_driver_module_params"} <= {v for v, _k, _e in INPUTS}


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(min_value=0, max_value=len(INPUTS) - 1), brk=st.sampled_from(LINE_BREAKS),
       before=st.text(max_size=12), after=st.sampled_from(["", "x", PAYLOAD, "# c\nkind: Namespace"]),
       shape=st.integers(min_value=0, max_value=4))
def test_a_line_break_in_any_string_input_is_refused_naming_the_variable(which, brk, before, after, shape):
    var, kind, elements = INPUTS[which]
    options = list(shapes(var, kind, elements, before + brk + after))
    where, value = options[shape % len(options)]
    if (var in input_text.MULTI_LINE_VALUES or var.startswith(input_text.MULTI_LINE_PREFIXES)) \
            and where not in ("mapping key", "key in a list item") \
            and set(brk) <= set(input_text.MULTI_LINE):
        return  # multi-line text allowed here: test_multi_line_values_cannot_add_documents
    found = errors_for(var, value)
    assert any(e.startswith(var) for e in found), (var, where, value, found)


@pytest.mark.parametrize("var, value, expected", [
    # the review's two injections
    ("gitops_repo_url", "https://git.example/fleet.git\n" + PAYLOAD, "gitops_repo_url: holds U+000A (line feed) at character 30"),
    ("gitops_path", "build/x/gitops\n---\nkind: Namespace", "gitops_path: holds U+000A (line feed)"),
    ("gitops_flux_namespace", "flux-system\u2028kind: Namespace", "gitops_flux_namespace: holds U+2028 (line separator)"),
    ("gitops_flux_source", "gpufleet\x85x", "gitops_flux_source: holds U+0085 (next line)"),
    ("gitops_revision", "main\r" + PAYLOAD, "gitops_revision: holds U+000D (carriage return)"),
    ("gitops_argocd_project", "default\u2029", "gitops_argocd_project: holds U+2029 (paragraph separator)"),
    ("gitops_argocd_namespace", "argocd\n", "gitops_argocd_namespace: holds U+000A"),
    # a trailing line feed passes a regular expression ending in $; it is still refused
    ("gpufleet_cluster_name", "c1\n", "gpufleet_cluster_name: holds U+000A"),
    ("gpu_operator_chart_repo_url", "https://helm.ngc.nvidia.com/nvidia\n# x", "gpu_operator_chart_repo_url: holds U+000A"),
    ("gpu_operator_chart_version", "v25.10.1\nkind: X", "gpu_operator_chart_version: holds U+000A"),
    ("nvidia_driver_module_params", {"NVreg_X": "1\ninstall nvidia /bin/sh"}, "nvidia_driver_module_params.NVreg_X: holds U+000A"),
    ("nvidia_driver_debian_mirror", "https://deb.example/debian\nURIs: http://evil", "nvidia_driver_debian_mirror: holds U+000A"),
    ("gpufleet_gpu_pools", [dict(POOLS[0], labels={"team": "a\nb"})], "gpufleet_gpu_pools[0].labels.team: holds U+000A"),
    ("gpufleet_gpu_pools", [dict(POOLS[0], zones=["z\u2028"])], "gpufleet_gpu_pools[0].zones[0]: holds U+2028"),
    ("gpu_monitoring_rule_labels", {"a\nb": "x"}, "gpu_monitoring_rule_labels: key 'a\\nb' holds U+000A"),
    ("gpu_operator_values_overrides", {"x\ny": 1}, "gpu_operator_values_overrides: key 'x\\ny' holds U+000A"),
    ("gpu_operator_values_overrides", {"a": "x\u2028y"}, "gpu_operator_values_overrides.a: holds U+2028"),
    # other control and format characters
    ("gpu_pools_region", "eu-west-1\x00", "gpu_pools_region: holds U+0000 (NUL)"),
    ("gpu_pools_region", "eu\x1b[2Jwest", "gpu_pools_region: holds U+001B (escape)"),
    ("gpu_pools_region", "eu\u202ewest", "gpu_pools_region: holds U+202E (right-to-left override)"),
    ("gpu_pools_region", "\ufeffeu", "gpu_pools_region: holds U+FEFF (byte order mark) at character 1"),
    ("gpu_pools_region", "eu\twest", "gpu_pools_region: holds U+0009 (tab)"),
    ("nvidia_container_toolkit_repo_key_content", "-----BEGIN PGP\x00", "nvidia_container_toolkit_repo_key_content: holds U+0000"),
])
def test_hostile_inputs_are_refused_naming_the_variable(var, value, expected):
    found = errors_for(var, value)
    assert any(e.startswith(expected) for e in found), found


def test_messages_never_repeat_the_value():
    secret = "sk-0123456789abcdef"
    found = errors_for("gpufleet_k8s_api_key", secret + "\nx")
    assert found and not any(secret in e for e in found), found


@pytest.mark.parametrize("var, value", [
    ("gitops_repo_url", "https://git.example/fleet.git"),
    ("gpu_operator_values_overrides", {"devicePlugin": {"config": {"data": {"extra": "version: v1\nflags: {}\n"}}}}),
    ("nvidia_container_toolkit_repo_key_content", "-----BEGIN PGP PUBLIC KEY BLOCK-----\r\n\r\nmQINBF\n-----END\n"),
    ("gpu_pools_region", "eu-west-1 ünïcode ok"),
    # an AWX textarea answer: YAML, parsed by roles/gpufleet_survey into gpufleet_gpu_pools (checked as such)
    ("gpufleet_survey_gpu_pools", "- name: solo\n  gpu_type: l4\n"),
])
def test_one_line_text_and_the_allowed_multi_line_values_pass(var, value):
    assert errors_for(var, value) == []


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=20)
       | st.builds(lambda a, b, c: a + b + c, st.text(max_size=8), st.sampled_from(LINE_BREAKS), st.text(max_size=8)))
def test_multi_line_values_cannot_add_documents(text):
    """Where line breaks are allowed (string values of gpu_operator_values_overrides), the value
    either is refused or reaches the values file as data: one document, the same keys, the same text."""
    overrides = {"dcgmExporter": {"env": [{"name": "X", "value": text + PAYLOAD}]}}
    extra = {"gpu_operator_values_overrides": overrides}
    found, _warnings, plan = run_preflight(params("operator", **extra))
    if found:
        assert any(e.startswith("gpu_operator_values_overrides") for e in found), found
        return
    baseline = list(yaml.safe_load_all(gpu_operator.values_file(plan, {})))
    rendered = list(yaml.safe_load_all(gpu_operator.values_file(plan, extra)))
    assert len(rendered) == len(baseline) == 1
    assert sorted(rendered[0]) == sorted(baseline[0])
    assert rendered[0]["dcgmExporter"]["env"][-1]["value"] == text + PAYLOAD


# -- the safe paths: comment writer and YAML dumper ----------------------------------------------------

@settings(max_examples=500, deadline=None)
@given(text=st.text(max_size=40) | st.builds(lambda a, b, c: a + b + c, st.text(max_size=10),
                                              st.sampled_from(LINE_BREAKS), st.sampled_from(["", PAYLOAD])))
def test_a_comment_is_one_comment_line_or_refused(text):
    try:
        line = comment(text)
    except GpufleetError as exc:
        assert "holds U+" in exc.msg
        return
    assert line.startswith("#") and line.endswith("\n") and len(line.splitlines()) == 1
    assert list(yaml.safe_load_all(line + "a: 1\n")) == [{"a": 1}]


@pytest.mark.parametrize("text", ["x\n" + PAYLOAD, "x\r---", "x\x85kind: A", "x\u2028y", "x\u2029y", "a\x0bb", "\x1c"])
def test_comment_refuses_every_line_break(text):
    with pytest.raises(GpufleetError) as err:
        comment(text)
    assert "holds U+" in err.value.msg and PAYLOAD not in err.value.msg


def test_comments_keep_the_old_layout():
    assert comments("a", "", "  indented") == "# a\n#\n#   indented\n"


@settings(max_examples=500, deadline=None)
@given(value=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40)
       | st.builds(lambda a, b: a + b, st.text(max_size=10), st.sampled_from([PAYLOAD, "\x85---\n", "\u2028---\n"])))
def test_the_dumper_carries_any_string_as_data(value):
    """Every value in a rendered object goes through dump_yaml: whatever the string, one document
    comes back with the same value."""
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": value}}
    docs = list(yaml.safe_load_all(dump_yaml(obj)))
    assert docs == [obj]


@pytest.mark.parametrize("header, ok", [
    ("", True),
    ("# Rendered by gpufleet for cluster c1; do not edit by hand.\n", True),
    ("# a\n# b\n", True),
    ("# a", False),
    ("# a\n---\nkind: X\n", False),
    ("# a\r# b\n", False),
    ("# a\u2028kind: X\n", False),
    ("# a\n\n", False),
    ("kind: X\n", False),
])
def test_render_headers_are_comment_lines_only(header, ok):
    if ok:
        assert check_header(header) == header
    else:
        with pytest.raises(GpufleetError):
            check_header(header)


# Files whose header comment carries an input (the cluster name, the chart source).
RENDERERS = {
    "GPU Operator values file": lambda plan: gpu_operator.values_file(plan, {}),
    "GKE scrape job": lambda plan: dcgm_exporter.scrape_job(dict(plan, platform="gke"), {}),
    "alert rules file": lambda plan: gpu_monitoring.rules_file(plan, {}),
    "GKE node auto-provisioning file": lambda plan: gpu_pools_nap_yaml(dict(plan, platform="gke"), {}),
}


@pytest.mark.parametrize("renderer", sorted(RENDERERS))
def test_every_file_with_a_comment_header_writes_it_through_the_comment_writer(renderer):
    """The cluster name is checked in preflight; a renderer called with a name that slipped past (or
    a future input) still cannot turn its header into YAML."""
    _errors, _warnings, plan = run_preflight(params())
    text = RENDERERS[renderer](plan)
    assert text.startswith("#") and len(list(yaml.safe_load_all(text))) == 1
    with pytest.raises(GpufleetError) as err:
        RENDERERS[renderer](dict(plan, cluster_name="c1\n" + PAYLOAD))
    assert "holds U+000A" in err.value.msg
