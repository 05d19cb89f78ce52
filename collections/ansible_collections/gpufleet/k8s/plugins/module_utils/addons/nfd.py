# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Optional Node Feature Discovery for the standalone add-ons (``nvidia_device_plugin_nfd_enabled``).

GFD writes its ``nvidia.com/gpu.*`` labels as an NFD feature file; only NFD turns them into node
labels. Clusters without NFD can let gpufleet deploy a minimal one: the worker (PCI vendor labels,
so ``feature.node.kubernetes.io/pci-10de.present=true`` appears, and the GFD feature file), the
master (labels the nodes; ``nvidia.com`` allowed) and the NodeFeature API CRDs it needs. The CRDs
carry an open schema (``x-kubernetes-preserve-unknown-fields``) instead of upstream's full one: a
cluster that already runs NFD must leave this off. No garbage collector is deployed (stale
NodeFeature objects of deleted nodes are ignored by the master).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import addons as _a
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.render import dump_yaml
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import image_ref

NAMESPACE = "node-feature-discovery"
GROUP = "nfd.k8s-sigs.io"
CONF_DIR = "/etc/kubernetes/node-feature-discovery"
# (kind, plural, scope, has status)
CRDS = (("NodeFeature", "nodefeatures", "Namespaced", False),
        ("NodeFeatureRule", "nodefeaturerules", "Cluster", False),
        ("NodeFeatureGroup", "nodefeaturegroups", "Namespaced", True))


def _crd(kind, plural, scope, status):
    version = {"name": "v1alpha1", "served": True, "storage": True,
               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    if status:
        version["subresources"] = {"status": {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, GROUP), "labels": dict(_a.MANAGED_BY)},
            "spec": {"group": GROUP, "scope": scope, "versions": [version],
                     "names": {"kind": kind, "listKind": kind + "List", "plural": plural, "singular": kind.lower()}}}


def _rbac(name, rules, ns, cluster=True):
    kind, bind = ("ClusterRole", "ClusterRoleBinding") if cluster else ("Role", "RoleBinding")
    meta = {"name": "gpufleet-" + name, "labels": _a.labels(name)}
    if not cluster:
        meta["namespace"] = ns
    bmeta = dict(meta)
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": bind, "metadata": bmeta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": "gpufleet-" + name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]},
    ]


def _env_pod():
    return [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}]


def _probe():
    return {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 10, "periodSeconds": 10}


def nfd_objects(plan, extra):
    """NFD objects in apply order (CRDs and namespace first); empty unless enabled."""
    s = _a.settings(plan, extra)
    if not s["nvidia_device_plugin_nfd_enabled"]:
        return []
    image = image_ref("nfd", s["gpufleet_registry_prefix"], s["gpufleet_image_overrides"])
    ns = NAMESPACE
    restricted = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True,
                  "runAsNonRoot": True, "runAsUser": 65534}
    objs = [_crd(*c) for c in CRDS] + [_a.namespace(ns)]
    for name in ("nfd-master", "nfd-worker"):
        objs.append({"apiVersion": "v1", "kind": "ServiceAccount",
                     "metadata": {"name": name, "namespace": ns, "labels": _a.labels(name)}})
    # Least privilege (tests/fixtures/rbac_allowlist.yml holds what every render may grant). The master
    # reads and labels Nodes (get/list, patch/update; it watches none) and reads the NodeFeature API.
    # No Lease access: upstream's chart grants create plus get/update of the one Lease
    # nfd-master.nfd.kubernetes.io because it starts the master with -enable-leader-election; gpufleet
    # runs one master without it (off by default), which then never touches a Lease.
    objs += _rbac("nfd-master", [
        {"apiGroups": [""], "resources": ["nodes", "nodes/status"], "verbs": ["get", "list", "patch", "update"]},
        {"apiGroups": [GROUP], "resources": ["nodefeatures", "nodefeaturerules", "nodefeaturegroups"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": [GROUP], "resources": ["nodefeaturegroups/status"], "verbs": ["patch", "update"]},
    ], ns)
    # The worker writes its node's NodeFeature in its own namespace and reads its own Pod (to make the
    # DaemonSet the NodeFeature's owner); it never deletes one (upstream's chart also grants delete).
    objs += _rbac("nfd-worker", [
        {"apiGroups": [GROUP], "resources": ["nodefeatures"], "verbs": ["create", "get", "update"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
    ], ns, cluster=False)
    objs.append({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "nfd-worker-conf", "namespace": ns, "labels": _a.labels("nfd-worker")},
                 "data": {"nfd-worker.conf": dump_yaml({"sources": {"pci": {
                     "deviceLabelFields": ["vendor"]}}})}})
    objs.append({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "nfd-master-conf", "namespace": ns, "labels": _a.labels("nfd-master")},
                 "data": {"nfd-master.conf": dump_yaml({"extraLabelNs": ["nvidia.com"]})}})
    master_labels = _a.labels("nfd-master", "master")
    objs.append({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nfd-master", "namespace": ns, "labels": master_labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": "nfd-master"}},
                 "template": {"metadata": {"labels": master_labels}, "spec": {
                     "serviceAccountName": "nfd-master", "enableServiceLinks": False,
                     "securityContext": _a.pod_security_context(),
                     "containers": [{"name": "nfd-master", "image": image, "command": ["nfd-master"],
                                     "env": [_env_pod()[0]], "securityContext": restricted,
                                     "ports": [{"name": "http", "containerPort": 8080}],
                                     "livenessProbe": _probe(), "readinessProbe": _probe(),
                                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                                   "limits": {"memory": "4Gi"}},
                                     "volumeMounts": [{"name": "conf", "mountPath": CONF_DIR, "readOnly": True}]}],
                     "volumes": [{"name": "conf", "configMap": {"name": "nfd-master-conf"}}]}}},
    })
    worker_labels = _a.labels("nfd-worker", "worker")
    host = [("host-boot", "/boot", "/host-boot"), ("host-os-release", "/etc/os-release", "/host-etc/os-release"),
            ("host-sys", "/sys", "/host-sys"), ("host-usr-lib", "/usr/lib", "/host-usr/lib"),
            ("host-lib", "/lib", "/host-lib"),
            ("features-d", CONF_DIR + "/features.d", CONF_DIR + "/features.d"),
            ("source-d", CONF_DIR + "/source.d", CONF_DIR + "/source.d")]
    worker_sc = dict(restricted)
    worker_sc.pop("runAsUser")
    worker_sc.pop("runAsNonRoot")
    objs.append({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "nfd-worker", "namespace": ns, "labels": worker_labels},
        "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "nfd-worker"}},
                 "template": {"metadata": {"labels": worker_labels}, "spec": {
                     "serviceAccountName": "nfd-worker", "dnsPolicy": "ClusterFirstWithHostNet",
                     "priorityClassName": "system-node-critical",
                     "securityContext": _a.pod_security_context(),
                     "tolerations": _a.gpu_tolerations(plan),
                     "containers": [{"name": "nfd-worker", "image": image, "command": ["nfd-worker"], "env": _env_pod(),
                                     "securityContext": worker_sc,
                                     "ports": [{"name": "http", "containerPort": 8080}],
                                     "livenessProbe": _probe(), "readinessProbe": _probe(),
                                     "resources": {"requests": {"cpu": "5m", "memory": "64Mi"},
                                                   "limits": {"memory": "512Mi"}},
                                     "volumeMounts": [{"name": n, "mountPath": m, "readOnly": True} for n, _p, m in host]
                                     + [{"name": "conf", "mountPath": CONF_DIR + "/nfd-worker.conf",
                                         "subPath": "nfd-worker.conf", "readOnly": True}]}],
                     "volumes": [_a.host_path(n, p) for n, p, _m in host]
                     + [{"name": "conf", "configMap": {"name": "nfd-worker-conf"}}]}}},
    })
    return _a.with_pull_secrets(objs, s["gpufleet_image_pull_secrets"])
