"""GKE ComputeClass GPU sharing (issue 14 item 4): ``priorities[].gpu.gpuSharing`` rendered only when
``gpu_pools_gke_version`` is 1.35.2-gke.1485000 or later (ComputeClass CRD reference,
https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass), GKE version strings
compared numerically, the pods' GKE sharing selectors matching what the class's nodes carry, the
preflight refusals, and the strict test-side schema overlay for gpuSharing
(tests/schemas/overlays/computeclass-gpusharing.json)."""
import copy
import os

import pytest
import yaml

from crd_schema import assert_crs_valid, validate_crs
from ansible_collections.gpufleet.k8s.plugins.filter import pools as pool_filters
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools import gke
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.gpu_access import (
    GKE_PARTITION_SIZE, GKE_SHARED_CLIENTS_RANGE)
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.placement import placement
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.pools_check import parse_gke_version, resolve_settings
from ansible_collections.gpufleet.k8s.plugins.module_utils.preflight import run_preflight
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.spec import normalize_pool

STRATEGY = "cloud.google.com/gke-gpu-sharing-strategy"
CLIENTS = "cloud.google.com/gke-max-shared-clients-per-gpu"
NEW = "1.35.2-gke.1485000"

TIME = {"mode": "time-slicing", "replicas": 4}
MPS = {"mode": "mps", "replicas": 3}
MIG = {"mode": "mig", "mig_strategy": "single", "mig_profile": "1g.10gb"}


def pool(sharing=None, gpu_type="a100-80gb", compute_class=True, **more):
    base = {"name": "shared", "gpu_type": gpu_type, "gpus_per_node": 1, "zones": ["us-central1-a"], "max_nodes": 2,
            "compute_class": compute_class, "capacity_types": ["spot", "on-demand"]}
    if sharing is not None:
        base["sharing"] = copy.deepcopy(sharing)
    base.update(more)
    return normalize_pool(base)


def cls(p, version):
    return gke.compute_class(p, resolve_settings({"gpu_pools_gke_version": version}))


# --- GKE version strings ---------------------------------------------------------------------

@pytest.mark.parametrize("text,parsed", [
    ("1.35.2-gke.1485000", (1, 35, 2, 1485000)),
    ("v1.36.0-gke.12", (1, 36, 0, 12)),
    (" 1.35.10-gke.1 ", (1, 35, 10, 1)),
    ("1.35", None), ("1.35.2", None), ("1.35.2-gke", None), ("1.35.2-gke.x", None), ("latest", None),
    ("", None), (None, None), (1.35, None),
])
def test_parse_gke_version(text, parsed):
    assert parse_gke_version(text) == parsed


@pytest.mark.parametrize("version,supported", [
    ("", False),
    ("1.35.2-gke.1485000", True),
    ("1.35.2-gke.1484999", False),
    # numeric, not lexical: "999" sorts after "1485000" as text, "10" before "2"
    ("1.35.2-gke.999", False),
    ("1.35.10-gke.1", True),
    ("1.36.0-gke.100", True),
    ("1.34.9-gke.99999999", False),
    ("2.0.0-gke.1", True),
    ("not-a-version", False),
])
def test_class_gpu_sharing_needs_gke_1_35_2_gke_1485000(version, supported):
    assert gke.class_gpu_sharing_supported(resolve_settings({"gpu_pools_gke_version": version})) is supported


# --- the ComputeClass ---------------------------------------------------------------------------

@pytest.mark.parametrize("sharing,expected", [
    (TIME, {"sharingStrategy": "TIME_SHARING", "maxSharedClientsPerGPU": 4}),
    (MPS, {"sharingStrategy": "MPS", "maxSharedClientsPerGPU": 3}),
    (MIG, {"gpuPartitionSize": "1g.10gb"}),
])
def test_compute_class_renders_gpu_sharing_from_the_version(sharing, expected):
    new = cls(pool(sharing), NEW)
    assert [p["gpu"] for p in new["spec"]["priorities"]] == [
        {"type": "nvidia-a100-80gb", "count": 1, "gpuSharing": expected}] * 2
    # one object per priority: no YAML anchors in the dump
    assert new["spec"]["priorities"][0]["gpu"] is not new["spec"]["priorities"][1]["gpu"]
    for version in ("", "1.35.1-gke.2000000"):
        old = cls(pool(sharing), version)
        assert [p["gpu"] for p in old["spec"]["priorities"]] == [{"type": "nvidia-a100-80gb", "count": 1}] * 2
    assert_crs_valid([new, cls(pool(sharing), "")])


def test_pool_without_sharing_has_no_gpu_sharing():
    gpu = cls(pool(), NEW)["spec"]["priorities"][0]["gpu"]
    assert gpu == {"type": "nvidia-a100-80gb", "count": 1}


@pytest.mark.parametrize("sharing", [TIME, MPS, MIG])
def test_pod_selectors_are_what_the_class_nodes_carry(sharing):
    """GKE labels a shared node (pool) with its strategy and clients per GPU, or its partition size;
    the pod's selectors must be exactly those of the class's gpuSharing."""
    p = pool(sharing)
    frag = placement(p, "gke")
    gpu_sharing = cls(p, NEW)["spec"]["priorities"][0]["gpu"]["gpuSharing"]
    node_labels = {}
    if "sharingStrategy" in gpu_sharing:
        node_labels[STRATEGY] = {"TIME_SHARING": "time-sharing", "MPS": "mps"}[gpu_sharing["sharingStrategy"]]
        node_labels[CLIENTS] = str(gpu_sharing["maxSharedClientsPerGPU"])
    if "gpuPartitionSize" in gpu_sharing:
        node_labels[GKE_PARTITION_SIZE] = gpu_sharing["gpuPartitionSize"]
    assert frag["nodeSelector"] == dict({"cloud.google.com/compute-class": "shared"}, **node_labels)
    assert frag["resources"]["limits"] == {"nvidia.com/gpu": 1}


# --- preflight ---------------------------------------------------------------------------------

def params(pools, platform="gke", **extra):
    return {"platform": platform, "cluster_name": "c1", "addons_mode": "none" if platform == "gke-autopilot"
            else "standalone", "apply": False, "pools": pools, "extra": extra}


def raw(sharing, gpu_type="a100-80gb", compute_class=True):
    return {"name": "shared", "gpu_type": gpu_type, "zones": ["us-central1-a"], "max_nodes": 2,
            "compute_class": compute_class, "sharing": sharing}


@pytest.mark.parametrize("platform", ["gke", "gke-autopilot"])
@pytest.mark.parametrize("compute_class", [True, False])
@pytest.mark.parametrize("mode,replicas", [("time-slicing", 49), ("mps", 64), ("time-slicing", 100)])
def test_shared_clients_outside_gke_range_are_refused(platform, compute_class, mode, replicas):
    errors = run_preflight(params([raw({"mode": mode, "replicas": replicas}, compute_class=compute_class)],
                                  platform))[0]
    assert ("gpufleet_gpu_pools[0].sharing.replicas: %d is outside GKE's range of %s clients per GPU "
            "(gke-max-shared-clients-per-gpu, ComputeClass maxSharedClientsPerGPU); use an integer from 2 to 48"
            % (replicas, mode)) in errors, errors


@pytest.mark.parametrize("replicas", [2, 48])
def test_shared_clients_at_the_gke_bounds_pass(replicas):
    assert GKE_SHARED_CLIENTS_RANGE == (2, 48)
    assert run_preflight(params([raw({"mode": "mps", "replicas": replicas})], gpu_pools_gke_version=NEW))[0] == []


def test_more_than_48_replicas_stays_allowed_off_gke():
    pools = [{"name": "p", "gpu_type": "l4", "sharing": {"mode": "time-slicing", "replicas": 64}}]
    errors = run_preflight(params(pools, "kubeadm"))[0]
    assert not [e for e in errors if "replicas" in e], errors


@pytest.mark.parametrize("gpu_type,profile", [("a100-40gb", "1g.20gb"), ("a100-80gb", "1g.5gb"),
                                              ("h200-141gb", "1g.10gb")])
def test_mig_partition_size_the_gpu_does_not_offer_is_refused_on_gke(gpu_type, profile):
    errors = run_preflight(params([raw({"mode": "mig", "mig_profile": profile}, gpu_type=gpu_type)],
                                  gpu_pools_gke_version=NEW))[0]
    assert any(e.startswith("gpufleet_gpu_pools[0].sharing.mig_profile: %r is not a MIG profile of gpu_type %s; "
                            "use one of:" % (profile, gpu_type)) for e in errors), errors


@pytest.mark.parametrize("version", ["1.35", "1.35.2", "v1.35.2-gke", "latest", "1.35.2-gke.1485000-beta"])
def test_a_version_that_is_not_a_gke_version_is_refused(version):
    errors = run_preflight(params([raw(TIME)], gpu_pools_gke_version=version))[0]
    assert ("gpu_pools_gke_version: %r is not a GKE version; use MAJOR.MINOR.PATCH-gke.BUILD as GKE reports it "
            "(e.g. 1.35.2-gke.1485000), or \"\" when unknown" % version) in errors, errors


def test_version_off_gke_only_warns():
    pools = [{"name": "p", "gpu_type": "l4"}]
    errors, warnings, _ = run_preflight(params(pools, "kubeadm", gpu_pools_gke_version=NEW))
    assert errors == []
    assert "gpu_pools_gke_version: is only used on gke and gke-autopilot (platform kubeadm)" in warnings


@pytest.mark.parametrize("version,fragment", [
    ("", "shared: no gpuSharing in the ComputeClass (gpu_pools_gke_version is unset, so the cluster version is "
         "unknown; set it to 1.35.2-gke.1485000 or later to render it)"),
    ("1.34.5-gke.100", "shared: no gpuSharing in the ComputeClass (GKE 1.34.5-gke.100 is below 1.35.2-gke.1485000)"),
    (NEW, "shared: ComputeClass priorities[].gpu.gpuSharing {maxSharedClientsPerGPU: 4, sharingStrategy: "
          "TIME_SHARING} (GKE 1.35.2-gke.1485000 >= 1.35.2-gke.1485000)"),
])
def test_plan_and_provision_output_say_which_form_was_rendered(version, fragment):
    errors, _w, plan = run_preflight(params([raw(TIME), dict(raw(None), name="whole", sharing={"mode": "none"})],
                                            gpu_pools_gke_version=version))
    assert errors == []
    assert len(plan["gke_class_sharing"]) == 1 and plan["gke_class_sharing"][0].startswith(fragment)
    summary = pool_filters.gpu_pools_summary(plan, {"gpu_pools_gke_version": version})
    assert summary.startswith("GKE Standard: node auto-provisioning config file; ComputeClass for: shared, whole. "
                              "GPU sharing: " + fragment)


def test_no_sharing_note_without_a_shared_compute_class():
    errors, _w, plan = run_preflight(params([raw(TIME, compute_class=False)]))
    assert errors == [] and plan["gke_class_sharing"] == []
    assert "GPU sharing" not in pool_filters.gpu_pools_summary(plan, {})


# --- the schema overlay for gpuSharing -------------------------------------------------------------

@pytest.mark.parametrize("bad,fragment", [
    ({"sharingStrategy": "TIME_SHARING", "maxSharedClientsPerGPU": 4, "replicas": 4},
     "gpuSharing must NOT have additional properties (replicas)"),
    ({"sharingStrategy": "time-sharing", "maxSharedClientsPerGPU": 4},
     "gpuSharing/sharingStrategy must be equal to one of the allowed values (TIME_SHARING, MPS)"),
    ({"sharingStrategy": "MPS", "maxSharedClientsPerGPU": 49}, "gpuSharing/maxSharedClientsPerGPU must be <= 48"),
    ({"sharingStrategy": "MPS", "maxSharedClientsPerGPU": 1}, "gpuSharing/maxSharedClientsPerGPU must be >= 2"),
    ({"sharingStrategy": "MPS", "maxSharedClientsPerGPU": "4"}, "gpuSharing/maxSharedClientsPerGPU must be integer"),
    ({"sharingStrategy": "MPS"}, "must have property maxSharedClientsPerGPU when property sharingStrategy is present"),
    ({"gpuPartitionSize": "half"}, "gpuSharing/gpuPartitionSize must match pattern"),
])
def test_a_bad_gpu_sharing_fails_schema_validation(bad, fragment):
    obj = cls(pool(TIME), NEW)
    assert validate_crs([obj])[0]["ok"]
    obj["spec"]["priorities"][1]["gpu"]["gpuSharing"] = bad
    result = validate_crs([obj])[0]
    assert not result["ok"]
    assert result["error"].startswith("gpuSharing overlay: data/spec/priorities/1/gpu/gpuSharing"), result["error"]
    assert fragment in result["error"], result["error"]


# --- the new cases of tests/bad_inputs.yml, in process (the integration test runs them through site.yml) ---

def _bad_input_cases():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "tests", "bad_inputs.yml")) as handle:
        return [c for c in yaml.safe_load(handle) if c["id"].startswith(("gke-sharing-", "gke-version-"))]


@pytest.mark.parametrize("case", _bad_input_cases(), ids=lambda c: c["id"])
def test_bad_inputs_yml_gke_sharing_cases_are_refused(case):
    values = dict(case["vars"])
    extra = {k: v for k, v in values.items() if not k.startswith("gpufleet_")}
    errors = run_preflight(params(values["gpufleet_gpu_pools"], values["gpufleet_platform"], **extra))[0]
    assert any(e.startswith(case["variable"] + ": ") and case["expect"] in e for e in errors), errors


def test_there_are_four_gke_sharing_bad_inputs():
    assert len(_bad_input_cases()) == 4
