"""The dcgm-exporter fixtures (tests/fixtures/dcgm/*.prom) are what tests/helpers/dcgm_fixtures.py makes from
tests/fixtures/dcgm/gpus.yml, in the pinned exporter's format: the version each names is the one pinned in
module_utils/core/versions.py (or, for the old-spelling fixture, a release before the label rename), and moving
the pin without regenerating them fails here. Moving the pin means reading the exporter's render template at the
new tag (labels, their order and spelling) and updating the generator and gpus.yml before the version."""
import os
import shutil
import subprocess

import pytest

import dcgm_fixtures as gen
from ansible_collections.gpufleet.k8s.plugins.module_utils.addons.dcgm_labels import NODE
from ansible_collections.gpufleet.k8s.plugins.module_utils.core import versions

pytestmark = pytest.mark.contract


def on_disk():
    out = {}
    for name in sorted(os.listdir(gen.FIXTURES)):
        if name.endswith(".prom"):
            with open(os.path.join(gen.FIXTURES, name)) as handle:
                out[name] = handle.read()
    return out


def test_fixtures_are_what_the_generator_makes():
    assert on_disk() == gen.rendered(), "run .venv/bin/python tests/helpers/dcgm_fixtures.py and review the diff"


def test_fixtures_name_the_pinned_exporter_or_an_older_one():
    pinned = gen.pinned_version()
    names = dict((name, gen.header_version(text)) for name, text in on_disk().items())
    assert None not in names.values(), names
    current = [n for n, v in names.items() if v == pinned]
    assert {"unhealthy.prom", "healthy.prom", "no-hostname-unhealthy.prom"} <= set(current), (
        "the exporter pin moved to %s: read its render template at that tag, update tests/fixtures/dcgm/gpus.yml "
        "and the generator, then regenerate (%s)" % (pinned, names))
    older = [n for n, v in names.items() if v != pinned]
    assert older == ["old-unhealthy.prom"]
    assert gen.version_key(names["old-unhealthy.prom"]) < gen.version_key(gen.RENAMED_IN) <= gen.version_key(pinned)


def test_moving_the_pin_alone_fails(monkeypatch):
    images = dict(versions.IMAGES, dcgm_exporter=dict(versions.IMAGES["dcgm_exporter"], tag="4.6.1-4.9.0-distroless"))
    monkeypatch.setattr(versions, "IMAGES", images)
    with pytest.raises(AssertionError, match="the exporter pin moved to 4.6.1-4.9.0"):
        test_fixtures_name_the_pinned_exporter_or_an_older_one()


@pytest.mark.parametrize("name, label", [
    ("unhealthy.prom", "hostname"), ("healthy.prom", "hostname"), ("old-unhealthy.prom", "Hostname"),
    ("no-hostname-unhealthy.prom", None)])
def test_each_fixture_names_the_node_as_its_exporter_does(name, label):
    lines = [ln for ln in on_disk()[name].splitlines() if not ln.startswith("#")]
    assert lines
    for line in lines:
        names = [kv.split("=", 1)[0] for kv in line[line.index("{") + 1:line.index("}")].split(",")]
        assert names[:5] == ["gpu", "UUID", "pci_bus_id", "device", "modelName"]
        assert [n for n in names if n.lower() == "hostname"] == ([label] if label else [])
    assert NODE == gen.node_label(gen.pinned_version()), "the queries name the node as the pinned exporter does"


def test_fixtures_parse_as_prometheus_text():
    """promtool's metrics linter: exit 1 is a format error; 3 (lint) is the exporter's own style (camelCase
    labels, counters without _total)."""
    exe = shutil.which("promtool")
    assert exe, "promtool is missing: run scripts/harness-setup.sh (Debian package prometheus)"
    for name, text in on_disk().items():
        proc = subprocess.run([exe, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        assert proc.returncode in (0, 3), (name, proc.stdout + proc.stderr)
        assert "error while linting" not in (proc.stdout + proc.stderr), name
