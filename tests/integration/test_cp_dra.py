"""Pools with allocation: dra on the real control plane (tests/helpers/controlplane.py; kube-apiserver, kube-scheduler
and kube-controller-manager v1.37, KWOK for the kubelets).

The DRA driver cannot run here (no GPU, no kubelet): tests/helpers/dra_standin.py, a labelled STAND-IN, publishes the
ResourceSlices its kubelet plugin would publish for the simulated GPUs. The DeviceClasses are the real ones: NVIDIA's
chart (../shared/charts, tests/helpers/dra_chart.py) rendered by the real helm with gpufleet's values; the module
skips, naming that folder, where it is absent. Everything gpufleet renders is the real output of module_utils (the
pools' claim templates, the smoke Jobs, the placement fragment, the device plugin DaemonSet, the pools' node labels
and taints), and the real scheduler allocates the claims. resource.k8s.io/v1 is served by kube-apiserver without any --runtime-config or feature
gate (GA in 1.34): the control plane here starts with none.
"""
import json
import os
import re

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.model import dra
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import dra_driver
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2 import smoke
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.device_plugin import device_plugin_objects
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.placement import placement
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.selfmanaged import pool_node_labels, pool_taints
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pools
from cp_nodes import cluster_inventory
from controlplane import ApiError
from dra_chart import render
from dra_standin import slice_for
from ansible_run import ROOT, run_site

NS = "dra-test"
POOL_INPUTS = {p["name"]: p for p in [
    {"name": "train-h100", "gpu_type": "h100-80gb", "gpus_per_node": 2, "allocation": "dra",
     "dra": {"product_name": "NVIDIA H100 80GB HBM3", "min_memory_gb": 79}},
    {"name": "big-h100", "gpu_type": "h100-80gb", "gpus_per_node": 4, "allocation": "dra"},
    {"name": "mig-h100", "gpu_type": "h100-80gb", "gpus_per_node": 1, "allocation": "dra",
     "sharing": {"mode": "mig", "mig_profile": "1g.10gb", "mig_preconfigured": True}},
    {"name": "ts-l4", "gpu_type": "l4", "gpus_per_node": 1, "allocation": "dra",
     "sharing": {"mode": "time-slicing"}, "dra": {"time_slice_interval": "Long"}},
    {"name": "plugin-l4", "gpu_type": "l4", "gpus_per_node": 2},
]}
POOLS = normalize_pools(list(POOL_INPUTS.values()))
BY_NAME = {p["name"]: p for p in POOLS}
# node -> (pool, ResourceSlice or None, nvidia.com/gpu the device plugin would advertise)
NODES = {
    "h100-01": ("train-h100", slice_for("h100-01", "h100", 2), None),
    # big-h100 asks for 4 GPUs per pod; its only node has 2: the scheduler must refuse
    "h100-02": ("big-h100", slice_for("h100-02", "h100", 2), None),
    "h100-mig-01": ("mig-h100", slice_for("h100-mig-01", "h100", 1, mig={"1g.10gb": 7}), None),
    "l4-dra-01": ("ts-l4", slice_for("l4-dra-01", "l4", 1), None),
    "l4-plugin-01": ("plugin-l4", None, 2),
}


def _apply(cp, obj):
    return cp.apply(cp.object_path(obj), obj)


@pytest.fixture(scope="module")
def cluster(control_plane, tmp_path_factory):
    cp = control_plane
    values = dra_driver.driver_values({"platform": "kubeadm", "addons_mode": "standalone", "pools": POOLS}, {})
    classes = [o for o in render(pytest, values, tmp_path_factory.mktemp("dra-chart")) if o["kind"] == "DeviceClass"]
    assert sorted(c["metadata"]["name"] for c in classes) == ["gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"]
    for klass in classes:
        _apply(cp, klass)
    for node, (pool, slice_, gpus) in NODES.items():
        p = BY_NAME[pool]
        cp.add_node(node, gpu=gpus, labels=pool_node_labels(p),
                    taints=[dict(t) for t in pool_taints(p)])
        if slice_:
            _apply(cp, slice_)
    _apply(cp, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    for pool in POOLS:
        for obj in dra.claim_objects(pool, NS):
            _apply(cp, obj)
    return cp


def _pod(cp, name, pool, gpus=None):
    frag = placement(pool, "kubeadm", gpus=gpus)
    spec = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "cuda:stand-in", "resources": frag["resources"]}],
            "tolerations": frag["tolerations"], "affinity": frag["affinity"]}
    if "resourceClaims" in frag:
        spec["resourceClaims"] = frag["resourceClaims"]
    cp.create("/api/v1/namespaces/%s/pods" % NS, {"apiVersion": "v1", "kind": "Pod",
                                                   "metadata": {"name": name}, "spec": spec})


def _running(cp, name):
    pod = cp.get("/api/v1/namespaces/%s/pods/%s" % (NS, name))
    return pod if pod["status"].get("phase") == "Running" else None


def _claim_of(cp, pod):
    status = pod["status"]["resourceClaimStatuses"][0]
    name = status.get("resourceClaimName") or pod["spec"]["resourceClaims"][0].get("resourceClaimName")
    return cp.get("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s" % (NS, name))


def _slice_devices(cp, node):
    return {d["name"]: d for s in cp.items("/apis/resource.k8s.io/v1/resourceslices")
            if s["spec"].get("nodeName") == node for d in s["spec"]["devices"]}


def test_the_api_server_serves_resource_k8s_io_v1_by_default(cluster):
    group = next(g for g in cluster.get("/apis")["groups"] if g["name"] == "resource.k8s.io")
    assert group["preferredVersion"]["version"] == "v1"
    kinds = {r["kind"] for r in cluster.get("/apis/resource.k8s.io/v1")["resources"]}
    assert {"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"} <= kinds


def test_the_rendered_claim_templates_are_accepted(cluster):
    names = sorted(t["metadata"]["name"] for t in
                   cluster.items("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaimtemplates" % NS))
    assert names == ["big-h100-gpu", "big-h100-gpus-4", "mig-h100-mig-1g.10gb", "train-h100-gpu", "train-h100-gpus-2",
                     "ts-l4-gpu"]
    shared = cluster.get("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/ts-l4-shared-gpu" % NS)
    assert shared["spec"]["devices"]["config"][0]["opaque"]["parameters"]["sharing"]["strategy"] == "TimeSlicing"


def test_the_scheduler_allocates_a_node_worth_of_gpus_matching_the_cel_selectors(cluster):
    cp = cluster
    _pod(cp, "train", BY_NAME["train-h100"])  # default: a node's worth (2 GPUs)
    pod = cp.wait(lambda: _running(cp, "train"), 60, "the train pod Running")
    assert pod["spec"]["nodeName"] == "h100-01"
    claim = _claim_of(cp, pod)
    results = claim["status"]["allocation"]["devices"]["results"]
    assert sorted(r["device"] for r in results) == ["gpu-0", "gpu-1"]
    assert {(r["driver"], r["pool"]) for r in results} == {("gpu.nvidia.com", "h100-01")}
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod["metadata"]["uid"]]


def test_a_mig_claim_gets_one_instance_of_the_pools_profile(cluster):
    cp = cluster
    _pod(cp, "mig", BY_NAME["mig-h100"])
    pod = cp.wait(lambda: _running(cp, "mig"), 60, "the MIG pod Running")
    (result,) = _claim_of(cp, pod)["status"]["allocation"]["devices"]["results"]
    device = _slice_devices(cp, "h100-mig-01")[result["device"]]
    assert device["attributes"]["type"]["string"] == "mig"
    assert device["attributes"]["profile"]["string"] == "1g.10gb"


def test_pods_of_a_time_sliced_pool_share_the_one_gpu_of_its_shared_claim(cluster):
    cp = cluster
    for name in ("ts-a", "ts-b"):
        _pod(cp, name, BY_NAME["ts-l4"])
    pods = [cp.wait(lambda n=n: _running(cp, n), 60, "%s Running" % n) for n in ("ts-a", "ts-b")]
    claim = cp.get("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/ts-l4-shared-gpu" % NS)
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu-0"]
    assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == ["ts-a", "ts-b"]
    assert {p["spec"]["nodeName"] for p in pods} == {"l4-dra-01"}


def test_the_smoke_jobs_of_the_dra_pools_complete(cluster):
    cp = cluster
    # the pods above hold the train pool's GPUs: their claims are deallocated when they go
    for name in ("train", "mig", "ts-a", "ts-b"):
        cp.delete("/api/v1/namespaces/%s/pods/%s" % (NS, name))
    cp.wait(lambda: not any(c["metadata"]["name"].startswith(("train-", "mig-"))
                            for c in cp.items("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims" % NS)),
            60, "the pods' claims deleted")
    pools = [BY_NAME[n] for n in ("train-h100", "mig-h100", "ts-l4")]
    for pool in pools:
        job = smoke.smoke_job(pool, "kubeadm", "cuda:stand-in", NS, 120)
        assert job["spec"]["template"]["spec"]["resourceClaims"][0]["name"] == "gpu"
        cp.create("/apis/batch/v1/namespaces/%s/jobs" % NS, job)

    seen = {}

    def verdicts():
        v = smoke.job_verdicts(cp.items("/apis/batch/v1/namespaces/%s/jobs" % NS),
                               cp.items("/api/v1/namespaces/%s/pods" % NS), [])
        seen.update(v)
        return v if smoke.verdicts_done(v) else None
    try:
        done = cp.wait(verdicts, 90, "the smoke Jobs")
    except TimeoutError:
        raise AssertionError(seen)
    assert done == {
        "gpufleet-smoke-mig-h100": "passed", "gpufleet-smoke-train-h100": "passed", "gpufleet-smoke-ts-l4": "passed"}


def test_more_gpus_than_a_node_has_is_reported_with_the_schedulers_reason(cluster):
    cp = cluster
    job = smoke.smoke_job(BY_NAME["big-h100"], "kubeadm", "cuda:stand-in", NS, 120)
    # the pool's node-worth template (4 GPUs); the node publishes 2
    job["metadata"]["name"] = "gpufleet-smoke-big-h100"
    job["spec"]["template"]["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "big-h100-gpus-4"}]
    cp.create("/apis/batch/v1/namespaces/%s/jobs" % NS, job)

    def reason():
        v = smoke.job_verdicts([cp.get("/apis/batch/v1/namespaces/%s/jobs/%s" % (NS, job["metadata"]["name"]))],
                               cp.items("/api/v1/namespaces/%s/pods" % NS), [])
        text = v[job["metadata"]["name"]]
        return text if "Unschedulable" in text else None
    text = smoke.final_verdicts({"j": cp.wait(reason, 60, "the scheduler's verdict")})["j"]
    # named as a claim the scheduler cannot allocate, with the scheduler's own words
    assert text.startswith("failed: did not finish in time, Pending, ResourceClaim "), text
    assert "(from template big-h100-gpus-4) cannot be allocated" in text, text
    assert "the scheduler says Unschedulable:" in text and "cannot allocate all claims" in text, text


def test_a_plain_nvidia_com_gpu_pod_stays_off_dra_nodes_unless_it_tolerates_them(cluster):
    """Issue 38, defect 10. The chart's gpu.nvidia.com DeviceClass carries extendedResourceName nvidia.com/gpu, and
    the 1.37 scheduler (DRAExtendedResource, GA) then gives an nvidia.com/gpu request a DRA GPU on a node that does
    not advertise the resource. A pod written for the device-plugin pools (it tolerates their nvidia.com/gpu taint)
    asking for more GPUs than any device-plugin node has must stay Pending, not land on a DRA node; the same pod with
    the DRA pools' toleration does land there, so the taint is what keeps it off."""
    cp = cluster
    klass = cp.get("/apis/resource.k8s.io/v1/deviceclasses/gpu.nvidia.com")
    assert klass["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    # a spare DRA node with 4 GPUs (the other DRA nodes' GPUs are claimed by the tests above)
    spare = dict(BY_NAME["big-h100"], name="spare-h100")
    cp.add_node("h100-spare", labels=pool_node_labels(spare), taints=[dict(t) for t in pool_taints(spare)])
    _apply(cp, slice_for("h100-spare", "h100", 4))

    def plain(name, tolerations):
        cp.create("/api/v1/namespaces/%s/pods" % NS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                  "spec": {"restartPolicy": "Never", "tolerations": tolerations, "containers": [
                      {"name": "c", "image": "cuda:stand-in", "resources": {"limits": {"nvidia.com/gpu": "3"}}}]}})
    classic = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    plain("classic", classic)

    def refused():
        pod = cp.get("/api/v1/namespaces/%s/pods/classic" % NS)
        cond = [c for c in pod["status"].get("conditions") or [] if c["type"] == "PodScheduled"]
        return cond[0]["message"] if cond and cond[0]["status"] == "False" else None
    message = cp.wait(refused, 60, "the scheduler's verdict on the classic pod")
    # every DRA node (the only nodes whose taint it does not tolerate) refused it for the taint
    dra_nodes = sum(1 for n in cp.items("/api/v1/nodes")
                    if (n["metadata"].get("labels") or {}).get("gpufleet.io/gpu-allocation") == "dra")
    assert "%d node(s) had untolerated taint" % dra_nodes in message, message
    assert not cp.get("/api/v1/namespaces/%s/pods/classic" % NS)["spec"].get("nodeName")
    plain("tolerant", classic + [{"key": "gpufleet.io/gpu-allocation", "operator": "Exists", "effect": "NoSchedule"}])
    pod = cp.wait(lambda: _running(cp, "tolerant"), 60, "the tolerant pod Running")
    assert pod["spec"]["nodeName"] == "h100-spare"
    cp.delete("/api/v1/namespaces/%s/pods/tolerant" % NS)
    cp.delete("/api/v1/namespaces/%s/pods/classic" % NS)


def test_mixed_cluster_no_gpu_is_advertised_twice(cluster):
    """The device plugin DaemonSet gpufleet renders for this pool set runs on the device-plugin pool's node only;
    the DRA pools' nodes have ResourceSlices and no nvidia.com/gpu, the plugin pool's node the reverse."""
    cp = cluster
    plan = {"platform": "kubeadm", "addons_mode": "standalone", "pools": POOLS}
    for obj in device_plugin_objects(plan, {}):
        _apply(cp, obj)

    def plugin_nodes():
        pods = [p for p in cp.items("/api/v1/namespaces/nvidia-device-plugin/pods")
                if p["metadata"]["name"].startswith("nvidia-device-plugin-") and "mps" not in p["metadata"]["name"]]
        nodes = sorted(p["spec"].get("nodeName") or "" for p in pods)
        return nodes if nodes and all(nodes) else None
    assert cp.wait(plugin_nodes, 60, "device plugin pods scheduled") == ["l4-plugin-01"]
    for node in NODES:
        has_slice = bool(_slice_devices(cp, node))
        advertised = "nvidia.com/gpu" in (cp.node(node)["status"].get("allocatable") or {})
        plugin_here = node == "l4-plugin-01"
        assert (has_slice, advertised) == (not plugin_here, plugin_here), node


def _inventory(path, pools):
    """An inventory of the module's nodes for ``pools`` (names of POOLS), one group per pool."""
    spec = []
    for name in pools:
        pool = {k: v for k, v in POOL_INPUTS[name].items()}
        spec.append(dict(pool, node_group="gpu_pool_" + name.replace("-", "_"), min_nodes=1))
    groups = {}
    for i, (node, (pool, _s, _g)) in enumerate(sorted(NODES.items())):
        if pool in pools:
            groups["gpu_pool_" + pool.replace("-", "_")] = {"h%d" % i: {"gpufleet_node_name": node}}
    return cluster_inventory(path, {
        "gpufleet_platform": "kubeadm", "gpufleet_cluster_name": "t", "gpufleet_addons_mode": "standalone",
        "gpufleet_kubernetes_version": "1.37", "gpufleet_gpu_pools": spec}, groups)


def test_the_validate_stage_runs_the_dra_smoke_jobs_and_judges_nodes_by_their_resource_slices(cluster, tmp_path):
    """playbooks/validate.yml in apply mode: the DRA pools' claims are created in the validation namespace, their
    smoke Jobs (claims) and the device-plugin pool's (nvidia.com/gpu) complete, and each DRA node is judged by the
    devices the stand-in publishes; a pool whose nodes publish fewer GPUs than gpus_per_node fails, naming it."""
    cp = cluster
    cp.delete("/api/v1/namespaces/%s" % NS)  # the tests above: their shared claim holds the L4's GPU
    cp.wait(lambda: not cp.exists("/api/v1/namespaces/%s" % NS), 120, "namespace %s gone" % NS)
    extra = ["-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
             "-e", '{"gpu_validate_timeout": 120, "gpu_validate_metrics": false}']
    inv = _inventory(tmp_path / "ok", ["train-h100", "mig-h100", "ts-l4", "plugin-l4"])
    rc, out = run_site(tmp_path / "b1", *extra, playbook="playbooks/validate.yml", inventory=inv)
    assert rc == 0, out[-5000:]
    text = " ".join(out.split())
    for node, what in (("h100-01", "gpu=2"), ("h100-mig-01", "mig 1g.10gb=7"), ("l4-dra-01", "gpu=1"),
                       ("l4-plugin-01", "nvidia.com/gpu=2")):
        assert re.search(r"%s \S+ \S*%s .* passed" % (node, re.escape(what)), text), (node, text[-4000:])
    assert not cp.exists("/api/v1/namespaces/gpufleet-validate")

    inv = _inventory(tmp_path / "short", ["big-h100"])
    rc, out = run_site(tmp_path / "b2", *extra, playbook="playbooks/validate.yml", inventory=inv)
    assert rc == 2, out[-3000:]
    assert "h100-02 (pool big-h100): gpu devices in ResourceSlices of gpu.nvidia.com: 2, expected 4" in \
        " ".join(out.split()), out[-3000:]


def test_the_report_counts_dra_devices_and_claim_allocations_from_the_cluster(cluster, tmp_path):
    """playbooks/report.yml in apply mode reads ResourceSlices and ResourceClaims: the DRA pool's capacity is the
    GPUs the stand-in publishes, its requested units the devices the scheduler allocated to a running pod's claim."""
    cp = cluster
    if not cp.exists("/api/v1/namespaces/%s" % NS):
        _apply(cp, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    for obj in dra.claim_objects(BY_NAME["train-h100"], NS):
        _apply(cp, obj)
    _pod(cp, "train-report", BY_NAME["train-h100"], gpus=1)
    cp.wait(lambda: _running(cp, "train-report"), 60, "train-report Running")
    inv = _inventory(tmp_path / "inv", ["train-h100", "plugin-l4"])
    rc, out = run_site(tmp_path / "b", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                       playbook="playbooks/report.yml", inventory=inv)
    assert rc == 0, out[-4000:]
    with open(str(tmp_path / "b" / "report" / "fleet.json")) as handle:
        rows = {r["pool"]: r for r in json.load(handle)["pools"]}
    assert (rows["train-h100"]["capacity"], rows["train-h100"]["requested"]) == (2, 1)
    assert rows["plugin-l4"]["capacity"] == 2


# ComputeDomains: the CRD is the real file of NVIDIA's chart, recorded in tests/fixtures/dra-driver from the
# newest upstream ref readable here (see SOURCES.md there); no controller runs here, so no channel template appears.
CD_POOL = normalize_pools([{"name": "nvl-b200", "gpu_type": "b200", "gpus_per_node": 4, "allocation": "dra",
                            "dra": {"compute_domain": {"num_nodes": 2}}}])[0]
CD_PATH = "/apis/resource.nvidia.com/v1beta1/namespaces/%s/computedomains" % NS


def test_a_pools_compute_domain_is_accepted_by_the_drivers_crd_and_its_channel_claimed_by_a_pod(cluster):
    cp = cluster
    cp.install_crds(["resource.nvidia.com_computedomains.yaml"],
                    folder=os.path.join(ROOT, "tests", "fixtures", "dra-driver"))
    objs = dra.claims_for_pools([CD_POOL], [NS])
    domains = [o for o in objs if o["kind"] == "ComputeDomain"]
    assert [d["metadata"]["name"] for d in domains] == ["nvl-b200-compute-domain"]
    for obj in objs:
        if obj["kind"] == "ComputeDomain":
            cp.create(CD_PATH, obj)
        else:
            _apply(cp, obj)
    stored = cp.get(CD_PATH + "/nvl-b200-compute-domain")
    assert stored["spec"] == {"numNodes": 2, "channel": {"allocationMode": "Single",
                                                         "resourceClaimTemplate": {"name": "nvl-b200-compute-domain-channel"}}}

    # the schema is enforced: a value outside its enum, a missing required field, a negative numNodes (optional
    # since v0.4.0, default 0, minimum 0), a changed spec (immutable)
    bad = json.loads(json.dumps(domains[0]))
    bad["metadata"]["name"] = "bad-mode"
    bad["spec"]["channel"]["allocationMode"] = "Many"
    with pytest.raises(ApiError) as err:
        cp.create(CD_PATH, bad)
    assert err.value.code == 422 and "allocationMode" in str(err.value)
    bad["spec"]["channel"]["allocationMode"] = "All"
    del bad["spec"]["channel"]["resourceClaimTemplate"]
    with pytest.raises(ApiError) as err:
        cp.create(CD_PATH, bad)
    assert err.value.code == 422 and "resourceClaimTemplate" in str(err.value)
    bad["spec"]["channel"]["resourceClaimTemplate"] = {"name": "bad-mode-channel"}
    bad["spec"]["numNodes"] = -1
    with pytest.raises(ApiError) as err:
        cp.create(CD_PATH, bad)
    assert err.value.code == 422 and "numNodes" in str(err.value)
    with pytest.raises(ApiError) as err:
        cp.merge_patch(CD_PATH + "/nvl-b200-compute-domain", {"spec": {"numNodes": 3}})
    assert "A computeDomain.spec is immutable" in str(err.value)

    # a pod joining the domain: the pool's GPUs and the channel, as docs/dra.md shows
    gpu_refs, gpu_resources = dra.pod_claims(CD_POOL)
    channel_ref, channel_claim = dra.pod_channel_claims(CD_POOL)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nvl-worker-0"}, "spec": {
        "restartPolicy": "Never", "resourceClaims": gpu_refs + [channel_ref],
        "containers": [{"name": "c", "image": "cuda:stand-in",
                        "resources": {"claims": gpu_resources["claims"] + [channel_claim]}}]}}
    created = cp.create("/api/v1/namespaces/%s/pods" % NS, pod)
    assert {"name": "compute-domain-channel", "resourceClaimTemplateName": "nvl-b200-compute-domain-channel"} in \
        created["spec"]["resourceClaims"]
    cp.delete("/api/v1/namespaces/%s/pods/nvl-worker-0" % NS)
