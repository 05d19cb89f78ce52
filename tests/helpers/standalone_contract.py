"""The standalone add-ons against NVIDIA's own charts (tests/integration/test_standalone_contract.py).

gpufleet's DaemonSets (module_utils addons/device_plugin.py and dcgm_exporter.py) and the DaemonSets the
real charts render with ``helm template`` (device plugin + GFD + MPS control daemon v0.20.0, dcgm-exporter
at d5e5f51, from ../shared/charts/) are reduced to what decides whether the agents work on a node: per
container the command and args, the environment, the volume mounts with where they come from, privileged
and capabilities, probes, ports and the image; per pod hostPID, hostNetwork, hostIPC,
shareProcessNamespace, runtime and priority class and tolerations. Names differ by design (gpufleet names
its DaemonSets and containers its own way); tests/fixtures/upstream-contract/standalone-allowlist.yml maps
them before comparing, and lists every remaining difference with its reason.
"""
import json
import os
import subprocess
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/helpers/ -> checkout
SHARED_CHARTS = os.path.normpath(os.path.join(ROOT, "..", "shared", "charts"))
DEVICE_PLUGIN_CHART = os.path.join(SHARED_CHARTS, "nvidia-device-plugin-v0.20.0")
DCGM_EXPORTER_CHART = os.path.join(SHARED_CHARTS, "dcgm-exporter-main-d5e5f51")
ALLOWLIST = os.path.join(ROOT, "tests", "fixtures", "upstream-contract", "standalone-allowlist.yml")
POD_FIELDS = ("hostPID", "hostNetwork", "hostIPC", "shareProcessNamespace")


def charts_or_skip(pytest):
    for chart in (DEVICE_PLUGIN_CHART, DCGM_EXPORTER_CHART):
        if not os.path.isdir(chart):
            pytest.skip(reason="needs NVIDIA's charts in ../shared/charts/ (%s is absent)" % chart)


def helm_template(helm, chart, release, namespace, values):
    """The objects ``helm template`` renders for ``chart`` with ``values`` (a dict)."""
    with tempfile.TemporaryDirectory() as home:
        path = os.path.join(home, "values.json")
        with open(path, "w") as handle:
            json.dump(values, handle)
        env = dict(os.environ, HELM_CACHE_HOME=home + "/cache", HELM_CONFIG_HOME=home + "/config",
                   HELM_DATA_HOME=home + "/data")
        out = subprocess.run([helm, "template", release, chart, "--namespace", namespace, "-f", path],
                             capture_output=True, text=True, env=env, timeout=120)
    if out.returncode:
        raise RuntimeError("helm template %s failed: %s" % (chart, out.stderr))
    return [o for o in yaml.safe_load_all(out.stdout) if o]


def split_image(image):
    """``repo:tag[@digest]`` -> (repo, ``tag[@digest]``), as the charts' image values take it."""
    name, _, digest = image.partition("@")
    repo, _, tag = name.rpartition(":")
    return repo, tag + ("@" + digest if digest else "")


def _volume_source(volume):
    if "hostPath" in volume:
        return "hostPath " + volume["hostPath"]["path"]
    for kind in ("configMap", "secret"):
        if kind in volume:
            return "%s %s" % (kind, volume[kind].get("name") or volume[kind].get("secretName"))
    return next(k for k in volume if k != "name")


def _mount(mount, sources):
    text = sources.get(mount["name"], "missing volume " + mount["name"])
    if mount.get("subPath"):
        text += " subPath=" + mount["subPath"]
    if mount.get("readOnly"):
        text += " ro"
    if mount.get("mountPropagation"):
        text += " propagation=" + mount["mountPropagation"]
    return text


def _env_value(env):
    if "value" in env:
        return str(env["value"])
    ref = env.get("valueFrom") or {}
    if "fieldRef" in ref:
        return "fieldRef " + ref["fieldRef"]["fieldPath"]
    return json.dumps(ref, sort_keys=True)


def _probe(probe):
    if not probe:
        return None
    probe = json.loads(json.dumps(probe))
    get = probe.get("httpGet")
    if get and get.get("scheme", "HTTP") == "HTTP":
        get.pop("scheme", None)
    return json.dumps(probe, sort_keys=True)


def container_view(ctr, sources, kind):
    sc = ctr.get("securityContext") or {}
    caps = sc.get("capabilities") or {}
    return {
        "kind": kind,
        "image": ctr.get("image"),
        "command": ctr.get("command") or None,
        "args": ctr.get("args") or None,
        "env": {e["name"]: _env_value(e) for e in ctr.get("env") or []},
        "volumeMounts": {m["mountPath"]: _mount(m, sources) for m in ctr.get("volumeMounts") or []},
        "privileged": bool(sc.get("privileged")),
        "capabilities.add": sorted(caps.get("add") or []) or None,
        "capabilities.drop": sorted(caps.get("drop") or []) or None,
        "livenessProbe": _probe(ctr.get("livenessProbe")),
        "readinessProbe": _probe(ctr.get("readinessProbe")),
        "startupProbe": _probe(ctr.get("startupProbe")),
        "ports": sorted("%s %s/%s" % (p.get("name", ""), p["containerPort"], p.get("protocol", "TCP"))
                        for p in ctr.get("ports") or []) or None,
    }


def daemonset_views(objs, names):
    """{DaemonSet name: view} of the DaemonSets in ``objs``, with upstream names mapped by ``names``
    (the allow-list file's ``names``: ``objects`` and per object ``containers``)."""
    out = {}
    for obj in objs:
        if obj.get("kind") != "DaemonSet":
            continue
        name = names.get("objects", {}).get(obj["metadata"]["name"], obj["metadata"]["name"])
        mapping = names.get("containers", {}).get(name, {})
        spec = obj["spec"]["template"]["spec"]
        sources = {v["name"]: _volume_source(v) for v in spec.get("volumes") or []}
        pod = {key: bool(spec.get(key)) for key in POD_FIELDS}
        pod["runtimeClassName"] = spec.get("runtimeClassName")
        pod["priorityClassName"] = spec.get("priorityClassName")
        pod["tolerations"] = sorted(json.dumps(t, sort_keys=True) for t in spec.get("tolerations") or []) or None
        containers = {}
        for key, kind in (("initContainers", "init"), ("containers", "main")):
            for ctr in spec.get(key) or []:
                containers[mapping.get(ctr["name"], ctr["name"])] = container_view(ctr, sources, kind)
        out[name] = {"pod": pod, "containers": containers}
    return out


def _diff(scenario, obj, container, field, item, ours, theirs):
    return {"scenario": scenario, "object": obj, "container": container, "field": field, "item": item,
            "gpufleet": ours, "upstream": theirs}


def differences(scenario, ours, theirs):
    """Every difference between two ``daemonset_views`` results (gpufleet's, upstream's), as dicts with
    scenario, object, container (None: the pod), field, item (env name or mount path, else None), and the
    two values (None: absent)."""
    out = []
    for obj in sorted(set(ours) | set(theirs)):
        if obj not in ours or obj not in theirs:
            out.append(_diff(scenario, obj, None, "object", None, "present" if obj in ours else None,
                             "present" if obj in theirs else None))
            continue
        mine, upstream = ours[obj], theirs[obj]
        for field in sorted(mine["pod"]):
            if mine["pod"][field] != upstream["pod"][field]:
                out.append(_diff(scenario, obj, None, field, None, mine["pod"][field], upstream["pod"][field]))
        for ctr in sorted(set(mine["containers"]) | set(upstream["containers"])):
            a, b = mine["containers"].get(ctr), upstream["containers"].get(ctr)
            if a is None or b is None:
                out.append(_diff(scenario, obj, ctr, "container", None, a and a["kind"], b and b["kind"]))
                continue
            for field in sorted(a):
                if field in ("env", "volumeMounts"):
                    for item in sorted(set(a[field]) | set(b[field])):
                        if a[field].get(item) != b[field].get(item):
                            out.append(_diff(scenario, obj, ctr, field, item, a[field].get(item), b[field].get(item)))
                elif a[field] != b[field]:
                    out.append(_diff(scenario, obj, ctr, field, None, a[field], b[field]))
    return out


def load_allowlist(path=ALLOWLIST):
    with open(path) as handle:
        return yaml.safe_load(handle)


def _where(diff):
    return diff["object"] + ("/" + diff["container"] if diff["container"] else "")


def _matches(entry, where, diff):
    return (_where(diff) == where and diff["field"] == entry["field"] and diff["item"] == entry.get("item")
            and diff["gpufleet"] == entry.get("gpufleet") and diff["upstream"] == entry.get("upstream")
            and diff["scenario"] in entry.get("scenarios", [diff["scenario"]]))


def compare(diffs, allowlist):
    """(differences no entry allows, allow-list entries that match no difference). An entry names one or
    more places (``where``: ``object`` or ``object/container``), the field, the item for env and mounts,
    both values exactly, and optionally the scenarios it applies to; each of its places must match a
    difference in one scenario at least, or the entry is stale."""
    entries = allowlist.get("differences") or []
    new = [d for d in diffs if not any(_matches(e, w, d) for e in entries for w in _places(e))]
    stale = ["%s %s%s" % (w, e["field"], " " + e["item"] if e.get("item") else "")
             for e in entries for w in _places(e) if not any(_matches(e, w, d) for d in diffs)]
    return new, stale


def _places(entry):
    where = entry["where"]
    return [where] if isinstance(where, str) else list(where)


def describe(diff):
    return "%s: %s %s%s: gpufleet %s, upstream %s" % (
        diff["scenario"], _where(diff), diff["field"], " " + diff["item"] if diff["item"] else "",
        json.dumps(diff["gpufleet"]), json.dumps(diff["upstream"]))
