"""The GitOps role's inputs (issue 30 item 2): what gitops_repo_url, gitops_revision, gitops_path and
the Argo CD / Flux names accept, named by preflight; and the property that no setting can change the
number or kinds of the documents in the GitOps tree (module_utils/fleet/gitops.py plan_tree)."""
import os

import pytest
import yaml

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import gitops
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import dump_yaml

POOLS = [{"name": "p", "gpu_type": "l4", "node_group": "g"}]
CRB = ("---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: pwn}\n"
       "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n"
       "subjects: [{kind: User, name: eve}]\n---\n#")
CHART = {"repo_url": "https://helm.ngc.nvidia.com/nvidia", "name": "gpu-operator", "version": "v25.10.1",
         "namespace": "gpu-operator"}


def preflight_errors(**extra):
    return run_preflight(dict(platform="kubeadm", cluster_name="c1", addons_mode="standalone", pools=POOLS,
                              apply=False, extra=extra))[0]


@pytest.mark.parametrize("value", [
    "", "https://github.com/org/fleet.git", "https://git.example.internal:8443/team/fleet",
    "https://[2001:db8::1]/fleet.git", "ssh://git@git.example.com:2222/org/fleet.git", "ssh://git.example.com/fleet",
    "git@github.com:org/fleet.git", "deploy_bot@git.example.com:team/fleet.git", "https://h.example/a/b?ref=x",
])
def test_repo_urls_accepted(value):
    assert gitops.repo_url_error(value) is None
    assert preflight_errors(gitops_repo_url=value) == []


@pytest.mark.parametrize("value, fragment", [
    ("http://git.example.com/fleet.git", "the scheme http:// is not allowed"),
    ("file:///srv/git/fleet.git", "the scheme file:// is not allowed"),
    ("git://git.example.com/fleet.git", "the scheme git:// is not allowed"),
    ("/srv/git/fleet.git", "is not a repository URL"),
    ("fleet", "is not a repository URL"),
    ("-oProxyCommand=x@h:y", "is not a repository URL"),
    ("https://git.example.com", "has no repository path"),
    ("https://git.example.com/", "has no repository path"),
    ("https://-bad-.example/x", "is not a host name"),
    ("https://h.example:0/x", "is not a port number"),
    ("https://h.example:99999/x", "is not a port number"),
    ("https://git.example.com/my fleet", "holds characters a URL may not"),
    ("https://git.example.com/\"x", "holds characters a URL may not"),
    ("https://gït.example/x", "holds characters a URL may not"),
    ("https://git.example.com/x\n" + CRB, "holds U+000A (line feed)"),
    ("https://git.example.com/x\u2028", "holds U+2028 (line separator)"),
])
def test_repo_urls_refused(value, fragment):
    found = preflight_errors(gitops_repo_url=value)
    assert len(found) == 1 and found[0].startswith("gitops_repo_url: ") and fragment in found[0], found


@pytest.mark.parametrize("value", ["https://ghp_s3cr3tT0ken@github.com/org/fleet.git",
                                   "https://bot:s3cr3tT0ken@git.example.com/fleet.git",
                                   "ssh://git:s3cr3tT0ken@git.example.com/fleet.git"])
def test_credentials_in_the_url_are_refused_and_not_repeated(value):
    found = preflight_errors(gitops_repo_url=value)
    assert len(found) == 1 and "credentials" in found[0] and "s3cr3tT0ken" not in found[0], found


@pytest.mark.parametrize("value", ["HEAD", "main", "release/1.2", "v25.10.1", "feature/a_b-c+d",
                                   "0123456789abcdef0123456789abcdef01234567"])
def test_revisions_accepted(value):
    assert preflight_errors(gitops_revision=value) == []


@pytest.mark.parametrize("value", ["", "-x", "a..b", "a//b", "main/", "main.", "main.lock", ".hidden", "a/.b",
                                   "with space", "a~1", "a^", "a:b", "a@{1}", "x" * 256, "main\n" + CRB, 3])
def test_revisions_refused(value):
    found = preflight_errors(gitops_revision=value)
    assert len(found) == 1 and found[0].startswith("gitops_revision: "), found


@pytest.mark.parametrize("value", ["", "build/prod/gitops", "./gitops", "clusters/eu-1/.gpufleet", "a"])
def test_paths_accepted(value):
    assert preflight_errors(gitops_path=value) == []


@pytest.mark.parametrize("value", ["/abs/path", "../outside", "a/../../b", "..", ".", "./", "a//b", "a/", "a b",
                                   "a\\b", "a/./b", "x\n" + CRB, ["a"]])
def test_paths_refused(value):
    found = preflight_errors(gitops_path=value)
    assert len(found) == 1 and found[0].startswith("gitops_path: "), found


@pytest.mark.parametrize("var, value, fragment", [
    ("gitops_argocd_namespace", "Argo", "is not a namespace name"),
    ("gitops_argocd_namespace", "a.b", "is not a namespace name"),
    ("gitops_flux_namespace", "flux_system", "is not a namespace name"),
    ("gitops_flux_namespace", "x" * 64, "is not a namespace name"),
    ("gitops_argocd_project", "My Project", "is not an Argo CD project name"),
    ("gitops_flux_source", "repo/x", "is not a GitRepository name"),
    ("gitops_flux_source", "gpufleet\n" + CRB, "holds U+000A"),
])
def test_names_refused(var, value, fragment):
    found = preflight_errors(**{var: value})
    assert len(found) == 1 and found[0].startswith(var + ": ") and fragment in found[0], found


# -- the tree itself ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("gitops-build")
    objects = {"provision/karpenter": [("00-nodepool-p.yaml", {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                                                               "metadata": {"name": "p"}})],
               "cluster/gpu-operator": [("00-namespace-gpu-operator.yaml", {"apiVersion": "v1", "kind": "Namespace",
                                                                            "metadata": {"name": "gpu-operator"}})]}
    for rel, items in objects.items():
        os.makedirs(str(root / rel))
        for name, obj in items:
            (root / rel / name).write_text(dump_yaml(obj))
    (root / gitops.OPERATOR_VALUES).write_text("driver:\n  enabled: false\n")
    return str(root)


def shape(tree):
    """{file: [kind of each document]} of a planned tree."""
    return {name: [(d or {}).get("kind") for d in yaml.safe_load_all(text)] for name, text in sorted(tree.items())}


def test_the_review_injection_is_refused_by_the_tree_itself(build_dir):
    """Called without preflight (the module on its own), the settings are checked again."""
    with pytest.raises(GpufleetError) as err:
        gitops.plan_tree(build_dir, "c1", "example", {"repo_url": "https://x.example/r.git\n" + CRB})
    assert err.value.msg.startswith("gitops_repo_url: holds U+000A")


@pytest.mark.parametrize("cluster, inventory", [("c1\n" + CRB, "example"), ("c1", "example\u2028kind: Namespace")])
def test_names_in_comments_are_refused(build_dir, cluster, inventory):
    with pytest.raises(GpufleetError) as err:
        gitops.plan_tree(build_dir, cluster, inventory, {})
    assert "holds U+" in err.value.msg


KEYS = [key for key, _var in gitops.SETTINGS_VARS]
BREAKS = ["\n", "\r", "\r\n", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c"]
GOOD = {"repo_url": "https://git.example.com/fleet.git", "revision": "main", "path": "build/prod/gitops",
        "argocd_namespace": "argocd", "argocd_project": "default", "flux_namespace": "flux-system",
        "flux_source": "fleet"}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(KEYS), cut=st.integers(min_value=0, max_value=40), brk=st.sampled_from(BREAKS),
       tail=st.sampled_from(["", CRB, "kind: Namespace", "\n---\n{}"]), free=st.text(max_size=20),
       mode=st.sampled_from(["break", "free"]), operator=st.booleans())
def test_no_setting_changes_the_documents_of_the_tree(build_dir, key, cut, brk, tail, free, mode, operator):
    """Any value (a valid one with a line break and a payload spliced in, or free text) either is
    refused or leaves every file with the same number and kinds of documents."""
    good = GOOD[key]
    value = good[:cut] + brk + tail + good[cut:] if mode == "break" else free
    chart = CHART if operator else None
    baseline = shape(gitops.plan_tree(build_dir, "c1", "example", GOOD, chart))
    try:
        tree = gitops.plan_tree(build_dir, "c1", "example", dict(GOOD, **{key: value}), chart)
    except GpufleetError as exc:
        assert exc.msg.startswith(dict(gitops.SETTINGS_VARS)[key] + ": "), exc.msg
        assert mode == "free" or "holds U+" in exc.msg
        return
    assert mode == "free", value
    assert shape(tree) == baseline


def test_the_tree_shape_is_what_the_property_compares(build_dir):
    tree = shape(gitops.plan_tree(build_dir, "c1", "example", GOOD, CHART))
    assert tree["argocd/application.yaml"] == ["Application"]
    assert tree["flux/kustomization.yaml"] == ["Kustomization"]
    assert tree["flux/gpu-operator.yaml"] == ["HelmRepository", "HelmRelease"]


@pytest.mark.parametrize("path, flux_path", [("", "./build/example/gitops"), ("./x/y", "./x/y"),
                                             (".hidden/x", "./.hidden/x"), ("a", "./a")])
def test_flux_path_keeps_the_given_path(build_dir, path, flux_path):
    tree = gitops.plan_tree(build_dir, "c1", "example", dict(GOOD, path=path))
    assert yaml.safe_load(tree["flux/kustomization.yaml"])["spec"]["path"] == flux_path


# ------------------------------------------------------------------ Argo CD / Flux object names (issue 39)
@pytest.mark.parametrize("inventory", ["example", "eks", "kubeadm-operator", "gke-autopilot"])
def test_app_names_of_dns_safe_inventories_are_unchanged(inventory):
    from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.gitops import app_name
    assert app_name(inventory) == "gpufleet-" + inventory


@pytest.mark.parametrize("inventory", ["Prod_EU", "prod_eu", "prod.eu", "x" * 80, "__", "Ünïcode cluster"])
def test_app_names_follow_dns_label_rules(inventory):
    from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.gitops import app_name
    from ansible_collections.gpufleet.k8s.plugins.module_utils.model.k8s_syntax import dns_label_error
    name = app_name(inventory)
    assert dns_label_error(name) is None and dns_label_error(name + "-gpu-operator") is None, name


def test_inventories_that_clean_up_alike_get_different_names():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.gitops import app_name
    names = {app_name(n) for n in ("prod_eu", "prod.eu", "Prod_EU", "prod-eu")}
    assert len(names) == 4, names
