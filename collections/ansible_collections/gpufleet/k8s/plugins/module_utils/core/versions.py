# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Every image, chart and operator-package version the add-on roles deploy, in one place.

Tags are pinned; a digest may be added per image (``digest: sha256:...``) and is then appended
(``repo:tag@sha256:...``). ``gpufleet_registry_prefix`` replaces the registry host of every image
(``nvcr.io/nvidia/k8s-device-plugin`` -> ``mirror.example:5000/nvidia/k8s-device-plugin``) so one
variable points everything at a mirror; ``gpufleet_image_overrides`` changes repository, tag or
digest of single images. The set below is the one GPU Operator chart v26.7.0 itself ships (its
deployments/gpu-operator/values.yaml and OLM bundle at tag v26.7.0: device plugin / GFD v0.20.0,
DCGM Exporter 4.6.0-4.8.3-distroless, DCGM 4.6.0-1, Container Toolkit v1.20.0, MIG manager v0.15.0,
default driver 595.91.07), so the standalone and operator modes run the same component versions.
NFD is v0.19.0, the version the chart depends on (its Chart.yaml: node-feature-discovery 0.19.0, whose
image tag the chart's values leave at the subchart's own). gpufleet's NFD manifests and RBAC allow-list
were compared with NFD's deployment/base and Helm chart at tag v0.19.0 (issue 30): the master's and the
worker's rules, command, config file, ports, probes and host mounts gpufleet uses are unchanged from
v0.18.2 (v0.19.0 fixes the chart's nodefeaturegroups/status typo gpufleet never had, drops CPU limits,
adds GOMEMLIMIT, and gives the worker an optional Node owner reference that needs nodes get, which
gpufleet does not turn on). NFD's digest is the one the Kubernetes image promoter published it under:
kubernetes/k8s.io pull request #9697 ("Promote NFD v0.19.0", merged 2026-07-10), whose
registry.k8s.io/images/k8s-staging-nfd/images.yaml maps sha256:2fa1c99a...c4d2 to v0.19.0 and v0.19.0-minimal
(built from the signed tag v0.19.0, 45d276ed9; NFD builds linux/amd64 and linux/arm64, so the tag is an index).

Digests (issue 30 item 7) are the ones NVIDIA publishes for the same tags in the GPU Operator's OLM
bundle (bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml, relatedImages, at tag
v26.7.0): the multi-architecture index digest, so every node pulls exactly what NVIDIA released. An
image without a published digest keeps ``digest: ""`` and is pinned by tag only (named in
docs/security.md). ``scripts/pins-from-chart.py`` compares a chart version's values.yaml with this
file when moving to a new release. ``table_markdown`` writes the
the version table of docs/reference/tables.md from here (a test keeps them equal).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

IMAGES = {
    # k8s-device-plugin: the plugin, its config-manager, the MPS control daemon and GFD share one image.
    "device_plugin": {"repository": "nvcr.io/nvidia/k8s-device-plugin", "tag": "v0.20.0",
                      "digest": "sha256:a61ba9fd8efb82f3a79f877f7580e02c1e8e7593f62473644bc9c79e315c3312"},
    # distroless: NVIDIA publishes 4.6.0-4.8.3 only in this variant (no shell in the image)
    "dcgm_exporter": {"repository": "nvcr.io/nvidia/k8s/dcgm-exporter", "tag": "4.6.0-4.8.3-distroless",
                      "digest": "sha256:613ab03c11d442fd960ff515f547e9921537454a712d08160bc8f677f89f1c35"},
    # digest: registry.k8s.io's image promoter manifest (kubernetes/k8s.io #9697), the tag's own digest
    "nfd": {"repository": "registry.k8s.io/nfd/node-feature-discovery", "tag": "v0.19.0",
            "digest": "sha256:2fa1c99ad09bdf2c8ad97706a4ad2fd548c84d5ecd70ba32a6152c667b96c4d2"},
    # NVIDIA's DRA Driver for GPUs (issue 28, pools with allocation: dra): one image runs the controller and
    # both kubelet plugins. v0.5.0 is the release GPU Operator v26.7.0 ships (its values.yaml draDriver:
    # repository nvcr.io/nvidia, image dra-driver-nvidia-gpu, version v0.5.0); the digest is the one NVIDIA
    # publishes for it in that tag's OLM bundle (relatedImages nvidia-dra-driver-image, env DRA_DRIVER_IMAGE),
    # the same source as the digests above. The project moved to kubernetes-sigs/dra-driver-nvidia-gpu and
    # started again at v0.4.0 after v25.12.0 (v25.12.0 -> v0.4.0 -> v0.4.1 -> v0.5.0, release issue
    # kubernetes-sigs/dra-driver-nvidia-gpu#1365); the chart's own default image is now on registry.k8s.io,
    # gpufleet sets NVIDIA's NGC copy explicitly (dra_driver.py).
    "dra_driver": {"repository": "nvcr.io/nvidia/dra-driver-nvidia-gpu", "tag": "v0.5.0",
                   "digest": "sha256:9b46984c0eb18def60e2b9817b874275f4b5b08d12d491de4f1a7b91b51d706c"},
}

CHARTS = {
    "gpu_operator": {"name": "gpu-operator", "repo_url": "https://helm.ngc.nvidia.com/nvidia", "version": "v26.7.0"},
    # The chart was renamed from nvidia-dra-driver-gpu with v0.4.0 and follows SemVer since (version =
    # appVersion, no v prefix); NVIDIA publishes it on NGC (this repository) and the project at
    # oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu. Serves resource.k8s.io/v1.
    "dra_driver": {"name": "dra-driver-nvidia-gpu", "repo_url": "https://helm.ngc.nvidia.com/nvidia",
                   "version": "0.5.0"},
}
# Listed in docs/dra.md (dra_table_markdown), not in the README's table (README.md is being split into
# docs/ by another change; the DRA rows join that table there).
DRA_ONLY = ("dra_driver",)

# What the pinned chart deploys itself in operator mode (not overridden by gpufleet; listed for the
# docs/reference/tables.md and for reviewers comparing with the standalone images above).
OPERATOR_COMPONENTS = {
    "NVIDIA Container Toolkit (toolkit.version)": "v1.20.0",
    "NVIDIA MIG Manager (migManager.version)": "v0.15.0",
    "NVIDIA DCGM (dcgm.version)": "4.6.0-1",
    "default driver (driver.version)": "595.91.07",
}
# The chart values path of each version above and of the standalone images (what
# scripts/pins-from-chart.py reads from a chart's values.yaml). dcgm.version carries an OS suffix in
# the chart (4.6.0-1-ubuntu24.04); the comparison uses the part before it.
CHART_VALUE_PATHS = {
    "devicePlugin.version": ("image", "device_plugin"),
    "gfd.version": ("image", "device_plugin"),
    "dcgmExporter.version": ("image", "dcgm_exporter"),
    "toolkit.version": ("operator", "NVIDIA Container Toolkit (toolkit.version)"),
    "migManager.version": ("operator", "NVIDIA MIG Manager (migManager.version)"),
    "dcgm.version": ("operator", "NVIDIA DCGM (dcgm.version)"),
    "driver.version": ("operator", "default driver (driver.version)"),
}

# Karpenter (EKS): gpufleet installs no Karpenter; its NodePools, EC2NodeClasses and NodeOverlays are written for
# the karpenter.sh/v1, karpenter.k8s.aws/v1 and karpenter.sh/v1alpha1 APIs and applied against the CRDs of this
# release (karpenter-provider-aws, whose chart EKS users install; its core is sigs.k8s.io/karpenter v1.15.0, which
# the tests build and run: tests/helpers/karpenter.py). v1.15 changes for gpufleet: EC2NodeClass ``kubelet`` takes
# any KubeletConfiguration field (checked by Karpenter on status, no longer by the CRD; gpufleet sets maxPods);
# NodeOverlay (alpha, feature gate NodeOverlay) lets shared and MIG pools plan with the capacity the device plugin
# advertises; fields gpufleet does not set: connectionTracking, cpuOptions, enclaveOptions, NodePool replicas.
KARPENTER = {"version": "v1.15.3", "apis": (
    "karpenter.sh/v1", "karpenter.k8s.aws/v1", "karpenter.sh/v1alpha1")}

# OpenShift: packages installed through OLM instead of Helm.
OLM_PACKAGES = {
    # startingCSV: the exact operator version gpufleet pins; with gpu_operator_olm_approval Manual, OLM
    # installs nothing newer until an administrator approves its InstallPlan.
    "gpu_operator": {"package": "gpu-operator-certified", "channel": "v26.7", "source": "certified-operators",
                     "source_namespace": "openshift-marketplace", "starting_csv": "gpu-operator-certified.v26.7.0"},
    # Red Hat's nfd package: one channel, "stable", also the default, since the per-OpenShift-release
    # channels ("4.8", "4.9", ...) ended (openshift/cluster-nfd-operator manifests/nfd.package.yaml;
    # bundle annotations operators.operatorframework.io.bundle.channels.v1 and channel.default.v1: stable).
    "nfd": {"package": "nfd", "channel": "stable", "source": "redhat-operators",
            "source_namespace": "openshift-marketplace"},
}

# GPU Operator chart values holding an image repository (value path -> default registry path),
# rewritten when a registry prefix is set: every repository the chart's values.yaml at v26.7.0 names
# (vgpuManager.repository is empty there: the user's own vGPU manager image), and NFD's subchart image. Not
# draDriver.repository: the chart reads it only for the GPUCluster CR (gpuCluster.deployCR), which gpufleet does
# not deploy (it installs the DRA driver's own chart, role nvidia_dra_driver).
# Since chart v25.10 the validator and the node status exporter run the operator's own image
# (nvcr.io/nvidia/gpu-operator), no longer nvcr.io/nvidia/cloud-native/gpu-operator-validator.
# tests/integration/test_operator_values_contract.py keeps this equal to the real chart's values.
OPERATOR_REPOSITORIES = {
    "operator.repository": "nvcr.io/nvidia",
    "validator.repository": "nvcr.io/nvidia",
    "driver.repository": "nvcr.io/nvidia",
    "driver.manager.repository": "nvcr.io/nvidia/cloud-native",
    "toolkit.repository": "nvcr.io/nvidia/k8s",
    "devicePlugin.repository": "nvcr.io/nvidia",
    "dcgm.repository": "nvcr.io/nvidia/cloud-native",
    "dcgmExporter.repository": "nvcr.io/nvidia/k8s",
    "gfd.repository": "nvcr.io/nvidia",
    "migManager.repository": "nvcr.io/nvidia/cloud-native",
    "nodeStatusExporter.repository": "nvcr.io/nvidia",
    "gds.repository": "nvcr.io/nvidia/cloud-native",
    "gdrcopy.repository": "nvcr.io/nvidia/cloud-native",
    "vgpuManager.driverManager.repository": "nvcr.io/nvidia/cloud-native",
    "vgpuDeviceManager.repository": "nvcr.io/nvidia/cloud-native",
    "vfioManager.repository": "nvcr.io/nvidia/cloud-native",
    "vfioManager.driverManager.repository": "nvcr.io/nvidia/cloud-native",
    "sandboxDevicePlugin.repository": "nvcr.io/nvidia",
    "kataSandboxDevicePlugin.repository": "nvcr.io/nvidia/cloud-native",
    "ccManager.repository": "nvcr.io/nvidia/cloud-native",
    "node-feature-discovery.image.repository": "registry.k8s.io/nfd/node-feature-discovery",
}

# Package repository signing keys, pinned by the full fingerprint of their primary key (issue 30
# item 1). A downloaded key is written to the node's keyring only when every primary key in it is the
# one pinned here, or the one the inventory names with its own fingerprint variable. NVIDIA signs
# the CUDA repositories of Debian 12, Ubuntu 22.04 and 24.04 with the cudatools key (3bf863cc.pub)
# and Debian 13's with a newer key (8793F200.pub); the libnvidia-container repository (apt and rpm)
# with the "NVIDIA CORPORATION (Open Source Projects)" key. Each fingerprint was read from two or more
# independent public sources that check it (provisioning scripts and recipes pinning NVIDIA's keys).
# The RHEL-family and Amazon Linux 2023 CUDA repositories (rhel8, rhel9, amzn2023) are signed with the
# cudatools key D42D0685.pub: its fingerprint 610C7B14E068A878070DA4E99CD0A493D42D0685 is pinned and
# checked by several independent public offline-repository and CI scripts (gpg --show-keys against it),
# appears as "Primary key fingerprint: 610C 7B14 ... D42D 0685" for "cudatools <cudatools@nvidia.com>" in a
# published gpg verification walk-through, and its long key ID 9CD0A493D42D0685 is the one `rpm -qip`
# shows on NVIDIA's CUDA RPMs and the one Red Hat's Konflux release policies allow for CUDA RPMs
# (searched for issue 30; NVIDIA's own CUDA container Dockerfiles check the file by SHA-256 instead).
REPO_KEYS = {
    "cuda": {"file": "3bf863cc.pub", "fingerprint": "EB693B3035CD5710E231E123A4B469963BF863CC",
             "description": "NVIDIA's CUDA repository signing key (cudatools)"},
    "cuda_debian13": {"file": "8793F200.pub", "fingerprint": "02182E60104FCDC26EAE1B8597A5D4CB8793F200",
                      "description": "NVIDIA's CUDA repository signing key for Debian 13"},
    "cuda_rhel": {"file": "D42D0685.pub", "fingerprint": "610C7B14E068A878070DA4E99CD0A493D42D0685",
                  "description": "NVIDIA's CUDA repository signing key for RHEL-family and Amazon Linux 2023 (cudatools)"},
    "container_toolkit": {"url": "https://nvidia.github.io/libnvidia-container/gpgkey",
                          "fingerprint": "C95B321B61E88C1809C4F759DDCAE044F796ECB0",
                          "description": "NVIDIA's libnvidia-container repository signing key"},
}
# CUDA repository directory -> its key in REPO_KEYS (others: "cuda").
CUDA_REPO_KEY_NAMES = {"debian13": "cuda_debian13", "rhel8": "cuda_rhel", "rhel9": "cuda_rhel", "amzn2023": "cuda_rhel"}

# Images pinned by tag only, and why (every other image carries the digest its publisher lists). Empty
# today: the last one, the DRA driver v25.12.0, had no published digest; its successor v0.5.0 has one.
UNDIGESTED = {}

TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
DIGEST = re.compile(r"^sha256:[a-f0-9]{64}$")
REGISTRY_PREFIX = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9._-]+)*$")


def table_markdown(host_toolkit=None):
    """The version table of docs/reference/tables.md, generated from this file (``host_toolkit``: the
    nvidia_container_toolkit role's default pin, read from the role by the caller)."""
    rows = ["| component | version | where |", "|---|---|---|"]
    chart = CHARTS["gpu_operator"]
    rows.append("| GPU Operator Helm chart | %s | `%s` (operator mode) |" % (chart["version"], chart["repo_url"]))
    rows.append("| GPU Operator OLM channel (OpenShift) | %s | `%s` |" % (
        OLM_PACKAGES["gpu_operator"]["channel"], OLM_PACKAGES["gpu_operator"]["package"]))
    for name in sorted(n for n in IMAGES if n not in DRA_ONLY):
        img = IMAGES[name]
        rows.append("| %s image | %s | `%s` (standalone mode) |" % (name.replace("_", "-"), img["tag"], img["repository"]))
    for name in sorted(OPERATOR_COMPONENTS):
        rows.append("| %s | %s | shipped by the chart (operator mode) |" % (name, OPERATOR_COMPONENTS[name]))
    if host_toolkit:
        rows.append("| host NVIDIA Container Toolkit packages | %s | role `nvidia_container_toolkit` "
                    "(`nvidia_container_toolkit_version`) |" % host_toolkit)
    return "\n".join(rows)


def dra_table_markdown():
    """The DRA driver's pinned chart and image (docs/dra.md; a test keeps them equal)."""
    chart = CHARTS["dra_driver"]
    img = IMAGES["dra_driver"]
    return "\n".join([
        "| component | version | where |", "|---|---|---|",
        "| NVIDIA DRA Driver for GPUs Helm chart (`%s`) | %s | `%s` (pools with `allocation: dra`) |"
        % (chart["name"], chart["version"], chart["repo_url"]),
        "| dra-driver image | %s | `%s` |" % (img["tag"], img["repository"])])


def _value_at(values, path):
    node = values
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _strip_os_suffix(version):
    """4.6.0-1-ubuntu24.04 -> 4.6.0-1 (the chart's dcgm.version names an OS build of the same DCGM)."""
    return re.sub(r"-(ubuntu|ubi|rhel|distroless)[0-9.]*$", "", str(version))


def compare_chart_values(values, chart_version=None):
    """What a GPU Operator chart's values.yaml (``values``, parsed) says against the pins here.

    Returns rows ``{"what", "chart", "pinned", "status"}`` with status ``same``, ``differs`` or
    ``absent`` (the values do not carry that key). ``chart_version``
    (its Chart.yaml version) is compared with CHARTS["gpu_operator"] when given."""
    if not isinstance(values, dict):
        raise ValueError("the values file is not a YAML mapping")
    rows = []
    if chart_version is not None:
        pinned = CHARTS["gpu_operator"]["version"]
        rows.append({"what": "chart version", "chart": str(chart_version), "pinned": pinned,
                     "status": "same" if str(chart_version) == pinned else "differs"})
    for path in sorted(CHART_VALUE_PATHS):
        kind, name = CHART_VALUE_PATHS[path]
        found = _value_at(values, path)
        pinned = IMAGES[name]["tag"] if kind == "image" else OPERATOR_COMPONENTS[name]
        if found is None:
            rows.append({"what": path, "chart": None, "pinned": pinned, "status": "absent"})
            continue
        have = _strip_os_suffix(found) if path == "dcgm.version" else str(found)
        rows.append({"what": path, "chart": str(found), "pinned": pinned,
                     "status": "same" if have == pinned else "differs"})
        if kind == "image":
            section = path.split(".")[0]
            repo, image = _value_at(values, section + ".repository"), _value_at(values, section + ".image")
            if repo and image:
                full = "%s/%s" % (repo, image)
                rows.append({"what": section + ".repository/image", "chart": full, "pinned": IMAGES[name]["repository"],
                             "status": "same" if full == IMAGES[name]["repository"] else "differs"})
    return rows


def with_prefix(repository, prefix):
    """Replace the registry host of ``repository`` by ``prefix`` (empty: unchanged)."""
    if not prefix:
        return repository
    rest = repository.split("/", 1)[1] if "/" in repository else repository
    return prefix.rstrip("/") + "/" + rest


def images(overrides=None):
    """The image table with ``gpufleet_image_overrides`` applied (unknown names ignored here;
    preflight reports them). A pinned digest belongs to the pinned tag: an override of the tag
    without a digest of its own drops it (else the old digest would silently win over the new tag);
    a repository override (a mirror copy) keeps it."""
    table = copy.deepcopy(IMAGES)
    for name, over in (overrides or {}).items():
        if name in table and isinstance(over, dict):
            if "tag" in over and over.get("tag") != table[name]["tag"] and "digest" not in over:
                table[name]["digest"] = ""
            table[name].update({k: v for k, v in over.items() if k in ("repository", "tag", "digest")})
    return table


def image_ref(name, prefix="", overrides=None):
    """Full image reference of image ``name``: ``[prefix/]path:tag[@digest]``."""
    img = images(overrides)[name]
    ref = "%s:%s" % (with_prefix(img["repository"], prefix), img["tag"])
    if img.get("digest"):
        ref += "@" + img["digest"]
    return ref
