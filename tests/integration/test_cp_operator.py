"""Operator mode on a real control plane (tests/helpers/controlplane.py) with the real helm and NVIDIA's real
GPU Operator chart: v26.7.0 from ../shared/charts/, unchanged, packaged as NVIDIA's release packages it
(tests/helpers/gpu_operator_chart.py). helm installs what the chart holds: its CRDs, the operator Deployment and its
RBAC, NFD (the vendored subchart: master, worker DaemonSet, gc), the ClusterPolicy CR and the ConfigMaps the values
ask for, and runs its hooks (the CRD upgrade Job on upgrade, the cleanup Job on uninstall). KWOK stands in for the
kubelets: it marks the operator's and NFD's pods Running and completes the hook Jobs, but no operator logic runs,
so nothing reconciles the ClusterPolicy; what is checked is what gpufleet makes helm install.

The inventory is inventories/kubeadm-operator (MIG mixed + time-slicing; in the standalone phase its MIG
pool says the hosts are partitioned already, as standalone mode requires). In the order a user lives it:
standalone add-ons run -> operator mode refused, naming them and the command that removes them -> that
command -> helm install -> re-run changes nothing -> a changed value is a helm upgrade -> standalone mode
refused while the operator runs -> the command it gives uninstalls the release -> standalone again.
"""
import os
import re
import shlex
import tarfile

import pytest
import yaml

from controlplane import binary
from ansible_run import ROOT, flat, recap, run_site
from gpu_operator_chart import packaged

INVENTORY = "inventories/kubeadm-operator"
NAMESPACE = "gpu-operator"
H100 = ["h100-node-01.example.internal", "h100-node-02.example.internal"]
L40S = ["l40s-node-01.example.internal"]
# values that only steer the chart (what it creates), not ClusterPolicy fields
CHART_ONLY = {("devicePlugin", "config", "create"), ("devicePlugin", "config", "data"),
              ("dcgmExporter", "config", "create"), ("dcgmExporter", "config", "data"),
              ("operator", "repository"), ("operator", "image"), ("operator", "version")}
CHART_ONLY_SECTIONS = {"nfd", "node-feature-discovery", "platform"}
# values the chart writes under another ClusterPolicy field name
RENAMED = {("driver", "upgradePolicy", "gpuPodDeletion"): ("driver", "upgradePolicy", "podDeletion")}


@pytest.fixture(scope="module")
def chart():
    return packaged(pytest)


@pytest.fixture(scope="module")
def env(control_plane, tmp_path_factory, chart):
    tmp = tmp_path_factory.mktemp("operator")
    for name in H100:
        control_plane.add_node(name, gpu=56)
    for name in L40S:
        control_plane.add_node(name, gpu=16)
    control_plane.add_node("cpu-1")
    # the standalone phase: the same pools, MIG partitioned on the hosts (standalone has no MIG manager)
    with open(os.path.join(ROOT, INVENTORY, "group_vars", "all", "gpufleet.yml")) as f:
        pools = yaml.safe_load(f)["gpufleet_gpu_pools"]
    for pool in pools:
        if pool["sharing"]["mode"] == "mig":
            pool["sharing"]["mig_preconfigured"] = True
    (tmp / "standalone.yml").write_text(yaml.safe_dump({"gpufleet_addons_mode": "standalone",
                                                         "gpufleet_gpu_pools": pools}))
    extra = ["-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % control_plane.kubeconfig,
             "-e", "gpufleet_helm_binary=%s" % binary("helm", "helm"), "-e", "gpu_operator_chart_path=%s" % chart]
    return control_plane, tmp, extra


def test_the_chart_is_nvidias_release_of_the_pinned_version(chart):
    from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import CHARTS
    with tarfile.open(chart) as tar:
        meta = yaml.safe_load(tar.extractfile("gpu-operator/Chart.yaml"))
    pin = CHARTS["gpu_operator"]
    assert (meta["name"], meta["version"], meta["appVersion"]) == (pin["name"], pin["version"], pin["version"])


def cluster(env, *more, standalone=False):
    cp, tmp, extra = env
    if standalone:
        more = ("-e", "@%s" % (tmp / "standalone.yml")) + more
    return run_site(tmp / "build", *(extra + list(more)), playbook="playbooks/cluster.yml", inventory=INVENTORY)


def gpufleet_daemonsets(cp):
    return sorted("%s/%s" % (d["metadata"]["namespace"], d["metadata"]["name"])
                  for d in cp.items("/apis/apps/v1/daemonsets?labelSelector=app.kubernetes.io/managed-by%3Dgpufleet"))


def releases(cp):
    """Helm's release records (Secrets sh.helm.release.v1.<name>.v<revision>), as [(name, revision, status)]."""
    out = []
    for s in cp.items("/api/v1/namespaces/%s/secrets?labelSelector=owner%%3Dhelm" % NAMESPACE):
        labels = s["metadata"]["labels"]
        out.append((labels["name"], int(labels["version"]), labels["status"]))
    return sorted(out)


def policies(cp):
    if not cp.exists("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusterpolicies.nvidia.com"):
        return []
    return cp.items("/apis/nvidia.com/v1/clusterpolicies")


def leaves(tree, path=()):
    if isinstance(tree, dict) and tree:
        for key, value in tree.items():
            yield from leaves(value, path + (key,))
    else:
        yield path, tree


def given_command(message, after):
    """The ansible-playbook command a refusal gives, as extra arguments for run_site (without -i)."""
    match = re.search(re.escape(after) + r" (ansible-playbook \S+ -i \S+ .*?) - then", message)
    assert match, message
    argv = shlex.split(match.group(1))
    assert argv[1] == "playbooks/cluster.yml" and argv[2] == "-i" and argv[3].endswith(INVENTORY), argv
    return argv[4:]


@pytest.fixture(scope="module")
def standalone(env):
    rc, out = cluster(env, standalone=True)
    assert rc == 0, out[-5000:]
    return out


def test_standalone_addons_run_first(env, standalone):
    cp = env[0]
    assert "nvidia-device-plugin/nvidia-device-plugin" in gpufleet_daemonsets(cp)


def test_operator_mode_is_refused_while_the_standalone_addons_run(env, standalone):
    cp = env[0]
    rc, out = cluster(env)
    assert rc != 0
    text = flat(out)
    assert "gpufleet_addons_mode is operator, but the standalone add-ons gpufleet deployed still run" in text, text[-3000:]
    assert "nvidia-device-plugin/nvidia-device-plugin" in text and "This step applied nothing" in text
    # refused before anything of the operator reached the cluster
    assert releases(cp) == [] and policies(cp) == []
    # the command it gives removes them, and only then does operator mode install
    rc, out = cluster(env, *given_command(text, "Remove them first with:"))
    assert rc == 0, out[-5000:]
    assert gpufleet_daemonsets(cp) == []


@pytest.fixture(scope="module")
def installed(env, standalone):
    cp, tmp, _ = env
    if gpufleet_daemonsets(cp):
        pytest.fail("the standalone add-ons are still there (see the refusal test)")
    rc, out = cluster(env)
    assert rc == 0, out[-5000:]
    with open(tmp / "build" / "cluster" / "gpu-operator" / "gpu-operator-values.yaml") as f:
        values = yaml.safe_load(f)
    return out, values


def test_helm_installs_the_release_with_the_rendered_values(env, installed):
    cp = env[0]
    _, values = installed
    assert releases(cp) == [("gpu-operator", 1, "deployed")]
    (policy,) = policies(cp)
    spec = policy["spec"]
    # every value gpufleet sets reached the real API server as a ClusterPolicy field (the real CRD's
    # structural schema prunes fields it does not know, so a wrong key would be missing here)
    compared = 0
    for path, value in leaves(values):
        if path[0] in CHART_ONLY_SECTIONS or path[:3] in CHART_ONLY or path[:2] in CHART_ONLY:
            continue
        field = RENAMED.get(path[:3], path[:3]) + path[3:]
        node = spec
        for key in field:
            assert isinstance(node, dict) and key in node, "%s: not in the ClusterPolicy %s" % (".".join(path), spec)
            node = node[key]
        assert node == value, ".".join(path)
        compared += 1
    assert compared > 20
    assert spec["mig"] == {"strategy": "mixed"} and spec["driver"]["enabled"] is False
    assert spec["devicePlugin"]["config"] == {"name": "gpufleet-device-plugin-configs", "default": "default"}
    configs = cp.get("/api/v1/namespaces/%s/configmaps/gpufleet-device-plugin-configs" % NAMESPACE)["data"]
    assert set(configs) == {"default", "mig-h100", "share-l40s"}
    assert yaml.safe_load(configs["share-l40s"])["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/gpu", "replicas": 4}]
    metrics = cp.get("/api/v1/namespaces/%s/configmaps/gpufleet-dcgm-metrics" % NAMESPACE)["data"]["dcgm-metrics.csv"]
    assert "DCGM_FI_DEV_XID_ERRORS" in metrics
    # helm waited for the operator Deployment (KWOK runs its pod): NVIDIA's image at the release's appVersion
    deployment = cp.get("/apis/apps/v1/namespaces/%s/deployments/gpu-operator" % NAMESPACE)
    assert deployment["status"].get("readyReplicas") == 1
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nvcr.io/nvidia/gpu-operator:v26.7.0"
    # and for NFD from the vendored subchart (nfd.enabled: true on kubeadm), its worker on every Node
    workers = [d for d in cp.items("/apis/apps/v1/namespaces/%s/daemonsets" % NAMESPACE)
               if d["metadata"]["name"].endswith("node-feature-discovery-worker")]
    assert len(workers) == 1 and workers[0]["status"]["numberReady"] == 4, workers
    for crd in ("clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com", "nodefeaturerules.nfd.k8s-sigs.io"):
        assert cp.exists("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + crd), crd


def test_rerun_changes_nothing_and_keeps_the_revision(env, installed):
    cp = env[0]
    rc, out = cluster(env)
    assert rc == 0, out[-5000:]
    assert recap(out)["changed"] == 0, out[-5000:]
    assert releases(cp) == [("gpu-operator", 1, "deployed")]


def test_check_mode_reports_a_change_and_makes_none(env, installed):
    cp = env[0]
    (before,) = policies(cp)
    rc, out = cluster(env, "--check", "--diff")
    assert rc == 0, out[-5000:]
    assert recap(out)["changed"] == 0, out[-5000:]
    rc, out = cluster(env, "--check", "--diff", "-e", '{"gpu_operator_upgrade_policy": {"maxParallelUpgrades": 5}}')
    assert rc == 0, out[-5000:]
    assert recap(out)["changed"] >= 1, out[-5000:]
    assert releases(cp) == [("gpu-operator", 1, "deployed")]
    (after,) = policies(cp)
    assert after["spec"] == before["spec"]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_changed_value_is_a_helm_upgrade(env, installed):
    cp = env[0]
    rc, out = cluster(env, "-e", '{"gpu_operator_upgrade_policy": {"maxParallelUpgrades": 2}}')
    assert rc == 0, out[-5000:]
    assert recap(out)["changed"] >= 1
    assert ("gpu-operator", 2, "deployed") in releases(cp)
    (policy,) = policies(cp)
    assert policy["spec"]["driver"]["upgradePolicy"]["maxParallelUpgrades"] == 2


def test_standalone_mode_is_refused_while_the_operator_runs_then_uninstall(env, installed):
    cp, tmp, _ = env
    rc, out = cluster(env, standalone=True)
    assert rc != 0
    text = flat(out)
    assert "gpufleet_addons_mode is standalone, but the GPU Operator runs (ClusterPolicy cluster-policy)" in text, \
        text[-3000:]
    assert gpufleet_daemonsets(cp) == []
    # the command it gives uninstalls the release: the ClusterPolicy, ConfigMaps and operator go with it
    rc, out = cluster(env, *given_command(text, "Remove the operator first with:"))
    assert rc == 0, out[-5000:]
    assert releases(cp) == []
    assert policies(cp) == []
    assert not cp.exists("/apis/apps/v1/namespaces/%s/deployments/gpu-operator" % NAMESPACE)
    assert not cp.exists("/api/v1/namespaces/%s/configmaps/gpufleet-device-plugin-configs" % NAMESPACE)
    assert not (tmp / "build" / "cluster" / "gpu-operator" / "gpu-operator-values.yaml").exists()
    # and standalone mode applies now
    rc, out = cluster(env, standalone=True)
    assert rc == 0, out[-5000:]
    assert "nvidia-device-plugin/nvidia-device-plugin" in gpufleet_daemonsets(cp)
