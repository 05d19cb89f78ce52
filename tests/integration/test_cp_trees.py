"""Every example inventory's rendered tree, and `kubectl kustomize` of its GitOps tree, accepted by real
API servers at both ends of the supported Kubernetes range (tests/helpers/controlplane.py, apiserver + etcd):
- the newest minor (1.37): server-side apply for real, CRDs installed from ../shared/crds (Karpenter's from the
  AWS provider's Go module, v1.15.3: tests/helpers/karpenter.py);
- the oldest minor EKS or GKE still supports (1.32): the same trees with server-side dry-run.
The GKE ComputeClass CRD in ../shared/crds predates `priorities[].gpu.gpuSharing` (GKE 1.35.2-gke.1485000);
the test adds that field as GKE's reference documents it.
"""
import os
import subprocess

import pytest
import yaml

from controlplane import ApiError, ControlPlane, binary, shared_crds_or_skip
from karpenter import install_aws_crds
from render_cache import rendered_site

INVENTORIES = ["eks", "example", "gke", "gke-autopilot", "k3s", "kubeadm-operator", "openshift"]
CRDS = [
    "cloud.google.com_computeclasses.yaml", "nvidia.com_clusterpolicies.yaml", "nvidia.com_nvidiadrivers.yaml",
    "operators.coreos.com_operatorgroups.yaml", "operators.coreos.com_subscriptions.yaml",
    "nfd.openshift.io_nodefeaturediscoveries.yaml", "nfd.k8s-sigs.io_nodefeaturerules.yaml",
    "monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_podmonitors.yaml",
    "monitoring.coreos.com_prometheusrules.yaml", "argoproj.io_applications.yaml",
    "kustomize.toolkit.fluxcd.io_kustomizations.yaml", "source.toolkit.fluxcd.io_gitrepositories.yaml",
]


def add_gpu_sharing(crd):
    """spec.priorities[].gpu.gpuSharing, as GKE's ComputeClass reference documents it."""
    sharing = {"type": "object", "properties": {
        "sharingStrategy": {"type": "string", "enum": ["TIME_SHARING", "MPS"]},
        "maxSharedClientsPerGPU": {"type": "integer", "minimum": 2, "maximum": 48},
        "gpuPartitionSize": {"type": "string"}}}
    for version in crd["spec"]["versions"]:
        priorities = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["priorities"]
        gpu = priorities["items"]["properties"]["gpu"]
        gpu.setdefault("properties", {})["gpuSharing"] = sharing


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    shared_crds_or_skip(pytest)
    out = {}
    try:
        for build in ("kube", "kube_oldest"):
            cp = ControlPlane(str(tmp_path_factory.mktemp(build)), full=False, apiserver=build)
            out[build] = cp
            cp.start()
            cp.install_crds(CRDS, extend={"cloud.google.com_computeclasses.yaml": add_gpu_sharing})
            install_aws_crds(cp)
        yield out
    finally:
        for cp in out.values():
            cp.stop()


def manifests(build):
    """The objects gpufleet would apply: numbered manifests of the provision and cluster stages (Node
    patches aside: gpufleet writes those to existing Nodes, never creates one)."""
    out = []
    for stage in ("provision", "cluster"):
        for dirpath, _dirs, files in sorted(os.walk(build / stage)):
            if os.path.relpath(dirpath, build).startswith("provision/nodes"):
                continue
            for name in sorted(files):
                if name[:2].isdigit() and name.endswith(".yaml"):
                    with open(os.path.join(dirpath, name)) as f:
                        out += [o for o in yaml.safe_load_all(f) if o and o.get("kind")]
    return out


def kustomize(path):
    proc = subprocess.run([binary("kube", "kubectl"), "kustomize", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [o for o in yaml.safe_load_all(proc.stdout) if o]


def apply_all(cp, objects, dry_run):
    """Server-side apply every object (Namespaces and for real first, so that a dry run has them);
    returns the refusals as text."""
    refusals = []
    ordered = sorted(objects, key=lambda o: o["kind"] != "Namespace")
    for obj in ordered:
        try:
            cp.apply(cp.object_path(obj), obj, manager="gpufleet", dry_run=dry_run and obj["kind"] != "Namespace")
        except (ApiError, KeyError) as exc:
            refusals.append("%s %s/%s: %s" % (obj.get("apiVersion"), obj.get("kind"),
                                              obj.get("metadata", {}).get("name"), exc))
    return refusals


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_rendered_and_gitops_trees_are_accepted_at_both_ends_of_the_range(servers, tmp_path_factory, inventory):
    rc, out, build = rendered_site(tmp_path_factory, inventory="inventories/" + inventory)
    assert rc == 0, out[-3000:]
    objects = manifests(build)
    assert objects, "no manifests rendered for %s" % inventory
    gitops = kustomize(build / "gitops") if (build / "gitops" / "kustomization.yaml").exists() else []
    newest, oldest = servers["kube"], servers["kube_oldest"]
    try:
        assert apply_all(newest, objects, dry_run=False) == []
        assert apply_all(newest, gitops, dry_run=True) == []
        assert apply_all(oldest, objects + gitops, dry_run=True) == []
        # what the newest stored reads back as rendered (a field the server dropped would show here)
        for obj in objects:
            stored = newest.get(newest.object_path(obj))
            for key, value in (obj["metadata"].get("labels") or {}).items():
                assert stored["metadata"]["labels"].get(key) == value, (obj["kind"], obj["metadata"]["name"], key)
    finally:
        # the next inventory starts clean (another cluster's Job of the same name would be immutable here);
        # Namespaces stay: without a namespace controller they would never finish terminating
        for obj in objects:
            if obj["kind"] != "Namespace":
                try:
                    newest.delete(newest.object_path(obj))
                except ApiError:
                    pass
