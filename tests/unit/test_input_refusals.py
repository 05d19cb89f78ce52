"""Issue 26, "Also": inputs that rendered without a word although the API server, Karpenter or the
cloud would refuse them (or that failed late with an internal message). Each is refused in
preflight naming its variable and what to use instead; the legal-but-refused consolidate_after 0s
on EKS is accepted. tests/bad_inputs.yml runs the same classes through the real preflight stage."""
import copy

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.k8s_syntax import check_label_map, check_tolerations
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import closest_key

SELF = {"name": "p", "gpu_type": "l4", "max_nodes": 1}
EKS = {"name": "p", "gpu_type": "l4", "zones": ["us-east-1a"], "max_nodes": 2}
MIG = {"name": "m", "gpu_type": "a100-80gb", "sharing": {"mode": "mig", "mig_strategy": "mixed",
                                                          "mig_preconfigured": True}}


def params(pools=None, platform="kubeadm", mode="standalone", **extra):
    return {"platform": platform, "cluster_name": "c1", "addons_mode": mode, "apply": False,
            "pools": copy.deepcopy([SELF] if pools is None else pools), "extra": extra}


def without_platform():
    out = params()
    del out["platform"]
    return out


def pool(base, **changes):
    out = copy.deepcopy(base)
    out.update(changes)
    return out


TOL = "nvidia_device_plugin_extra_tolerations"
SM = "dcgm_exporter_service_monitor_labels"
ROLE = "gpu_pools_eks_node_role"
P0 = "gpufleet_gpu_pools[0]"

REFUSED = [
    # (case, params, the exact start of one error: "variable: message")
    ("toleration effect misspelt", params(**{TOL: [{"key": "dedicated", "value": "gpu", "effect": "NoScheduel"}]}),
     TOL + "[0].effect: 'NoScheduel' is not allowed; use one of: NoSchedule, PreferNoSchedule, NoExecute, or empty"),
    ("toleration key with a space", params(**{TOL: [{"key": "dedicated gpu", "operator": "Exists"}]}),
     TOL + "[0].key: 'dedicated gpu' name part 'dedicated gpu' is not allowed; use letters"),
    ("toleration key with two slashes", params(**{TOL: [{"key": "a/b/c", "operator": "Exists"}]}),
     TOL + "[0].key: 'a/b/c' has more than one '/'; use [prefix/]name"),
    ("Exists with a value", params(**{TOL: [{"key": "dedicated", "operator": "Exists", "value": "gpu"}]}),
     TOL + "[0].value: 'gpu' is set with operator Exists, which matches any value; use one of: no value"),
    ("unknown operator", params(**{TOL: [{"key": "dedicated", "operator": "In", "value": "gpu"}]}),
     TOL + "[0].operator: 'In' is not allowed; use one of: Equal, Exists"),
    ("empty key without Exists", params(**{TOL: [{"effect": "NoSchedule"}]}),
     TOL + "[0].key: is empty, which only operator Exists allows"),
    ("tolerationSeconds without NoExecute", params(**{TOL: [{"key": "a", "operator": "Exists", "effect": "NoSchedule",
                                                             "tolerationSeconds": 30}]}),
     TOL + "[0].tolerationSeconds: is only used with effect NoExecute; use one of: effect: NoExecute"),
    ("toleration value not a label value", params(**{TOL: [{"key": "a", "value": "two words"}]}),
     TOL + "[0].value: toleration value is not a label value; use letters"),
    ("toleration not a mapping", params(**{TOL: ["nvidia.com/gpu"]}),
     TOL + "[0]: must be a mapping, got a string ('nvidia.com/gpu'); use a list of tolerations"),
    ("tolerations not a list", params(**{TOL: {"key": "a"}}),
     TOL + ": must be a list of tolerations, got a mapping; use a list of tolerations"),
    ("unknown toleration key", params(**{TOL: [{"key": "a", "operator": "Exists", "effct": "NoSchedule"}]}),
     TOL + "[0]: unknown key(s) effct; use one of: key, operator, value, effect, tolerationSeconds"),
    ("ServiceMonitor label value with a space", params(**{SM: {"release": "kube prometheus"}}),
     SM + "['release']: label value is not a label value; use letters"),
    ("ServiceMonitor label key with a space", params(**{SM: {"prometheus release": "x"}}),
     SM + "['prometheus release']: label key 'prometheus release' name part 'prometheus release' is not allowed"),
    ("ServiceMonitor label value a boolean", params(**{SM: {"monitored": True}}),
     SM + "['monitored']: label value must be a quoted string, got a boolean (True)"),
    ("ServiceMonitor labels not a mapping", params(**{SM: ["release=prometheus"]}),
     SM + ": must be a mapping of label key to string value, got a list; use e.g. {release: prometheus}"),
    ("PrometheusRule label value a number", params(gpu_monitoring_rule_labels={"release": 1}),
     "gpu_monitoring_rule_labels['release']: label value must be a quoted string, got a number (1)"),
    ("PrometheusRule label key prefix upper case", params(gpu_monitoring_rule_labels={"Example.com/team": "ml"}),
     "gpu_monitoring_rule_labels['Example.com/team']: label key 'Example.com/team' prefix 'Example.com' is not a "
     "DNS subdomain"),
    ("dashboard label value too long", params(gpu_monitoring_dashboard_labels={"grafana_dashboard": "x" * 64}),
     "gpu_monitoring_dashboard_labels['grafana_dashboard']: label value is 64 characters long"),
    ("capacity type twice", params([pool(SELF, capacity_types=["on-demand", "on-demand"])]),
     P0 + ".capacity_types[1]: 'on-demand' is listed twice; use each capacity type once"),
    ("capacity type twice on EKS", params([pool(EKS, capacity_types=["spot", "on-demand", "spot"])], "eks"),
     P0 + ".capacity_types[2]: 'spot' is listed twice"),
    ("zone twice (already refused)", params([pool(EKS, zones=["us-east-1a", "us-east-1a"])], "eks"),
     P0 + ".zones[1]: 'us-east-1a' is listed twice; use each zone once"),
    ("node role as an ARN", params([EKS], "eks", **{ROLE: "arn:aws:iam::123456789012:role/KarpenterNodeRole-c1"}),
     ROLE + ": 'arn:aws:iam::123456789012:role/KarpenterNodeRole-c1' is an ARN; EC2NodeClass spec.role takes the "
     "role's name; use KarpenterNodeRole-c1 (the name in that ARN)"),
    ("node role ARN with a path", params([EKS], "eks", **{ROLE: "arn:aws:iam::123456789012:role/gpu/NodeRole"}),
     ROLE + ": 'arn:aws:iam::123456789012:role/gpu/NodeRole' is an ARN; EC2NodeClass spec.role takes the role's "
     "name; use NodeRole"),
    ("node role with spaces", params([EKS], "eks", **{ROLE: "Karpenter Node Role"}),
     ROLE + ": 'Karpenter Node Role' is not an IAM role name; use 1-64 letters, digits and +=,.@_-"),
    ("node role too long", params([EKS], "eks", **{ROLE: "r" * 65}),
     ROLE + ": '%s' is not an IAM role name" % ("r" * 65)),
    ("subnet selector tags as a string",
     params([EKS], "eks", gpu_pools_eks_subnet_selector_terms=[{"tags": "karpenter.sh/discovery=c1"}]),
     "gpu_pools_eks_subnet_selector_terms[0].tags: 'karpenter.sh/discovery=c1' is not allowed; use a mapping of tag "
     "key to value"),
    ("security group selector tags as a list",
     params([EKS], "eks", gpu_pools_eks_security_group_selector_terms=[{"tags": ["karpenter.sh/discovery"]}]),
     "gpu_pools_eks_security_group_selector_terms[0].tags: ['karpenter.sh/discovery'] is not allowed"),
    ("selector tag value a number", params([EKS], "eks", gpu_pools_eks_subnet_selector_terms=[{"tags": {"tier": 2}}]),
     "gpu_pools_eks_subnet_selector_terms[0].tags['tier']: 'tier': 2 is not allowed: keys and values must be "
     "non-empty strings"),
    ("selector tag value empty", params([EKS], "eks", gpu_pools_eks_subnet_selector_terms=[{"tags": {"tier": ""}}]),
     "gpu_pools_eks_subnet_selector_terms[0].tags['tier']: 'tier': '' is not allowed"),
    ("pool AMI selector tags not a mapping", params([pool(EKS, ami_selector_terms=[{"tags": "gpu"}])], "eks"),
     P0 + ".ami_selector_terms[0].tags: 'gpu' is not allowed; use a mapping"),
    ("MIG mixed without a profile (preconfigured)", params([MIG]),
     "gpufleet_gpu_pools[0].sharing.mig_profile: is required with mig_strategy mixed: each MIG device is advertised "
     "as nvidia.com/mig-<profile>, which pods and the example Jobs ask for; use one of: 1g.10gb"),
    ("MIG mixed without a profile, add-ons none", params([MIG], mode="none"),
     "gpufleet_gpu_pools[0].sharing.mig_profile: is required with mig_strategy mixed"),
    ("MIG mixed without a profile on EKS", params([pool(MIG, zones=["us-east-1a"], max_nodes=1, gpus_per_node=8)],
                                                  "eks", "operator"),
     "gpufleet_gpu_pools[0].sharing.mig_profile: is required with mig_strategy mixed"),
    ("pools as a mapping", params({"name": "p", "gpu_type": "l4"}),
     "gpufleet_gpu_pools: must be a list of GPU pools, got a mapping (keys: gpu_type, name); use a list with one "
     "item per pool"),
    ("pools as a JSON text", params('[{"name": "p", "gpu_type": "l4"}]'),
     "gpufleet_gpu_pools: must be a list of GPU pools, got a string ('[{\"name\": \"p\", \"gpu_type\": \"l4\"}]'); "
     "a JSON or YAML text is not read as pools: use a list"),
    ("zones as a string", params([pool(EKS, zones="us-east-1a")], "eks"),
     P0 + ".zones: must be a list of zone names in preference order, got a string ('us-east-1a'); use e.g. "
     "[us-east-1a]"),
    ("zones as a string, self-managed", params([pool(SELF, zones="rack-1")]),
     P0 + ".zones: must be a list of zone names in preference order, got a string ('rack-1')"),
    ("no platform", without_platform(),
     "gpufleet_platform: is not set; use one of: eks, gke, gke-autopilot, kubeadm, k3s, rke2, k0s, microk8s, "
     "openshift"),
    ("gpu_type misspelt", params([{"name": "p", "gpu_tpye": "l4"}]),
     P0 + ".gpu_type: is required; the pool has the unknown key 'gpu_tpye' instead: rename it to gpu_type; use one "
     "of: a100-40gb"),
    ("name misspelt", params([{"nmae": "p", "gpu_type": "l4"}]),
     P0 + ".name: is required; the pool has the unknown key 'nmae' instead: rename it to name"),
    ("optional key misspelt", params([pool(SELF, max_node=2)]),
     P0 + ": unknown key(s) max_node (did you mean max_nodes?); use one of:"),
    ("unknown key like nothing known", params([pool(SELF, instance_type="g6.xlarge")]),
     P0 + ": unknown key(s) instance_type; use one of:"),
    ("consolidate_after 0s stays refused on GKE", params([pool(EKS, zones=["us-central1-a"], compute_class=True,
                                                             consolidate_after="0s")], "gke"),
     P0 + ".consolidate_after: '0s' is zero, which a GKE ComputeClass cannot take"),
]


@pytest.mark.parametrize("case,inp,expected", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_in_preflight_naming_the_variable_and_what_to_use(case, inp, expected):
    errors = run_preflight(inp)[0]
    assert any(e.startswith(expected) for e in errors), errors
    # every refusal says what to use instead
    assert all("use" in e for e in errors), errors


def test_one_misspelling_is_one_error():
    """The misspelt gpu_type is named where gpu_type is missing, not also as an unknown key."""
    errors = run_preflight(params([{"name": "p", "gpu_tpye": "l4"}]))[0]
    assert len(errors) == 1, errors


ACCEPTED = [
    ("consolidate_after 0s on EKS (Karpenter v1 takes it; the migration writes it)",
     params([pool(EKS, consolidate_after="0s")], "eks")),
    ("consolidate_after 0m on EKS", params([pool(EKS, consolidate_after="0m")], "eks")),
    ("good tolerations", params(**{TOL: [{"operator": "Exists"}, {"key": "dedicated", "value": "gpu"},
                                         {"key": "example.com/gpu", "operator": "Exists", "effect": ""},
                                         {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                          "effect": "NoExecute", "tolerationSeconds": 300}]})),
    ("good monitoring labels", params(**{SM: {"release": "kube-prometheus-stack", "example.com/team": ""},
                                         "gpu_monitoring_rule_labels": {"release": "prom"}})),
    ("node role name and default", params([EKS], "eks", **{ROLE: "KarpenterNodeRole-c1+gpu@x.y,z=w"})),
    ("good selector tags", params([EKS], "eks", gpu_pools_eks_subnet_selector_terms=[{"tags": {"tier": "*"}}])),
    ("MIG mixed with a profile", params([pool(MIG, sharing=dict(MIG["sharing"], mig_profile="1g.10gb"))])),
    ("MIG single preconfigured without a profile", params([pool(MIG, sharing=dict(MIG["sharing"], mig_strategy="single"))])),
]


@pytest.mark.parametrize("case,inp", ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_accepted(case, inp):
    errors, warnings, _plan = run_preflight(inp)
    assert errors == [], errors


def test_consolidate_after_0s_reaches_the_nodepool():
    from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.karpenter import nodepool
    plan = run_preflight(params([pool(EKS, consolidate_after="0s")], "eks"))[2]
    assert nodepool(plan["pools"][0])["spec"]["disruption"]["consolidateAfter"] == "0s"


@pytest.mark.parametrize("key,meant", [("gpu_tpye", "gpu_type"), ("max_node", "max_nodes"), ("zone", "zones"),
                                       ("gpus_per_nodes", "gpus_per_node"), ("instance_type", None), (3, None)])
def test_closest_key(key, meant):
    from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import POOL_KEYS
    assert closest_key(key, POOL_KEYS) == meant


def test_checkers_report_nothing_for_valid_input():
    problems = Problems()
    check_tolerations("t", [], problems)
    check_label_map("l", {}, problems)
    assert problems.errors == []
