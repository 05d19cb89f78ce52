#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_remediate
short_description: Find unhealthy GPU nodes and taint, cordon, drain or replace them within limits
version_added: "0.3.0"
description:
  - Reads every Node, and the DCGM metrics through the Prometheus HTTP API when C(policy.prometheus_url) is
    set, and decides which GPU nodes are unhealthy - C(nvidia.com/gpu) (or MIG) allocatable below capacity,
    XID errors judged by NVIDIA's XID catalog, double-bit ECC errors, pages pending retirement, retired pages,
    row-remap failure, NVLink recovery errors.
  - Acts on them per O(policy) - record why in the Node annotation C(gpufleet.io/gpu-remediation), taint
    C(gpufleet.io/gpu-unhealthy:NoSchedule), cordon, drain through the Eviction API, and replace (on EKS
    delete the Karpenter NodeClaim; on GKE leave it to node auto-repair). On self-managed clusters the
    actions C(reset) and C(reboot) choose, per drained node, a GPU reset or a reboot of its host, returned in
    RV(host_steps) for the play on the hosts (M(gpufleet.k8s.gpu_reset), M(ansible.builtin.reboot)); a second
    call with O(host_results) records what they did.
  - Never more than C(policy.max_nodes) nodes at once, nor more than C(policy.max_percent) of a pool, nor
    below a pool's C(min_nodes) schedulable nodes; a node that would break a limit is reported as held.
  - When a node it remediated is healthy again, removes its own taint and cordon (only those) and the record.
  - The record carries an HMAC-SHA256 over its content, the Node's name and UID, keyed by the Secret
    C(gpufleet-remediation-key) in C(gpufleet-system) (created, with its namespace, by the first run that is not a
    dry run; the key is never logged or returned). A record without that MAC is ignored - its node is decided as if
    it had none - and the limits and pools hold for nodes already under remediation as for new ones.
  - C(policy.dry_run) (the default) reads and decides, and changes nothing.
  - The policy is validated before anything is read; a bad value fails naming the variable and what is allowed.
author:
  - gpufleet maintainers (@gpufleet)
options:
  pools:
    description: The normalized GPU pools (C(gpufleet_plan.pools)); Nodes map to them as in the fleet report.
    type: list
    elements: dict
    required: true
  platform:
    description: The cluster's platform (C(gpufleet_platform)); decides how a node is replaced.
    type: str
    required: true
  cluster_name:
    description: Cluster name for the report.
    type: str
    default: ""
  policy:
    description:
      - The remediation policy, keys as the C(gpu_remediation_*) role variables without the prefix -
        C(dry_run), C(actions), C(max_nodes), C(max_percent), C(restore), C(prometheus_url), C(window),
        C(thresholds), C(xid_overrides), C(drain_timeout), C(drain_force), C(delete_emptydir_data).
    type: dict
    default: {}
  gpu_facts:
    description:
      - What C(nvidia-smi -q -x) says on the reachable hosts, by Node name - the results of
        M(gpufleet.k8s.nvidia_gpu_info) (a host that did not answer adds nothing). Double-bit ECC errors, a
        pending or failed row remapping, pages pending retirement and a lost GPU (C(device-handle-error)) count.
    type: dict
    default: {}
  host_results:
    description:
      - What the host steps of an earlier call (RV(host_steps)) did, by Node name - a list of
        C({step, ok, message, gpus}) in the order they ran. When set, the module only writes them into the
        Nodes' records (the next run escalates from a reset to a reboot, and stops after a reboot that did not
        help), adds them to O(report), restarts the device plugin on nodes whose GPUs were reset (it never
        marks a GPU healthy again by itself), and returns; nothing is read or decided.
    type: dict
    default: {}
    version_added: "0.4.0"
  report:
    description: With O(host_results) - the RV(report) of the earlier call, returned with the host steps added.
    type: dict
    default: {}
    version_added: "0.4.0"
  device_plugin_selector:
    description:
      - Label selector of the device plugin's pods, deleted on a node after its GPUs were reset (their
        DaemonSet starts them again); empty restarts nothing.
    type: str
    default: ""
    version_added: "0.4.0"
  prometheus_validate_certs:
    description: Verify the Prometheus server's TLS certificate.
    type: bool
    default: true
  prometheus_timeout:
    description: Seconds per Prometheus query.
    type: int
    default: 30
  prometheus_username:
    description:
      - User name for HTTP basic authentication to Prometheus (or a proxy in front of it), with O(prometheus_password).
      - Credentials inside C(policy.prometheus_url) (C(user:password@host)) are refused - a URL is printed with the
        task's arguments.
    type: str
    default: ""
    version_added: "0.4.0"
  prometheus_password:
    description: Password for HTTP basic authentication to Prometheus (never logged).
    type: str
    default: ""
    version_added: "0.4.0"
  prometheus_bearer_token:
    description: Bearer token sent to Prometheus (never logged); not together with O(prometheus_username).
    type: str
    default: ""
    version_added: "0.4.0"
extends_documentation_fragment:
  - gpufleet.k8s.attributes.no_diff
  - gpufleet.k8s.k8s_connection
attributes:
  check_mode:
    details: Reads and decides like a dry run; writes nothing.
requirements:
  - kubernetes (Python client)
"""

EXAMPLES = r"""
- name: Say what remediation would do (dry run)
  gpufleet.k8s.gpu_remediate:
    pools: "{{ gpufleet_plan.pools }}"
    platform: "{{ gpufleet_plan.platform }}"
    policy:
      prometheus_url: http://prometheus.monitoring:9090

- name: Taint, cordon and drain at most one unhealthy node
  gpufleet.k8s.gpu_remediate:
    pools: "{{ gpufleet_plan.pools }}"
    platform: kubeadm
    policy:
      dry_run: false
      actions: [taint, cordon, drain]
      max_nodes: 1
"""

RETURN = r"""
nodes:
  description: One entry per GPU node - state, decision, findings, the steps and what was done.
  returned: always
  type: list
  elements: dict
report:
  description: The whole report (the JSON file the role writes).
  returned: always
  type: dict
generated_at:
  description: When the run read the cluster (UTC, ISO 8601); the report files leave it out so that a run that changes nothing leaves them as they were.
  returned: always
  type: str
markdown:
  description: The report as Markdown.
  returned: always
  type: str
host_steps:
  description:
    - Node name -> the step for its host - C(step) (reset or reboot), C(gpus) (PCI bus ids; empty = every
      GPU), C(fallback) (reboot when a refused reset may be followed by a reboot). Only drained nodes of
      self-managed clusters, only when not a dry run.
  returned: always
  type: dict
errors:
  description: Steps that failed, one line per failure (a drain a PodDisruptionBudget kept blocking).
  returned: always
  type: list
  elements: str
"""

import base64
import json
import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.cluster_access import connection_args
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.drain_client import DrainApi
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import GpufleetError
from ansible_collections.gpufleet.k8s.plugins.module_utils.pools.node_ownership import FIELD_MANAGER, Conflict
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet import remediation, remediation_metrics, remediation_run

try:
    import kubernetes
    from kubernetes.client.rest import ApiException
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    HAS_K8S = True
except ImportError:
    HAS_K8S = False


class _Api(DrainApi):
    """The drain's view (DrainApi) plus Nodes and Karpenter NodeClaims, as plain dicts."""

    def __init__(self, api_client):
        super(_Api, self).__init__(api_client)
        self.custom = kubernetes.client.CustomObjectsApi(api_client)

    def list_nodes(self):
        return self._items(self.core.list_node(_preload_content=False))

    def get_node(self, name):
        try:
            return json.loads(self.core.read_node(name, _preload_content=False).data)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def patch_node(self, name, patch):
        try:
            self.core.patch_node(name, patch, field_manager=FIELD_MANAGER,
                                 _content_type="application/merge-patch+json", _preload_content=False)
        except ApiException as exc:
            if exc.status == 409:
                raise Conflict(name)
            if exc.status == 404:
                return False
            raise
        return True

    def list_pods_selected(self, node, selector):
        return self._items(self.core.list_pod_for_all_namespaces(
            field_selector="spec.nodeName=%s" % node, label_selector=selector, _preload_content=False))

    def delete_pod(self, namespace, name):
        try:
            self.core.delete_namespaced_pod(name, namespace, _preload_content=False)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def read_secret(self, namespace, name):
        try:
            return json.loads(self.core.read_namespaced_secret(name, namespace, _preload_content=False).data)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def create_namespace(self, body):
        try:
            self.core.create_namespace(body, field_manager=FIELD_MANAGER, _preload_content=False)
        except ApiException as exc:
            if exc.status != 409:
                raise

    def create_secret(self, namespace, body):
        try:
            self.core.create_namespaced_secret(namespace, body, field_manager=FIELD_MANAGER, _preload_content=False)
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True

    def list_nodeclaims(self):
        try:
            return self._items(self.custom.list_cluster_custom_object(
                "karpenter.sh", "v1", "nodeclaims", _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:  # Karpenter is not installed
                return []
            raise

    def delete_nodeclaim(self, name):
        try:
            self.custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", name, _preload_content=False)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True


def argspec():
    spec = dict(
        pools=dict(type="list", elements="dict", required=True),
        platform=dict(type="str", required=True),
        cluster_name=dict(type="str", default=""),
        policy=dict(type="dict", default={}),
        gpu_facts=dict(type="dict", default={}),
        host_results=dict(type="dict", default={}),
        report=dict(type="dict", default={}),
        device_plugin_selector=dict(type="str", default=""),
        prometheus_validate_certs=dict(type="bool", default=True),
        prometheus_timeout=dict(type="int", default=30),
        prometheus_username=dict(type="str", default=""),
        prometheus_password=dict(type="str", default="", no_log=True),
        prometheus_bearer_token=dict(type="str", default="", no_log=True),
    )
    spec.update(connection_args(None))
    return spec


def run(module):
    p = module.params
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    url = (p["policy"] or {}).get("prometheus_url") or ""
    if remediation_metrics.has_credentials(url):
        # refused below; the URL itself is masked wherever the result would show it (the task's arguments)
        module.no_log_values.add(str(url))
    problems = remediation_metrics.credentials_problems("gpu_remediation", url, p["prometheus_username"],
                                                        p["prometheus_password"], p["prometheus_bearer_token"])
    if problems:
        module.fail_json(msg="; ".join(problems) + "; nothing was read or changed")
    try:
        policy = remediation.validate_policy(p["policy"], p["platform"])
    except GpufleetError as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    if not HAS_K8S:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    if p["host_results"]:
        record_hosts(module, p, now)
    try:
        found = {}
        if policy["prometheus_url"]:
            responses = remediation_metrics.read_all(policy["prometheus_url"], policy["window"], policy["thresholds"],
                                                     timeout=p["prometheus_timeout"],
                                                     validate_certs=p["prometheus_validate_certs"],
                                                     headers=remediation_metrics.auth_headers(
                                                         p["prometheus_username"], p["prometheus_password"],
                                                         p["prometheus_bearer_token"]))
            found = remediation_metrics.findings(
                responses, policy["thresholds"], lambda code: remediation.xid_verdict(code, policy["xid_overrides"]))
        found = remediation.merge_findings(found, remediation.host_findings(p["gpu_facts"], policy["thresholds"]))
        api = _Api(get_api_client(**connection_args(p)).client.client)
        key = _key(module, api, create=not (module.check_mode or policy["dry_run"]))
        claims = api.list_nodeclaims() if p["platform"] in remediation.KARPENTER_PLATFORMS else []
        entries = remediation.plan(api.list_nodes(), p["pools"], p["platform"], found, policy, claims,
                                   gpu_facts=p["gpu_facts"], key=key)
        remediation_run.execute(api, entries, policy, p["platform"], claims, now, check_mode=module.check_mode,
                                key=key)
    except GpufleetError as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    except Exception as exc:  # the client's own errors (connection, auth, API status)
        module.fail_json(msg="gpufleet could not read the cluster for remediation: %s" % exc)
    rep = remediation_run.report(entries, policy, p["platform"], p["cluster_name"], check_mode=module.check_mode)
    dry = module.check_mode or policy["dry_run"]
    changed = not dry and any(n["done"] for n in rep["nodes"])
    errors = [e for n in rep["nodes"] for e in n["errors"]]
    host_steps = dict((e["name"], e["host_action"]) for e in entries if e.get("host_action"))
    module.exit_json(changed=changed, generated_at=now, nodes=rep["nodes"], report=rep, markdown=remediation_run.markdown(rep),
                     errors=errors, host_steps=host_steps)


def _key(module, api, create):
    """The records' MAC key (remediation_run.remediation_key), masked in every result."""
    key = remediation_run.remediation_key(api, create)
    if key:
        module.no_log_values.update([base64.b64encode(key).decode("ascii"), key.hex()])
    return key


def record_hosts(module, p, now):
    """The second call: write what the host steps did into the records and the report, then exit."""
    rep = dict(p["report"] or {})
    nodes = [dict(n, done=list(n.get("done") or []), errors=list(n.get("errors") or [])) for n in rep.get("nodes") or []]
    try:
        api = _Api(get_api_client(**connection_args(p)).client.client)
        changed = remediation_run.record_host_results(api, nodes, p["host_results"], now,
                                                      plugin_selector=p["device_plugin_selector"] or None,
                                                      key=_key(module, api, create=False))
    except Exception as exc:  # the client's own errors (connection, auth, API status)
        module.fail_json(msg="gpufleet could not record the host steps of remediation: %s" % exc)
    rep["nodes"] = nodes
    errors = [e for n in nodes for e in n["errors"]]
    module.exit_json(changed=changed, generated_at=now, nodes=nodes, report=rep,
                     markdown=remediation_run.markdown(rep) if rep.get("policy") else "", errors=errors, host_steps={})


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
