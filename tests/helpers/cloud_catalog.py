"""The recorded cloud GPU catalogs (tests/fixtures/clouds/): facts copied from the providers' public
documentation, read by tests in place of the code under test's own table."""
import os

import yaml

CLOUDS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "clouds")


def _load(name):
    with open(os.path.join(CLOUDS, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["families"]


GCE = _load("gce-gpu-machine-types.yml")
EC2 = _load("ec2-gpu-instance-types.yml")


def gce_accelerators():
    """Every accelerator type name Compute Engine documents (NAP resourceType, gke-accelerator label)."""
    return sorted({entry["accelerator"] for entries in GCE.values() for entry in entries})


def gce_entry(family, accelerator):
    """The recorded entry for ``accelerator`` in machine ``family``, or None."""
    for entry in GCE.get(family) or []:
        if entry["accelerator"] == accelerator:
            return entry
    return None


def gce_gpu_counts(entry):
    return sorted(set(entry.get("gpu_counts") or entry["machine_types"].values()))


def ec2_gpu_counts(family):
    return sorted(set(EC2[family]["instance_types"].values()))
