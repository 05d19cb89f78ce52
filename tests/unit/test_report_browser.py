"""The fleet report page in a real headless browser (Debian's chromium, installed by
scripts/harness-setup.sh): the DOM after rendering holds the numbers, and the screenshot shows the
charts (their bar colours are on the picture). Report data: the recorded EKS and MIG answers."""
import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import build_report
from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report_render import render_files
from browser import chromium, png_pixels
from report_fixtures import live, plan_of

BLUE = (0x25, 0x63, 0xeb)     # GPUs per pool
ORANGE = (0xd9, 0x77, 0x06)   # utilisation
GREEN = (0x16, 0xa3, 0x4a)    # requested share


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    report = live("mig", plan_of("example", "kubeadm"), prices={"a100-80gb": 3.0}, generated_at="2026-12-01T03:00:00Z")
    path = tmp_path_factory.mktemp("report") / "fleet.html"
    path.write_text(render_files(report)["fleet.html"])
    return path


def test_dom_after_rendering_holds_the_numbers(page):
    proc = chromium("--dump-dom", "file://%s" % page)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert "GPU fleet report: example (kubeadm)" in dom
    assert '<p id="generated">Generated at 2026-12-01T03:00:00Z' in dom
    assert "<td>train-a100</td><td>a100-80gb</td><td>8</td><td>mig</td><td>1</td><td>8</td>" in dom
    assert "<td>170.4</td><td>511.20</td><td>580.95.05</td>" in dom
    assert 'id="chart-gpus"' in dom and 'id="chart-utilisation"' in dom


def test_screenshot_shows_the_charts(page, tmp_path):
    shot = tmp_path / "shot.png"
    proc = chromium("--screenshot=%s" % shot, "--window-size=1000,1400", "file://%s" % page)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    width, height, colours = png_pixels(str(shot))
    assert (width, height) == (1000, 1400)
    assert len(colours) > 20, "the page is blank"
    for colour in (BLUE, ORANGE, GREEN):
        assert colours.get(colour, 0) > 500, "bar colour %s not on the screenshot" % (colour,)


def test_the_screenshot_check_can_fail(tmp_path):
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    shot = tmp_path / "blank.png"
    assert chromium("--screenshot=%s" % shot, "--window-size=400,300", "file://%s" % blank).returncode == 0
    _w, _h, colours = png_pixels(str(shot))
    assert colours.get(BLUE, 0) == 0 and len(colours) <= 2
