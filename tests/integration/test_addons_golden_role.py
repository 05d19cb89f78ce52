"""The golden files through the roles: ansible-playbook renders the add-ons for the golden pools on
a kubeadm inventory, and what the roles write must equal tests/golden/addons/kubeadm.yaml's
standalone sections (the unit test builds those sections from module_utils directly)."""
import json
import os
import re

import yaml

from ansible_run import run_site
from golden_pools import GOLDEN, pools_for

SECTIONS = ("standalone: cluster/device-plugin", "standalone: cluster/dcgm-exporter")


def golden_sections(preset):
    with open(os.path.join(GOLDEN, preset + ".yaml")) as handle:
        parts = re.split(r"^# ==== (.*) ====\n", handle.read(), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def rendered_objects(build, component):
    folder = os.path.join(build, "cluster", component)
    out = []
    for name in sorted(os.listdir(folder)):
        if re.match(r"[0-9]{2}-.*\.yaml$", name):
            with open(os.path.join(folder, name)) as handle:
                out += [d for d in yaml.safe_load_all(handle) if d]
    return out


def test_role_render_equals_the_golden_file(tmp_path):
    pools = pools_for("kubeadm", "standalone")
    groups = {}
    for pool in pools:
        pool["node_group"] = "gpu_pool_" + pool["name"].replace("-", "_")
        groups[pool["node_group"]] = {"hosts": {pool["name"] + "-node-01.example.internal": None}}
    inv = tmp_path / "golden"
    (inv / "group_vars" / "all").mkdir(parents=True)
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {
        "gpufleet_controller": {"hosts": {"localhost": {"ansible_connection": "local",
                                                        "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}},
        "gpu_nodes": {"children": groups}}}}))
    (inv / "group_vars" / "all" / "gpufleet.yml").write_text(yaml.safe_dump({
        "gpufleet_platform": "kubeadm", "gpufleet_cluster_name": "golden", "gpufleet_apply": False,
        "gpufleet_addons_mode": "standalone", "gpufleet_gpu_pools": pools}))
    (tmp_path / "build").mkdir()
    build = tmp_path / "build" / "golden"
    rc, out = run_site(build, "-e", json.dumps({"gpu_monitoring_enabled": False}),
                       playbook="playbooks/cluster.yml", inventory=str(inv))
    assert rc == 0, out[-3000:]
    golden = golden_sections("kubeadm")
    for section in SECTIONS:
        expected = [d for d in yaml.safe_load_all(golden[section]) if d]
        assert expected, section
        assert rendered_objects(build, section.split("/")[-1]) == expected, section
    with open(os.path.join(build, "cluster", "dcgm-exporter", "prometheus-scrape-job.yaml")) as handle:
        assert handle.read() == golden["standalone: cluster/dcgm-exporter/prometheus-scrape-job.yaml"]
