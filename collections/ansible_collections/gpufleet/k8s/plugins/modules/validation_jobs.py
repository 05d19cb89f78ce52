#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: validation_jobs
short_description: Wait for gpufleet's validation Jobs and say why each one failed
version_added: "0.1.0"
description:
  - Reads the Jobs, Pods and Events of the validation namespace every O(poll) seconds until every
    Job in O(expected) has a verdict, or O(timeout) passes.
  - A Job ends the wait at once when it is Complete or Failed, when the API server refused its pods
    (C(FailedCreate), e.g. Pod Security admission), or when a pod cannot start (image pull, container
    config). The verdict names that cause; a Job still running at the deadline is failed with what it
    was waiting for (Pending and the scheduler's reason, ...); so is a Job that ran out of its own
    C(activeDeadlineSeconds) (C(DeadlineExceeded)), with what it waited for at the read before. A pod whose
    ResourceClaim the scheduler cannot allocate (DRA pools) is named as such.
  - Read-only.
author:
  - gpufleet maintainers (@gpufleet)
options:
  namespace:
    description: Namespace of the validation Jobs.
    type: str
    required: true
  label_selector:
    description: Label selector of the Jobs (and their pods).
    type: str
    default: gpufleet.io/validate
  expected:
    description: Job names that must exist and finish.
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds to wait for all of them together.
    type: int
    default: 300
  poll:
    description: Seconds between reads.
    type: int
    default: 5
extends_documentation_fragment:
  - gpufleet.k8s.attributes.no_diff
  - gpufleet.k8s.k8s_connection
attributes:
  check_mode:
    details: Reads once and does not wait.
requirements:
  - kubernetes (Python client)
notes:
  - On the controller (a task on C(localhost) or delegated there, with the local connection and without
    C(become)) the module runs inside Ansible's worker process, without starting a module interpreter.
"""

EXAMPLES = r"""
- name: Wait for the smoke Jobs
  gpufleet.k8s.validation_jobs:
    namespace: gpufleet-validate
    expected: [gpufleet-smoke-train, gpufleet-metrics-check]
    timeout: 300
  register: validation
"""

RETURN = r"""
verdicts:
  description: Per Job, C(passed), C(failed) with the cause, or (check mode) C(running) with what it waits for.
  returned: always
  type: dict
smoke:
  description: Per pool, the verdict of its smoke Job.
  returned: always
  type: dict
metrics:
  description: Verdict of the metrics probe (C(not run) without one).
  returned: always
  type: str
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.k8s.plugins.module_utils.kube.cluster_access import connection_args
from ansible_collections.gpufleet.k8s.plugins.module_utils.day2.smoke import (
    final_verdicts, job_verdicts, split_verdicts, verdicts_done, with_last_wait)

try:
    import kubernetes
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    HAS_K8S = True
except ImportError:
    HAS_K8S = False


def argspec():
    spec = dict(
        namespace=dict(type="str", required=True),
        label_selector=dict(type="str", default="gpufleet.io/validate"),
        expected=dict(type="list", elements="str", default=[]),
        timeout=dict(type="int", default=300),
        poll=dict(type="int", default=5),
    )
    spec.update(connection_args(None))
    return spec


def _items(response):
    return json.loads(response.data).get("items") or []


def run(module):
    """The module's work on ``module`` (an AnsibleModule, or the action plugin's in-process stand-in)."""
    if not HAS_K8S:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    p = module.params
    try:
        core = kubernetes.client.CoreV1Api(get_api_client(**connection_args(p)).client.client)
        batch = kubernetes.client.BatchV1Api(core.api_client)
        deadline = time.time() + p["timeout"]
        verdicts = {}
        while True:
            jobs = _items(batch.list_namespaced_job(p["namespace"], label_selector=p["label_selector"], _preload_content=False))
            pods = _items(core.list_namespaced_pod(p["namespace"], _preload_content=False))
            events = _items(core.list_namespaced_event(p["namespace"], _preload_content=False))
            verdicts = with_last_wait(job_verdicts(jobs, pods, events, p["expected"]), verdicts)
            if verdicts_done(verdicts) or module.check_mode:
                break
            if time.time() >= deadline:
                verdicts = final_verdicts(verdicts)
                break
            time.sleep(p["poll"])
    except Exception as exc:  # the client's own errors
        module.fail_json(msg="gpufleet could not read the validation Jobs in %s: %s" % (p["namespace"], exc))
    smoke, metrics = split_verdicts(verdicts)
    module.exit_json(changed=False, verdicts=verdicts, smoke=smoke, metrics=metrics)


def main():
    run(AnsibleModule(argument_spec=argspec(), supports_check_mode=True))


if __name__ == "__main__":
    main()
