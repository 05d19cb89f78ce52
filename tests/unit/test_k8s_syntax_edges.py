"""Kubernetes syntax checks (module_utils/model/k8s_syntax.py): what mutation testing (scripts/mutation.sh)
showed no test would notice. Every problem in an input is reported, not the first (a list with several
bad entries gets one line each, in order); valid inputs are accepted; limits are checked at the exact
boundary; each problem names the variable (the path to the field) and says what is allowed. The
expected lines are the whole messages: a user reads them, so a changed word is a visible change."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.model import k8s_syntax as ks
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems

USE_TOL = ("use a list of tolerations {key, operator: Equal|Exists, value, effect: "
           "NoSchedule|PreferNoSchedule|NoExecute, tolerationSeconds}")
NAME_PART = "use letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
NOT_VALUE = "is not a label value; %s (or empty)" % NAME_PART


def errors(check, *args, **kwargs):
    problems = Problems()
    check(*args, problems=problems, **kwargs)
    return problems.errors


def test_valid_tolerations_are_accepted():
    assert errors(ks.check_tolerations, "t", [
        {"operator": "Exists"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "a", "value": "b"},
        {"key": "a", "operator": "Equal", "value": "b", "effect": ""},
        {"key": "a", "effect": "NoExecute", "tolerationSeconds": 30},
        {"key": "a", "effect": "PreferNoSchedule", "operator": "Exists", "value": ""},
        {"key": "a", "operator": "", "value": "b"},  # empty operator means Equal
    ]) == []


def test_every_bad_toleration_is_reported_in_order():
    assert errors(ks.check_tolerations, "t", [
        "x",
        {"key": "a", "foo": 1},
        {"operator": "In", "key": "a"},
        {"value": "v"},
        {"key": "a b"},
        {"key": "a", "operator": "Exists", "value": "v"},
        {"key": "a", "value": "-v"},
        {"key": "a", "effect": "Never"},
        {"key": "a", "effect": "NoExecute", "tolerationSeconds": True},
        {"key": "a", "effect": "NoSchedule", "tolerationSeconds": 5},
        {"key": "a", "effect": "NoExecute", "tolerationSeconds": "5"},
    ]) == [
        "t[0]: must be a mapping, got a string ('x'); " + USE_TOL,
        "t[1]: unknown key(s) foo; use one of: key, operator, value, effect, tolerationSeconds",
        "t[2].operator: 'In' is not allowed; use one of: Equal, Exists (or leave it out: Equal)",
        "t[3].key: is empty, which only operator Exists allows (tolerate every taint); use one of: a taint key "
        "such as nvidia.com/gpu, operator: Exists",
        "t[4].key: 'a b' name part 'a b' is not allowed; " + NAME_PART,
        "t[5].value: 'v' is set with operator Exists, which matches any value; use one of: no value, operator: Equal",
        "t[6].value: toleration value " + NOT_VALUE,
        "t[7].effect: 'Never' is not allowed; use one of: NoSchedule, PreferNoSchedule, NoExecute, or empty "
        "(every effect)",
        "t[8].tolerationSeconds: True is not allowed; use a whole number of seconds",
        "t[9].tolerationSeconds: is only used with effect NoExecute; use one of: effect: NoExecute, or drop "
        "tolerationSeconds",
        "t[10].tolerationSeconds: '5' is not allowed; use a whole number of seconds",
    ]


@pytest.mark.parametrize("tolerations,expect", [
    ({"a": 1}, ["t: must be a list of tolerations, got a mapping; " + USE_TOL]),
    ([{"key": "", "operator": "Exists"}, {"key": None}], [
        "t[1].key: is empty, which only operator Exists allows (tolerate every taint); use one of: a taint key "
        "such as nvidia.com/gpu, operator: Exists"]),
    # unknown keys sorted, several at once; the rest of the entry is still checked
    ([{"key": "a", "zeta": 1, "Alpha": 2, "effect": "bad"}], [
        "t[0]: unknown key(s) Alpha, zeta; use one of: key, operator, value, effect, tolerationSeconds",
        "t[0].effect: 'bad' is not allowed; use one of: NoSchedule, PreferNoSchedule, NoExecute, or empty "
        "(every effect)"]),
    ([{"key": "a", "value": "x" * 64}], ["t[0].value: toleration value is 64 characters long; a label value has "
                                         "at most 63"]),
    ([{"key": "a", "operator": "Exists", "value": 0}],
     ["t[0].value: 0 is set with operator Exists, which matches any value; use one of: no value, operator: Equal"]),
    ([{"key": "a", "effect": "NoExecute", "tolerationSeconds": 1.5}],
     ["t[0].tolerationSeconds: 1.5 is not allowed; use a whole number of seconds"]),
])
def test_toleration_shapes(tolerations, expect):
    assert errors(ks.check_tolerations, "t", tolerations) == expect


def test_every_bad_taint_is_reported_and_repeats_point_at_the_first():
    assert errors(ks.check_taints, "p", [
        "x",  # the shape is spec.validate_pools' to report
        {"key": "a", "foo": 1, "effect": "NoSchedule"},
        {"key": "a b"},
        {"key": "node.kubernetes.io/x", "effect": "NoSchedule"},
        {"key": "b", "value": "-x", "effect": "NoSchedule"},
        {"key": "a", "value": "y", "effect": "NoSchedule"},
        {"key": "a", "effect": "NoExecute"},
        {"key": "b", "value": None, "effect": "NoSchedule"},
        {"key": "c.karpenter.sh/x", "effect": "NoSchedule"},
    ]) == [
        "p[1]: unknown key(s) foo; use one of: key, value, effect",
        "p[2].key: 'a b' name part 'a b' is not allowed; " + NAME_PART,
        "p[3].key: 'node.kubernetes.io/x' uses the prefix node.kubernetes.io/, whose taints Kubernetes, Karpenter "
        "or GKE add and remove themselves; use a key with your own prefix",
        "p[4].value: taint value " + NOT_VALUE,
        "p[5]: taint a:NoSchedule repeats p[1]; taints must be unique by key and effect",
        "p[7]: taint b:NoSchedule repeats p[4]; taints must be unique by key and effect",
        "p[8].key: 'c.karpenter.sh/x' uses the prefix c.karpenter.sh/, whose taints Kubernetes, Karpenter or GKE "
        "add and remove themselves; use a key with your own prefix",
    ]


@pytest.mark.parametrize("taints", [
    {"a": 1}, [],
    [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
     {"key": "nvidia.com/gpu", "effect": "NoExecute"}, {"key": "example.com/x", "value": "", "effect": "NoSchedule"},
     {"key": "nodes.kubernetes.io.example.com/x", "effect": "NoSchedule"}],
])
def test_valid_taints_are_accepted(taints):
    assert errors(ks.check_taints, "p", taints) == []


def test_every_bad_label_is_reported():
    assert errors(ks.check_labels, "l", {"a b": "x", "kubernetes.io/x": "-y", "z": 1, "ok": "v",
                                         "gpufleet.io/pool": "q"}) == [
        "l['a b']: label key 'a b' name part 'a b' is not allowed; " + NAME_PART,
        "l['gpufleet.io/pool']: label key 'gpufleet.io/pool' is set by gpufleet itself on every node of the pool "
        "(to the pool's name); a pool label may not replace it; use a key other than gpufleet.io/pool, "
        "nvidia.com/device-plugin.config",
        "l['kubernetes.io/x']: label key 'kubernetes.io/x' uses the reserved prefix kubernetes.io/ (owned by "
        "Kubernetes, Karpenter or GKE, which refuse or overwrite it); use a key with your own prefix, e.g. "
        "example.com/x, or one of: node.kubernetes.io/, node-restriction.kubernetes.io/",
        "l['kubernetes.io/x']: label value " + NOT_VALUE,
        "l['z']: label value must be a quoted string, got a number (1)",
    ]


@pytest.mark.parametrize("labels,self_managed,expect", [
    (["x"], False, ["l: must be a mapping of label key to string value, got a list"]),
    ({"node-role.kubernetes.io/gpu": ""}, True, []),
    ({"node-role.kubernetes.io/gpu": ""}, False, [
        "l['node-role.kubernetes.io/gpu']: label key 'node-role.kubernetes.io/gpu' uses the reserved prefix "
        "node-role.kubernetes.io/ (owned by Kubernetes, Karpenter or GKE, which refuse or overwrite it); use a key "
        "with your own prefix, e.g. example.com/gpu, or one of: node.kubernetes.io/, node-restriction.kubernetes.io/"]),
    ({"example.com/team": "ml", "team": "", "node.kubernetes.io/x": "y"}, False, []),
])
def test_label_shapes(labels, self_managed, expect):
    assert errors(ks.check_labels, "l", labels, self_managed=self_managed) == expect


def test_every_bad_label_map_entry_is_reported():
    assert errors(ks.check_label_map, "m", {"a b": "x", "kubernetes.io/x": "v", "z": 1, "y": "-y", 3: "x"}) == [
        "m[3]: label key 3 must be a string, got a number",
        "m['a b']: label key 'a b' name part 'a b' is not allowed; " + NAME_PART,
        "m['y']: label value " + NOT_VALUE,
        "m['z']: label value must be a quoted string, got a number (1); use a quoted string of at most 63 letters, "
        "digits, '-', '_' and '.' (or empty)",
    ]
    assert errors(ks.check_label_map, "m", "x") == [
        "m: must be a mapping of label key to string value, got a string; use e.g. {release: prometheus}"]
    assert errors(ks.check_label_map, "m", {"release": "prometheus", "kubernetes.io/x": ""}) == []


@pytest.mark.parametrize("check,value,expect", [
    (ks.dns_label_error, "a" * 63, None),
    (ks.dns_label_error, "a" * 64, "is 64 characters long; a DNS label has at most 63"),
    (ks.dns_label_error, 5, "must be a string, got a number"),
    (ks.dns_label_error, "A", "is not a DNS label; use lower-case letters, digits and '-', starting and ending "
                              "with a letter or digit"),
    (ks.dns_subdomain_error, "a" * 253, None),
    (ks.dns_subdomain_error, "a." * 126 + "b", None),
    (ks.dns_subdomain_error, "a" * 254, "is 254 characters long; a DNS subdomain has at most 253"),
    (ks.dns_subdomain_error, None, "must be a string, got null"),
    (ks.dns_subdomain_error, 5, "must be a string, got a number"),
    (ks.dns_subdomain_error, "a_b", "is not a DNS subdomain; use lower-case letters, digits, '-' and '.', each "
                                    "dot-separated part starting and ending with a letter or digit"),
    (ks.qualified_name_error, "a/" + "x" * 63, None),
    (ks.qualified_name_error, "a/" + "x" * 64, "name part '%s' is 64 characters long; at most 63" % ("x" * 64)),
    (ks.qualified_name_error, "a/b/c", "has more than one '/'; use [prefix/]name"),
    (ks.qualified_name_error, "/a", "has an empty prefix before '/'; use [prefix/]name"),
    (ks.qualified_name_error, "a/", "has an empty name part; use [prefix/]name"),
    (ks.qualified_name_error, "A_b/c", "prefix 'A_b' is not a DNS subdomain; use lower-case letters, digits, '-' "
                                       "and '.', each dot-separated part starting and ending with a letter or digit"),
    (ks.label_value_error, "x" * 63, None),
    (ks.label_value_error, "x" * 64, "is 64 characters long; a label value has at most 63"),
    (ks.label_value_error, None, "must be a quoted string, got null (None)"),
])
def test_names_at_their_limits(check, value, expect):
    assert check(value) == expect


@pytest.mark.parametrize("name,platform,settings,expect", [
    ("c" * 100, "eks", {"eks_node_role": "MyRole"}, None),
    ("c" * 101, "eks", {"eks_node_role": "MyRole"},
     "%r is not an EKS cluster name; use 1-100 letters, digits, '-' and '_', starting with a letter or digit"
     % ("c" * 101)),
    ("c" * 46, "eks", None, None),
    ("c" * 47, "eks", {"eks_node_role": ""},
     "%r makes the default node role KarpenterNodeRole-%s longer than the 64 characters IAM allows; use a name of "
     "at most 46 characters or set gpu_pools_eks_node_role" % ("c" * 47, "c" * 47)),
    ("g" * 40, "gke", None, None),
    ("g" * 40, "gke-autopilot", None, None),
    ("g" * 41, "gke-autopilot", None,
     "%r is not a GKE cluster name; use 1-40 lower-case letters, digits and '-', starting with a letter and ending "
     "with a letter or digit" % ("g" * 41)),
    ("g-", "gke", None, "'g-' is not a GKE cluster name; use 1-40 lower-case letters, digits and '-', starting with "
                        "a letter and ending with a letter or digit"),
    ("s" * 63, "kubeadm", None, None),
    ("S.s_s-1", "k3s", None, None),
    ("s" * 64, "kubeadm", None,
     "%r is not allowed; use 1-63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit (it "
     "is written as a label value and into tags)" % ("s" * 64)),
    ("  ", "kubeadm", None, "must be a non-empty string (it names the cluster in tags, labels and file headers)"),
    (7, "eks", None, "must be a non-empty string (it names the cluster in tags, labels and file headers)"),
])
def test_cluster_names_at_their_limits(name, platform, settings, expect):
    assert ks.cluster_name_error(name, platform, settings) == expect


@pytest.mark.parametrize("value,words,expect", [
    (" Yes ", ks.BOOL_WORDS, None), ("T", ks.BOOL_WORDS, None), (0, ks.BOOL_WORDS, None),
    ("yes", ("true", "false"), "'yes' is not a boolean; use one of: true, false"),
    (2, ks.BOOL_WORDS, "2 is not a boolean; use one of: true, false"),
    (1.0, ks.BOOL_WORDS, "1.0 is not a boolean; use one of: true, false"),
])
def test_bool_words(value, words, expect):
    assert ks.bool_error(value, words) == expect


def pool(**fields):
    base = {"name": "train", "labels": {}, "taints": []}
    base.update(fields)
    return base


BAD_POOL = dict(name="a" * 49, compute_class="yes", do_not_disrupt=False,
                sharing={"rename_by_default": "true", "fail_requests_greater_than_one": True, "other": "x"},
                consolidate_after="0s", expire_after="00m0h", max_nodes=0, max_gpus=0)
LONG_NAME = ("P.name: '%s' is 49 characters long; gpufleet names objects after the pool (Job gpufleet-smoke-%s, "
             "64 characters) and the API server allows at most 63 there (a Job's name becomes a label value); use at "
             "most 48 characters" % ("a" * 49, "a" * 49))
NOT_BOOL = "'%s' is not a boolean; use one of: true, false (without quotes)"
ZERO = "'%s' is zero, which %s; use a positive duration such as 30s, 10m, 720h, or Never"


@pytest.mark.parametrize("platform,expect", [
    ("eks", [LONG_NAME, "P.compute_class: " + NOT_BOOL % "yes", "P.sharing.rename_by_default: " + NOT_BOOL % "true",
             "P.expire_after: " + ZERO % ("00m0h", "expires every node as soon as it starts"),
             "P.max_gpus: 0 is a GPU limit of 0, so no node can ever start; use an integer >= gpus_per_node"]),
    ("gke", [LONG_NAME, "P.compute_class: " + NOT_BOOL % "yes", "P.sharing.rename_by_default: " + NOT_BOOL % "true",
             "P.consolidate_after: " + ZERO % ("0s", "a GKE ComputeClass cannot take (its consolidation delay is at "
                                                     "least 1 minute)"),
             "P.expire_after: " + ZERO % ("00m0h", "expires every node as soon as it starts"),
             "P.max_gpus: 0 is a GPU limit of 0, so no node can ever start; use an integer >= gpus_per_node"]),
    ("gke-autopilot", [LONG_NAME, "P.compute_class: " + NOT_BOOL % "yes",
                       "P.sharing.rename_by_default: " + NOT_BOOL % "true",
                       "P.consolidate_after: " + ZERO % ("0s", "a GKE ComputeClass cannot take (its consolidation "
                                                               "delay is at least 1 minute)"),
                       "P.expire_after: " + ZERO % ("00m0h", "expires every node as soon as it starts"),
                       "P.max_gpus: 0 is a GPU limit of 0, so no node can ever start; use an integer >= "
                       "gpus_per_node"]),
    ("kubeadm", [LONG_NAME, "P.compute_class: " + NOT_BOOL % "yes", "P.sharing.rename_by_default: " + NOT_BOOL % "true",
                 "P.consolidate_after: " + ZERO % ("0s", "removes every node the moment it is empty"),
                 "P.expire_after: " + ZERO % ("00m0h", "expires every node as soon as it starts")]),
])
def test_every_problem_of_a_pool_is_reported(platform, expect):
    problems = Problems()
    ks._check_pool("P", pool(**BAD_POOL), platform, platform == "kubeadm", problems)
    assert problems.errors == expect


@pytest.mark.parametrize("platform,fields,expect", [
    # valid EKS / GKE / self-managed pools are accepted, limits at their edge
    ("eks", dict(name="a" * 48, max_nodes=0, max_gpus=8, consolidate_after="0s", expire_after="Never",
                 compute_class=True, do_not_disrupt=False, sharing={"rename_by_default": False}), []),
    ("gke", dict(max_nodes=1, max_gpus=None, consolidate_after="1m", expire_after="720h", sharing=None), []),
    ("kubeadm", dict(max_nodes=0, max_gpus=0, labels={"node-role.kubernetes.io/gpu": ""}), []),
    ("eks", dict(max_nodes=0), ["P.max_nodes: 0 gives the pool a GPU limit of 0, so no node can ever start; use an "
                                "integer >= 1 (or remove the pool)"]),
    ("gke", dict(max_nodes=0, max_gpus=None), [
        "P.max_nodes: 0 gives the pool a GPU limit of 0, so no node can ever start; use an integer >= 1 (or remove "
        "the pool)"]),
    ("gke", dict(consolidate_after="10m", expire_after="0h"),
     ["P.expire_after: " + ZERO % ("0h", "expires every node as soon as it starts")]),
    ("kubeadm", dict(name="a" * 49 + "_"), []),   # not a DNS label: spec reports that, not the length
    ("eks", dict(sharing={"fail_requests_greater_than_one": "no"}, do_not_disrupt=1),
     ["P.do_not_disrupt: 1 is not a boolean; use one of: true, false (without quotes)",
      "P.sharing.fail_requests_greater_than_one: " + NOT_BOOL % "no"]),
    ("eks", dict(labels={"karpenter.sh/x": "1"}, taints=[{"key": "karpenter.sh/x", "effect": "NoSchedule"}]), [
        "P.labels['karpenter.sh/x']: label key 'karpenter.sh/x' uses the reserved prefix karpenter.sh/ (owned by "
        "Kubernetes, Karpenter or GKE, which refuse or overwrite it); use a key with your own prefix, e.g. "
        "example.com/x, or one of: node.kubernetes.io/, node-restriction.kubernetes.io/",
        "P.taints[0].key: 'karpenter.sh/x' uses the prefix karpenter.sh/, whose taints Kubernetes, Karpenter or GKE "
        "add and remove themselves; use a key with your own prefix"]),
])
def test_pool_fields(platform, fields, expect):
    problems = Problems()
    ks._check_pool("P", pool(**fields), platform, platform == "kubeadm", problems)
    assert problems.errors == expect


def test_every_node_group_problem_is_reported():
    problems = Problems()
    ks._check_node_groups(
        {"pools": [{"node_group": 1}, {"node_group": "gpu_pool_x"}, {"node_group": "gpu_pool_a"},
                   {"node_group": "gpu_pool_a"}, {"node_group": "gpu_pool_b"}]},
        {"groups": {"all": [], "gpu_pool_a": [], "gpu_pool_b": [], "workers": []},
         "node_names": {"h1": "N_1", "h2": "n2", "h3": "n2", "h4": "n4"}}, problems)
    assert problems.errors == [
        "gpufleet_gpu_pools[0].node_group: 1 is not an inventory group name; use one of: gpu_pool_a, gpu_pool_b",
        "gpufleet_gpu_pools[1].node_group: 'gpu_pool_x' is not a group of the inventory, so the pool would have no "
        "nodes; use one of: gpu_pool_a, gpu_pool_b (or add the group under gpu_nodes in hosts.yml)",
        "gpufleet_gpu_pools[3].node_group: 'gpu_pool_a' is already the node group of gpufleet_gpu_pools[2]; a host "
        "belongs to one pool, use one group per pool",
        "gpufleet_node_name (host h1): 'N_1' is not a Kubernetes Node name (lowercase RFC 1123 DNS subdomain)",
        "gpufleet_node_name (host h3): Node 'n2' is already the Node of host h2; each host needs its own Node",
    ]


@pytest.mark.parametrize("groups,expect", [
    # without gpu_pool* groups, every group but the project's own is offered
    ({"all": [], "ungrouped": [], "gpu_nodes": [], "gpufleet_controller": [], "workers": [], "a100": []},
     "use one of: a100, workers (or add"),
    ({"all": []}, "use one of: (no group yet) (or add"),
])
def test_node_group_suggestions(groups, expect):
    problems = Problems()
    ks._check_node_groups({"pools": [{"node_group": "x"}]}, {"groups": groups}, problems)
    assert len(problems.errors) == 1 and expect in problems.errors[0]


def test_valid_node_groups_and_names_are_accepted():
    problems = Problems()
    ks._check_node_groups({"pools": [{"node_group": "gpu_pool_a"}, {"node_group": "gpu_pool_b"}]},
                          {"groups": {"gpu_pool_a": [], "gpu_pool_b": []}, "node_names": {"h1": "n1", "h2": "n2"}},
                          problems)
    ks._check_node_groups({"pools": [{"node_group": 1}]}, {"groups": None}, problems)  # no inventory read
    assert problems.errors == []


def check(plan, extra=None, inventory=None):
    problems = Problems()
    ks.check({"extra": extra or {}, "inventory": inventory}, plan, problems)
    return problems.errors


def test_check_reports_every_input_and_accepts_valid_ones():
    plan = {"platform": "kubeadm", "cluster_name": "bad name", "pools": [
        pool(node_group="gpu_pool_a", compute_class="x"), pool(name="c", node_group="gpu_pool_b"),
        pool(name="b", node_group="gpu_pool_a")]}
    extra = {"gpu_pools_example_namespace": "Bad", "gpu_validate_namespace": "kube-system",
             "gpu_validate_exporter_namespace": "ok-ns", "nvidia_driver_persistence": "maybe"}
    bools = [v for v in ks.bool_vars() if v not in ks.BOOL_VARS_CHECKED_ELSEWHERE]
    extra[bools[0]] = "maybe"
    extra[bools[1]] = "yes"
    got = check(plan, extra, {"groups": {"gpu_pool_a": [], "gpu_pool_b": []}})
    assert got == [
        "gpufleet_cluster_name: 'bad name' is not allowed; use 1-63 letters, digits, '-', '_' and '.', starting and "
        "ending with a letter or digit (it is written as a label value and into tags)",
        "gpufleet_gpu_pools[0].compute_class: " + NOT_BOOL % "x",
        "gpu_pools_example_namespace: 'Bad' is not a namespace name: is not a DNS label; use lower-case letters, "
        "digits and '-', starting and ending with a letter or digit",
        "gpu_validate_namespace: 'kube-system' is a system namespace (Kubernetes or OpenShift): gpufleet would relax "
        "its Pod Security and could delete it with the add-on; use a namespace of its own that gpufleet creates and "
        "owns (e.g. gpufleet-validate), not default, kube-*, openshift, openshift-* or gpufleet-system",
        # nvidia_driver_persistence is checked by driver_compat in its own words, not here
        "%s: 'maybe' is not a boolean; use one of: true, false" % bools[0],
        "gpufleet_gpu_pools[2].node_group: 'gpu_pool_a' is already the node group of gpufleet_gpu_pools[0]; a host "
        "belongs to one pool, use one group per pool",
    ]
    # the same inputs, valid: nothing
    assert check({"platform": "kubeadm", "cluster_name": "ok", "pools": [pool(node_group="gpu_pool_a")]},
                 {"gpu_validate_namespace": "gpufleet-validate", "gpu_pools_example_namespace": None,
                  bools[0]: "true", bools[1]: False}, {"groups": {"gpu_pool_a": []}}) == []


def test_check_on_cloud_platforms_skips_node_groups_and_names_the_eks_role():
    plan = {"platform": "eks", "cluster_name": "c" * 47, "pools": ["not-a-pool", pool(node_group=None)]}
    assert check(plan, {"gpu_pools_eks_node_role": "MyRole"}) == []
    assert check(plan) == [
        "gpufleet_cluster_name: %r makes the default node role KarpenterNodeRole-%s longer than the 64 characters "
        "IAM allows; use a name of at most 46 characters or set gpu_pools_eks_node_role" % ("c" * 47, "c" * 47)]
    # self-managed labels: node-role.kubernetes.io is allowed there and only there
    role = pool(labels={"node-role.kubernetes.io/gpu": ""}, node_group="gpu_pool_a")
    assert check({"platform": "k3s", "cluster_name": "ok", "pools": [role]}, None, {"groups": {"gpu_pool_a": []}}) == []
    for platform in ("eks", "gke", "gke-autopilot"):
        assert len(check({"platform": platform, "cluster_name": "ok", "pools": [role]})) == 1, platform


def test_check_goes_on_after_a_namespace_left_unset():
    assert check({"platform": "eks", "cluster_name": "ok", "pools": []},
                 {"gpu_pools_example_namespace": None, "gpu_validate_namespace": None,
                  "gpu_validate_exporter_namespace": "Bad"}) == [
        "gpu_validate_exporter_namespace: 'Bad' is not a namespace name: is not a DNS label; use lower-case letters, "
        "digits and '-', starting and ending with a letter or digit"]


def test_a_node_name_with_a_colon_is_named_by_its_host():
    problems = Problems()
    ks._check_node_groups({"pools": []}, {"groups": {}, "node_names": {"h1": "bad: name"}}, problems)
    assert problems.errors == ["gpufleet_node_name (host h1): 'bad: name' is not a Kubernetes Node name (lowercase "
                               "RFC 1123 DNS subdomain)"]


def test_keys_of_any_type_are_reported_not_a_crash():
    assert errors(ks.check_labels, "l", {3: "x", "a": "b"}) == ["l[3]: label key 3 must be a string, got a number"]
    assert errors(ks.check_taints, "p", [{"key": "a", "effect": "NoSchedule", 3: 1, "x": 2}]) == [
        "p[0]: unknown key(s) 3, x; use one of: key, value, effect"]
    assert errors(ks.check_tolerations, "t", [{"key": "a", 3: 1, "x": 2}]) == [
        "t[0]: unknown key(s) 3, x; use one of: key, operator, value, effect, tolerationSeconds"]


def test_taints_with_a_bad_key_are_not_counted_as_repeats():
    keyless = {"key": None, "effect": "NoSchedule"}
    assert errors(ks.check_taints, "p", [keyless, dict(keyless)]) == [
        "p[0].key: None must be a string, got null", "p[1].key: None must be a string, got null"]


def test_reserved_labels_default_to_a_managed_platform():
    assert "reserved prefix node-role.kubernetes.io/" in ks.reserved_label_error("node-role.kubernetes.io/gpu")
