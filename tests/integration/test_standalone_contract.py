"""The standalone add-ons judged by NVIDIA's own charts (issue 38): contract test.

The real device plugin chart v0.20.0 (device plugin, GPU feature discovery, MPS control daemon) and the real
dcgm-exporter chart (d5e5f51), both from ../shared/charts/, are rendered by the real helm v3.22.0
(``helm template``, built by scripts/controlplane-build.sh) with the settings gpufleet uses: the sharing
configs from gpufleet's own ConfigMap (``config.name``, default config ``default``; the MIG strategy travels
in those per-pool configs), GFD on, the MPS daemon at the chart's defaults, gpufleet's images (tag and
digest), tolerations and runtime class. gpufleet's own objects for the same inventories come from the
module_utils builders (device_plugin_objects, dcgm_exporter_objects). Per container and pod (see
tests/helpers/standalone_contract.py) every difference must be listed with its reason in
tests/fixtures/upstream-contract/standalone-allowlist.yml: a new difference fails, and so does an entry that
no longer matches any difference (delete it: the list stays reviewed).

On b9ebacf this failed with the MPS control daemon's shareProcessNamespace true / hostPID false (upstream:
hostPID, no shared namespace; issue 38 item 2) and GFD without NVIDIA_MIG_MONITOR_DEVICES where a pool uses
MIG (item 7).
"""
import copy
import os

import pytest
import yaml

from controlplane import binary
from standalone_contract import (
    DCGM_EXPORTER_CHART, DEVICE_PLUGIN_CHART, ROOT, charts_or_skip, compare, daemonset_views, describe,
    differences, helm_template, load_allowlist, split_image)
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_exporter import dcgm_exporter_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import (
    CONFIG_MAP, device_plugin_objects)
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight

# The playbook tier (never in scripts/test.sh --quick): helm comes from scripts/controlplane-build.sh, which only
# the full test command runs; contract beside it (checked against NVIDIA's charts).
pytestmark = [pytest.mark.playbook, pytest.mark.contract]

# The standalone inventories (GKE runs Google's device plugin: nothing of gpufleet's to compare), and the
# example with its L4 pool sharing by MPS (as tests/integration/test_cp_mps.py) for the MPS control daemon.
INVENTORIES = {"example": "example", "example-mps": "example", "k3s": "k3s", "eks": "eks"}


def inventory_plan(scenario):
    with open(os.path.join(ROOT, "inventories", INVENTORIES[scenario], "group_vars", "all", "gpufleet.yml")) as handle:
        data = yaml.safe_load(handle)
    pools = copy.deepcopy(data["gpufleet_gpu_pools"])
    if scenario == "example-mps":
        for pool in pools:
            if pool["name"] == "infer-l4":
                pool["sharing"] = {"mode": "mps", "replicas": 4}
    errors, _warnings, plan = run_preflight({
        "platform": data["gpufleet_platform"], "cluster_name": data["gpufleet_cluster_name"],
        "addons_mode": data["gpufleet_addons_mode"], "pools": pools, "apply": False, "extra": {}})
    assert errors == [], errors
    return plan


def pod_of(objs, name):
    ds = next(o for o in objs if o["kind"] == "DaemonSet" and o["metadata"]["name"] == name)
    return ds["spec"]["template"]["spec"]


def device_plugin_values(ours):
    """The device plugin chart's values for the settings gpufleet uses."""
    pod = pod_of(ours, "nvidia-device-plugin")
    repo, tag = split_image(pod["containers"][0]["image"])
    return {
        "config": {"name": CONFIG_MAP, "default": "default"},  # gpufleet's ConfigMap, one config per pool
        "gfd": {"enabled": any(o["metadata"]["name"] == "gpu-feature-discovery" for o in ours)},
        "nfd": {"enabled": False},  # gpufleet's NFD is optional and its own (nvidia_device_plugin_nfd_enabled)
        "image": {"repository": repo, "tag": tag},
        "tolerations": pod["tolerations"],
        "runtimeClassName": pod.get("runtimeClassName"),
    }


def dcgm_exporter_values(ours):
    pod = pod_of(ours, "dcgm-exporter")
    repo, tag = split_image(pod["containers"][0]["image"])
    return {
        "image": {"repository": repo, "tag": tag},
        "tolerations": pod["tolerations"],
        "runtimeClassName": pod.get("runtimeClassName", ""),
        "serviceMonitor": {"enabled": False},  # render mode: gpufleet writes no ServiceMonitor either
    }


@pytest.fixture(scope="module")
def allowlist():
    return load_allowlist()


@pytest.fixture(scope="module")
def found(allowlist):
    """Every difference over all scenarios, device plugin chart and dcgm-exporter chart."""
    charts_or_skip(pytest)
    helm = binary("helm", "helm")
    names = allowlist["names"]
    out = []
    for scenario in INVENTORIES:
        plan = inventory_plan(scenario)
        ours = device_plugin_objects(plan, {})
        theirs = helm_template(helm, DEVICE_PLUGIN_CHART, "nvidia-device-plugin", "nvidia-device-plugin",
                               device_plugin_values(ours))
        out += differences(scenario, daemonset_views(ours, {}), daemonset_views(theirs, names))
        ours = dcgm_exporter_objects(plan, {})
        theirs = helm_template(helm, DCGM_EXPORTER_CHART, "dcgm-exporter", "nvidia-dcgm-exporter",
                               dcgm_exporter_values(ours))
        out += differences(scenario, daemonset_views(ours, {}), daemonset_views(theirs, names))
    return out


def test_every_difference_from_the_charts_is_on_the_allowlist(found, allowlist):
    new, _stale = compare(found, allowlist)
    assert not new, "differences from NVIDIA's charts not on %s (fix gpufleet, or list them with the reason):\n%s" % (
        "tests/fixtures/upstream-contract/standalone-allowlist.yml", "\n".join(describe(d) for d in new))


def test_every_allowlist_entry_still_matches_a_difference(found, allowlist):
    _new, stale = compare(found, allowlist)
    assert not stale, "allow-list entries that match no difference any more (delete them):\n" + "\n".join(stale)


def test_the_charts_render_what_is_compared(found):
    """The comparison sees the agents: each chart's DaemonSets were rendered and mapped (an unmapped or
    missing upstream DaemonSet would show as an 'object' difference, which only the MPS daemon may be)."""
    objects = {(d["scenario"], d["object"]) for d in found if d["field"] == "object"}
    assert objects == {("example", "nvidia-device-plugin-mps-control-daemon"),
                       ("k3s", "nvidia-device-plugin-mps-control-daemon"),
                       ("eks", "nvidia-device-plugin-mps-control-daemon")}, objects


# ------------------------------------------------------------------ the helpers themselves (checks that can fail)
def view(**container):
    base = {"name": "c", "image": "i"}
    base.update(container)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [base], "volumes": [
                {"name": "v", "hostPath": {"path": "/run/x"}}]}}}}


ENTRY = {"where": "d/c", "field": "env", "item": "A", "gpufleet": "1", "upstream": None, "why": "w"}


@pytest.mark.parametrize("ours,theirs,new,stale", [
    (view(env=[{"name": "A", "value": "1"}]), view(), [], []),
    (view(env=[{"name": "A", "value": "2"}]), view(), ["s: d/c env A: gpufleet \"2\", upstream null"], ["d/c env A"]),
    (view(), view(), [], ["d/c env A"]),
    (view(env=[{"name": "A", "value": "1"}], volumeMounts=[{"name": "v", "mountPath": "/m"}]),
     view(env=[{"name": "A", "value": "1"}]), ["s: d/c volumeMounts /m: gpufleet \"hostPath /run/x\", upstream null"],
     ["d/c env A"]),
])
def test_compare_names_new_differences_and_stale_entries(ours, theirs, new, stale):
    diffs = differences("s", daemonset_views([ours], {}), daemonset_views([theirs], {}))
    got_new, got_stale = compare(diffs, {"differences": [ENTRY]})
    assert [describe(d) for d in got_new] == new and got_stale == stale


def test_names_are_mapped_and_a_pod_field_is_compared():
    theirs = view()
    theirs["metadata"]["name"] = "up-d"
    theirs["spec"]["template"]["spec"]["containers"][0]["name"] = "up-c"
    theirs["spec"]["template"]["spec"]["hostPID"] = True
    diffs = differences("s", daemonset_views([view()], {}),
                        daemonset_views([theirs], {"objects": {"up-d": "d"}, "containers": {"d": {"up-c": "c"}}}))
    assert [describe(d) for d in diffs] == ["s: d hostPID: gpufleet false, upstream true"]


def test_scenarios_restrict_an_entry():
    ours = daemonset_views([view(env=[{"name": "A", "value": "1"}])], {})
    diffs = differences("s", ours, daemonset_views([view()], {}))
    assert compare(diffs, {"differences": [dict(ENTRY, scenarios=["other"])]}) == (diffs, ["d/c env A"])
