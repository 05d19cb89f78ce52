"""Provision stage for real: ansible-playbook on every example inventory in render mode; the
rendered provisioning objects and example workloads are schema-checked (kubernetes-validate for
core objects, the npm CRD schemas for Karpenter and ComputeClass, the documented NAP fields for
the GKE file). No cloud API or cluster exists here: the gcloud step is exercised with a stand-in
executable that records its arguments."""
import json
import os
import re
import stat

import pytest
import yaml

from crd_schema import assert_crs_valid
from k8s_schema import assert_valid
from nap_schema import check_nap
from render_cache import rendered_site
from ansible_run import recap, run_site

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORE_APIS = ("v1", "apps/v1", "batch/v1", "node.k8s.io/v1", "scheduling.k8s.io/v1", "rbac.authorization.k8s.io/v1")
CR_APIS = ("karpenter.sh/v1", "karpenter.sh/v1alpha1", "karpenter.k8s.aws/v1", "cloud.google.com/v1")

# inventory -> provision components (directories under build/<inv>/provision) it must render
EXPECTED = {
    "eks": {"karpenter", "karpenter-migrated/legacy-gpu-provisioner", "examples"},
    "gke": {"gke", "compute-classes", "examples"},
    "gke-autopilot": {"compute-classes", "examples"},
    "example": {"nodes", "examples"},
    "k3s": {"nodes", "examples"},
    "kubeadm-operator": {"nodes", "examples"},
}


def provision_files(build):
    out = {}
    base = os.path.join(build, "provision")
    for dirpath, _dirs, files in os.walk(base):
        for name in files:
            if name.endswith(".yaml"):
                out.setdefault(os.path.relpath(dirpath, base), []).append(os.path.join(dirpath, name))
    return out


def load(path):
    with open(path) as handle:
        return [d for d in yaml.safe_load_all(handle) if d]


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def rendered(request, tmp_path_factory):
    inv = request.param
    rc, out, build = rendered_site(tmp_path_factory, inventory="inventories/" + inv)
    assert rc == 0, out[-3000:]
    return inv, str(build), out


def test_renders_schema_valid_provisioning_objects_and_examples(rendered):
    inv, build, _out = rendered
    files = provision_files(build)
    assert set(files) == EXPECTED[inv]
    crs = []
    for component, paths in files.items():
        for path in paths:
            for obj in load(path):
                if component == "gke":
                    assert check_nap(obj) == [], path
                elif obj["apiVersion"] in CR_APIS:
                    crs.append(obj)
                else:
                    assert obj["apiVersion"] in CORE_APIS, path
                    assert_valid(obj)
    if crs:
        assert_crs_valid(crs)
    jobs = [o for p in files["examples"] for o in load(p) if o["kind"] == "Job"]
    assert len(jobs) == len(yaml.safe_load(open(os.path.join(ROOT, "inventories", inv, "group_vars", "all",
                                                             "gpufleet.yml")))["gpufleet_gpu_pools"])


# A second run into the same build changing nothing (provision/ included) is checked for every
# inventory by test_addons_render.test_rerun_is_byte_identical_and_changes_nothing.


def test_platform_specific_content(rendered):
    inv, build, out = rendered
    flat = re.sub(r"\s+", " ", out)
    if inv == "gke-autopilot":
        assert "GKE Autopilot: Google creates and manages the GPU nodes" in flat
        assert "gpufleet renders workload-side placement only" in flat
    if inv == "eks":
        classes = [o for p in provision_files(build)["karpenter"] for o in load(p) if o["kind"] == "EC2NodeClass"]
        assert classes and all(t.get("ssmParameter", "").endswith("/nvidia/recommended/image_id")
                               for c in classes for t in c["spec"]["amiSelectorTerms"])
        notes = open(os.path.join(build, "provision", "karpenter-migrated", "legacy-gpu-provisioner",
                                  "MIGRATION.md")).read()
        assert "ttlSecondsAfterEmpty: 30 -> disruption {consolidationPolicy: WhenEmpty, consolidateAfter: 30s}" in notes
    if inv == "gke":
        assert "Render mode, not run: gcloud container clusters update research --enable-autoprovisioning" in flat
        job = load(os.path.join(build, "provision", "examples", "01-job-gpu-example-train-a100.yaml"))[0]
        terms = job["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"]
        assert [(t["key"], t["values"]) for t in terms] == [
            ("cloud.google.com/machine-family", ["a2"]), ("cloud.google.com/gke-accelerator", ["nvidia-tesla-a100"]),
            ("cloud.google.com/gke-spot", ["true"])]
    if inv in ("example", "k3s"):
        for path in provision_files(build)["nodes"]:
            node = load(path)[0]
            assert node["metadata"]["labels"]["nvidia.com/device-plugin.config"] == \
                node["metadata"]["labels"]["gpufleet.io/pool"]


@pytest.mark.parametrize("inv,extra,fragment", [
    ("gke", {"gpufleet_gpu_pools": [{"name": "p", "gpu_type": "a10g", "zones": ["us-central1-a"], "max_nodes": 1}]},
     "gpufleet_gpu_pools[0].gpu_type: 'a10g' is not offered on GKE"),
    ("gke-autopilot", {"gpu_pools_gke_nap": "enabled"}, "gpu_pools_gke_nap: Autopilot has no node auto-provisioning"),
    ("eks", {"gpu_pools_karpenter_migrate_files": [os.path.join(ROOT, "tests/fixtures/karpenter/not-a-provisioner.yaml")]},
     "gpu_pools_karpenter_migrate_files[0]:"),
    ("k3s", {"gpufleet_gpu_pools": [{"name": "p", "gpu_type": "t4", "capacity_types": ["spot"],
                                     "node_group": "gpu_pool_edge_t4"}]},
     "gpufleet_gpu_pools[0].capacity_types: ['spot']: k3s has no spot capacity"),
])
def test_bad_pool_input_fails_in_preflight(tmp_path, inv, extra, fragment):
    build = tmp_path / inv
    rc, out = run_site(str(build), "-e", json.dumps(extra), inventory="inventories/" + inv)
    assert rc != 0
    assert fragment in re.sub(r"\s+", " ", out), out[-3000:]
    assert not build.exists()


def test_gke_class_without_a_known_version_keeps_sharing_in_the_pod_selectors(tmp_path):
    """gpu_pools_gke_version empty (unknown): no gpuSharing in the ComputeClass, the Job's GKE sharing
    selectors unchanged, and the provision output says why."""
    build = tmp_path / "gke"
    rc, out = run_site(str(build), "-e", json.dumps({"gpu_pools_gke_version": ""}), playbook="playbooks/provision.yml",
                       inventory="inventories/gke")
    assert rc == 0, out[-3000:]
    classes = {o["metadata"]["name"]: o for p in provision_files(str(build))["compute-classes"] for o in load(p)}
    assert [p["gpu"] for p in classes["infer-l4"]["spec"]["priorities"]] == [{"type": "nvidia-l4", "count": 1}]
    assert_crs_valid(list(classes.values()))
    assert _examples(str(build))["infer-l4"]["nodeSelector"] == {
        "cloud.google.com/compute-class": "infer-l4", "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
        "cloud.google.com/gke-max-shared-clients-per-gpu": "2"}
    assert "infer-l4: no gpuSharing in the ComputeClass (gpu_pools_gke_version is unset" in re.sub(r"\s+", " ", out)


def test_check_mode_on_a_fresh_gke_dir_writes_nothing(tmp_path):
    build = tmp_path / "gke"
    rc, out = run_site(str(build), "--check", "--diff", inventory="inventories/gke")
    assert rc == 0, out[-3000:]
    assert not build.exists()


def test_apply_mode_runs_gcloud_once_per_config_change(tmp_path, control_plane):
    """gpufleet_apply: true on GKE Standard, provision stage only, with a stand-in gcloud that
    records its argv (no Google Cloud API here). The pool has no compute_class; the stage still reads
    the cluster (the real test control plane) to prune ComputeClasses an earlier run applied."""
    record = tmp_path / "gcloud-calls"
    fake = tmp_path / "gcloud"
    fake.write_text("#!/bin/sh\necho \"$*\" >> %s\n" % record)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    build = tmp_path / "gke"
    pools = [{"name": "train-a100", "gpu_type": "a100-40gb", "gpus_per_node": 2, "capacity_types": ["spot"],
              "zones": ["us-central1-a", "us-central1-b"], "max_nodes": 8}]
    extra = json.dumps({"gpufleet_apply": True, "gpu_pools_gcloud_command": str(fake), "gpufleet_gpu_pools": pools,
                        "gpufleet_k8s_kubeconfig": control_plane.kubeconfig})
    nap = build / "provision" / "gke" / "autoprovisioning.yaml"

    rc, out = run_site(str(build), "--check", "-e", extra, playbook="playbooks/provision.yml", inventory="inventories/gke")
    assert rc == 0, out[-3000:]
    assert not record.exists()

    rc, out = run_site(str(build), "-e", extra, playbook="playbooks/provision.yml", inventory="inventories/gke")
    assert rc == 0, out[-3000:]
    assert record.read_text().splitlines() == [
        "container clusters update research --enable-autoprovisioning --autoprovisioning-config-file=%s "
        "--location=us-central1 --quiet" % nap]

    rc, out = run_site(str(build), "-e", extra, playbook="playbooks/provision.yml", inventory="inventories/gke")
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]
    assert len(record.read_text().splitlines()) == 1

    pools[0]["max_nodes"] = 4
    extra = json.dumps({"gpufleet_apply": True, "gpu_pools_gcloud_command": str(fake), "gpufleet_gpu_pools": pools,
                        "gpufleet_k8s_kubeconfig": control_plane.kubeconfig})
    rc, out = run_site(str(build), "-e", extra, playbook="playbooks/provision.yml", inventory="inventories/gke")
    assert rc == 0, out[-3000:]
    assert len(record.read_text().splitlines()) == 2
    assert "maximum: 8\n  minimum: 0\n  resourceType: nvidia-tesla-a100" in nap.read_text()


def test_migration_playbook_check_real_rerun_and_bad_file(tmp_path):
    src = os.path.join(ROOT, "tests", "fixtures", "karpenter", "v1alpha5-gpu-provisioner.yaml")
    dest = tmp_path / "v1"
    args = ["-e", "karpenter_migrate_src=%s" % src, "-e", "karpenter_migrate_dest=%s" % dest,
            "-e", "karpenter_migrate_cluster_name=ml-prod"]
    rc, out = run_site(str(tmp_path / "unused"), "--check", *args, playbook="playbooks/karpenter_migrate.yml")
    assert rc == 0 and recap(out)["changed"] == 1, out[-3000:]
    assert not dest.exists()
    rc, out = run_site(str(tmp_path / "unused"), *args, playbook="playbooks/karpenter_migrate.yml")
    assert rc == 0 and recap(out)["changed"] == 1, out[-3000:]
    assert sorted(os.listdir(dest)) == ["00-ec2nodeclass-gpu.yaml", "01-nodepool-gpu.yaml", "MIGRATION.md"]
    assert_crs_valid([o for name in sorted(os.listdir(dest)) if name.endswith(".yaml") for o in load(dest / name)])
    rc, out = run_site(str(tmp_path / "unused"), *args, playbook="playbooks/karpenter_migrate.yml")
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]
    bad = os.path.join(ROOT, "tests", "fixtures", "karpenter", "not-a-provisioner.yaml")
    rc, out = run_site(str(tmp_path / "unused"), "-e", "karpenter_migrate_src=%s" % bad,
                       playbook="playbooks/karpenter_migrate.yml")
    assert rc != 0 and "not a Provisioner" in out


def _examples(build):
    out = {}
    for path in provision_files(build)["examples"]:
        for obj in load(path):
            if obj["kind"] == "Job":
                out[obj["metadata"]["labels"]["gpufleet.io/pool"]] = obj["spec"]["template"]["spec"]
    return out


def gpu_limits(spec):
    """The device resources a Job's container asks for (the example Jobs also carry CPU and memory limits since
    they run under the restricted Pod Security profile)."""
    limits = spec["containers"][0]["resources"]["limits"]
    assert {"cpu", "memory"} <= set(limits), limits
    return {k: v for k, v in limits.items() if k.startswith("nvidia.com/")}


def test_sharing_end_to_end_placement_asks_for_what_the_node_advertises(rendered):
    """Issue 14: MIG mixed partitioned by the operator from gpufleet's node label, and GKE's own
    sharing labels; the example Job of each pool asks for exactly the resource the pool's nodes
    will advertise (the MIG manager / GKE / the device plugin themselves cannot run here)."""
    inv, build, _out = rendered
    jobs = _examples(build)
    if inv == "kubeadm-operator":
        nodes = {}
        for path in provision_files(build)["nodes"]:
            for node in load(path):
                nodes[node["metadata"]["name"]] = node["metadata"]["labels"]
        mig_nodes = [n for n, labels in nodes.items() if labels["gpufleet.io/pool"] == "mig-h100"]
        assert len(mig_nodes) == 2
        assert all(nodes[n]["nvidia.com/mig.config"] == "all-1g.10gb" for n in mig_nodes)
        assert not any("nvidia.com/mig.config" in labels for n, labels in nodes.items() if n not in mig_nodes)
        with open(os.path.join(build, "cluster", "gpu-operator", "gpu-operator-values.yaml")) as handle:
            values = yaml.safe_load(handle)
        assert values["migManager"]["enabled"] is True and values["mig"]["strategy"] == "mixed"
        plugin = {name: yaml.safe_load(text) for name, text in values["devicePlugin"]["config"]["data"].items()}
        assert plugin["mig-h100"]["flags"]["migStrategy"] == "mixed"
        assert plugin["share-l40s"]["sharing"]["timeSlicing"]["renameByDefault"] is True
        # mixed strategy + all-1g.10gb => the node advertises nvidia.com/mig-1g.10gb; time-slicing with
        # renameByDefault => nvidia.com/gpu.shared. nvidia is the default runtime: no runtimeClassName.
        assert gpu_limits(jobs["mig-h100"]) == {"nvidia.com/mig-1g.10gb": 1}
        assert gpu_limits(jobs["share-l40s"]) == {"nvidia.com/gpu.shared": 1}
        assert not any("runtimeClassName" in spec for spec in jobs.values())
    if inv == "gke":
        mig = jobs["mig-a100"]
        terms = {t["key"]: t["values"] for t in mig["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"]}
        assert terms["cloud.google.com/gke-gpu-partition-size"] == ["1g.5gb"]
        assert gpu_limits(mig) == {"nvidia.com/gpu": 1}
        shared = jobs["infer-l4"]
        assert shared["nodeSelector"] == {"cloud.google.com/compute-class": "infer-l4",
                                          "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
                                          "cloud.google.com/gke-max-shared-clients-per-gpu": "2"}
        assert gpu_limits(shared) == {"nvidia.com/gpu": 1}
        # gpu_pools_gke_version 1.35.2-gke.1485000 (inventories/gke): the class itself asks for the
        # same sharing the Job selects (GKE labels the class's shared nodes so)
        classes = {o["metadata"]["name"]: o for p in provision_files(build)["compute-classes"] for o in load(p)}
        assert [p["gpu"] for p in classes["infer-l4"]["spec"]["priorities"]] == [
            {"type": "nvidia-l4", "count": 1, "gpuSharing": {"sharingStrategy": "TIME_SHARING",
                                                             "maxSharedClientsPerGPU": 2}}]
        with open(os.path.join(build, "plan.md")) as handle:
            plan_md = handle.read()
        assert "## GPU sharing of the ComputeClass pools\n- infer-l4: ComputeClass priorities[].gpu.gpuSharing " \
               "{maxSharedClientsPerGPU: 2, sharingStrategy: TIME_SHARING} (GKE 1.35.2-gke.1485000" in plan_md
        assert "GPU sharing: infer-l4: ComputeClass priorities[].gpu.gpuSharing" in re.sub(r"\s+", " ", _out)


def test_a_dropped_provisioner_file_leaves_no_migrated_folder_and_its_notes_reach_the_console(tmp_path):
    """Issue 39: a Karpenter file dropped from gpu_pools_karpenter_migrate_files left its migrated folder behind,
    and the migration's needs-input notes never reached the site.yml console (only MIGRATION.md)."""
    build = tmp_path / "b"
    tricky = os.path.join(ROOT, "tests/fixtures/karpenter/v1alpha5-tricky-inputs.yaml")
    rc, out = run_site(str(build), "-e", json.dumps({"gpu_pools_karpenter_migrate_files": [tricky]}),
                       playbook="playbooks/provision.yml", inventory="inventories/eks")
    assert rc == 0, out[-3000:]
    migrated = build / "provision" / "karpenter-migrated"
    assert sorted(os.listdir(str(migrated))) == ["v1alpha5-tricky-inputs"]
    assert "v1alpha5-tricky-inputs.yaml: needs your input:" in out, out[-3000:]
    rc, out = run_site(str(build), "-e", json.dumps({"gpu_pools_karpenter_migrate_files": []}),
                       playbook="playbooks/provision.yml", inventory="inventories/eks")
    assert rc == 0, out[-3000:]
    assert not migrated.exists() or os.listdir(str(migrated)) == []
    assert recap(out)["changed"] >= 1
    rc, out = run_site(str(build), "-e", json.dumps({"gpu_pools_karpenter_migrate_files": []}),
                       playbook="playbooks/provision.yml", inventory="inventories/eks")
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]
