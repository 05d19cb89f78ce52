"""GPU type -> cloud mapping, checked against the recorded provider catalogs.

tests/fixtures/clouds/ holds what EC2 and Compute Engine document (GPU per instance family /
machine family, GPU memory, GPUs per instance type); the code's GPU_TYPES must agree with it.
"""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import (
    CPU_ARCHS, GPU_TYPES, MIG_CAPABLE, MULTI_NODE_NVLINK, cpu_arch, gke_accelerators, gpu_counts_on, offered_on,
    types_on)
from cloud_catalog import EC2, GCE, ec2_gpu_counts, gce_accelerators, gce_entry, gce_gpu_counts

EKS_TYPES = sorted(name for name, facts in GPU_TYPES.items() if facts["eks_families"])
GKE_TYPES = sorted(name for name, facts in GPU_TYPES.items() if facts["gke_accelerator"])


@pytest.mark.parametrize("gpu", EKS_TYPES)
def test_eks_families_carry_the_gpu_the_code_names(gpu):
    facts = GPU_TYPES[gpu]
    for family in facts["eks_families"]:
        assert family in EC2, "%s: instance family %s is not in the recorded EC2 catalog" % (gpu, family)
        assert EC2[family]["gpu_name"] == facts["eks_gpu_name"], family
    # the GPU's memory is that of the first family (p3dn's V100 has 32 GiB, p3's 16)
    assert EC2[facts["eks_families"][0]]["memory_gib"] == facts["memory_gib"]
    recorded = sorted({n for family in facts["eks_families"] for n in ec2_gpu_counts(family)})
    assert facts["eks_gpu_counts"] == recorded
    assert gpu_counts_on(gpu, "eks") == recorded
    assert offered_on(gpu, "eks")


@pytest.mark.parametrize("gpu", GKE_TYPES)
def test_gke_accelerator_is_offered_on_the_machine_family_the_code_names(gpu):
    facts = GPU_TYPES[gpu]
    entry = gce_entry(facts["gke_machine_family"], facts["gke_accelerator"])
    assert entry is not None, "%s: %s is not on the %s machine family in the recorded catalog" % (
        gpu, facts["gke_accelerator"], facts["gke_machine_family"])
    assert entry["memory_gb"] == facts["memory_gib"]
    assert facts["gke_gpu_counts"] == gce_gpu_counts(entry)
    for platform in ("gke", "gke-autopilot"):
        assert offered_on(gpu, platform)
        assert gpu_counts_on(gpu, platform) == gce_gpu_counts(entry)


@pytest.mark.parametrize("gpu", sorted(set(GPU_TYPES) - set(GKE_TYPES)))
def test_types_without_a_gke_accelerator_are_not_on_compute_engine(gpu):
    """A GPU the code keeps off GKE must really be absent from Compute Engine (same memory, same name)."""
    name = GPU_TYPES[gpu]["eks_gpu_name"]
    assert not any(name in entry["accelerator"].split("-") for entries in GCE.values() for entry in entries)
    for platform in ("gke", "gke-autopilot"):
        assert not offered_on(gpu, platform) and gpu_counts_on(gpu, platform) == []


def test_every_code_accelerator_is_a_recorded_one():
    assert set(gke_accelerators()) <= set(gce_accelerators())
    assert gke_accelerators() == sorted(GPU_TYPES[g]["gke_accelerator"] for g in GKE_TYPES)


def test_self_managed_platforms_take_any_count_and_type():
    assert gpu_counts_on("l4", "kubeadm") is None
    assert types_on("k3s") == sorted(GPU_TYPES)
    assert "a10g" not in types_on("gke") and "a10g" in types_on("eks")
    assert not offered_on("rtx4090", "kubeadm")


def test_the_recording_check_can_fail():
    """A wrong family or count in the code would be caught: the recording disagrees with these."""
    assert EC2["p4d"]["gpu_name"] != "h100"
    assert gce_entry("n1", "nvidia-l4") is None
    assert gce_gpu_counts(gce_entry("a3", "nvidia-h200-141gb")) != [1, 2, 4, 8]


def test_every_type_keeps_the_fields_other_roles_read():
    for facts in GPU_TYPES.values():
        assert {"arch", "memory_gib", "eks_families", "gke_accelerator", "gke_machine_family", "cpu_arch"} <= set(facts)


# Host CPU architecture: GB200 pairs its GPUs with a Grace (Arm) CPU; every other type is on x86 hosts.
@pytest.mark.parametrize("gpu", sorted(GPU_TYPES))
def test_every_type_names_a_known_cpu_architecture(gpu):
    assert GPU_TYPES[gpu]["cpu_arch"] in CPU_ARCHS
    assert cpu_arch(gpu) == ("arm64" if gpu == "gb200" else "amd64")


def test_gb200_is_a_grace_blackwell_type_on_gke_a4x_only():
    """NVIDIA MIG user guide (Supported GPUs): GB200, Blackwell, 186GB. GCP: a4x-highgpu-4g, 4 x nvidia-gb200.
    EKS is left out until EC2's GPU name for P6e-GB200 is documented."""
    facts = GPU_TYPES["gb200"]
    assert (facts["arch"], facts["memory_gib"], facts["cpu_arch"]) == ("blackwell", 186, "arm64")
    assert gce_entry("a4x", "nvidia-gb200")["machine_types"] == {"a4x-highgpu-4g": 4}
    assert gpu_counts_on("gb200", "gke") == [4] and offered_on("gb200", "gke-autopilot")
    assert not offered_on("gb200", "eks") and "gb200" not in types_on("eks")
    assert offered_on("gb200", "kubeadm")
    # no MIG profile table for GB200 was found in NVIDIA's MIG user guide: not MIG-capable here
    assert "gb200" not in MIG_CAPABLE
    assert MULTI_NODE_NVLINK == ("gb200",)
