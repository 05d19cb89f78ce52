"""scripts/pins-from-chart.py: a chart version's values.yaml against module_utils/core/versions.py."""
import io
import json
import os
import subprocess
import sys
import tarfile

import pytest
import yaml

from ansible_collections.gpufleet.k8s.plugins.module_utils.core import versions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "pins-from-chart.py")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "gpu-operator")
# NVIDIA's chart as in git at the pinned tag (../shared/charts/SOURCES.md)
UPSTREAM = os.path.normpath(os.path.join(ROOT, "..", "shared", "charts",
                                         "gpu-operator-" + versions.CHARTS["gpu_operator"]["version"]))


def run(*args):
    proc = subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def test_the_pinned_release_matches_every_pin():
    """The v26.7.0 values: every version gpufleet takes from the chart is the pinned one (exit 0)."""
    rc, out, err = run(os.path.join(FIXTURES, "values-v26.7.0.yaml"), "--json")
    assert rc == 0, out + err
    rows = json.loads(out)
    assert {r["status"] for r in rows} == {"same"}
    assert {r["what"] for r in rows} >= set(versions.CHART_VALUE_PATHS)
    assert {"what": "dcgm.version", "chart": "4.6.0-1-ubuntu24.04", "pinned": "4.6.0-1", "status": "same"} in rows


def test_an_older_release_is_reported_value_by_value():
    rc, out, _err = run(os.path.join(FIXTURES, "values-v26.3.3.yaml"), "--json")
    assert rc == 1
    rows = {r["what"]: r for r in json.loads(out)}
    assert rows["devicePlugin.version"] == {"what": "devicePlugin.version", "chart": "v0.19.3", "pinned": "v0.20.0",
                                            "status": "differs"}
    assert rows["driver.version"]["chart"] == "580.126.20" and rows["driver.version"]["status"] == "differs"
    assert rows["devicePlugin.repository/image"]["status"] == "same"  # same repository, other tag
    assert sorted(w for w, r in rows.items() if r["status"] == "differs") == sorted(versions.CHART_VALUE_PATHS)


def test_the_text_report_names_each_difference():
    rc, out, _err = run(os.path.join(FIXTURES, "values-v26.3.3.yaml"))
    assert rc == 1
    line = [x for x in out.splitlines() if " migManager.version " in x][0]
    assert line.split()[0] == "differs" and "v0.14.2" in line and "v0.15.0" in line


def test_nvidias_chart_directory_in_git_matches_every_component_pin():
    """The real chart at the pinned tag: every component version is the pin; its Chart.yaml in git says
    v1.0.0-devel (the release packaging stamps the version), which the report names as a difference."""
    if not os.path.isdir(UPSTREAM):
        pytest.skip(reason="needs NVIDIA's GPU Operator chart in ../shared/charts/ (%s is absent)" % UPSTREAM)
    rc, out, err = run(UPSTREAM, "--json")
    rows = {r["what"]: r for r in json.loads(out)}
    assert rc == 1, out + err
    assert [w for w, r in rows.items() if r["status"] != "same"] == ["chart version"]
    assert rows["chart version"]["chart"] == "v1.0.0-devel"
    assert {w for w in rows} >= set(versions.CHART_VALUE_PATHS)


def packaged(tmp_path, files):
    """A .tgz laid out as `helm package` writes it (gpu-operator/<file>)."""
    path = tmp_path / "gpu-operator-v26.7.0.tgz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo("gpu-operator/" + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_a_packaged_chart_is_read_from_its_tarball(tmp_path):
    with open(os.path.join(FIXTURES, "values-v26.7.0.yaml")) as handle:
        values = handle.read()
    pin = versions.CHARTS["gpu_operator"]["version"]
    tgz = packaged(tmp_path, {"Chart.yaml": "name: gpu-operator\nversion: %s\n" % pin, "values.yaml": values,
                              "templates/x.yaml": ""})
    rc, out, err = run(tgz, "--json")
    assert rc == 0, out + err
    rows = {r["what"]: r for r in json.loads(out)}
    assert rows["chart version"] == {"what": "chart version", "chart": pin, "pinned": pin, "status": "same"}
    assert {r["status"] for r in rows.values()} == {"same"}


def test_a_tarball_without_chart_files_is_refused(tmp_path):
    rc, _out, err = run(packaged(tmp_path, {"README.md": "x"}))
    assert rc == 2 and "not a packaged chart (no top-level Chart.yaml or values.yaml)" in err


def test_a_changed_repository_is_a_difference(tmp_path):
    with open(os.path.join(FIXTURES, "values-v26.7.0.yaml")) as handle:
        values = yaml.safe_load(handle)
    values["dcgmExporter"]["repository"] = "nvcr.io/nvidia/other"
    rows = {r["what"]: r for r in versions.compare_chart_values(values)}
    assert rows["dcgmExporter.repository/image"]["status"] == "differs"
    assert rows["dcgmExporter.version"]["status"] == "same"


@pytest.mark.parametrize("text", ["- a list\n", "just text\n"])
def test_a_file_that_is_no_values_mapping_is_refused(tmp_path, text):
    bad = tmp_path / "values.yaml"
    bad.write_text(text)
    rc, _out, err = run(str(bad))
    assert rc == 2 and "not a YAML mapping" in err


def test_a_missing_file_is_refused(tmp_path):
    rc, _out, err = run(str(tmp_path / "nope.yaml"))
    assert rc == 2 and "nope.yaml" in err
