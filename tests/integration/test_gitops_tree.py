"""The GitOps tree (build/<inv>/gitops/) from real renders: `kubectl kustomize` (kustomize v5
built into kubectl, built from k8s.io/kubernetes by scripts/controlplane-build.sh; `kubectl apply -k`
runs the same build) of the root and of every component succeeds and yields exactly the appliable
objects, schema-valid; nothing never-applied and no non-Kubernetes file gets in; the Argo CD and
Flux definitions validate against their CRD schemas (npm @kubernetes-models/argo-cd, flux-cd).
The trees applied to real API servers: tests/integration/test_cp_trees.py."""
import json
import os
import subprocess

import pytest
import yaml

from controlplane import binary
from crd_schema import assert_crs_valid
from k8s_schema import assert_valid
from prom_schema import assert_valid_prometheus
from ansible_run import recap, run_site

CORE = ("v1", "apps/v1", "node.k8s.io/v1", "rbac.authorization.k8s.io/v1", "scheduling.k8s.io/v1")
CRDS = ("karpenter.sh/v1", "karpenter.sh/v1alpha1", "karpenter.k8s.aws/v1", "cloud.google.com/v1")  # v1alpha1: NodeOverlay


def kustomize(path):
    # kubectl built from k8s.io/kubernetes with the test control plane (scripts/controlplane-build.sh)
    proc = subprocess.run([binary("kube", "kubectl"), "kustomize", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [o for o in yaml.safe_load_all(proc.stdout) if o]


def key(obj):
    return (obj["apiVersion"], obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])


def appliable_sources(build):
    """Objects of the numbered manifests gpufleet itself would apply, by folder."""
    out = {}
    for stage in ("provision", "cluster"):
        for dirpath, _dirs, files in os.walk(build / stage):
            rel = os.path.relpath(dirpath, build)
            for name in sorted(files):
                if name[:2].isdigit() and name.endswith(".yaml"):
                    out.setdefault(rel, []).append(yaml.safe_load(open(os.path.join(dirpath, name))))
    return out


CASES = {
    "eks": ("inventories/eks", []),
    "example": ("inventories/example", ["-e", "gpu_monitoring_prometheus_rule=true"]),
    "operator": ("inventories/example", ["-e", "gpufleet_addons_mode=operator"]),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def rendered(request, tmp_path_factory):
    inventory, extra = CASES[request.param]
    build = tmp_path_factory.mktemp("gitops") / request.param
    rc, out = run_site(build, *extra, inventory=inventory)
    assert rc == 0, out[-3000:]
    return request.param, build, extra, inventory


def test_root_kustomization_builds_exactly_the_appliable_objects(rendered):
    case, build, _extra, _inv = rendered
    objects = kustomize(build / "gitops")
    sources = appliable_sources(build)
    expected = [o for rel, objs in sources.items()
                if not rel.startswith(("provision/examples", "provision/karpenter-migrated", "provision/nodes"))
                for o in objs]
    assert sorted(map(key, objects)) == sorted(map(key, expected))
    kinds = {o["kind"] for o in objects}
    assert "Job" not in kinds and "Node" not in kinds
    core = [o for o in objects if o["apiVersion"] in CORE]
    for obj in core:
        assert_valid(obj)
    crs = [o for o in objects if o["apiVersion"] in CRDS]
    if crs:
        assert_crs_valid(crs)
    prom = [o for o in objects if o["apiVersion"] == "monitoring.coreos.com/v1"]
    if prom:
        assert_valid_prometheus(prom)
    assert len(core) + len(crs) + len(prom) == len(objects), {o["apiVersion"] for o in objects}
    if case == "eks":
        assert {"NodePool", "EC2NodeClass"} <= kinds
        assert any(rel.startswith("provision/karpenter-migrated") for rel in sources)  # rendered, left out
        assert any(rel.startswith("provision/examples") for rel in sources)
    if case == "example":
        assert "PrometheusRule" in kinds and sources.get("provision/nodes")


def test_every_component_builds_alone_and_holds_only_copies(rendered):
    _case, build, _extra, _inv = rendered
    gitops = build / "gitops"
    root = yaml.safe_load((gitops / "kustomization.yaml").read_text())
    assert root["resources"]
    for component in root["resources"]:
        folder = gitops / component
        kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
        assert sorted(os.listdir(folder)) == sorted(kustomization["resources"] + ["kustomization.yaml"])
        source = build / component.replace("-", "/", 1)
        for name in kustomization["resources"]:
            assert (folder / name).read_bytes() == (source / name).read_bytes()
        assert len(kustomize(folder)) == len(kustomization["resources"])
    for dirpath, _dirs, files in os.walk(gitops):
        for name in files:
            assert name.endswith(".yaml"), os.path.join(dirpath, name)   # no scrape job, values, md, json


def test_argocd_and_flux_definitions_are_valid(rendered):
    case, build, _extra, inventory = rendered
    gitops = build / "gitops"
    docs = []
    for rel in ("argocd/application.yaml", "flux/kustomization.yaml", "argocd/gpu-operator.yaml", "flux/gpu-operator.yaml"):
        if (gitops / rel).exists():
            docs += [d for d in yaml.safe_load_all((gitops / rel).read_text()) if d]
    assert_valid_prometheus(docs)    # tests/schemas-monitoring-gitops validates Argo CD and Flux kinds too
    app = docs[0]
    assert app["spec"]["source"]["path"] == "build/%s/gitops" % os.path.basename(inventory)
    assert app["spec"]["syncPolicy"]["syncOptions"][0] == "ServerSideApply=true"
    assert app["spec"]["syncPolicy"]["automated"]["prune"] is False
    assert docs[1]["spec"]["path"] == "./build/%s/gitops" % os.path.basename(inventory)
    if case == "operator":
        values = yaml.safe_load((build / "cluster" / "gpu-operator" / "gpu-operator-values.yaml").read_text())
        argo = [d for d in docs if d["kind"] == "Application" and d["metadata"]["name"].endswith("gpu-operator")][0]
        release = [d for d in docs if d["kind"] == "HelmRelease"][0]
        assert argo["spec"]["source"]["chart"] == "gpu-operator" and argo["spec"]["source"]["helm"]["valuesObject"] == values
        assert release["spec"]["values"] == values and release["spec"]["chart"]["spec"]["version"].startswith("v")
    else:
        assert not (gitops / "argocd" / "gpu-operator.yaml").exists()
    root = yaml.safe_load((gitops / "kustomization.yaml").read_text())
    assert "argocd" not in root["resources"] and "flux" not in root["resources"]


def test_rerender_changes_nothing_and_drops_what_left(tmp_path):
    build = tmp_path / "example"
    rc, out = run_site(build)
    assert rc == 0, out[-3000:]
    assert (build / "gitops" / "cluster-gpu-monitoring").is_dir()
    before = {p: p.read_bytes() for p in (build / "gitops").rglob("*") if p.is_file()}
    rc, out = run_site(build)
    assert rc == 0 and recap(out)["changed"] == 0, out[-3000:]
    assert {p: p.read_bytes() for p in (build / "gitops").rglob("*") if p.is_file()} == before
    rc, out = run_site(build, "-e", "gpu_monitoring_enabled=false", playbook="playbooks/cluster.yml")
    assert rc == 0, out[-3000:]
    rc, out = run_site(build, playbook="playbooks/report.yml")
    assert rc == 0, out[-3000:]
    assert not (build / "gitops" / "cluster-gpu-monitoring").exists()
    assert "cluster-gpu-monitoring" not in yaml.safe_load((build / "gitops" / "kustomization.yaml").read_text())["resources"]


# Injection into the GitOps files (issue 30 item 2). The review's inputs: a line break in a setting
# pasted into a comment line added a cluster-admin ClusterRoleBinding ahead of the Argo CD
# Application, or a Namespace to the Flux Kustomization, and the run exited 0.
CRB = ("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: pwn}\n"
       "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n"
       "subjects: [{kind: User, name: eve}]\n---\n#")
HOSTILE = [
    ("gitops_repo_url", "https://git.example.com/fleet.git\n" + CRB, "U+000A (line feed)"),
    ("gitops_path", "build/example/gitops\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: pwn}\n#",
     "U+000A (line feed)"),
    ("gitops_flux_source", "gpufleet\u2028kind: Namespace", "U+2028 (line separator)"),
    ("gitops_flux_namespace", "flux-system\x85---", "U+0085 (next line)"),
    ("gitops_revision", "main\r" + CRB, "U+000D (carriage return)"),
    ("gitops_argocd_project", "default\u2029---", "U+2029 (paragraph separator)"),
    ("gitops_repo_url", "http://git.example.com/fleet.git", "the scheme http:// is not allowed"),
    ("gitops_path", "../../etc", "a path relative to the repository root"),
]


@pytest.mark.parametrize("var, value, fragment", HOSTILE, ids=["%s-%d" % (h[0], i) for i, h in enumerate(HOSTILE)])
def test_hostile_gitops_settings_are_refused_before_anything_is_written(tmp_path, var, value, fragment):
    build = tmp_path / "example"
    rc, out = run_site(build, "-e", json.dumps({var: value}))
    assert rc != 0, out[-3000:]
    assert "%s: " % var in out and fragment in out, out[-3000:]
    assert not os.path.exists(str(build)) and os.listdir(str(tmp_path)) == []


def kinds_of(build):
    """{file: [kind of each document]} of every YAML file under ``build``."""
    out = {}
    for path in sorted(build.rglob("*.yaml")):
        out[str(path.relative_to(build))] = [(d or {}).get("kind") for d in yaml.safe_load_all(path.read_text())]
    return out


def test_a_multi_line_value_where_allowed_changes_no_document(tmp_path):
    """gpu_operator_values_overrides may hold multi-line strings (Helm values are data): the review's
    payload in one reaches the values file and the GitOps tree as a string, and every rendered file
    keeps its number and kinds of documents."""
    base, hostile = tmp_path / "base" / "example", tmp_path / "hostile" / "example"
    base.parent.mkdir()
    hostile.parent.mkdir()
    overrides = {"dcgmExporter": {"env": [{"name": "NOTE", "value": "x\n" + CRB}]}}
    rc, out = run_site(base, "-e", "gpufleet_addons_mode=operator")
    assert rc == 0, out[-3000:]
    rc, out = run_site(hostile, "-e", "gpufleet_addons_mode=operator",
                       "-e", json.dumps({"gpu_operator_values_overrides": overrides}))
    assert rc == 0, out[-3000:]
    assert kinds_of(hostile) == kinds_of(base)
    values = yaml.safe_load((hostile / "cluster" / "gpu-operator" / "gpu-operator-values.yaml").read_text())
    assert {"name": "NOTE", "value": "x\n" + CRB} in values["dcgmExporter"]["env"]
