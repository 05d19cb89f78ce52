"""A hand-written schema of the GKE node auto-provisioning config file's documented fields.

Source: GKE "Use node auto-provisioning" (cloud.google.com/kubernetes-engine/docs/how-to/
node-auto-provisioning, the YAML file given to ``--autoprovisioning-config-file``) and the REST
reference of AutoprovisioningNodePoolDefaults / ResourceLimit: resourceLimits {resourceType,
minimum, maximum} with cpu in cores, memory in GB and one entry per GPU accelerator type;
autoprovisioningLocations (zones); management {autoRepair, autoUpgrade}; shieldedInstanceConfig
{enableSecureBoot, enableIntegrityMonitoring}; diskSizeGb (smallest 10 GB); diskType; imageType;
serviceAccount; scopes; upgradeSettings; bootDiskKmsKey; minCpuPlatform.
The accelerator resource types come from the recorded Compute Engine catalog
(tests/fixtures/clouds/gce-gpu-machine-types.yml), not from the code under test.
"""
from cloud_catalog import gce_accelerators

# Documented NAP config-file fields: name -> (type, check)
NAP_SCHEMA = {
    "resourceLimits": list,
    "autoprovisioningLocations": list,
    "management": dict,
    "shieldedInstanceConfig": dict,
    "diskSizeGb": int,
    "diskType": str,
    "imageType": str,
    "serviceAccount": str,
    "scopes": list,
    "upgradeSettings": dict,
    "bootDiskKmsKey": str,
    "minCpuPlatform": str,
}
RESOURCE_TYPES = {"cpu", "memory"} | set(gce_accelerators())
DISK_TYPES = {"pd-standard", "pd-balanced", "pd-ssd"}
IMAGE_TYPES = {"COS_CONTAINERD", "UBUNTU_CONTAINERD"}


def check_nap(doc):
    """Hand-written schema of the documented NAP file; returns a list of problems."""
    problems = []
    for key, value in doc.items():
        if key not in NAP_SCHEMA:
            problems.append("unknown field %s" % key)
        elif not isinstance(value, NAP_SCHEMA[key]) or isinstance(value, bool):
            problems.append("%s must be %s" % (key, NAP_SCHEMA[key].__name__))
    seen = set()
    for item in doc.get("resourceLimits", []):
        if set(item) - {"resourceType", "minimum", "maximum"} or "resourceType" not in item or "maximum" not in item:
            problems.append("resourceLimits item %r needs resourceType, maximum (minimum optional)" % item)
            continue
        if item["resourceType"] not in RESOURCE_TYPES:
            problems.append("resourceType %r unknown" % item["resourceType"])
        if item["resourceType"] in seen:
            problems.append("resourceType %r twice" % item["resourceType"])
        seen.add(item["resourceType"])
        low, high = item.get("minimum", 0), item["maximum"]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (low, high)) or high < low:
            problems.append("limits of %s: 0 <= minimum <= maximum, integers" % item["resourceType"])
    if not {"cpu", "memory"} <= seen:
        problems.append("cpu and memory limits are required")
    if set(doc.get("management", {})) - {"autoRepair", "autoUpgrade"} or \
            not all(isinstance(v, bool) for v in doc.get("management", {}).values()):
        problems.append("management: autoRepair, autoUpgrade (booleans)")
    if set(doc.get("shieldedInstanceConfig", {})) - {"enableSecureBoot", "enableIntegrityMonitoring"} or \
            not all(isinstance(v, bool) for v in doc.get("shieldedInstanceConfig", {}).values()):
        problems.append("shieldedInstanceConfig: enableSecureBoot, enableIntegrityMonitoring (booleans)")
    if "diskSizeGb" in doc and isinstance(doc["diskSizeGb"], int) and doc["diskSizeGb"] < 10:
        problems.append("diskSizeGb below the documented minimum of 10")
    if "diskType" in doc and doc["diskType"] not in DISK_TYPES:
        problems.append("diskType %r" % doc["diskType"])
    if "imageType" in doc and doc["imageType"] not in IMAGE_TYPES:
        problems.append("imageType %r" % doc["imageType"])
    for zone in doc.get("autoprovisioningLocations", []):
        if not isinstance(zone, str) or zone.count("-") != 2:
            problems.append("location %r is not a zone" % zone)
    return problems
