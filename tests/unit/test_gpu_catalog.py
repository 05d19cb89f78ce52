"""GPU type -> cloud mapping (table-driven; facts from the EC2 / Compute Engine GPU documentation)."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.gpu_catalog import (
    GPU_TYPES, gke_accelerators, gpu_counts_on, offered_on, types_on)

EKS = [
    ("t4", ["g4dn"], "t4"), ("v100", ["p3", "p3dn"], "v100"), ("a10g", ["g5"], "a10g"), ("l4", ["g6"], "l4"),
    ("l40s", ["g6e"], "l40s"), ("a100-40gb", ["p4d"], "a100"), ("a100-80gb", ["p4de"], "a100"),
    ("h100-80gb", ["p5"], "h100"), ("h200-141gb", ["p5e", "p5en"], "h200"), ("b200", ["p6-b200"], "b200"),
]
GKE = [
    ("t4", "nvidia-tesla-t4", "n1"), ("v100", "nvidia-tesla-v100", "n1"), ("l4", "nvidia-l4", "g2"),
    ("a100-40gb", "nvidia-tesla-a100", "a2"), ("a100-80gb", "nvidia-a100-80gb", "a2"),
    ("h100-80gb", "nvidia-h100-80gb", "a3"), ("h200-141gb", "nvidia-h200-141gb", "a3"), ("b200", "nvidia-b200", "a4"),
    ("a10g", None, None), ("l40s", None, None),
]


@pytest.mark.parametrize("gpu,families,name", EKS)
def test_eks_mapping(gpu, families, name):
    assert GPU_TYPES[gpu]["eks_families"] == families and GPU_TYPES[gpu]["eks_gpu_name"] == name
    assert offered_on(gpu, "eks")


@pytest.mark.parametrize("gpu,accelerator,family", GKE)
def test_gke_mapping(gpu, accelerator, family):
    assert GPU_TYPES[gpu]["gke_accelerator"] == accelerator
    assert GPU_TYPES[gpu]["gke_machine_family"] == family
    for platform in ("gke", "gke-autopilot"):
        assert offered_on(gpu, platform) == (accelerator is not None)


@pytest.mark.parametrize("gpu,platform,counts", [
    ("h100-80gb", "eks", [1, 8]), ("a100-40gb", "eks", [8]), ("l4", "eks", [1, 4, 8]),
    ("t4", "gke", [1, 2, 4]), ("a100-40gb", "gke", [1, 2, 4, 8, 16]), ("h200-141gb", "gke-autopilot", [8]),
    ("l4", "kubeadm", None),
])
def test_gpu_counts(gpu, platform, counts):
    assert gpu_counts_on(gpu, platform) == counts


def test_types_per_platform_and_unknown_types():
    assert "a10g" not in types_on("gke") and "a10g" in types_on("eks") and types_on("k3s") == sorted(GPU_TYPES)
    assert not offered_on("rtx4090", "kubeadm")
    assert gke_accelerators() == sorted(a for _, a, _ in GKE if a)


def test_every_type_keeps_the_fields_other_roles_read():
    for facts in GPU_TYPES.values():
        assert {"arch", "memory_gib", "eks_families", "gke_accelerator", "gke_machine_family"} <= set(facts)
