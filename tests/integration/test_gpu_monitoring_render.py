"""The cluster stage renders the GPU dashboard and alerts like the other add-ons (real
ansible-playbook, render mode): ConfigMap and PrometheusRule schema-valid, the rules file passes
the real promtool, a re-run changes nothing, switching it off removes the render."""
import os
import shutil
import subprocess

import yaml

from k8s_schema import assert_valid
from prom_schema import assert_valid_prometheus
from ansible_run import recap, run_site


def test_dashboard_and_rules_render_apply_ready(tmp_path):
    build = tmp_path / "example"
    rc, out = run_site(build, "-e", "gpu_monitoring_prometheus_rule=true", "-e", '{"gpu_monitoring_rule_labels": {"release": "kps"}}',
                       playbook="playbooks/cluster.yml")
    assert rc == 0, out[-3000:]
    folder = build / "cluster" / "gpu-monitoring"
    names = sorted(os.listdir(folder))
    assert names == ["00-namespace-gpufleet-monitoring.yaml", "01-configmap-gpufleet-gpu-dashboard.yaml",
                     "02-prometheusrule-gpufleet-gpu-alerts.yaml", "prometheus-rules.yml"]
    for name in names[:2]:
        assert_valid(yaml.safe_load((folder / name).read_text()))
    rule = yaml.safe_load((folder / names[2]).read_text())
    assert_valid_prometheus([rule])
    assert rule["metadata"]["labels"]["release"] == "kps"
    proc = subprocess.run([shutil.which("promtool") or "promtool", "check", "rules", str(folder / names[3])],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert yaml.safe_load((folder / names[3]).read_text())["groups"] == rule["spec"]["groups"]

    rc, out = run_site(build, "-e", "gpu_monitoring_prometheus_rule=true", "-e", '{"gpu_monitoring_rule_labels": {"release": "kps"}}',
                       playbook="playbooks/cluster.yml")
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]

    rc, out = run_site(build, "-e", "gpu_monitoring_enabled=false", playbook="playbooks/cluster.yml")
    assert rc == 0, out[-3000:]
    assert not folder.exists() or os.listdir(folder) == []


def test_bad_input_is_refused_naming_the_variable(tmp_path):
    rc, out = run_site(tmp_path / "b", "-e", "gpu_monitoring_enabled=sometimes", playbook="playbooks/cluster.yml")
    assert rc != 0
    assert "gpu_monitoring_enabled: 'sometimes'; use one of: auto, true, false" in out
