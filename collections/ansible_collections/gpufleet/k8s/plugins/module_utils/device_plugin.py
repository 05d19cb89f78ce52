# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Pool sharing mode -> NVIDIA k8s-device-plugin configuration (config file ``version: v1``).

One named config per pool; nodes select theirs with the ``nvidia.com/device-plugin.config``
label (set on the pool's nodes by provisioning). The config named ``default`` applies to GPU
nodes without the label.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import yaml


def pool_plugin_config(pool):
    """The device-plugin config (as a dict) for one normalized pool."""
    sharing = pool.get("sharing") or {"mode": "none"}
    mode = sharing.get("mode", "none")
    config = {"version": "v1", "flags": {"migStrategy": "none", "failOnInitError": True}}
    if mode == "mig":
        config["flags"]["migStrategy"] = sharing.get("mig_strategy", "single")
    elif mode in ("time-slicing", "mps"):
        resource = {"name": "nvidia.com/gpu", "replicas": int(sharing["replicas"])}
        key = "timeSlicing" if mode == "time-slicing" else "mps"
        block = {"resources": [resource]}
        if sharing.get("rename_by_default"):
            block["renameByDefault"] = True
        if sharing.get("fail_requests_greater_than_one"):
            block["failRequestsGreaterThanOne"] = True
        config["sharing"] = {key: block}
    return config


def plugin_configs(pools):
    """{config name: YAML text} for every pool, plus ``default`` (whole GPUs, no sharing)."""
    configs = {"default": yaml.safe_dump(pool_plugin_config({"sharing": {"mode": "none"}}), sort_keys=True)}
    for pool in pools:
        configs[pool["name"]] = yaml.safe_dump(pool_plugin_config(pool), sort_keys=True)
    return configs
