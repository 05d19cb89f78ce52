"""Golden files: everything the add-on roles render for each platform preset, compared byte for byte.

Regenerate after an intended change with ``GPUFLEET_UPDATE_GOLDEN=1 pytest tests/unit/test_addons_golden.py``
and review the diff by eye before committing.
"""
import os

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_exporter import dcgm_exporter_objects, scrape_job
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import device_plugin_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.gpu_operator import (
    cluster_policy_objects, operator_objects, values_file)
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import dump_yaml
from golden_pools import GOLDEN, pools_for
from k8s_schema import assert_valid

PRESETS = ("eks", "gke", "gke-autopilot", "kubeadm", "k3s", "rke2", "openshift")
CORE = ("v1", "apps/v1", "node.k8s.io/v1", "rbac.authorization.k8s.io/v1")
SELF_MANAGED_OPERATOR = {"gpu_operator_host_driver": False, "gpu_operator_host_toolkit": False}


def section(title, body):
    return "# ==== %s ====\n%s" % (title, body if body.endswith("\n") else body + "\n")


def objects_text(objs):
    for obj in objs:
        if obj["apiVersion"] in CORE:
            assert_valid(obj)
    return "".join("---\n" + dump_yaml(o) for o in objs) or "# (no objects)\n"


def render(preset):
    out = []
    for mode in ("standalone", "operator"):
        params = {"platform": preset, "cluster_name": "golden", "addons_mode": mode, "pools": pools_for(preset, mode),
                  "apply": False, "extra": {}}
        errors, _warnings, plan = run_preflight(params)
        if errors:
            out.append(section("%s: refused in preflight" % mode, "\n".join("# " + e for e in errors)))
            continue
        if mode == "standalone":
            dp = device_plugin_objects(plan, {}) if plan["platform"] not in ("gke", "gke-autopilot") else []
            out.append(section("standalone: cluster/device-plugin", objects_text(dp)))
            out.append(section("standalone: cluster/dcgm-exporter", objects_text(dcgm_exporter_objects(plan, {}))))
            out.append(section("standalone: cluster/dcgm-exporter/prometheus-scrape-job.yaml", scrape_job(plan, {})))
        else:
            # Self-managed presets: show the operator managing driver and toolkit (toolkit.env paths).
            extra = SELF_MANAGED_OPERATOR if preset in ("kubeadm", "k3s", "rke2") else {}
            title = "operator%s" % (" (%s)" % ", ".join("%s=%s" % kv for kv in sorted(extra.items())) if extra else "")
            out.append(section(title + ": cluster/gpu-operator", objects_text(operator_objects(plan, extra))))
            out.append(section(title + ": cluster/gpu-operator/gpu-operator-values.yaml", values_file(plan, extra)))
            policy = cluster_policy_objects(plan, extra)
            if policy:
                out.append(section("operator: cluster/gpu-operator-policy", objects_text(policy)))
    return "".join(out)


@pytest.mark.parametrize("preset", PRESETS)
def test_golden(preset):
    path = os.path.join(GOLDEN, preset + ".yaml")
    text = render(preset)
    assert "&id0" not in text and "*id0" not in text, "YAML anchors in the render (shared sub-objects)"
    if os.environ.get("GPUFLEET_UPDATE_GOLDEN") == "1":
        with open(path, "w") as handle:
            handle.write(text)
    with open(path) as handle:
        assert handle.read() == text, "golden file %s differs; regenerate with GPUFLEET_UPDATE_GOLDEN=1 and review" % path


def test_render_is_deterministic():
    assert render("kubeadm") == render("kubeadm")
