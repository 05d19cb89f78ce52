# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""EKS: the Karpenter v1alpha5 (Provisioner + AWSNodeTemplate) -> v1 (NodePool + EC2NodeClass) migration."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.yaml_support import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError, one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.gpu_catalog import GPU_TYPES
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.karpenter import (
    NODECLASS_API, NODECLASS_GROUP, NODEPOOL_API, discovery_terms, nvidia_ami_terms)


V1ALPHA5 = "karpenter.sh/v1alpha5"
AWSNODETEMPLATE_API = "karpenter.k8s.aws/v1alpha1"
PROVISIONER_KEYS = ("requirements", "labels", "taints", "startupTaints", "limits", "providerRef", "provider",
                    "ttlSecondsAfterEmpty", "ttlSecondsUntilExpired", "consolidation", "kubeletConfiguration",
                    "weight", "annotations")
KUBELET_KEYS = ("clusterDNS", "maxPods", "podsPerCore", "systemReserved", "kubeReserved", "evictionHard",
                "evictionSoft", "evictionSoftGracePeriod", "evictionMaxPodGracePeriod",
                "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "cpuCFSQuota")
RENAMED_LABELS = {"karpenter.sh/provisioner-name": "karpenter.sh/nodepool"}
GPU_REQUIREMENT_KEYS = ("karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-manufacturer",
                        "karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-memory")
GPU_FAMILIES = sorted({f for facts in GPU_TYPES.values() for f in facts["eks_families"]} | {"p2", "g3", "g4ad", "g5g",
                                                                                            "g6f", "gr6"})
CAPACITY_TYPE_KEY = "karpenter.sh/capacity-type"
# karpenter.sh/capacity-type values Karpenter v1 knows (reserved: EC2 capacity reservations)
CAPACITY_TYPES = ("spot", "on-demand", "reserved")
# Requirement operators that select nodes WITH the values (NotIn, DoesNotExist and Lt select nodes without)
SELECTING_OPERATORS = ("In", "Exists", "Gt")


def load_v1alpha5(path):
    try:
        with open(path, "r") as handle:
            docs = [d for d in yaml.safe_load_all(handle) if d is not None]
    except (OSError, IOError) as exc:
        raise GpufleetError("cannot read the file (%s); use a readable v1alpha5 Provisioner file" % exc)
    except yaml.YAMLError as exc:
        raise GpufleetError("not valid YAML (%s); use a YAML file of v1alpha5 Provisioners" % str(exc).replace("\n", " "))
    return docs


def seconds_to_duration(seconds, what):
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 0:
        raise GpufleetError("%s is %r; use a whole number of seconds" % (what, seconds))
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return "%d%s" % (seconds // size, unit)
    return "%ds" % seconds


def _split(value):
    return [v.strip() for v in str(value).split(",") if v.strip()]


def _selector_to_terms(selector, what, needs_input, ami=False):
    """v1alpha5 selector map -> v1 terms. ``aws-ids`` / ``aws::ids`` (comma separated) become id
    terms, ``aws::name`` (comma separated) name terms, ``aws::owners`` the owner of each AMI name or
    tag term; every other key is a tag."""
    if not isinstance(selector, dict):
        return []
    terms = []
    tags = {}
    owners = []
    for key, value in selector.items():
        if key in ("aws-ids", "aws::ids"):
            terms.extend({"id": i} for i in _split(value))
        elif key == "aws::name":
            terms.extend({"name": n} for n in _split(value))
        elif key == "aws::owners":
            owners = _split(value)
            if not ami:
                needs_input.append("%s: aws::owners %s has no meaning outside AMI selection; dropped" % (what, value))
                owners = []
        else:
            if str(key).startswith("aws::") or str(key).startswith("aws-"):
                needs_input.append("%s: %s is not a v1alpha5 selector key gpufleet knows; it became a tag "
                                   "selector, check it" % (what, key))
            tags[str(key)] = str(value)
    if tags:
        terms.insert(0, {"tags": tags})
    if owners:
        owned = [t for t in terms if "id" not in t]
        if not owned:
            needs_input.append("%s: aws::owners %s without a name or tag selector selects every AMI of those "
                               "owners; add a name" % (what, ",".join(owners)))
            terms.extend({"owner": o, "name": "*"} for o in owners)
        else:
            terms = [t for t in terms if "id" in t] + [dict(t, owner=o) for t in owned for o in owners]
    if any(v == "*" for v in tags.values()):
        needs_input.append("%s: a '*' tag value matches any value in v1 too; check it selects what you expect" % what)
    return terms


KUBELET_INT_KEYS = ("maxPods", "podsPerCore", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent",
                    "evictionMaxPodGracePeriod")
ZONE_NAME = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+[a-z]$")
REGION_NAME = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+$")
ZONE_ID = re.compile(r"^[a-z]{3,4}[0-9]+-az[0-9]+$")
INSTANCE_FAMILY = re.compile(r"^[a-z]+[0-9]+[a-z0-9-]*$")


def _flag_requirement(name, req, gpu, needs_input):
    """Requirement values that convert fine but select nothing (or not what was meant) in v1."""
    key, values = req.get("key"), [str(v) for v in req.get("values") or []]
    where = "Provisioner %s: requirement %s" % (name, key)
    if key == "topology.kubernetes.io/zone":
        for value in values:
            if REGION_NAME.match(value):
                needs_input.append("%s: %s is a region, not a zone; use its zones (e.g. %sa)" % (where, value, value))
            elif ZONE_ID.match(value):
                needs_input.append("%s: %s is a zone ID; use the zone name or the key topology.k8s.aws/zone-id"
                                   % (where, value))
            elif not ZONE_NAME.match(value):
                needs_input.append("%s: %s is not an AWS zone name; check it" % (where, value))
    if key == "karpenter.k8s.aws/instance-family":
        for value in values:
            if not INSTANCE_FAMILY.match(value):
                needs_input.append("%s: %s is not an EC2 instance family; check it" % (where, value))
            elif gpu and value not in GPU_FAMILIES:
                needs_input.append("%s: %s is not an NVIDIA GPU instance family gpufleet knows (%s); check it"
                                   % (where, value, ", ".join(GPU_FAMILIES)))
    if key == CAPACITY_TYPE_KEY:
        unknown = [v for v in values if v not in CAPACITY_TYPES]
        if unknown:
            raise GpufleetError("%s: %s is not a capacity type Karpenter v1 knows; use %s"
                                % (where, ", ".join(repr(v) for v in unknown), one_of(CAPACITY_TYPES)))
    for value in req.get("values") or []:
        if not isinstance(value, str):
            needs_input.append("%s: value %r is not a string; v1 requires strings, written as %r"
                               % (where, value, str(value)))
    if any(not isinstance(v, str) for v in req.get("values") or []):
        req["values"] = values


def _selects_gpus(req):
    """Whether a requirement asks for GPU instances. ``NotIn [g5, p4d]``, ``DoesNotExist`` on a GPU key,
    ``Lt`` or a GPU count ``In ["0"]`` keep GPUs out: such a Provisioner is a CPU pool."""
    key, operator = req.get("key"), req.get("operator")
    values = [str(v) for v in req.get("values") or []]
    if operator not in SELECTING_OPERATORS:
        return False
    if key in GPU_REQUIREMENT_KEYS:
        if operator == "In" and key in ("karpenter.k8s.aws/instance-gpu-count",
                                        "karpenter.k8s.aws/instance-gpu-memory"):
            return any(v != "0" for v in values)
        return True
    if key == "karpenter.k8s.aws/instance-family":
        return operator == "In" and any(v in GPU_FAMILIES for v in values)
    return False


def _is_gpu(provisioner_spec):
    for req in provisioner_spec.get("requirements") or []:
        if isinstance(req, dict) and _selects_gpus(req):
            return True
    resources = (provisioner_spec.get("limits") or {}).get("resources") or {}
    return "nvidia.com/gpu" in resources


def _nodeclass_from(name, template, provider, kubelet, gpu, kubernetes_version, cluster, changes, needs_input):
    source = template.get("spec") if template else provider
    source = source or {}
    where = "AWSNodeTemplate %s" % name if template else "inline provider"
    spec = {}
    if source.get("instanceProfile"):
        spec["instanceProfile"] = source["instanceProfile"]
        changes.append("%s: instanceProfile kept (v1 also accepts role, which lets Karpenter manage the "
                       "instance profile)" % where)
    else:
        spec["role"] = "KarpenterNodeRole-%s" % (cluster or "CLUSTER")
        needs_input.append("EC2NodeClass %s: spec.role is a guess (%s); set the IAM role of your Karpenter nodes"
                           % (name, spec["role"]))
    family = source.get("amiFamily") or "AL2023"
    if family == "AL2":
        changes.append("%s: amiFamily AL2 -> AL2023 (AL2 AMIs are no longer published for current EKS "
                       "versions)" % where)
        family = "AL2023"
    spec["amiFamily"] = family
    ami_terms = _selector_to_terms(source.get("amiSelector"), "EC2NodeClass %s amiSelectorTerms" % name,
                                   needs_input, ami=True)
    if (source.get("amiFamily") or "AL2023") == "AL2" and any("id" in t or "name" in t for t in ami_terms):
        needs_input.append("EC2NodeClass %s: amiSelectorTerms keep the AMIs the AL2 template selected by id/name, "
                           "but the node class now uses AL2023 (nodeadm) user data, which AL2 AMIs do not run; "
                           "select AL2023 AMIs (the NVIDIA variant for GPU nodes)" % name)
    if not ami_terms:
        if gpu:
            ami_terms = nvidia_ami_terms(kubernetes_version)
            changes.append("EC2NodeClass %s: amiSelectorTerms selects the AL2023 NVIDIA AMI through SSM "
                           "(GPU pool: never the standard AL2023 AMI)" % name)
            needs_input.append("EC2NodeClass %s: the SSM parameter names Kubernetes %s; set your cluster's "
                               "version" % (name, kubernetes_version))
        else:
            ami_terms = [{"alias": "al2023@latest"}]
            needs_input.append("EC2NodeClass %s: amiSelectorTerms alias al2023@latest; pin a version "
                               "(al2023@vYYYYMMDD) for production" % name)
    spec["amiSelectorTerms"] = ami_terms
    for v1key, key in (("subnetSelectorTerms", "subnetSelector"),
                       ("securityGroupSelectorTerms", "securityGroupSelector")):
        terms = _selector_to_terms(source.get(key), "EC2NodeClass %s %s" % (name, v1key), needs_input)
        if terms:
            changes.append("%s: %s -> %s" % (where, key, v1key))
        else:
            terms = discovery_terms(cluster or "CLUSTER")
            needs_input.append("EC2NodeClass %s: %s had no source; set it (guessed karpenter.sh/discovery "
                               "tag)" % (name, v1key))
        spec[v1key] = terms
    for key in ("tags", "blockDeviceMappings", "metadataOptions", "userData", "detailedMonitoring"):
        if source.get(key) is not None:
            spec[key] = copy.deepcopy(source[key])
    if source.get("userData"):
        needs_input.append("EC2NodeClass %s: userData kept as is; AL2023 expects MIME multi-part nodeadm "
                           "configuration, check it" % name)
    if kubelet:
        spec["kubelet"] = kubelet
    return {"apiVersion": NODECLASS_API, "kind": "EC2NodeClass", "metadata": {"name": name}, "spec": spec}


def _migrate_provisioner(doc, templates, kubernetes_version, cluster, changes, needs_input):
    meta = doc.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise GpufleetError("a Provisioner has no metadata.name; use one of: a name for every Provisioner")
    spec = doc.get("spec") or {}
    unknown = sorted(set(spec) - set(PROVISIONER_KEYS))
    for key in unknown:
        needs_input.append("Provisioner %s: spec.%s has no v1 equivalent in gpufleet's migration; move it by hand"
                           % (name, key))
    if spec.get("ttlSecondsAfterEmpty") is not None and (spec.get("consolidation") or {}).get("enabled"):
        raise GpufleetError("Provisioner %s sets both ttlSecondsAfterEmpty and consolidation.enabled, which "
                            "v1alpha5 already refused; use one of: ttlSecondsAfterEmpty, consolidation" % name)
    template = {"spec": {}}
    tspec = template["spec"]
    requirements = []
    for req in spec.get("requirements") or []:
        req = copy.deepcopy(req)
        _flag_requirement(name, req, _is_gpu(spec), needs_input)
        if req.get("key") in RENAMED_LABELS:
            changes.append("Provisioner %s: requirement %s -> %s" % (name, req["key"], RENAMED_LABELS[req["key"]]))
            req["key"] = RENAMED_LABELS[req["key"]]
        requirements.append(req)
    tspec["requirements"] = requirements
    if not requirements:
        changes.append("Provisioner %s: no requirements; v1 requires the list (empty is allowed)" % name)
    if spec.get("labels") or spec.get("annotations"):
        template["metadata"] = {}
        if spec.get("labels"):
            template["metadata"]["labels"] = copy.deepcopy(spec["labels"])
            changes.append("Provisioner %s: spec.labels -> spec.template.metadata.labels" % name)
        if spec.get("annotations"):
            template["metadata"]["annotations"] = copy.deepcopy(spec["annotations"])
            changes.append("Provisioner %s: spec.annotations -> spec.template.metadata.annotations" % name)
    for key in ("taints", "startupTaints"):
        if spec.get(key):
            tspec[key] = copy.deepcopy(spec[key])
            changes.append("Provisioner %s: spec.%s -> spec.template.spec.%s" % (name, key, key))
    ref = spec.get("providerRef")
    class_name = name
    if ref:
        class_name = ref.get("name") or name
        changes.append("Provisioner %s: providerRef {name: %s} -> nodeClassRef {group: karpenter.k8s.aws, kind: "
                       "EC2NodeClass, name: %s}" % (name, class_name, class_name))
        if class_name not in templates:
            needs_input.append("Provisioner %s: providerRef names AWSNodeTemplate %s, which is not in this file; "
                               "its fields (subnets, security groups, AMIs) need your input" % (name, class_name))
    elif spec.get("provider"):
        changes.append("Provisioner %s: inline spec.provider -> EC2NodeClass %s" % (name, class_name))
    else:
        needs_input.append("Provisioner %s: neither providerRef nor provider; the EC2NodeClass %s is built from "
                           "defaults" % (name, class_name))
    tspec["nodeClassRef"] = {"group": NODECLASS_GROUP, "kind": "EC2NodeClass", "name": class_name}
    expiry = spec.get("ttlSecondsUntilExpired")
    if expiry is not None:
        tspec["expireAfter"] = seconds_to_duration(expiry, "Provisioner %s: ttlSecondsUntilExpired" % name)
        changes.append("Provisioner %s: ttlSecondsUntilExpired: %s -> spec.template.spec.expireAfter: %s"
                       % (name, expiry, tspec["expireAfter"]))
    else:
        tspec["expireAfter"] = "Never"
        changes.append("Provisioner %s: no ttlSecondsUntilExpired -> expireAfter: Never (v1's default would be "
                       "720h)" % name)
    if spec.get("ttlSecondsAfterEmpty") is not None:
        after = seconds_to_duration(spec["ttlSecondsAfterEmpty"], "Provisioner %s: ttlSecondsAfterEmpty" % name)
        disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": after}
        changes.append("Provisioner %s: ttlSecondsAfterEmpty: %s -> disruption {consolidationPolicy: WhenEmpty, "
                       "consolidateAfter: %s}" % (name, spec["ttlSecondsAfterEmpty"], after))
    elif (spec.get("consolidation") or {}).get("enabled"):
        disruption = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}
        changes.append("Provisioner %s: consolidation.enabled: true -> disruption {consolidationPolicy: "
                       "WhenEmptyOrUnderutilized, consolidateAfter: 0s}" % name)
    else:
        disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}
        changes.append("Provisioner %s: neither ttlSecondsAfterEmpty nor consolidation -> consolidateAfter: Never "
                       "(nodes are not removed, as before)" % name)
    limits = {}
    old_limits = spec.get("limits") or {}
    for key, value in (old_limits.get("resources") or {}).items():
        limits[key] = value if isinstance(value, str) else str(value)
        changes.append("Provisioner %s: limits.resources.%s -> limits.%s" % (name, key, key))
    kubelet = None
    if spec.get("kubeletConfiguration"):
        kubelet = {}
        for key, value in spec["kubeletConfiguration"].items():
            if key in KUBELET_KEYS:
                kubelet[key] = copy.deepcopy(value)
                if key in KUBELET_INT_KEYS and isinstance(value, str):
                    if value.strip().isdigit():
                        kubelet[key] = int(value)
                    needs_input.append("Provisioner %s: kubeletConfiguration.%s is the string %r; v1 needs a "
                                       "number%s" % (name, key, value, ", written as %d, check it" % int(value)
                                                     if value.strip().isdigit() else ", set it by hand"))
                changes.append("Provisioner %s: kubeletConfiguration.%s -> EC2NodeClass %s kubelet.%s"
                               % (name, key, class_name, key))
            elif key == "containerRuntime":
                changes.append("Provisioner %s: kubeletConfiguration.containerRuntime dropped (containerd is the "
                               "only runtime in v1)" % name)
            else:
                needs_input.append("Provisioner %s: kubeletConfiguration.%s has no v1 field; move it by hand"
                                   % (name, key))
    nodepool_spec = {"template": template, "disruption": disruption}
    if limits:
        nodepool_spec["limits"] = limits
    if spec.get("weight") is not None:
        nodepool_spec["weight"] = spec["weight"]
    nodepool_obj = {"apiVersion": NODEPOOL_API, "kind": "NodePool", "metadata": {"name": name},
                    "spec": nodepool_spec}
    return nodepool_obj, class_name, kubelet, _is_gpu(spec)


def migrate(docs, kubernetes_version="1.33", cluster=""):
    """v1alpha5 Provisioners (+ AWSNodeTemplates) -> (objects, changes, needs_input).

    ``objects``: EC2NodeClasses then NodePools (karpenter.sh/v1). Raises GpufleetError when the
    documents hold no Provisioner or something that is neither a Provisioner nor an AWSNodeTemplate.
    """
    if not isinstance(docs, list) or not docs:
        raise GpufleetError("the file holds no YAML document; use a file with kind Provisioner, apiVersion %s" % V1ALPHA5)
    provisioners, templates = [], {}
    seen = {}
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise GpufleetError("document %d is not a mapping; use one of: kind Provisioner (apiVersion %s)"
                                % (i, V1ALPHA5))
        api, kind = doc.get("apiVersion"), doc.get("kind")
        name = (doc.get("metadata") or {}).get("name")
        if kind in ("Provisioner", "AWSNodeTemplate") and name and (kind, name) in seen:
            raise GpufleetError("documents %d and %d are both %s %s; one name would become two %s objects with "
                                "the same name (the second replacing the first); use one of: a unique "
                                "metadata.name per %s" % (seen[(kind, name)], i, kind, name,
                                                          "NodePool" if kind == "Provisioner" else "EC2NodeClass",
                                                          kind))
        seen[(kind, name)] = i
        if api == V1ALPHA5 and kind == "Provisioner":
            provisioners.append(doc)
        elif api == AWSNODETEMPLATE_API and kind == "AWSNodeTemplate":
            templates[name] = doc
        else:
            raise GpufleetError("document %d is %s/%s, not a Provisioner; use one of: kind Provisioner "
                                "(apiVersion %s), kind AWSNodeTemplate (apiVersion %s)"
                                % (i, api, kind, V1ALPHA5, AWSNODETEMPLATE_API))
    if not provisioners:
        raise GpufleetError("the file holds no Provisioner; use a file with kind Provisioner (apiVersion %s)" % V1ALPHA5)
    changes, needs_input = [], []
    nodepools, classes = [], {}
    for doc in provisioners:
        pool, class_name, kubelet, gpu = _migrate_provisioner(doc, templates, kubernetes_version, cluster,
                                                              changes, needs_input)
        nodepools.append(pool)
        if class_name in classes:
            existing = classes[class_name]
            if kubelet and existing["spec"].get("kubelet") not in (None, kubelet):
                needs_input.append("EC2NodeClass %s: Provisioners sharing it had different kubeletConfiguration; "
                                   "v1 keeps kubelet on the EC2NodeClass, split it into one class per setting"
                                   % class_name)
            continue
        template = templates.get(class_name)
        provider = None if template else (doc.get("spec") or {}).get("provider")
        classes[class_name] = _nodeclass_from(class_name, template, provider, kubelet, gpu, kubernetes_version,
                                              cluster, changes, needs_input)
    if templates:
        unused = sorted(set(templates) - set(classes))
        for name in unused:
            needs_input.append("AWSNodeTemplate %s is used by no Provisioner in this file; not migrated" % name)
    objects = [classes[k] for k in sorted(classes)] + nodepools
    return objects, changes, needs_input


def migration_notes(source, changes, needs_input):
    """MIGRATION.md: what changed and what needs the user's input."""
    lines = ["# Karpenter v1alpha5 -> v1 migration of %s" % source, "",
             "Generated by gpufleet (gpufleet.k8s.karpenter_migrate). Nothing was applied.", "",
             "## Needs your input", ""]
    lines += ["- %s" % item for item in needs_input] or ["- nothing"]
    lines += ["", "## What changed", ""]
    lines += ["- %s" % item for item in changes]
    lines += ["", "Pods: the annotation karpenter.sh/do-not-evict is karpenter.sh/do-not-disrupt in v1; node "
              "label karpenter.sh/provisioner-name is karpenter.sh/nodepool.", ""]
    return "\n".join(lines)
