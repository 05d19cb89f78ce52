"""The whole-tree apply (gpufleet.k8s.k8s_apply_tree) on a real control plane (tests/helpers/controlplane.py):
prune by ApplySet when the inventory drops a pool (EKS: its Karpenter NodePool and EC2NodeClass) or disables an
add-on (dcgm-exporter), `--check --diff` listing exactly those deletions first and the server's dry-run answer
as the diff, an object made by hand with gpufleet's labels but not the set's part-of label left alone, and the
rendered files never carrying the set's label.
"""
import json
import os
import re

import pytest
import yaml

from karpenter import install_aws_crds
from ansible_run import ROOT, flat, manifests, recap, run_site

PART_OF = "applyset.kubernetes.io/part-of"
NODEPOOLS = "/apis/karpenter.sh/v1/nodepools"
CLASSES = "/apis/karpenter.k8s.aws/v1/ec2nodeclasses"


def eks_pools():
    with open(os.path.join(ROOT, "inventories", "eks", "group_vars", "all", "gpufleet.yml")) as handle:
        return yaml.safe_load(handle)["gpufleet_gpu_pools"]


@pytest.fixture(scope="module")
def cp(control_plane):
    install_aws_crds(control_plane)  # Karpenter's CRDs from the AWS provider's Go module (v1.15.3)
    return control_plane


def provision(cp, tmp, pools, *extra):
    varfile = tmp / "pools.json"
    varfile.write_text(json.dumps({"gpufleet_gpu_pools": pools}))
    return run_site(tmp / "build", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                    "-e", "@%s" % varfile, *extra, playbook="playbooks/provision.yml", inventory="inventories/eks")


def names(cp, path):
    return sorted(o["metadata"]["name"] for o in cp.items(path))


def versions(cp):
    return {(p, o["metadata"]["name"]): o["metadata"]["resourceVersion"] for p in (NODEPOOLS, CLASSES)
            for o in cp.items(p)}


def test_dropped_pool_is_pruned_after_check_lists_it_and_a_handmade_lookalike_survives(cp, tmp_path):
    pools = eks_pools()
    assert [p["name"] for p in pools] == ["train-h100", "infer-l4"]
    rc, out = provision(cp, tmp_path, pools)
    assert rc == 0, out[-4000:]
    assert names(cp, NODEPOOLS) == ["gpu-infer-l4", "gpu-train-h100"] or len(cp.items(NODEPOOLS)) == 2, out[-3000:]
    rendered = {o["metadata"]["name"]: o for o in cp.items(NODEPOOLS)}
    for pool in rendered.values():
        assert pool["metadata"]["labels"][PART_OF].startswith("applyset-")
    # the set's label is added at apply time only: the rendered files do not carry it
    for path in manifests(str(tmp_path / "build" / "provision")):
        assert PART_OF not in open(path).read(), path

    # a NodePool made by hand with the labels gpufleet puts on its own, but not in the set
    lookalike = json.loads(json.dumps(next(iter(rendered.values()))))
    for field in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"):
        lookalike["metadata"].pop(field, None)
    lookalike.pop("status", None)
    lookalike["metadata"]["name"] = "handmade"
    del lookalike["metadata"]["labels"][PART_OF]
    assert lookalike["metadata"]["labels"]
    cp.create(NODEPOOLS, lookalike)
    assert re.search(r"ok=\d+\s+changed=0", provision(cp, tmp_path, pools)[1])

    # drop a pool: --check --diff lists exactly its objects as deletions and deletes nothing
    dropped = [name for name in rendered if "train-h100" in name]
    assert dropped
    before = versions(cp)
    rc, out = provision(cp, tmp_path, pools[1:], "--check", "--diff")
    assert rc == 0, out[-4000:]
    listed = sorted(set(re.findall(r"(\w+/[\w.-]+) \(would be deleted\)", out)))
    want = sorted(["NodePool/%s" % n for n in dropped] +
                  ["EC2NodeClass/%s" % o["metadata"]["name"] for o in cp.items(CLASSES)
                   if "train-h100" in o["metadata"]["name"]])
    assert listed == want, out[-4000:]
    # said without --diff too
    assert "check mode: would delete what provision/karpenter applied by gpufleet earlier and no longer rendered" \
        in flat(out), out[-4000:]
    assert "handmade" not in out
    assert versions(cp) == before

    rc, out = provision(cp, tmp_path, pools[1:])
    assert rc == 0, out[-4000:]
    left = names(cp, NODEPOOLS)
    assert "handmade" in left and not [n for n in left if "train-h100" in n], left
    assert not [o for o in cp.items(CLASSES) if "train-h100" in o["metadata"]["name"]]
    # the other pool's objects were not touched
    after = versions(cp)
    assert {k: v for k, v in after.items() if "infer-l4" in k[1]} == \
        {k: v for k, v in before.items() if "infer-l4" in k[1]}
    rc, out = provision(cp, tmp_path, pools[1:])
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]

    # the pool comes back: applied again, as a member
    rc, out = provision(cp, tmp_path, pools)
    assert rc == 0, out[-4000:]
    assert len([n for n in names(cp, NODEPOOLS) if "train-h100" in n]) == len(dropped)


def test_check_diff_is_the_servers_dry_run_answer(cp, tmp_path):
    pools = eks_pools()
    rc, out = provision(cp, tmp_path, pools)
    assert rc == 0, out[-4000:]
    before = versions(cp)
    changed = json.loads(json.dumps(pools))
    changed[1]["weight"] = 7
    rc, out = provision(cp, tmp_path, changed, "--check", "--diff")
    assert rc == 0, out[-4000:]
    text = flat(out)
    # the diff is live against the server's answer: the new weight, and nothing the server moves itself
    assert re.search(r"NodePool/\S*infer-l4\S* \(server dry-run\)", text), out[-4000:]
    assert re.search(r'^-\s+"?weight"?: 50,?$', out, re.M) and re.search(r'^\+\s+"?weight"?: 7,?$', out, re.M), \
        out[-4000:]
    assert "resourceVersion" not in out and "managedFields" not in out
    assert versions(cp) == before
    rc, out = provision(cp, tmp_path, pools, "--check", "--diff")
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]


def test_absent_deletes_the_pools_and_the_set(cp, tmp_path):
    pools = eks_pools()
    rc, out = provision(cp, tmp_path, pools)
    assert rc == 0, out[-4000:]
    rc, out = provision(cp, tmp_path, pools, "-e", "gpu_pools_state=absent")
    assert rc == 0, out[-4000:]
    assert names(cp, NODEPOOLS) == ["handmade"]
    assert not cp.items(CLASSES)
    assert not cp.exists("/api/v1/namespaces/gpufleet-system/secrets/gpufleet-provision-karpenter")


def cluster_stage(cp, tmp, *extra):
    # no ServiceMonitor/PrometheusRule: this cluster serves no Prometheus operator CRDs
    return run_site(tmp / "build", "-e", "gpufleet_apply=true", "-e", "gpufleet_k8s_kubeconfig=%s" % cp.kubeconfig,
                    "-e", "dcgm_exporter_service_monitor=false", *extra, playbook="playbooks/cluster.yml")


def dcgm_objects(cp):
    found = [("DaemonSet", d["metadata"]["name"]) for d in cp.items("/apis/apps/v1/daemonsets")
             if d["metadata"]["name"] == "dcgm-exporter"]
    return found + [("Namespace", n["metadata"]["name"]) for n in cp.items("/api/v1/namespaces")
                    if n["metadata"]["name"] == "nvidia-dcgm-exporter" and not n["metadata"].get("deletionTimestamp")]


def test_disabled_addon_is_pruned_and_the_other_addons_stay(cp, tmp_path):
    rc, out = cluster_stage(cp, tmp_path)
    assert rc == 0, out[-4000:]
    assert dcgm_objects(cp) == [("DaemonSet", "dcgm-exporter"), ("Namespace", "nvidia-dcgm-exporter")]
    plugin = cp.get("/apis/apps/v1/namespaces/nvidia-device-plugin/daemonsets/nvidia-device-plugin")

    rc, out = cluster_stage(cp, tmp_path, "-e", "dcgm_exporter_enabled=false", "--check", "--diff")
    assert rc == 0, out[-4000:]
    listed = set(re.findall(r"(\w+/[\w./-]+) \(would be deleted\)", out))
    assert {"DaemonSet/nvidia-dcgm-exporter/dcgm-exporter", "Namespace/nvidia-dcgm-exporter",
            "Service/nvidia-dcgm-exporter/dcgm-exporter"} <= listed, out[-4000:]
    assert all("dcgm" in name for name in listed), listed
    assert len(dcgm_objects(cp)) == 2

    rc, out = cluster_stage(cp, tmp_path, "-e", "dcgm_exporter_enabled=false")
    assert rc == 0, out[-4000:]
    assert dcgm_objects(cp) == []
    assert cp.get("/apis/apps/v1/namespaces/nvidia-device-plugin/daemonsets/nvidia-device-plugin")["metadata"][
        "resourceVersion"] == plugin["metadata"]["resourceVersion"]
    rc, out = cluster_stage(cp, tmp_path, "-e", "dcgm_exporter_enabled=false")
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]
