# -*- coding: utf-8 -*-
# Copyright: gpufleet contributors
# Apache License 2.0
"""Preflight checks of the add-on inputs (device plugin, dcgm-exporter, GPU Operator).

Registered in ``preflight.CHECKS``; the add-on roles run the same checks at their start
(``addon_problems``) so a direct role run fails before anything is rendered or applied.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.k8s.plugins.module_utils.addons import addons as _a
from ansible_collections.gpufleet.k8s.plugins.module_utils.model import gpu_access
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.k8s_syntax import check_label_map, check_tolerations
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_exporter import parse_metric
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.errors import Problems, one_of
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.gpu_operator import (
    KERNEL_MODULE_TYPES, PRESETS, UPGRADE_POLICY_KEYS, host_components, operator_values, preset)
from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import (
    DIGEST, IMAGES, REGISTRY_PREFIX, TAG)
from ansible_collections.gpufleet.k8s.plugins.module_utils.model.namespace_ownership import reserved_problem

AUTO_BOOL = ("auto", True, False)
STATES = ("present", "absent")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
DURATION = re.compile(r"^[0-9]+(ms|s|m)$")
# what to use instead of a system namespace (the defaults; gpu_operator_namespace auto is gpu-operator, or
# nvidia-gpu-operator on OpenShift)
NAMESPACE_EXAMPLES = {"nvidia_device_plugin_namespace": "nvidia-device-plugin",
                      "dcgm_exporter_namespace": "nvidia-dcgm-exporter", "gpu_operator_namespace": "gpu-operator"}


def _seconds(duration):
    num = int(re.match(r"^[0-9]+", duration).group(0))
    unit = duration[len(str(num)):]
    return num / 1000.0 if unit == "ms" else num * (60 if unit == "m" else 1)


def _auto_bool(var, value, problems):
    if value not in AUTO_BOOL or value in (0, 1) and not isinstance(value, bool):
        problems.error(var, "%r is not allowed; use one of: auto, true, false" % (value,))
        return False
    return True


def _check_images(s, problems):
    prefix = s["gpufleet_registry_prefix"]
    if not isinstance(prefix, str) or (prefix and not REGISTRY_PREFIX.match(prefix)):
        problems.error("gpufleet_registry_prefix", "%r is not a registry prefix; use a host[:port][/path] "
                       "without scheme, e.g. mirror.example.com:5000/nvidia" % (prefix,))
    secrets = s["gpufleet_image_pull_secrets"]
    if not isinstance(secrets, list) or any(not isinstance(n, str) or not DNS_SUBDOMAIN.match(n) for n in secrets):
        problems.error("gpufleet_image_pull_secrets", "%r is not a list of Secret names; use e.g. [mirror-pull] "
                       "(the Secrets must exist in each add-on namespace)" % (secrets,))
    overrides = s["gpufleet_image_overrides"]
    if not isinstance(overrides, dict):
        problems.error("gpufleet_image_overrides", "must be a mapping of image name to {repository, tag, digest}; "
                       "use names %s" % one_of(sorted(IMAGES)))
        return
    for name, over in sorted(overrides.items()):
        var = "gpufleet_image_overrides.%s" % name
        if name not in IMAGES:
            problems.error(var, "unknown image; use %s" % one_of(sorted(IMAGES)))
            continue
        if not isinstance(over, dict):
            problems.error(var, "must be a mapping with repository, tag and/or digest")
            continue
        for key in sorted(set(over) - {"repository", "tag", "digest"}):
            problems.error(var + "." + key, "unknown key; use one of: repository, tag, digest")
        if "tag" in over and (not isinstance(over["tag"], str) or not TAG.match(over["tag"])):
            problems.error(var + ".tag", "%r is not an image tag; use a pinned tag such as %s"
                           % (over["tag"], IMAGES[name]["tag"]))
        if over.get("digest") and (not isinstance(over["digest"], str) or not DIGEST.match(over["digest"])):
            problems.error(var + ".digest", "%r is not a digest; use sha256:<64 hex digits>" % (over["digest"],))
        if "repository" in over and (not isinstance(over["repository"], str) or not over["repository"].strip()
                                     or " " in over["repository"] or ":" in over["repository"].split("/")[-1]):
            problems.error(var + ".repository", "%r is not an image repository (no tag); use e.g. %s"
                           % (over["repository"], IMAGES[name]["repository"]))


def _check_pools(plan, problems):
    for i, pool in enumerate(plan.get("pools") or []):
        if pool.get("name") == "default":
            problems.error("gpufleet_gpu_pools[%d].name" % i, "'default' is reserved for the device-plugin config of "
                           "GPU nodes without a pool label; use another pool name")
        sharing = pool.get("sharing") or {}
        var = "gpufleet_gpu_pools[%d].sharing" % i
        if sharing.get("mode") == "mps" and (sharing.get("mig_strategy") or sharing.get("mig_profile")):
            problems.error(var, "MPS and MIG cannot be combined on one pool (mode mps with mig_strategy/mig_profile); "
                           "use one of: mode mps without MIG keys, mode mig")
        if sharing.get("mode") == "mig" and sharing.get("replicas") is not None:
            problems.error(var + ".replicas", "replicas is not used with mode mig; use one of: mode time-slicing, "
                           "mode mps, or drop replicas")


def _check_device_plugin(plan, s, problems):
    platform, mode = plan.get("platform"), plan.get("addons_mode")
    if _auto_bool("nvidia_device_plugin_enabled", s["nvidia_device_plugin_enabled"], problems):
        forced = s["nvidia_device_plugin_enabled"] is True
        if forced and mode == "operator":
            problems.error("nvidia_device_plugin_enabled", "true conflicts with gpufleet_addons_mode=operator: the GPU "
                           "Operator runs its own device plugin on the same nodes; use one of: auto, false "
                           "(or gpufleet_addons_mode=standalone)")
        if forced and platform in ("gke", "gke-autopilot"):
            problems.error("nvidia_device_plugin_enabled", "true is not possible on %s: Google runs the device plugin "
                           "there; use one of: auto, false (on GKE Standard, gpufleet_addons_mode=operator "
                           "replaces Google's plugin)" % platform)
    _auto_bool("nvidia_device_plugin_runtime_class", s["nvidia_device_plugin_runtime_class"], problems)
    for var in ("nvidia_device_plugin_gfd_enabled", "nvidia_device_plugin_nfd_enabled"):
        if not isinstance(s[var], bool):
            problems.error(var, "%r is not allowed; use one of: true, false" % (s[var],))
    if s["nvidia_device_plugin_nfd_enabled"] is True and mode == "operator":
        problems.error("nvidia_device_plugin_nfd_enabled", "true conflicts with gpufleet_addons_mode=operator: the "
                       "GPU Operator deploys NFD itself (value nfd.enabled); use one of: false")
    check_tolerations("nvidia_device_plugin_extra_tolerations", s["nvidia_device_plugin_extra_tolerations"], problems)


def _check_dcgm(plan, s, problems):
    platform, mode = plan.get("platform"), plan.get("addons_mode")
    if _auto_bool("dcgm_exporter_enabled", s["dcgm_exporter_enabled"], problems) and s["dcgm_exporter_enabled"] is True:
        if mode == "operator":
            problems.error("dcgm_exporter_enabled", "true conflicts with gpufleet_addons_mode=operator: the GPU "
                           "Operator runs dcgm-exporter on the same nodes; use one of: auto, false")
        if platform in ("gke", "gke-autopilot"):
            problems.error("dcgm_exporter_enabled", "true is not possible on %s: use GKE's managed DCGM metrics "
                           "(gpufleet writes their scrape job); use one of: auto, false" % platform)
    if _auto_bool("dcgm_exporter_runtime_class", s["dcgm_exporter_runtime_class"], problems) \
            and _auto_bool("nvidia_device_plugin_enabled", s["nvidia_device_plugin_enabled"], Problems()):
        resolved = _a.settings(plan, s)
        if resolved["dcgm_exporter_enabled"] and resolved["dcgm_exporter_runtime_class"] \
                and not (resolved["device_plugin_enabled"] and resolved["device_plugin_runtime_class"]):
            problems.warn("dcgm_exporter_runtime_class", "the exporter runs with RuntimeClass nvidia, which gpufleet "
                          "renders only with the standalone device plugin; make sure the cluster has it")
    for var in ("dcgm_exporter_service_monitor", "gpu_operator_service_monitor"):
        if _auto_bool(var, s[var], problems) and s[var] is True and platform == "gke-autopilot":
            problems.error(var, "true is not possible on gke-autopilot: there is no exporter to monitor (GKE's "
                           "managed DCGM metrics are used); use one of: auto, false")
    check_label_map("dcgm_exporter_service_monitor_labels", s["dcgm_exporter_service_monitor_labels"], problems)
    metrics = s["dcgm_exporter_extra_metrics"]
    if not isinstance(metrics, list):
        problems.error("dcgm_exporter_extra_metrics", "must be a list of 'DCGM_FI_FIELD, type, help' lines or "
                       "{field, type, help} mappings")
    else:
        for i, item in enumerate(metrics):
            try:
                parse_metric(item)
            except ValueError as exc:
                problems.error("dcgm_exporter_extra_metrics[%d]" % i, "%s; use e.g. 'DCGM_FI_DEV_SM_CLOCK, gauge, "
                               "SM clock' with type one of: gauge, counter, label" % exc)
    _check_dcgm_hardening(s, problems)
    durations = {}
    for var in ("dcgm_exporter_scrape_interval", "dcgm_exporter_scrape_timeout"):
        val = s[var]
        if not isinstance(val, str) or not DURATION.match(val):
            problems.error(var, "%r is not a Prometheus duration; use e.g. 15s, 1m or 500ms" % (val,))
        else:
            durations[var] = _seconds(val)
    if len(durations) == 2 and durations["dcgm_exporter_scrape_timeout"] > durations["dcgm_exporter_scrape_interval"]:
        problems.error("dcgm_exporter_scrape_timeout", "%s is longer than dcgm_exporter_scrape_interval %s; use a "
                       "timeout <= the interval" % (s["dcgm_exporter_scrape_timeout"], s["dcgm_exporter_scrape_interval"]))


def _check_dcgm_hardening(s, problems):
    """The optional NetworkPolicy namespaces and the web config Secret (issue 30 item 8)."""
    allowed = s["dcgm_exporter_network_policy_namespaces"]
    if not isinstance(allowed, list) or any(not isinstance(n, str) or not DNS_LABEL.match(n) for n in allowed):
        problems.error("dcgm_exporter_network_policy_namespaces", "%r is not a list of namespace names; use e.g. "
                       "[monitoring] (the namespaces whose pods may scrape port 9400; [] renders no "
                       "NetworkPolicy)" % (allowed,))
    secret = s["dcgm_exporter_web_config_secret"]
    if not isinstance(secret, str) or (secret and not DNS_SUBDOMAIN.match(secret)):
        problems.error("dcgm_exporter_web_config_secret", "%r is not a Secret name; use the name of a Secret in "
                       "dcgm_exporter_namespace holding web-config.yml (or '' for none)" % (secret,))
    scheme = s["dcgm_exporter_web_config_scheme"]
    if scheme not in ("http", "https"):
        problems.error("dcgm_exporter_web_config_scheme", "%r is not allowed; use one of: http, https" % (scheme,))


OLM_CHANNEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def _check_olm(s, problems):
    """OpenShift Subscriptions: approval and the NFD channel (issue 30 item 7)."""
    if s["gpu_operator_olm_approval"] not in ("Automatic", "Manual"):
        problems.error("gpu_operator_olm_approval", "%r is not allowed; use one of: Automatic, Manual"
                       % (s["gpu_operator_olm_approval"],))
    channel = s["gpu_operator_olm_nfd_channel"]
    if not isinstance(channel, str) or not OLM_CHANNEL.match(channel):
        problems.error("gpu_operator_olm_nfd_channel", "%r is not an OLM channel name; use e.g. stable" % (channel,))


def _check_operator(plan, s, problems):
    platform, mode = plan.get("platform"), plan.get("addons_mode")
    _check_olm(s, problems)
    pre = s["gpu_operator_preset"]
    if not _a.is_auto(pre) and pre not in PRESETS:
        problems.error("gpu_operator_preset", "%r is not a platform preset; use one of: auto, %s"
                       % (pre, ", ".join(PRESETS)))
        return
    if mode != "operator":
        return
    if platform == "gke-autopilot" or pre == "gke-autopilot":
        problems.error("gpufleet_addons_mode", "operator is not supported on GKE Autopilot (Google manages driver, "
                       "device plugin and monitoring there and forbids privileged DaemonSets); use one of: none")
        return
    resolved = preset(plan, s)
    if resolved == "openshift" and platform != "openshift" or platform == "openshift" and resolved != "openshift":
        problems.error("gpu_operator_preset", "%r does not fit gpufleet_platform %r; use one of: auto, %s"
                       % (pre, platform, platform))
    for var in ("gpu_operator_host_driver", "gpu_operator_host_toolkit", "gpu_operator_driver_enabled",
                "gpu_operator_toolkit_enabled", "gpu_operator_mig_manager_enabled", "gpu_operator_cdi_enabled"):
        _auto_bool(var, s[var], problems)
    if problems.errors:
        return
    host_driver, host_toolkit = host_components(plan, s)
    if host_driver and s["gpu_operator_driver_enabled"] is True:
        problems.error("gpu_operator_driver_enabled", "true conflicts with gpu_operator_host_driver (true for %s): the "
                       "driver is installed on the hosts, the operator must not install another; use one of: auto, "
                       "false, or set gpu_operator_host_driver: false" % resolved)
    if host_toolkit and s["gpu_operator_toolkit_enabled"] is True:
        problems.error("gpu_operator_toolkit_enabled", "true conflicts with gpu_operator_host_toolkit (true for %s): "
                       "the container toolkit is configured on the hosts; use one of: auto, false, or set "
                       "gpu_operator_host_toolkit: false" % resolved)
    if not host_driver and s["gpu_operator_driver_enabled"] is False:
        problems.error("gpu_operator_driver_enabled", "false leaves the nodes without a driver "
                       "(gpu_operator_host_driver is false); use one of: auto, true, or set gpu_operator_host_driver: true")
    if s["gpu_operator_kernel_module_type"] not in KERNEL_MODULE_TYPES:
        problems.error("gpu_operator_kernel_module_type", "%r is not allowed; use %s"
                       % (s["gpu_operator_kernel_module_type"], one_of(KERNEL_MODULE_TYPES)))
    policy = s["gpu_operator_upgrade_policy"]
    if not isinstance(policy, dict):
        problems.error("gpu_operator_upgrade_policy", "must be a mapping (driver.upgradePolicy keys)")
    else:
        for key in sorted(set(policy) - set(UPGRADE_POLICY_KEYS)):
            problems.error("gpu_operator_upgrade_policy." + key, "unknown key; use %s" % one_of(UPGRADE_POLICY_KEYS))
        mpu = policy.get("maxParallelUpgrades")
        if mpu is not None and (not isinstance(mpu, int) or isinstance(mpu, bool) or mpu < 0):
            problems.error("gpu_operator_upgrade_policy.maxParallelUpgrades", "%r is not allowed; use an integer >= 0 "
                           "(0 = all nodes at once)" % (mpu,))
    version = s["gpu_operator_chart_version"]
    if version and not re.match(r"^v?[0-9]+\.[0-9]+\.[0-9]+$", str(version)):
        problems.error("gpu_operator_chart_version", "%r is not a pinned chart version; use e.g. v25.3.4" % (version,))
    path = s["gpu_operator_chart_path"]
    if path and not str(path).endswith((".tgz", ".tar.gz")) and not str(path).startswith("/"):
        problems.error("gpu_operator_chart_path", "%r is not a local chart; use an absolute path to a chart "
                       "directory or a .tgz file" % (path,))
    if path and s["gpu_operator_chart_repo_url"]:
        problems.error("gpu_operator_chart_repo_url", "is set together with gpu_operator_chart_path; use one of them")
    if resolved == "openshift" and path:
        problems.error("gpu_operator_chart_path", "OpenShift installs the operator through OLM, not Helm; use one of: "
                       "an empty value")
    for var in ("gpu_operator_values_overrides",):
        if not isinstance(s[var], dict):
            problems.error(var, "must be a mapping of chart values")
    if not problems.errors:
        _check_values_overrides(plan, s, host_driver, host_toolkit, problems)
    if s["gpu_operator_driver_version"] and not re.match(r"^[0-9]+\.[0-9]+(\.[0-9]+)?$",
                                                         str(s["gpu_operator_driver_version"])):
        problems.error("gpu_operator_driver_version", "%r is not a driver version; use e.g. 570.148.08"
                       % (s["gpu_operator_driver_version"],))


def _check_values_overrides(plan, s, host_driver, host_toolkit, problems):
    """The chart values after ``gpu_operator_values_overrides`` merged in: an override may add and tune, but
    not re-enable what preflight refused nor replace what gpufleet renders from the pools."""
    overrides = s["gpu_operator_values_overrides"]
    if not isinstance(overrides, dict) or not overrides:
        return
    var = "gpu_operator_values_overrides"
    base = operator_values(plan, dict(s, gpu_operator_values_overrides={}))
    merged = operator_values(plan, s)
    for key in sorted(overrides, key=str):
        if isinstance(base.get(key), dict) and not isinstance(overrides[key], dict):
            problems.error("%s.%s" % (var, key), "%r replaces the whole %s block gpufleet renders (%s); set single "
                           "keys inside it instead, e.g. %s: {%s: ...}"
                           % (overrides[key], key, ", ".join(sorted(base[key])), key, sorted(base[key])[0]))
    if problems.errors:
        return
    for block, host, host_var in (("driver", host_driver, "gpu_operator_host_driver"),
                                  ("toolkit", host_toolkit, "gpu_operator_host_toolkit")):
        if host and merged[block].get("enabled") != base[block].get("enabled"):
            problems.error("%s.%s.enabled" % (var, block), "%r turns the operator's %s on, but the %s is installed on "
                           "the hosts (%s is true for %s); use one of: false (or leave it out), or set %s: false"
                           % (merged[block].get("enabled"), block, block, host_var, preset(plan, s), host_var))
    config, base_config = merged["devicePlugin"].get("config"), base["devicePlugin"]["config"]
    if merged["devicePlugin"].get("enabled") is not True:
        problems.error(var + ".devicePlugin.enabled", "%r turns off the device plugin that serves the pools' GPUs and "
                       "their sharing configs; use one of: true (or leave it out), or gpufleet_addons_mode: none"
                       % (merged["devicePlugin"].get("enabled"),))
    elif not isinstance(config, dict):
        problems.error(var + ".devicePlugin.config", "%r replaces the per-pool device-plugin configs; use one of: "
                       "a mapping that leaves name, default, create and the pools' data keys alone" % (config,))
    else:
        for key in ("create", "name", "default"):
            if config.get(key) != base_config[key]:
                problems.error("%s.devicePlugin.config.%s" % (var, key), "%r would detach the nodes from the per-pool "
                               "configs gpufleet renders (node label nvidia.com/device-plugin.config); use one of: %r "
                               "(or leave it out)" % (config.get(key), base_config[key]))
        data = config.get("data") if isinstance(config.get("data"), dict) else {}
        for name in sorted(base_config["data"]):
            if data.get(name) != base_config["data"][name]:
                problems.error("%s.devicePlugin.config.data.%s" % (var, name), "replaces the config gpufleet renders "
                               "for %s from the pools' sharing settings; change gpufleet_gpu_pools[].sharing instead, "
                               "or use a new key for an extra config" % ("pool " + name if name != "default"
                                                                         else "unlabelled GPU nodes"))


def _check_common(s, problems):
    for var in ("nvidia_device_plugin_namespace", "dcgm_exporter_namespace", "gpu_operator_namespace"):
        val = s[var]
        if not isinstance(val, str) or not DNS_LABEL.match(val):
            problems.error(var, "%r is not a namespace name; use a DNS label" % (val,))
        elif reserved_problem(var, val, NAMESPACE_EXAMPLES[var]):
            problems.error(var, reserved_problem(var, val, NAMESPACE_EXAMPLES[var]))
    for var in ("nvidia_device_plugin_state", "dcgm_exporter_state", "gpu_operator_state"):
        if s[var] not in STATES:
            problems.error(var, "%r is not allowed; use %s" % (s[var], one_of(STATES)))


def check(params, plan, problems):
    """Preflight entry point: every add-on input, named by its variable."""
    extra = params.get("extra") or {}
    s = _a.inputs(extra)
    _check_common(s, problems)
    _check_images(s, problems)
    _check_pools(plan, problems)
    _check_device_plugin(plan, s, problems)
    _check_dcgm(plan, s, problems)
    _check_operator(plan, s, problems)
    mode = plan.get("addons_mode")
    for var in ("nvidia_device_plugin_enabled", "dcgm_exporter_enabled"):
        if mode == "none" and s[var] is True:
            problems.error(var, "true has no effect with gpufleet_addons_mode=none (no add-on is deployed); use "
                           "one of: auto, false, or gpufleet_addons_mode: standalone")
    # MIG partitioning and GKE-native sharing: what renders fine but gives pods no GPU.
    gpu_access.check_sharing(plan, dict(extra, nvidia_device_plugin_state=s["nvidia_device_plugin_state"],
                                        gpu_operator_state=s["gpu_operator_state"]), problems)
    if mode == "standalone" and plan.get("platform") == "openshift":
        problems.warn("gpufleet_addons_mode", "standalone on OpenShift: the device plugin, GFD and dcgm-exporter "
                      "service accounts need the privileged SCC; the supported path is operator")
    if mode != "operator" and any(k.startswith("gpu_operator_") for k in extra if k != "gpu_operator_state"):
        problems.warn("gpufleet_addons_mode", "%s: the gpu_operator_* variables set in the inventory are not used" % mode)


def addon_problems(plan, extra):
    """Errors of ``check`` for one role's direct run (the role fails on any)."""
    problems = Problems()
    check({"extra": extra}, plan, problems)
    return problems.errors
