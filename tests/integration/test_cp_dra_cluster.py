"""The cluster stage (playbooks/cluster.yml, apply mode) with a DRA pool beside a device-plugin pool, on the real
control plane (tests/helpers/controlplane.py) with the real helm and NVIDIA's real chart (../shared/charts,
tests/helpers/dra_chart.py: packaged as the 0.5.0 release is stamped; the module skips, naming that folder, where it
is absent).

tests/helpers/dra_standin.py, a labelled STAND-IN, publishes the ResourceSlice the kubelet plugin would (no GPU, no
kubelet here). The scheduler, the DaemonSet and Deployment controllers, the API server (with the chart's
ValidatingAdmissionPolicy) and the chart are real: the kubelet plugin lands on the DRA pool's node only, the device
plugin on the other pool's node only, the driver's controller on the plain node, the claim templates are applied in
the pool's dra.claim_namespaces, and a pod placed with the rendered fragment gets its GPUs allocated.

The cluster starts as one that ran gpufleet's previous pin, v25.12.0 (chart name nvidia-dra-driver-gpu). That chart
is not in ../shared/charts, so the previous release is a LABELLED STAND-IN built here from the real chart: its files
with the old name and version (25.12.0) and v25.12.0's real ComputeDomain CRD (which requires numNodes). v25.12.0's
_helpers.tpl names objects and selector labels exactly as 0.5.0's does (compared at the upstream tag), so the
DaemonSet it creates is the one the real v25.12.0 would. gpufleet's run must bring the CRDs to the pinned chart's
schema before the upgrade (Helm never updates CRDs) and upgrade the release in place (nameOverride: the same
DaemonSet, not a second one under the new chart's name).
"""
import json
import os
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.placement import placement
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.selfmanaged import pool_node_labels, pool_taints
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pool
from controlplane import binary
from cp_nodes import cluster_inventory
from dra_chart import chart_dir_or_skip, package
from dra_standin import slice_for
from ansible_run import ROOT, recap, run_site

OLD_CRD = os.path.join(ROOT, "tests", "fixtures", "dra-driver", "v25.12.0", "resource.nvidia.com_computedomains.yaml")
NS = "nvidia-dra-driver-gpu"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
POOLS = [{"name": "train-h100", "gpu_type": "h100-80gb", "gpus_per_node": 2, "allocation": "dra",
          "node_group": "gpu_pool_train_h100", "min_nodes": 1,
          "dra": {"claim_namespaces": ["ml"], "compute_domain": {"num_nodes": 1}}},
         {"name": "infer-l4", "gpu_type": "l4", "gpus_per_node": 1, "node_group": "gpu_pool_infer_l4", "min_nodes": 1}]
NODES = {"h100-01": "train-h100", "l4-01": "infer-l4"}


@pytest.fixture(scope="module")
def applied(control_plane, tmp_path_factory):
    cp = control_plane
    tmp = tmp_path_factory.mktemp("dra-cluster")
    inv = tmp / "inv"
    cluster_inventory(inv, {
        "gpufleet_platform": "kubeadm", "gpufleet_cluster_name": "t", "gpufleet_addons_mode": "standalone",
        "gpufleet_kubernetes_version": "1.37", "gpufleet_gpu_pools": POOLS,
        "nvidia_dra_driver_compute_domains_enabled": True},
        {"gpu_pool_" + pool.replace("-", "_"): {node: {}} for node, pool in NODES.items()})
    for node, pool in NODES.items():
        p = normalize_pool(next(x for x in POOLS if x["name"] == pool))
        # as the provision stage labels and taints them; the device plugin advertises the L4 only
        cp.add_node(node, gpu=1 if pool == "infer-l4" else None, labels=pool_node_labels(p),
                    taints=[dict(t) for t in pool_taints(p)])
    cp.add_node("cpu-01")  # a plain node, untainted: where the driver's controller Deployment runs
    cp.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    old_uid = _install_previous_release(cp, tmp)
    chart = package(pytest, tmp / "charts")
    extra = ["-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
             "-e", "gpufleet_helm_binary=%s" % binary("helm", "helm"), "-e", "nvidia_dra_driver_chart_path=%s" % chart]
    runs = [run_site(tmp / "build", *extra, playbook="playbooks/cluster.yml", inventory=str(inv)) for _ in range(2)]
    runs.append(run_site(tmp / "build", *(extra + ["--check", "--diff"]), playbook="playbooks/cluster.yml",
                         inventory=str(inv)))
    return cp, tmp, runs, old_uid


def _helm(cp, *args):
    return subprocess.run([binary("helm", "helm"), "--kubeconfig", cp.kubeconfig] + list(args), check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True).stdout


def _install_previous_release(cp, tmp):
    """gpufleet's previous install (a labelled stand-in of v25.12.0, see the module's text): the real chart's files as
    the old name and version, with v25.12.0's CRD, installed by helm (which creates the CRDs of crds/ on this first
    install) with the values gpufleet gave v25.12.0. Returns the kubelet plugin DaemonSet's uid."""
    old = tmp / "old-chart"
    shutil.copytree(chart_dir_or_skip(pytest), str(old))
    for path, _dirs, files in os.walk(str(old)):  # the shared copy is read-only
        for name in files + [""]:
            os.chmod(os.path.join(path, name), 0o755 if not name else 0o644)
    chart = yaml.safe_load(open(str(old / "Chart.yaml")))
    chart.update(name="nvidia-dra-driver-gpu", version="25.12.0", appVersion="25.12.0")
    (old / "Chart.yaml").write_text(yaml.safe_dump(chart))
    shutil.copy(OLD_CRD, str(old / "crds" / "resource.nvidia.com_computedomains.yaml"))
    _helm(cp, "install", "nvidia-dra-driver-gpu", str(old), "-n", NS, "--create-namespace",
          "--set", "gpuResourcesEnabledOverride=true", "--set", "kubeletPlugin.affinity=null",
          "--set-string", "kubeletPlugin.nodeSelector.gpufleet\\.io/gpu-allocation=dra")
    crd = cp.get(CRDS + "computedomains.resource.nvidia.com")
    assert _schema(crd)["required"] == ["channel", "numNodes"]  # the old schema is in place
    (ds,) = cp.items("/apis/apps/v1/namespaces/%s/daemonsets" % NS)
    assert ds["metadata"]["name"] == "nvidia-dra-driver-gpu-kubelet-plugin"
    return ds["metadata"]["uid"]


def _schema(crd):
    (version,) = crd["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]["properties"]["spec"]


# the chart's selector label of a component: <name>-component (the name is nameOverride, gpufleet's
# nvidia-dra-driver-gpu, as the old chart's own name was)
COMPONENT = "nvidia-dra-driver-gpu-component%3D"


def _pods_of(cp, namespace, component_label):
    return sorted(p["spec"].get("nodeName") or "" for p in cp.items(
        "/api/v1/namespaces/%s/pods?labelSelector=%s" % (namespace, component_label)))


def test_the_cluster_stage_installs_the_dra_driver_and_a_rerun_changes_nothing(applied):
    cp, tmp, runs, _uid = applied
    for rc, out in runs:
        assert rc == 0, out[-5000:]
    assert recap(runs[1][1])["changed"] == 0, runs[1][1][-3000:]
    assert recap(runs[2][1])["changed"] == 0, runs[2][1][-3000:]  # --check --diff after it: nothing to do
    values = yaml.safe_load(open(str(tmp / "build" / "cluster" / "dra-driver" / "dra-driver-values.yaml")))
    # the file says what the release got (two comment lines, then every value)
    assert values["kubeletPlugin"]["nodeSelector"] == {"gpufleet.io/gpu-allocation": "dra"}
    assert values["gpuResourcesEnabledOverride"] is True and values["resources"]["gpus"] == {"enabled": True}
    classes = {d["metadata"]["name"]: d for d in cp.items("/apis/resource.k8s.io/v1/deviceclasses")}
    assert sorted(classes) == ["compute-domain-daemon.nvidia.com", "compute-domain-default-channel.nvidia.com",
                               "gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"]
    # what makes plain nvidia.com/gpu pods schedulable on DRA nodes (docs/dra.md; the DRA taint keeps them off)
    assert classes["gpu.nvidia.com"]["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    # the ComputeDomain part: on in the values; the pool's ComputeDomain applied beside its claims, through the
    # CRD the chart installed (the real API server validated it against the chart's schema)
    assert values["resources"]["computeDomains"] == {"enabled": True}
    domain = cp.get("/apis/resource.nvidia.com/v1beta1/namespaces/ml/computedomains/train-h100-compute-domain")
    assert domain["spec"] == {"numNodes": 1, "channel": {"allocationMode": "Single",
                                                         "resourceClaimTemplate": {"name": "train-h100-compute-domain-channel"}}}


def test_the_kubelet_plugin_and_the_device_plugin_each_run_on_their_own_pools_node(applied):
    cp = applied[0]
    cp.wait(lambda: _pods_of(cp, NS, COMPONENT + "kubelet-plugin") == ["h100-01"], 60,
            "the kubelet plugin on h100-01 only")
    cp.wait(lambda: _pods_of(cp, NS, COMPONENT + "controller") == ["cpu-01"], 60, "the controller on cpu-01")
    cp.wait(lambda: [n for n in _pods_of(cp, "nvidia-device-plugin", "app.kubernetes.io/name%3Dnvidia-device-plugin")]
            == ["l4-01"], 60, "the device plugin on l4-01 only")


def test_the_pools_claim_templates_are_applied_and_the_scheduler_allocates_them(applied):
    cp = applied[0]
    names = sorted(t["metadata"]["name"] for t in cp.items("/apis/resource.k8s.io/v1/namespaces/ml/resourceclaimtemplates"))
    assert names == ["train-h100-gpu", "train-h100-gpus-2"]
    # the stand-in kubelet plugin publishes the node's GPUs
    sl = slice_for("h100-01", "h100", 2)
    cp.create("/apis/resource.k8s.io/v1/resourceslices", sl)
    frag = placement(normalize_pool(POOLS[0]), "kubeadm")
    cp.create("/api/v1/namespaces/ml/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train"}, "spec": {
        "containers": [{"name": "c", "image": "cuda:stand-in", "resources": frag["resources"]}],
        "resourceClaims": frag["resourceClaims"], "tolerations": frag["tolerations"], "affinity": frag["affinity"]}})
    pod = cp.wait(lambda: (lambda p: p if p["status"].get("phase") == "Running" else None)(
        cp.get("/api/v1/namespaces/ml/pods/train")), 60, "the train pod Running")
    assert pod["spec"]["nodeName"] == "h100-01"
    claim = cp.get("/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/%s"
                   % pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"])
    assert sorted(r["device"] for r in claim["status"]["allocation"]["devices"]["results"]) == ["gpu-0", "gpu-1"]


def test_operator_mode_renders_the_dra_driver_beside_the_operator(tmp_path):
    """Render mode (nothing applied) of provision + cluster in operator mode, the operator installing the driver:
    the DRA driver's values point at the driver container's root, the operator's device plugin config holds the
    DRA pool's GFD config, and the DRA pool's Node record tells the operator to keep its device plugin off."""
    inv = tmp_path / "inv"
    (inv / "group_vars" / "all").mkdir(parents=True)
    (inv / "group_vars" / "all" / "gpufleet.yml").write_text(yaml.safe_dump({
        "gpufleet_platform": "kubeadm", "gpufleet_cluster_name": "t", "gpufleet_addons_mode": "operator",
        "gpufleet_kubernetes_version": "1.34", "gpu_operator_host_driver": False, "gpufleet_gpu_pools": POOLS,
        "nvidia_dra_driver_compute_domains_enabled": True}))
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {
        "gpufleet_controller": {"hosts": {"localhost": {"ansible_connection": "local",
                                                        "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}},
        "gpu_nodes": {"children": {"gpu_pool_" + pool.replace("-", "_"): {"hosts": {node: {}}}
                                   for node, pool in NODES.items()}}}}}))
    build = tmp_path / "b"
    rc, out = run_site(build, "--tags", "provision,cluster", inventory=str(inv))
    assert rc == 0, out[-4000:]
    values = yaml.safe_load(open(str(build / "cluster" / "dra-driver" / "dra-driver-values.yaml")))
    assert values["nvidiaDriverRoot"] == "/run/nvidia/driver"
    operator = yaml.safe_load(open(str(build / "cluster" / "gpu-operator" / "gpu-operator-values.yaml")))
    # the DRA pool's config is the one GFD reads on its nodes (no device plugin runs there)
    assert sorted(operator["devicePlugin"]["config"]["data"]) == ["default", "infer-l4", "train-h100"]
    node = yaml.safe_load(open(str(build / "provision" / "nodes" / "00-node-h100-01.yaml")))
    assert node["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "false"
    claims = sorted(os.listdir(str(build / "cluster" / "dra-claims")))
    assert claims == ["00-resourceclaimtemplate-train-h100-gpu.yaml", "01-resourceclaimtemplate-train-h100-gpus-2.yaml",
                      "02-computedomain-train-h100-compute-domain.yaml"]


def test_the_upgrade_applies_the_charts_crds_and_keeps_the_releases_objects(applied):
    """Upgrade from gpufleet's previous pin: the CRDs are the pinned chart's, applied by gpufleet (Helm only creates
    CRDs on a first install: without that step numNodes would still be required), and the release is upgraded in
    place under the old object names (nameOverride), not duplicated under the new chart's name."""
    cp, _tmp, _runs, old_uid = applied
    for name, fixture in (("computedomains", "resource.nvidia.com_computedomains.yaml"),
                          ("computedomaincliques", "resource.nvidia.com_computedomaincliques.yaml")):
        crd = cp.get(CRDS + "%s.resource.nvidia.com" % name)
        want = yaml.safe_load(open(os.path.join(ROOT, "tests", "fixtures", "dra-driver", fixture)))
        assert crd["spec"]["versions"] == want["spec"]["versions"], name
        managers = {(m["manager"], m["operation"]) for m in crd["metadata"]["managedFields"]}
        assert ("gpufleet", "Apply") in managers, (name, managers)
    spec = _schema(cp.get(CRDS + "computedomains.resource.nvidia.com"))
    assert spec["required"] == ["channel"] and spec["properties"]["numNodes"]["default"] == 0
    (ds,) = cp.items("/apis/apps/v1/namespaces/%s/daemonsets" % NS)
    assert (ds["metadata"]["name"], ds["metadata"]["uid"]) == ("nvidia-dra-driver-gpu-kubelet-plugin", old_uid)
    (release,) = json.loads(_helm(cp, "list", "-n", NS, "-o", "json"))
    assert (release["name"], release["chart"], release["app_version"]) == \
        ("nvidia-dra-driver-gpu", "dra-driver-nvidia-gpu-0.5.0", "v0.5.0")
    # a ComputeDomain without numNodes is accepted now (the v25.12.0 schema refused it) and defaults to 0
    made = cp.create("/apis/resource.nvidia.com/v1beta1/namespaces/ml/computedomains", {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain", "metadata": {"name": "no-count"},
        "spec": {"channel": {"resourceClaimTemplate": {"name": "no-count-channel"}}}})
    assert made["spec"]["numNodes"] == 0
