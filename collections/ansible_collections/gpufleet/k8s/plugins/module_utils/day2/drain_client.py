# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""drain.drain's view of the API server through the kubernetes client (raw JSON, no models): the pods of a
Node, evictions (a 429 raised as drain.TooManyRequests with the API server's message), a pod read again, and
PodDisruptionBudgets. Shared by the modules that drain (node_drain, gpu_remediate)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.drain import TooManyRequests

try:
    import kubernetes
    from kubernetes.client.rest import ApiException
except ImportError:  # the modules say kubernetes is missing before they build a DrainApi
    kubernetes = None
    ApiException = Exception


class DrainApi(object):
    """``selectors``: only pods matching all these label selectors are listed."""

    def __init__(self, api_client, selectors=None):
        self.core = kubernetes.client.CoreV1Api(api_client)
        self.policy = kubernetes.client.PolicyV1Api(api_client)
        self.selector = ",".join(selectors or []) or None

    @staticmethod
    def _items(response):
        return json.loads(response.data).get("items") or []

    def list_pods(self, node):
        kwargs = dict(field_selector="spec.nodeName=%s" % node, _preload_content=False)
        if self.selector:
            kwargs["label_selector"] = self.selector
        return self._items(self.core.list_pod_for_all_namespaces(**kwargs))

    def evict(self, namespace, name, grace_period):
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        if grace_period is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_period}
        try:
            self.core.create_namespaced_pod_eviction(name, namespace, body, _preload_content=False)
        except ApiException as exc:
            if exc.status == 404:
                return False
            if exc.status == 429:
                try:
                    message = json.loads(exc.body).get("message", "")
                except (TypeError, ValueError, AttributeError):
                    message = str(exc.body)
                raise TooManyRequests(message)
            raise
        return True

    def get_pod(self, namespace, name):
        try:
            return json.loads(self.core.read_namespaced_pod(name, namespace, _preload_content=False).data)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def list_pdbs(self, namespaces):
        out = []
        for namespace in namespaces:
            out += self._items(self.policy.list_namespaced_pod_disruption_budget(namespace, _preload_content=False))
        return out
