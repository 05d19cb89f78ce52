"""Validate Kubernetes objects against the real upstream OpenAPI schemas (kubernetes-validate).

gpufleet supports Kubernetes 1.32 (the oldest minor EKS or GKE still supports, December 2026) to 1.37;
objects are checked against the oldest and newest in strict mode (unknown fields are errors). Real API
servers at both ends accept the rendered trees too: tests/integration/test_cp_trees.py.
"""
import kubernetes_validate

from ansible_collections.gpufleet.k8s.plugins.module_utils.model.pod_spec_rules import object_problems

SUPPORTED_K8S = ("1.32.0", "1.37.0")


def assert_valid(obj, versions=SUPPORTED_K8S):
    # the API server's cross-field pod rules, which no OpenAPI schema expresses (hostPID with
    # shareProcessNamespace, names used twice, mounts of missing volumes)
    problems = object_problems([obj])
    if problems:
        raise AssertionError("; ".join(problems))
    for version in versions:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            raise AssertionError("%s/%s invalid for Kubernetes %s: %s at %s" % (
                obj.get("kind"), obj.get("metadata", {}).get("name"), version, exc.message,
                "/".join(str(p) for p in exc.path)))
