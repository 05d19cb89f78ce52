"""NVIDIA's real DRA driver chart for the tests: ``../shared/charts/dra-driver-nvidia-gpu-main-95932046`` (upstream
kubernetes-sigs/dra-driver-nvidia-gpu ``deployments/helm/dra-driver-nvidia-gpu`` unchanged; identical to the v0.5.0
release except the version in Chart.yaml, see ../shared/charts/SOURCES.md), packaged and rendered with the real helm
of the test control plane. A test that needs it skips, naming the folder, where ../shared/charts is absent."""
import os
import subprocess

import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.core.versions import CHARTS
from controlplane import ROOT, binary

SHARED_CHARTS = os.path.normpath(os.path.join(ROOT, "..", "shared", "charts"))
CHART_DIR = os.path.join(SHARED_CHARTS, "dra-driver-nvidia-gpu-main-95932046")
VERSION = CHARTS["dra_driver"]["version"]


def chart_dir_or_skip(pytest):
    if not os.path.isdir(CHART_DIR):
        pytest.skip(reason="needs NVIDIA's DRA driver chart in ../shared/charts/ (%s is absent)" % CHART_DIR)
    return CHART_DIR


def helm(*args):
    return subprocess.run([binary("helm", "helm")] + list(args), check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True).stdout


def package(pytest, dest, source=None, version=VERSION, app_version=None):
    """The chart (``source``, default the shared one) packaged as NVIDIA's release stamps it: ``helm package
    --version 0.5.0 --app-version v0.5.0``. Returns the .tgz path."""
    source = source or chart_dir_or_skip(pytest)
    helm("package", "--version", version, "--app-version", app_version or "v" + version, str(source), "-d", str(dest))
    name = yaml.safe_load(open(os.path.join(str(source), "Chart.yaml")))["name"]
    return os.path.join(str(dest), "%s-%s.tgz" % (name, version))


def render(pytest, values, tmp, namespace="nvidia-dra-driver-gpu", kube_version="1.37.2"):
    """The objects ``helm template`` renders from the shared chart with ``values`` (a dict)."""
    path = os.path.join(str(tmp), "dra-values.yaml")
    with open(path, "w") as handle:
        yaml.safe_dump(values, handle)
    out = helm("template", "nvidia-dra-driver-gpu", chart_dir_or_skip(pytest), "-n", namespace, "-f", path,
               "--kube-version", kube_version)
    return [d for d in yaml.safe_load_all(out) if isinstance(d, dict)]
