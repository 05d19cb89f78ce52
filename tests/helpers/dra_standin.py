"""STAND-IN for NVIDIA's DRA Driver for GPUs' gpu-kubelet-plugin (the DeviceClasses are the real chart's:
tests/helpers/dra_chart.py).

No GPU and no kubelet run here, so nothing real can publish devices. This module writes, through the real
API server, what the driver's kubelet plugin publishes for a node: one ResourceSlice of driver
``gpu.nvidia.com`` whose pool is the node, one device per GPU (``gpu-<minor>``) with the attributes the
driver sets (type gpu, uuid, productName, brand, architecture, cudaComputeCapability, driverVersion,
cudaDriverVersion, pcieBusID) and the capacity ``memory``; on a MIG-enabled GPU, one device per MIG
instance (``gpu-<minor>-mig-<giProfileId>-<start>-<size>``, type mig, profile, parentUUID, memory and
multiprocessors) instead. The names and attributes are the driver's (read from its source); the values
are simulated. Only the real kube-scheduler allocates from them.
"""

import zlib

DRIVER = "gpu.nvidia.com"

# GPU models the tests simulate: productName as the driver reports it (from NVML), memory in MiB.
MODELS = {
    "h100": {"productName": "NVIDIA H100 80GB HBM3", "architecture": "Hopper", "cc": "9.0.0", "memory_mib": 81559},
    "l4": {"productName": "NVIDIA L4", "architecture": "Ada Lovelace", "cc": "8.9.0", "memory_mib": 23034},
}
# MIG profiles of an H100 80GB the tests use: (GPU instance profile id, placement size, memory MiB, SMs)
H100_MIG = {"1g.10gb": (19, 1, 9856, 16), "3g.40gb": (9, 4, 40192, 60)}


def _gpu_uuid(node, minor):
    return "GPU-%08x-0000-0000-0000-%012d" % (zlib.crc32(node.encode()), minor)


def _common(model, uuid, bus):
    m = MODELS[model]
    return {"uuid": {"string": uuid}, "productName": {"string": m["productName"]}, "brand": {"string": "Nvidia"},
            "architecture": {"string": m["architecture"]}, "cudaComputeCapability": {"version": m["cc"]},
            "driverVersion": {"version": "580.105.8"}, "cudaDriverVersion": {"version": "13.0.0"},
            "pcieBusID": {"string": bus}}


def slice_for(node, model, gpus, mig=None):
    """The ResourceSlice the kubelet plugin publishes for ``node``: ``gpus`` GPUs of ``model``; ``mig``
    {profile: instances per GPU} makes every GPU MIG-enabled with those instances."""
    devices = []
    for minor in range(gpus):
        uuid = _gpu_uuid(node, minor)
        bus = "0000:%02x:00.0" % (0x18 + minor)
        if not mig:
            attrs = dict(_common(model, uuid, bus), type={"string": "gpu"})
            devices.append({"name": "gpu-%d" % minor, "attributes": attrs,
                            "capacity": {"memory": {"value": "%dMi" % MODELS[model]["memory_mib"]}}})
            continue
        start = 0
        for profile, count in sorted(mig.items()):
            gi, size, mem, sms = H100_MIG[profile]
            for _ in range(count):
                attrs = dict(_common(model, "MIG-%s-%d" % (uuid[4:], start), bus), type={"string": "mig"},
                             profile={"string": profile}, parentUUID={"string": uuid})
                devices.append({"name": "gpu-%d-mig-%d-%d-%d" % (minor, gi, start, size), "attributes": attrs,
                                "capacity": {"memory": {"value": "%dMi" % mem}, "multiprocessors": {"value": str(sms)}}})
                start += size
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "%s-%s" % (node, DRIVER.replace(".", "-")),
                         "labels": {"gpufleet.io/stand-in": "dra-kubelet-plugin"}},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}
