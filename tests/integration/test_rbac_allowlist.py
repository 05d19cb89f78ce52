"""Every Role, ClusterRole and binding gpufleet renders, against a checked-in allow-list (issue 30, item 6).

Each inventory under inventories/ and tests/integration/inventories is rendered (render mode), plus the
example inventory with the optional Node Feature Discovery on (no shipped inventory turns it on). Every
rule of every Role/ClusterRole is flattened into single permissions (role, API group, resource, resource
name, verb) and every binding into (binding, role it grants, subject); the union over all renders must
equal tests/fixtures/rbac/allowlist.yml. A new role, verb, resource, wildcard or binding fails the test
until the allow-list says so (reviewed with the upstream source it comes from); a permission the
allow-list keeps but no render grants fails too (a stale entry would let it come back unnoticed).
"""
import os

import pytest
import yaml

from render_cache import RENDERS, rendered_site

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ALLOWLIST = os.path.join(ROOT, "tests", "fixtures", "rbac", "allowlist.yml")
ROLE_KINDS = ("Role", "ClusterRole")
BINDING_KINDS = ("RoleBinding", "ClusterRoleBinding")


def _where(obj):
    meta = obj.get("metadata") or {}
    return "%s %s%s" % (obj["kind"], meta["namespace"] + "/" if meta.get("namespace") else "", meta.get("name"))


def grants(obj):
    """The permissions (strings) a Role/ClusterRole grants, or the grant a binding makes."""
    where = _where(obj)
    if obj["kind"] in BINDING_KINDS:
        ref = obj.get("roleRef") or {}
        return {"%s -> %s %s -> %s %s%s" % (where, ref.get("kind"), ref.get("name"), s.get("kind"),
                                            s["namespace"] + "/" if s.get("namespace") else "", s.get("name"))
                for s in obj.get("subjects") or []}
    out = set()
    if obj.get("aggregationRule"):
        out.add("%s: aggregationRule %s" % (where, yaml.safe_dump(obj["aggregationRule"], default_flow_style=True).strip()))
    for rule in obj.get("rules") or []:
        if rule.get("nonResourceURLs"):
            out.update("%s: nonResourceURL %s %s" % (where, url, verb)
                       for url in rule["nonResourceURLs"] for verb in rule.get("verbs") or [])
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                for name in rule.get("resourceNames") or ["*"]:
                    for verb in rule.get("verbs") or []:
                        out.add("%s: %s %s[%s] %s" % (where, group or "core", resource, name, verb))
    return out


def rbac_grants(objects):
    """{permission: where it came from} over ``objects`` (dicts; others ignored)."""
    out = {}
    for obj in objects:
        if isinstance(obj, dict) and obj.get("kind") in ROLE_KINDS + BINDING_KINDS \
                and str(obj.get("apiVersion", "")).startswith("rbac.authorization.k8s.io/"):
            for grant in grants(obj):
                out.setdefault(grant, obj.get("kind"))
    return out


def diff(granted, allowed):
    """(granted but not allowed, allowed but granted by no render), each sorted."""
    return sorted(set(granted) - set(allowed)), sorted(set(allowed) - set(granted))


def yaml_objects(build):
    out = []
    for dirpath, _dirs, files in os.walk(build):
        for name in sorted(files):
            if name.endswith((".yaml", ".yml")):
                with open(os.path.join(dirpath, name)) as handle:
                    try:
                        out += [d for d in yaml.safe_load_all(handle) if d]
                    except yaml.YAMLError:
                        continue  # templated files (Helm values with Go templates): no RBAC objects in them
    return out


# ------------------------------------------------------------------ the helper itself (a check that can fail)
ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["one"],
                   "verbs": ["get", "update"]}]}


@pytest.mark.parametrize("change,new", [
    ({}, []),
    ({"resourceNames": None}, ["ClusterRole r: coordination.k8s.io leases[*] get",
                               "ClusterRole r: coordination.k8s.io leases[*] update"]),
    ({"verbs": ["get", "update", "delete"]}, ["ClusterRole r: coordination.k8s.io leases[one] delete"]),
    ({"verbs": ["*"]}, ["ClusterRole r: coordination.k8s.io leases[one] *"]),
    ({"resources": ["leases", "secrets"]}, ["ClusterRole r: coordination.k8s.io secrets[one] get",
                                            "ClusterRole r: coordination.k8s.io secrets[one] update"]),
])
def test_the_diff_names_every_new_permission(change, new):
    allowed = rbac_grants([ROLE])
    rule = {k: v for k, v in dict(ROLE["rules"][0], **change).items() if v is not None}
    assert diff(rbac_grants([dict(ROLE, rules=[rule])]), allowed)[0] == new


def test_a_new_binding_is_a_new_grant():
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "b"},
               "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
               "subjects": [{"kind": "ServiceAccount", "namespace": "ns", "name": "sa"}]}
    assert diff(rbac_grants([ROLE, binding]), rbac_grants([ROLE]))[0] == [
        "ClusterRoleBinding b -> ClusterRole cluster-admin -> ServiceAccount ns/sa"]


# ------------------------------------------------------------------ every render against the allow-list
@pytest.fixture(scope="module")
def granted(tmp_path_factory):
    out = {}
    for label, inventory, extra in RENDERS:
        rc, log, build = rendered_site(tmp_path_factory, *extra, inventory=inventory)
        assert rc == 0, (label, log[-3000:])
        for grant in rbac_grants(yaml_objects(build)):
            out.setdefault(grant, []).append(label)
    return out


def test_every_rendered_role_and_binding_is_on_the_allowlist(granted):
    with open(ALLOWLIST) as handle:
        allowed = yaml.safe_load(handle)["grants"]
    new, stale = diff(granted, allowed)
    assert not new, "granted but not on tests/fixtures/rbac/allowlist.yml (review, then add with its source):\n" + \
        "\n".join("%s   (%s)" % (g, ", ".join(granted[g])) for g in new)
    assert not stale, "on the allow-list but granted by no render (remove them):\n" + "\n".join(stale)


def test_the_nfd_master_touches_no_lease_and_watches_no_node(granted):
    master = [g for g in granted if g.startswith("ClusterRole gpufleet-nfd-master:")]
    assert master and not [g for g in master if "leases" in g or (" nodes" in g and g.endswith(" watch"))]
