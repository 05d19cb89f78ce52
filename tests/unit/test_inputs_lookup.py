"""The gpufleet.k8s.inputs lookup: the one sweep of set inputs (prefixes from the argument specs),
through real ansible runs, and its documentation through the real ansible-doc."""
import json

import pytest

from ansible_collections.gpufleet.k8s.plugins.lookup.inputs import select
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import role_specs
from ansible_run import CHECKOUT_PATHS, ansible, ansible_env

ENV = ansible_env(ANSIBLE_COLLECTIONS_PATH=CHECKOUT_PATHS["ANSIBLE_COLLECTIONS_PATH"], ANSIBLE_LOCALHOST_WARNING="0",
                  ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_CALLBACK_RESULT_FORMAT="json")


def lookup(expression, **extra):
    """The value of ``expression`` in a real ansible run on localhost, with ``extra`` as extra vars."""
    proc = ansible("ansible", "localhost", "-i", "localhost,", "-c", "local", "-m", "ansible.builtin.debug",
                   "-a", "var=__probe", "-e", json.dumps(dict(extra, __probe=expression)), env=ENV, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.split("=>", 1)[1])["__probe"]


def test_the_prefixes_are_the_input_roles_from_the_specs():
    prefixes = role_specs.prefixes()
    assert "gpufleet_" in prefixes and "nvidia_driver_" in prefixes and "gpu_pools_" in prefixes
    assert "gpufleet_survey_" not in prefixes          # survey answers are not inventory inputs
    assert all(p[:-1] in role_specs.roles() for p in prefixes)


@pytest.mark.parametrize("roles,expected", [
    (None, ["dcgm_exporter_x", "gpu_pools_region", "gpufleet_apply"]),
    (["gpu_pools"], ["gpu_pools_region"]),
    (["gpufleet", "dcgm_exporter"], ["dcgm_exporter_x", "gpufleet_apply"]),
])
def test_select_keeps_only_the_given_roles_inputs(roles, expected):
    names = ["gpufleet_apply", "gpu_pools_region", "dcgm_exporter_x", "other", "__gpu_pools_internal",
             "ansible_host", "gpufleetish"]
    assert select(names, roles) == expected


def test_the_lookup_collects_set_inputs_of_the_given_roles():
    out = lookup("{{ lookup('gpufleet.k8s.inputs', 'gpu_pools', 'dcgm_exporter') }}",
                 gpu_pools_region="eu-west-1", dcgm_exporter_scrape_interval="30s", nvidia_driver_version="580",
                 unrelated="x")
    assert out == {"gpu_pools_region": "eu-west-1", "dcgm_exporter_scrape_interval": "30s"}


def test_values_are_templated():
    out = lookup("{{ lookup('gpufleet.k8s.inputs', 'gpu_pools') }}", gpu_pools_region="{{ zone_base }}-1",
                 zone_base="us-east")
    assert out == {"gpu_pools_region": "us-east-1"}


def test_no_terms_sweeps_every_input_role():
    out = lookup("{{ lookup('gpufleet.k8s.inputs') }}", gpu_node_prep_epel=False, gitops_enabled=True,
                 dcgm_exporterx=True, k8s_applied=1)
    assert out == {"gpu_node_prep_epel": False, "gitops_enabled": True}


def test_defaults_fill_in_the_unset_options_from_the_spec():
    out = lookup("{{ lookup('gpufleet.k8s.inputs', 'gpu_validate', defaults=true) }}", gpu_validate_metrics=False)
    assert out == dict(role_specs.defaults("gpu_validate"), gpu_validate_metrics=False)
    assert len(out) > 1


def test_an_unknown_role_is_refused_with_the_known_ones():
    proc = ansible("ansible", "localhost", "-i", "localhost,", "-c", "local", "-m", "ansible.builtin.debug",
                   "-a", "msg={{ lookup('gpufleet.k8s.inputs', 'gpu_poolz') }}", env=ENV, timeout=120)
    assert proc.returncode != 0
    assert "unknown role(s) gpu_poolz" in proc.stdout + proc.stderr and "gpu_pools" in proc.stdout + proc.stderr


def test_ansible_doc_renders_the_lookup():
    proc = ansible("ansible-doc", "-t", "lookup", "gpufleet.k8s.inputs", env=ENV, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "defaults" in proc.stdout and "RETURN" in proc.stdout.upper()


def test_templates_deep_inside_a_value_are_rendered_and_template_free_values_copied():
    """The lookup copies values without a "{" instead of templating them; a template anywhere inside a
    value (a label of the second pool) still sends that value through the templar."""
    pools = [{"name": "a", "labels": {"team": "t1"}}, {"name": "b", "labels": {"team": "{{ zone_base }}-t2"}}]
    out = lookup("{{ lookup('gpufleet.k8s.inputs', 'gpufleet') }}", gpufleet_gpu_pools=pools,
                 gpufleet_cluster_name="c1", gpufleet_apply=False, zone_base="us-east")
    assert out == {"gpufleet_gpu_pools": [{"name": "a", "labels": {"team": "t1"}},
                                          {"name": "b", "labels": {"team": "us-east-t2"}}],
                   "gpufleet_cluster_name": "c1", "gpufleet_apply": False}


def test_secret_inputs_are_never_collected():
    """The inputs dictionary reaches module arguments (preflight's extra, the mirror manifest's values) and
    facts, printed at -vvv: the no_log options of the specs stay out of it (issue 30, item 3)."""
    assert {"gpufleet_k8s_api_key", "fleet_report_prometheus_password", "fleet_report_prometheus_bearer_token",
            "gpu_remediation_prometheus_password", "gpu_remediation_prometheus_bearer_token"} <= set(
        role_specs.secret_inputs())
    got = lookup("{{ lookup('gpufleet.k8s.inputs') }}", gpufleet_k8s_api_key="tok-sentinel",
                 gpufleet_k8s_host="https://10.0.0.1:6443", fleet_report_prometheus_password="pw-sentinel")
    assert got.get("gpufleet_k8s_host") == "https://10.0.0.1:6443"
    assert "tok-sentinel" not in json.dumps(got) and "pw-sentinel" not in json.dumps(got)
    with_defaults = lookup("{{ lookup('gpufleet.k8s.inputs', 'gpufleet', 'fleet_report', defaults=true) }}")
    assert "fleet_report_prometheus_url" in with_defaults and "gpufleet_k8s_api_key" not in with_defaults


def test_set_secrets_names_the_secret_inputs_that_are_set_never_a_value():
    """Preflight refuses a Prometheus bearer token together with basic authentication without receiving either:
    ``set_secrets`` lists the no_log inputs that are set to something (templated first), by name only."""
    got = lookup("{{ lookup('gpufleet.k8s.inputs', set_secrets=true) }}", fleet_report_prometheus_password="pw-sentinel",
                 fleet_report_prometheus_bearer_token="", gpu_remediation_prometheus_bearer_token="{{ tok }}",
                 tok="tok-sentinel", gpufleet_k8s_host="https://10.0.0.1:6443")
    assert got == ["fleet_report_prometheus_password", "gpu_remediation_prometheus_bearer_token"]
    assert lookup("{{ lookup('gpufleet.k8s.inputs', 'gpu_remediation', set_secrets=true) }}",
                  fleet_report_prometheus_password="pw-sentinel") == []
