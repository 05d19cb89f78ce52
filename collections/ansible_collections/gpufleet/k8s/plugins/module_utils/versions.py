# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Every image, chart and operator-package version the add-on roles deploy, in one place.

Tags are pinned; a digest may be added per image (``digest: sha256:...``) and is then appended
(``repo:tag@sha256:...``). ``gpufleet_registry_prefix`` replaces the registry host of every image
(``nvcr.io/nvidia/k8s-device-plugin`` -> ``mirror.example:5000/nvidia/k8s-device-plugin``) so one
variable points everything at a mirror; ``gpufleet_image_overrides`` changes repository, tag or
digest of single images. The set below is the one GPU Operator chart v25.3.4 itself ships, so the
standalone and operator modes run the same component versions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

IMAGES = {
    # k8s-device-plugin: the plugin, its config-manager, the MPS control daemon and GFD share one image.
    "device_plugin": {"repository": "nvcr.io/nvidia/k8s-device-plugin", "tag": "v0.17.3", "digest": ""},
    "dcgm_exporter": {"repository": "nvcr.io/nvidia/k8s/dcgm-exporter", "tag": "4.2.3-4.1.3-ubuntu22.04", "digest": ""},
    "nfd": {"repository": "registry.k8s.io/nfd/node-feature-discovery", "tag": "v0.17.3", "digest": ""},
}

CHARTS = {
    "gpu_operator": {"name": "gpu-operator", "repo_url": "https://helm.ngc.nvidia.com/nvidia", "version": "v25.3.4"},
}

# OpenShift: packages installed through OLM instead of Helm.
OLM_PACKAGES = {
    "gpu_operator": {"package": "gpu-operator-certified", "channel": "v25.3", "source": "certified-operators",
                     "source_namespace": "openshift-marketplace"},
    "nfd": {"package": "nfd", "channel": "stable", "source": "redhat-operators",
            "source_namespace": "openshift-marketplace"},
}

# GPU Operator chart values holding an image repository (value path -> default registry path),
# rewritten when a registry prefix is set. Paths as in the chart's values.yaml (v25.3).
OPERATOR_REPOSITORIES = {
    "operator.repository": "nvcr.io/nvidia",
    "validator.repository": "nvcr.io/nvidia/cloud-native",
    "driver.repository": "nvcr.io/nvidia",
    "driver.manager.repository": "nvcr.io/nvidia/cloud-native",
    "toolkit.repository": "nvcr.io/nvidia/k8s",
    "devicePlugin.repository": "nvcr.io/nvidia",
    "dcgm.repository": "nvcr.io/nvidia/cloud-native",
    "dcgmExporter.repository": "nvcr.io/nvidia/k8s",
    "gfd.repository": "nvcr.io/nvidia",
    "migManager.repository": "nvcr.io/nvidia/cloud-native",
    "nodeStatusExporter.repository": "nvcr.io/nvidia/cloud-native",
    "node-feature-discovery.image.repository": "registry.k8s.io/nfd/node-feature-discovery",
}

TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
DIGEST = re.compile(r"^sha256:[a-f0-9]{64}$")
REGISTRY_PREFIX = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9._-]+)*$")


def with_prefix(repository, prefix):
    """Replace the registry host of ``repository`` by ``prefix`` (empty: unchanged)."""
    if not prefix:
        return repository
    rest = repository.split("/", 1)[1] if "/" in repository else repository
    return prefix.rstrip("/") + "/" + rest


def images(overrides=None):
    """The image table with ``gpufleet_image_overrides`` applied (unknown names ignored here;
    preflight reports them)."""
    table = copy.deepcopy(IMAGES)
    for name, over in (overrides or {}).items():
        if name in table and isinstance(over, dict):
            table[name].update({k: v for k, v in over.items() if k in ("repository", "tag", "digest")})
    return table


def image_ref(name, prefix="", overrides=None):
    """Full image reference of image ``name``: ``[prefix/]path:tag[@digest]``."""
    img = images(overrides)[name]
    ref = "%s:%s" % (with_prefix(img["repository"], prefix), img["tag"])
    if img.get("digest"):
        ref += "@" + img["digest"]
    return ref
