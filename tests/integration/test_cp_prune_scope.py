"""Which ApplySets a run prunes, on a real control plane (tests/helpers/controlplane.py; KWOK stands in for the kubelets):
only components whose role ran. A role that ran and renders a component no more (monitoring off, the device plugin
disabled, an add-on mode that does not manage it) deletes what an earlier run applied of it, after --check listed
it; a component whose role did not run at all (site.yml --tags provision) keeps everything, whatever the inventory
says now. The namespace gpufleet-system, which holds every set's record, is never deleted. With nothing rendered and
no earlier set, the module asks the cluster one thing: the set's parent.
"""
import re

import pytest

from ansible_run import recap, run_site

RECORDS = "gpufleet-system"
GPU_HOSTS = ["a100-node-01.example.internal", "a100-node-02.example.internal", "l4-node-01.example.internal",
             "l4-node-02.example.internal", "l4-node-03.example.internal"]
# every kind the cluster stage's add-ons render (standalone mode, no Prometheus operator CRDs here)
KINDS = ["/api/v1/namespaces", "/api/v1/configmaps", "/api/v1/services", "/api/v1/serviceaccounts",
         "/apis/apps/v1/daemonsets", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
         "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "/apis/rbac.authorization.k8s.io/v1/roles",
         "/apis/rbac.authorization.k8s.io/v1/rolebindings", "/apis/node.k8s.io/v1/runtimeclasses",
         "/apis/scheduling.k8s.io/v1/priorityclasses"]


def tree():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.kube import apply_tree
    return apply_tree


def parent_path(component):
    return "/api/v1/namespaces/%s/secrets/%s" % (RECORDS, tree().parent_name(component))


def members(cp, component):
    """{Kind/namespace/name: uid} of the live members of a component's ApplySet (the uid: a DaemonSet's
    resourceVersion moves with its status as KWOK's pods come and go)."""
    set_id = tree().applyset_id(tree().parent_name(component), RECORDS)
    out = {}
    for path in KINDS:
        for obj in cp.get("%s?labelSelector=%s%%3D%s" % (path, tree().PART_OF, set_id))["items"]:
            meta = obj["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            out["%s/%s%s" % (path.rsplit("/", 1)[1], (meta["namespace"] + "/") if meta.get("namespace") else "",
                             meta["name"])] = meta["uid"]
    return out


def stage(cp, tmp, *extra, playbook="playbooks/cluster.yml"):
    # no ServiceMonitor/PrometheusRule: this cluster serves no Prometheus operator CRDs
    return run_site(tmp / "build", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                    "-e", "dcgm_exporter_service_monitor=false", *extra, playbook=playbook)


@pytest.fixture(scope="module")
def cp(control_plane):
    control_plane.add_nodes(GPU_HOSTS, gpu=4)
    return control_plane


@pytest.fixture()
def applied(cp, tmp_path):
    rc, out = stage(cp, tmp_path)
    assert rc == 0, out[-4000:]
    sets = {c: members(cp, c) for c in ("cluster/device-plugin", "cluster/dcgm-exporter", "cluster/gpu-monitoring")}
    for component, found in sets.items():
        assert found and cp.exists(parent_path(component)), (component, found)
    return sets


def test_monitoring_off_then_plugin_disabled_prune_only_their_sets(cp, tmp_path, applied):
    off = ("-e", "gpu_monitoring_enabled=false")
    rc, out = stage(cp, tmp_path, *off, "--check", "--diff")
    assert rc == 0, out[-4000:]
    listed = sorted(set(re.findall(r"(\w+/[\w./-]+) \(would be deleted\)", out)))
    assert listed and len(listed) == len(applied["cluster/gpu-monitoring"]), (listed, applied["cluster/gpu-monitoring"])
    assert members(cp, "cluster/gpu-monitoring") == applied["cluster/gpu-monitoring"]  # check mode deleted nothing

    rc, out = stage(cp, tmp_path, *off)
    assert rc == 0, out[-4000:]
    assert "deleted what cluster/gpu-monitoring applied by gpufleet earlier" in re.sub(r"\s+", " ", out)
    assert members(cp, "cluster/gpu-monitoring") == {} and not cp.exists(parent_path("cluster/gpu-monitoring"))
    for component in ("cluster/device-plugin", "cluster/dcgm-exporter"):  # not touched
        assert members(cp, component) == applied[component], component
    rc, out = stage(cp, tmp_path, *off)
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]

    rc, out = stage(cp, tmp_path, *off, "-e", "nvidia_device_plugin_enabled=false")
    assert rc == 0, out[-4000:]
    assert members(cp, "cluster/device-plugin") == {} and not cp.exists(parent_path("cluster/device-plugin"))
    assert members(cp, "cluster/dcgm-exporter") == applied["cluster/dcgm-exporter"]
    assert cp.exists("/api/v1/namespaces/%s" % RECORDS)


def test_addons_mode_none_prunes_the_standalone_addons_and_keeps_the_records_namespace(cp, tmp_path, applied):
    rc, out = stage(cp, tmp_path, "-e", "gpufleet_addons_mode=none", "--check")
    assert rc == 0, out[-4000:]
    for component, found in applied.items():
        assert members(cp, component) == found, component  # check mode deleted nothing
    rc, out = stage(cp, tmp_path, "-e", "gpufleet_addons_mode=none")
    assert rc == 0, out[-4000:]
    # the plugin and the exporter (their roles do not run in this mode, the stage prunes them), and the
    # monitoring (gpu_monitoring_enabled auto: nothing without the exporter; its role ran)
    for component in ("cluster/device-plugin", "cluster/dcgm-exporter", "cluster/gpu-monitoring"):
        assert members(cp, component) == {} and not cp.exists(parent_path(component)), component
    ns = cp.get("/api/v1/namespaces/%s" % RECORDS)  # every set is gone; the namespace of the records stays
    assert not ns["metadata"].get("deletionTimestamp")
    rc, out = stage(cp, tmp_path, "-e", "gpufleet_addons_mode=none")
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]


def test_a_stage_that_did_not_run_prunes_nothing(cp, tmp_path, applied):
    # the cluster stage's inputs say "remove", but only the provision stage runs (tags): nothing of it is touched
    rc, out = stage(cp, tmp_path, "-e", "gpu_monitoring_enabled=false", "-e", "nvidia_device_plugin_enabled=false",
                    "-e", "gpufleet_addons_mode=none", "--tags", "provision", playbook="site.yml")
    assert rc == 0, out[-4000:]
    assert "Delete what an earlier run applied" not in out
    for component, found in applied.items():
        assert members(cp, component) == found, component
        assert cp.exists(parent_path(component)), component


def test_nothing_rendered_and_no_earlier_set_reads_only_the_parent(cp):
    kubernetes = pytest.importorskip("kubernetes")
    from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.api_server import Server
    from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.apply_run import run_tree

    class Recording(Server):
        def __init__(self, client):
            super(Recording, self).__init__(client)
            self.calls = []

        def request(self, method, path, body=None, query=None, content_type="application/json"):
            self.calls.append((method, path))
            return super(Recording, self).request(method, path, body, query, content_type)

    server = Recording(kubernetes.config.new_client_from_config(config_file=cp.kubeconfig))
    for check_mode in (True, False):
        server.calls = []
        out = run_tree(server, "cluster/never-applied", [], check_mode=check_mode)
        assert not out.get("failed") and not out["changed"] and out["pruned"] == [], out
        assert server.calls == [("GET", parent_path("cluster/never-applied"))], server.calls
