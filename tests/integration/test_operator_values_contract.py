"""Contract: the GPU Operator values gpufleet renders, judged by NVIDIA's real chart (the pinned v26.7.0 from
../shared/charts/, packaged as the release is: tests/helpers/gpu_operator_chart.py) and the real helm.

The chart has no values schema: helm ignores a key no template reads, without a word. For the values of every
platform preset (module_utils, as the golden files render them, plus variants: the operator running driver and
toolkit, a registry mirror with pull secrets, a driver version, every upgrade-policy key) and of the
operator-mode inventories (their site render):
(a) every key path gpufleet sets is in the chart's values.yaml (under node-feature-discovery: the NFD subchart's
    values.yaml); a list, or a map values.yaml holds empty (``devicePlugin.config.data: {}``), is one leaf; a key
    values.yaml leaves out counts only where a template reads ``.Values.<that path>``;
(b) changing any leaf changes ``helm template``'s output (a dead key fails). One render puts a unique probe
    value in every non-boolean leaf at once and looks for each in the output; each boolean is flipped alone;
(c) each setting gpufleet promises reaches the rendered ClusterPolicy (and the ConfigMaps the chart makes):
    driver and toolkit, versions, the device-plugin sharing configs, MIG strategy, ServiceMonitor,
    tolerations, CDI, the upgrade policy, pull secrets and, with gpufleet_registry_prefix, every image under
    the prefix at the chart's own repository path.
"""
import copy

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.gpu_operator import (
    DCGM_METRICS_CONFIG_MAP, DEVICE_PLUGIN_CONFIG_MAP, cr_upgrade_policy, deep_merge, operator_values)
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import (
    IMAGES, OPERATOR_COMPONENTS, OPERATOR_REPOSITORIES, with_prefix)
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from golden_pools import pools_for
from gpu_operator_chart import VERSION, chart_dir_or_skip, chart_values, helm_template, objects, packaged, \
    template_refs
from render_cache import rendered_site

pytestmark = [pytest.mark.playbook, pytest.mark.contract]

PREFIX = "mirror.example.internal:5000/gpu"
SECRETS = ["mirror-pull"]
SELF_MANAGED = {"gpu_operator_host_driver": False, "gpu_operator_host_toolkit": False}
FULL_POLICY = {"autoUpgrade": False, "maxParallelUpgrades": 3, "maxUnavailable": "50%",
               "gpuPodDeletion": {"force": True, "timeoutSeconds": 120, "deleteEmptyDir": True},
               "drain": {"enable": True, "force": True, "timeoutSeconds": 600, "deleteEmptyDir": True},
               "waitForCompletion": {"timeoutSeconds": 60, "podSelector": "app=train"}}
# label -> (platform, extra inputs)
VARIANTS = dict([(p, (p, {})) for p in ("eks", "gke", "kubeadm", "k3s", "rke2", "k0s", "microk8s", "openshift")] + [
    ("kubeadm, operator driver and toolkit, driver version", ("kubeadm", dict(
        SELF_MANAGED, gpu_operator_driver_version="580.95.05", gpu_operator_upgrade_policy=FULL_POLICY))),
    ("k3s, operator toolkit", ("k3s", {"gpu_operator_host_toolkit": False})),
    ("k0s, operator toolkit", ("k0s", {"gpu_operator_host_toolkit": False})),
    ("microk8s, operator toolkit", ("microk8s", {"gpu_operator_host_toolkit": False})),
    ("eks, plain AMI, mirror, ServiceMonitor", ("eks", dict(
        SELF_MANAGED, gpufleet_registry_prefix=PREFIX, gpufleet_image_pull_secrets=SECRETS,
        gpu_operator_service_monitor=True, dcgm_exporter_scrape_interval="30s"))),
    ("gke, mirror", ("gke", {"gpufleet_registry_prefix": PREFIX, "gpufleet_image_pull_secrets": SECRETS})),
])
INVENTORIES = ("kubeadm-operator", "openshift")
# image repositories of the chart that gpufleet leaves alone, and why
NOT_REWRITTEN = {"draDriver.repository": "read only for the GPUCluster CR (gpuCluster.deployCR), which gpufleet "
                                         "does not deploy: it installs the DRA driver's own chart"}


def variant_values(platform, extra):
    params = {"platform": platform, "cluster_name": "contract", "addons_mode": "operator",
              "pools": pools_for(platform if platform in ("eks", "gke") else "kubeadm", "operator"),
              "apply": False, "extra": extra}
    errors, _warnings, plan = run_preflight(params)
    assert not errors, (platform, extra, errors)
    return plan, operator_values(plan, extra)


@pytest.fixture(scope="module")
def chart():
    return packaged(pytest)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """{label: values} for every preset variant and operator-mode inventory."""
    chart_dir_or_skip(pytest)
    out = {label: variant_values(*spec)[1] for label, spec in VARIANTS.items()}
    for name in INVENTORIES:
        rc, output, build = rendered_site(tmp_path_factory, inventory="inventories/" + name)
        assert rc == 0, output[-3000:]
        with open(build / "cluster" / "gpu-operator" / "gpu-operator-values.yaml") as f:
            out["inventory " + name] = yaml.safe_load(f)
    return out


def leaves(values, chart, refs, path=()):
    """(dotted path, value, where the chart knows it: 'values.yaml', 'template' or None) for every leaf."""
    for key, value in values.items():
        p = path + (key,)
        known = isinstance(chart, dict) and key in chart
        here = chart[key] if known else None
        if isinstance(value, dict) and value and (isinstance(here, dict) and here or not known):
            yield from leaves(value, here if known else None, refs, p)
        elif known:
            yield ".".join(p), value, "values.yaml"
        else:
            yield ".".join(p), value, "template" if ".".join(p) in refs else None


def test_every_key_gpufleet_sets_is_one_the_chart_reads(rendered):
    """(a), for each preset variant and inventory (old code: operator.defaultRuntime and cdi.default)."""
    chart, refs = chart_values(), template_refs()
    unknown = sorted({(path, label) for label, values in rendered.items()
                      for path, _value, where in leaves(values, chart, refs) if where is None})
    assert unknown == [], "keys the %s chart neither has in values.yaml nor reads in a template:\n%s" % (
        VERSION, "\n".join("%s (%s)" % u for u in unknown))


def _probe(value, counter):
    """A value of the same shape with a unique marker in every string and number (gpufleet-probe-<n>-end: no
    marker is part of another; lists gain one probed element, a whole-map leaf a probed key)."""
    if isinstance(value, bool):
        return value
    counter[0] += 1
    if isinstance(value, int):
        return 4242000 + counter[0]
    if isinstance(value, str):
        return "gpufleet-probe-%d-end" % counter[0]
    if isinstance(value, list):
        return copy.deepcopy(value) + [_probe(value[0], counter)] if value else ["gpufleet-probe-%d-end" % counter[0]]
    if isinstance(value, dict):
        out = copy.deepcopy(value)
        out["gpufleet-probe-%d-end" % counter[0]] = "gpufleet-probe-%d-end" % counter[0]
        return out
    raise AssertionError("unexpected value %r" % (value,))


def _flat(value):
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in [k] + _flat(v)]
    if isinstance(value, list):
        return [x for v in value for x in _flat(v)]
    return [value]


def _markers(probed):
    """The probe markers in a probed value, as they would show in the output."""
    return [str(m) for m in _flat(probed) if isinstance(m, str) and m.startswith("gpufleet-probe-") or
            isinstance(m, int) and not isinstance(m, bool) and m > 4242000]


def _set(tree, path, value):
    keys = path.split(".")
    for key in keys[:-1]:
        tree = tree[key]
    tree[keys[-1]] = value


def test_every_key_gpufleet_sets_changes_the_render(rendered, chart):
    """(b): the union of all values (every leaf any variant sets), probed; a leaf whose marker does not show
    is changed alone and must still change the output; every boolean is flipped alone."""
    union = {}
    # OpenShift's values first: its nfd.enabled false (OLM's NFD) must not switch the NFD subchart off here
    for label in sorted(rendered, key=lambda name: "openshift" not in name):
        union = deep_merge(union, rendered[label])
    found = list(leaves(union, chart_values(), template_refs()))
    counter, probed, changed = [0], copy.deepcopy(union), {}
    for path, value, _where in found:
        changed[path] = (not value) if isinstance(value, bool) else _probe(value, counter)
        if not isinstance(value, bool):
            _set(probed, path, changed[path])
    (rc, base, err), (prc, probe_out, perr) = helm_template(chart, [union, probed])
    assert rc == 0, err
    assert prc == 0, "helm template refused the probed values: %s" % perr
    # booleans, and any leaf whose markers the probed render does not show, are changed one at a time
    alone = [p for p in changed if not _markers(changed[p]) or not all(m in probe_out for m in _markers(changed[p]))]
    flips = [p for p, v, _ in found if isinstance(v, bool)]
    variants = []
    for path in alone:
        values = copy.deepcopy(union)
        _set(values, path, changed[path])
        variants.append(values)
    results = helm_template(chart, variants)
    dead = []
    for path, (vrc, out, verr) in zip(alone, results):
        assert vrc == 0, "%s: %s" % (path, verr)
        if out == base:
            dead.append(path)
    assert dead == [], "values gpufleet sets that leave helm template byte-identical: %s" % dead
    assert len(found) > 40 and len(flips) > 10  # the whole tree was probed, not a pruned part


@pytest.fixture(scope="module")
def policies(rendered, chart):
    """{label: (values, rendered objects)} for each variant with its own values."""
    labels = sorted(rendered)
    results = helm_template(chart, [rendered[label] for label in labels])
    out = {}
    for label, (rc, text, err) in zip(labels, results):
        assert rc == 0, "%s: %s" % (label, err)
        out[label] = (rendered[label], objects(text))
    return out


def the(objs, kind, name=None):
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, "%s %s: %d rendered" % (kind, name, len(found))
    return found[0]


def test_promised_settings_reach_the_cluster_policy(policies):
    """(c): what gpufleet's docs promise for operator mode is what the chart puts in the ClusterPolicy."""
    for label, (values, objs) in policies.items():
        spec = the(objs, "ClusterPolicy")["spec"]
        why = label
        # driver and toolkit where the hosts do not have them; the driver version asked for, else the chart's
        assert spec["driver"]["enabled"] is values["driver"]["enabled"], why
        assert spec["toolkit"]["enabled"] is values["toolkit"]["enabled"], why
        assert spec["driver"]["version"] == values["driver"].get(
            "version", OPERATOR_COMPONENTS["default driver (driver.version)"]), why
        assert spec["driver"]["kernelModuleType"] == values["driver"]["kernelModuleType"], why
        upgrade = spec["driver"]["upgradePolicy"]  # the CRD's names (podDeletion for gpuPodDeletion)
        for key, value in cr_upgrade_policy(values["driver"]["upgradePolicy"]).items():
            got = {k: upgrade[key].get(k) for k in value} if isinstance(value, dict) else upgrade[key]
            assert got == value, "%s: driver.upgradePolicy.%s" % (why, key)
        for key in ("env", "installDir"):
            if key in values["toolkit"]:
                assert spec["toolkit"][key] == values["toolkit"][key], why
        if "hostPaths" in values:
            assert spec["hostPaths"]["driverInstallDir"] == values["hostPaths"]["driverInstallDir"], why
        # the component versions gpufleet documents for operator mode (docs/reference/tables.md)
        assert spec["toolkit"]["version"] == OPERATOR_COMPONENTS["NVIDIA Container Toolkit (toolkit.version)"], why
        assert spec["migManager"]["version"] == OPERATOR_COMPONENTS["NVIDIA MIG Manager (migManager.version)"], why
        assert spec["dcgm"]["version"].startswith(OPERATOR_COMPONENTS["NVIDIA DCGM (dcgm.version)"] + "-"), why
        assert spec["devicePlugin"]["version"] == spec["gfd"]["version"] == IMAGES["device_plugin"]["tag"], why
        assert spec["dcgmExporter"]["version"] == IMAGES["dcgm_exporter"]["tag"], why
        # sharing: the per-pool configs in the ConfigMap the device plugin is pointed at
        assert spec["devicePlugin"]["config"] == {"name": DEVICE_PLUGIN_CONFIG_MAP, "default": "default"}, why
        if values["devicePlugin"]["config"]["create"]:
            assert the(objs, "ConfigMap", DEVICE_PLUGIN_CONFIG_MAP)["data"] == values["devicePlugin"]["config"]["data"]
            csv = the(objs, "ConfigMap", DCGM_METRICS_CONFIG_MAP)["data"]["dcgm-metrics.csv"]
            assert csv.strip() == values["dcgmExporter"]["config"]["data"].strip(), why
        assert spec["dcgmExporter"]["config"] == {"name": DCGM_METRICS_CONFIG_MAP}, why
        # MIG, monitoring, placement, CDI
        assert spec["mig"] == values["mig"] and spec["migManager"]["enabled"] is values["migManager"]["enabled"], why
        monitor = spec["dcgmExporter"]["serviceMonitor"]
        assert {k: monitor.get(k) for k in values["dcgmExporter"]["serviceMonitor"]} == \
            values["dcgmExporter"]["serviceMonitor"], why
        assert spec["daemonsets"]["tolerations"] == values["daemonsets"]["tolerations"], why
        assert spec["daemonsets"]["priorityClassName"] == values["daemonsets"]["priorityClassName"], why
        assert spec["cdi"] == {"enabled": values["cdi"]["enabled"]}, why
        assert spec["psa"] == {"enabled": True}, why


def repositories(spec, path=()):
    """{dotted ClusterPolicy path of a component: its repository} over the whole spec."""
    out = {}
    for key, value in spec.items():
        if isinstance(value, dict):
            if isinstance(value.get("repository"), str):
                out[".".join(path + (key,))] = value["repository"]
            out.update(repositories(value, path + (key,)))
    return out


def images(objs):
    """Every image the rendered workloads run or hand on (the operator's *_IMAGE environment)."""
    out = set()
    for obj in objs:
        if obj["kind"] in ("Deployment", "DaemonSet", "Job"):
            pod = obj["spec"]["template"]["spec"]
            for container in pod.get("containers", []) + pod.get("initContainers", []):
                out.add(container["image"])
                out.update(e["value"] for e in container.get("env", []) if e["name"].endswith("_IMAGE"))
    return sorted(out)


def test_the_mirror_mapping_is_the_charts_own():
    """Every image repository of the chart's values.yaml (NFD's too) is in versions.OPERATOR_REPOSITORIES, each
    with the chart's own registry path (old code: validator and nodeStatusExporter under nvidia/cloud-native)."""
    chart_dir_or_skip(pytest)
    chart = chart_values()

    def walk(tree, path=()):
        for key, value in tree.items():
            if isinstance(value, dict):
                if isinstance(value.get("repository"), str) and value["repository"]:
                    yield ".".join(path + (key, "repository")), value["repository"]
                yield from walk(value, path + (key,))
    assert OPERATOR_REPOSITORIES == {path: repo for path, repo in walk(chart) if path not in NOT_REWRITTEN}


def test_with_a_registry_prefix_every_image_is_under_it_at_the_charts_path(policies):
    """Air-gapped (defect 4): each ClusterPolicy repository is <prefix>/<the chart's own repository path>, and
    every image helm itself deploys (operator, NFD) is under the prefix; pull secrets reach every component."""
    chart = chart_values()
    checked = 0
    for label, (values, objs) in policies.items():
        spec = the(objs, "ClusterPolicy")["spec"]
        prefixed = "mirror" in label
        for component, repo in repositories(spec).items():
            node = chart
            for key in component.split("."):
                node = node[key]
            expected = with_prefix(node["repository"], PREFIX) if prefixed else node["repository"]
            assert repo == expected, "%s: %s.repository is %s, the chart's own path under the prefix is %s" % (
                label, component, repo, expected)
            if prefixed and "imagePullSecrets" in node:
                assert spec_at(spec, component).get("imagePullSecrets") == SECRETS, (label, component)
            checked += 1
        pods = images(objs)
        assert "%s/nvidia/gpu-operator:%s" % (PREFIX if prefixed else "nvcr.io", VERSION) in pods, (label, pods)
        if prefixed:
            assert [i for i in pods if not i.startswith(PREFIX + "/")] == [], label
            operator = the(objs, "Deployment", "gpu-operator")["spec"]["template"]["spec"]
            assert operator["imagePullSecrets"] == [{"name": n} for n in SECRETS], label
    assert checked > 100


def spec_at(spec, dotted):
    for key in dotted.split("."):
        spec = spec[key]
    return spec


def test_pins_from_chart_agrees_with_the_packaged_release(chart):
    """scripts/pins-from-chart.py on the chart packaged as NVIDIA releases it: every pin is the chart's."""
    import json
    import subprocess
    import sys
    from ansible_run import ROOT
    proc = subprocess.run([sys.executable, ROOT + "/scripts/pins-from-chart.py", chart, "--json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(proc.stdout)
    assert {r["status"] for r in rows} == {"same"}, rows
    assert {"what": "chart version", "chart": VERSION, "pinned": VERSION, "status": "same"} in rows


def test_fetch_images_lists_every_image_the_chart_deploys(policies, chart):
    """fetch-images.sh (air-gapped) lists the operand images with OPERAND_AWK over `helm template` of the pinned
    chart with the rendered values and every OPERATOR_REPOSITORIES path set back to upstream. On the real chart
    that must be exactly what the chart deploys with its own default repositories: every repository/image:version
    of the ClusterPolicy and every image helm runs itself (old code: nvidia/cloud-native/gpu-operator)."""
    import subprocess
    from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.mirror_scripts import OPERAND_AWK
    mirrored = policies["eks, plain AMI, mirror, ServiceMonitor"][0]
    as_fetched, as_chart = copy.deepcopy(mirrored), copy.deepcopy(mirrored)
    for path, repo in OPERATOR_REPOSITORIES.items():
        _set(as_fetched, path, repo)
        keys = path.split(".")
        del spec_at(as_chart, ".".join(keys[:-1]))[keys[-1]]
    (rc, fetched, err), (crc, own, cerr) = helm_template(chart, [as_fetched, as_chart])
    assert rc == 0 and crc == 0, err + cerr
    listed = set(subprocess.run(["awk", OPERAND_AWK], input=fetched, capture_output=True, text=True,
                                check=True).stdout.split())
    objs = objects(own)
    spec = the(objs, "ClusterPolicy")["spec"]
    wanted = {"%s/%s:%s" % (c["repository"], c["image"], c["version"])
              for c in (spec_at(spec, p) for p in repositories(spec)) if "image" in c and "version" in c}
    wanted |= {i for i in images(objs) if ":" in i.rsplit("/", 1)[-1]}
    assert listed == wanted, ("listed, not deployed:", sorted(listed - wanted), "missing:", sorted(wanted - listed))
    assert "nvcr.io/nvidia/gpu-operator:%s" % VERSION in listed  # the validator's and node status exporter's too
