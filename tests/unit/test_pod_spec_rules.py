"""The API server's cross-field pod spec rules (module_utils/model/pod_spec_rules.py), and render_manifests
refusing an object that breaks one before anything is written (issue 30: the MPS control daemon had
hostPID and shareProcessNamespace, which the API server refuses, and failed halfway through an apply)."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import device_plugin_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.pod_spec_rules import (
    object_problems, pod_spec, pod_spec_problems)
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from ansible_collections.gpufleet.k8s.plugins.modules import render_manifests
from ansible_collections.gpufleet.k8s.plugins.plugin_utils.controller_module import run_in_process

C = {"name": "c", "image": "i"}


@pytest.mark.parametrize("spec,problems", [
    ({"containers": [C]}, []),
    ({"hostPID": True, "containers": [C]}, []),
    ({"shareProcessNamespace": True, "containers": [C]}, []),
    ({"hostPID": False, "shareProcessNamespace": True, "containers": [C]}, []),
    ({"hostPID": True, "shareProcessNamespace": True, "containers": [C]},
     ["ShareProcessNamespace and HostPID cannot both be enabled"]),
    ({"initContainers": [C], "containers": [C]}, ["container name c is used twice"]),
    ({"containers": [dict(C, volumeMounts=[{"name": "v", "mountPath": "/v"}])], "volumes": [{"name": "v"}]}, []),
    ({"containers": [dict(C, volumeMounts=[{"name": "w", "mountPath": "/w"}])], "volumes": [{"name": "v"}]},
     ["container c mounts volume w, which the pod does not have"]),
    ({"containers": [C], "volumes": [{"name": "v"}, {"name": "v"}]}, ["volume name v is used twice"]),
    (None, []),
])
def test_pod_spec_problems(spec, problems):
    assert pod_spec_problems(spec) == problems


BAD = {"hostPID": True, "shareProcessNamespace": True, "containers": [C]}


@pytest.mark.parametrize("obj,found", [
    ({"kind": "Pod", "spec": BAD}, True),
    ({"kind": "DaemonSet", "spec": {"template": {"spec": BAD}}}, True),
    ({"kind": "Job", "spec": {"template": {"spec": BAD}}}, True),
    ({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": BAD}}}}}, True),
    ({"kind": "ConfigMap", "data": {"spec": "x"}}, False),
    ({"kind": "Namespace"}, False),
])
def test_pod_spec_is_found_in_pods_and_pod_templates(obj, found):
    assert (pod_spec(obj) is BAD) is found


def test_object_problems_name_the_object():
    objs = [{"kind": "DaemonSet", "metadata": {"name": "d", "namespace": "ns"}, "spec": {"template": {"spec": BAD}}},
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [C]}}]
    assert object_problems(objs) == ["DaemonSet ns/d: ShareProcessNamespace and HostPID cannot both be enabled"]


def test_the_mps_control_daemon_breaks_no_rule():
    pools = normalize_pools([{"name": "mps", "gpu_type": "t4", "sharing": {"mode": "mps", "replicas": 3}}])
    objs = device_plugin_objects({"platform": "kubeadm", "addons_mode": "standalone", "pools": pools}, {})
    assert any(o["metadata"]["name"] == "nvidia-device-plugin-mps-control-daemon" for o in objs)
    assert object_problems(objs) == []


def test_render_manifests_refuses_such_an_object_and_writes_nothing(tmp_path):
    dest = tmp_path / "out"
    objs = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "first"}},
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "namespace": "ns"},
             "spec": {"template": {"spec": BAD}}}]
    result = run_in_process(render_manifests, {"dest": str(dest), "objects": objs})
    assert result.get("failed") and result["msg"] == (
        "render into %s refused, the API server would not accept: DaemonSet ns/d: ShareProcessNamespace and HostPID "
        "cannot both be enabled" % dest)
    assert not dest.exists()
