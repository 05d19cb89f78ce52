"""NVIDIA's GPU Operator chart for the tests: the real chart, unchanged from upstream, in
../shared/charts/gpu-operator-<pinned version>/ (see ../shared/charts/SOURCES.md), packaged the way NVIDIA's
release packages it (scripts/gpu-operator-chart.sh: ``helm package --version <pin> --app-version <pin>``, cached
outside the repository), and ``helm template`` of it with the real helm of scripts/controlplane-build.sh.

Where ../shared/charts/ is absent the tests skip, naming the folder; a helm that is not built is an error
(scripts/controlplane-build.sh builds it; scripts/test.sh runs that)."""
import concurrent.futures
import os
import re
import subprocess

import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import CHARTS
from controlplane import ROOT, binary

SHARED_CHARTS = os.path.normpath(os.path.join(ROOT, "..", "shared", "charts"))
VERSION = CHARTS["gpu_operator"]["version"]
CHART_DIR = os.path.join(SHARED_CHARTS, "gpu-operator-" + VERSION)
NFD = "node-feature-discovery"
SCRIPT = os.path.join(ROOT, "scripts", "gpu-operator-chart.sh")


def chart_dir_or_skip(pytest):
    if not os.path.isdir(CHART_DIR):
        pytest.skip(reason="needs NVIDIA's GPU Operator chart in ../shared/charts/ (%s is absent)" % CHART_DIR)
    return CHART_DIR


def packaged(pytest):
    """The path of the chart packaged as NVIDIA releases it (gpu-operator-<pin>.tgz)."""
    chart_dir_or_skip(pytest)
    proc = subprocess.run(["bash", SCRIPT, VERSION], capture_output=True, text=True)
    if proc.returncode == 3:
        pytest.skip(reason=proc.stderr.strip())
    if proc.returncode != 0:
        raise RuntimeError("scripts/gpu-operator-chart.sh failed:\n" + proc.stderr)
    return proc.stdout.split()[-1]


def chart_values():
    """The chart's values.yaml, with the NFD subchart's own values.yaml under node-feature-discovery
    (the parent's settings for it merged over them, as helm does)."""
    with open(os.path.join(CHART_DIR, "values.yaml")) as f:
        values = yaml.safe_load(f)
    with open(os.path.join(CHART_DIR, "charts", NFD, "values.yaml")) as f:
        nfd = yaml.safe_load(f)
    values[NFD] = _merge(nfd, values.get(NFD) or {})
    return values


def _merge(base, over):
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def template_refs():
    """Every ``.Values.<path>`` the chart's templates read, as dotted paths (the NFD subchart's prefixed
    with node-feature-discovery)."""
    refs = set()
    for base, prefix in ((os.path.join(CHART_DIR, "templates"), ""),
                         (os.path.join(CHART_DIR, "charts", NFD, "templates"), NFD + ".")):
        for name in sorted(os.listdir(base)):
            with open(os.path.join(base, name)) as f:
                for match in re.finditer(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)", f.read()):
                    refs.add(prefix + match.group(1)[1:])
    return refs


def helm_template(chart, values_list, namespace="gpu-operator", release="gpu-operator", workers=2):
    """``helm template`` of ``chart`` once per values dict (in parallel): a list of (rc, stdout, stderr)."""
    helm = binary("helm", "helm")

    def one(values):
        proc = subprocess.run([helm, "template", release, chart, "--namespace", namespace, "--values", "-"],
                              input=yaml.safe_dump(values), capture_output=True, text=True)
        return proc.returncode, proc.stdout, proc.stderr

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, values_list))


def objects(text):
    return [doc for doc in yaml.safe_load_all(text) if doc]
