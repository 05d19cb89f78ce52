"""The fleet-wide report page for 100 generated clusters (tests/helpers/fleet_gen.py: the real per-cluster
report format) in Debian's headless chromium: the DOM holds the fleet's numbers and every table and chart,
nothing on the page is wider than the window (measured by the browser's layout, on a copy of the page with a
measuring script added: the page itself has none), and the screenshot is a readable page with the charts'
colours on it. Three runs are kept, so the trend charts are drawn."""
import json
import re
from html.parser import HTMLParser

import pytest

from ansible_collections.gpufleet.k8s.plugins.modules import fleet_overview as module
from ansible_collections.gpufleet.k8s.plugins.plugin_utils.controller_module import run_in_process
from browser import chromium, png_pixels
from fleet_gen import write_fleet

BLUE = (0x25, 0x63, 0xeb)     # GPUs (bars, trend)
GREEN = (0x16, 0xa3, 0x4a)    # allocated (bars), allocation % (trend)
ORANGE = (0xd9, 0x77, 0x06)   # idle GPU-hours
PURPLE = (0x7c, 0x3a, 0xed)   # idle cost (trend)
TEXT = (0x11, 0x11, 0x11)     # body text

MEASURE = """<script>
var width = document.documentElement.clientWidth, wide = [];
document.querySelectorAll("table, svg, p, ul, h1, h2").forEach(function (e) {
  var box = e.getBoundingClientRect();
  if (box.right > width + 0.5) { wide.push((e.id || e.tagName) + " " + Math.round(box.right)); }
});
var out = document.createElement("pre");
out.id = "measured";
out.textContent = JSON.stringify({width: width, scroll: document.documentElement.scrollWidth, wide: wide});
document.body.appendChild(out);
</script>"""


@pytest.fixture(scope="module")
def fleet_page(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    dest = root / "report"
    for stamp, failed in (("2026-12-01T03:00:00Z", ()), ("2026-12-02T03:00:00Z", (5,)),
                          ("2026-12-03T03:00:00Z", (5, 50))):
        clusters = write_fleet(root, 100, failed=failed, missing=(7,))
        result = run_in_process(module, dict(dest=str(dest), clusters=clusters, generated_at=stamp),
                                name="gpufleet.k8s.fleet_overview")
        assert "failed" not in result, result.get("msg")
    return dest / "index.html", json.loads((dest / "report.json").read_text())


class Tables(HTMLParser):
    """Body rows per table id, and the ids of the SVG charts."""

    def __init__(self):
        super().__init__()
        self.rows, self.charts, self.table = {}, [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.table = attrs.get("id")
            self.rows[self.table] = []
        elif tag == "tr" and self.table:
            self.rows[self.table].append([])
        elif tag == "svg":
            self.charts.append(attrs.get("id"))

    def handle_endtag(self, tag):
        if tag == "table":
            self.table = None

    def handle_data(self, data):
        if self.table and self.rows[self.table] and data.strip():
            self.rows[self.table][-1].append(data.strip())


def test_dom_holds_the_fleet_tables_and_charts(fleet_page):
    page, data = fleet_page
    source = page.read_text()
    assert not re.search(r"<(script|link|img|iframe)\b|@import|url\(", source)  # nothing loaded, nothing run
    proc = chromium("--dump-dom", "file://%s" % page)
    assert proc.returncode == 0, proc.stderr[-2000:]
    parsed = Tables()
    parsed.feed(proc.stdout)
    totals = data["totals"]
    assert totals["clusters"] == 100 and totals["failed"] == 2 and totals["no_report"] == 1
    assert parsed.rows["totals"][1][:4] == ["100", str(totals["pools"]), str(totals["nodes"]), str(totals["gpus"])]
    assert len(parsed.rows["clusters"]) == 1 + 100
    assert len(parsed.rows["pools"]) == 1 + totals["pools"]
    assert len(parsed.rows["regions"]) == 1 + 7 and len(parsed.rows["clouds"]) == 1 + 3
    assert len(parsed.rows["rebalance"]) == 1 + len(data["rebalance"]) > 1
    assert "Clusters: 100 (97 reporting" in proc.stdout
    assert proc.stdout.count("<li><b>") == 3     # the two failed clusters and the one without a report
    assert parsed.charts == ["chart-trend-gpus", "chart-trend-allocation", "chart-trend-idle", "chart-trend-cost",
                             "chart-regions", "chart-gpu-types", "chart-idle-regions", "chart-clusters"]
    assert len(data["trend"]) == 3 and proc.stdout.count('class="point"') == 12
    assert proc.stdout.count('data-label="') == 7 + 4 + 7 + 20   # regions, GPU types, idle per region, top 20


@pytest.mark.parametrize("width", [1280, 1024])
def test_nothing_is_wider_than_the_window(fleet_page, tmp_path, width):
    page, _data = fleet_page
    measured = tmp_path / "measured.html"
    measured.write_text(page.read_text().replace("</body>", MEASURE + "\n</body>"))
    proc = chromium("--dump-dom", "--window-size=%d,900" % width, "file://%s" % measured)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(re.search(r'<pre id="measured">(.*?)</pre>', proc.stdout).group(1))
    assert found["width"] == width
    assert found["wide"] == [] and found["scroll"] <= width, found


def test_the_width_check_can_fail(tmp_path):
    wide = tmp_path / "wide.html"
    wide.write_text("<!DOCTYPE html><html><body><table id=\"t\"><tr><td style=\"white-space:nowrap\">%s</td></tr>"
                    "</table>%s</body></html>" % ("x" * 400, MEASURE))
    proc = chromium("--dump-dom", "--window-size=800,600", "file://%s" % wide)
    found = json.loads(re.search(r'<pre id="measured">(.*?)</pre>', proc.stdout).group(1))
    assert found["wide"] and found["wide"][0].startswith("t ") and found["scroll"] > 800


def test_screenshot_is_a_readable_page_with_the_charts(fleet_page, tmp_path):
    page, _data = fleet_page
    shot = tmp_path / "fleet.png"
    proc = chromium("--screenshot=%s" % shot, "--window-size=1280,2400", "file://%s" % page)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    width, height, colours = png_pixels(str(shot))
    assert (width, height) == (1280, 2400)
    assert len(colours) > 50, "the page is blank"
    # text drawn (anti-aliased glyphs leave many shades; the solid text colour alone covers thousands of pixels)
    assert colours.get(TEXT, 0) > 3000, "hardly any text on the screenshot"
    for colour in (BLUE, GREEN, ORANGE, PURPLE):
        assert colours.get(colour, 0) > 800, "chart colour %s not on the screenshot" % (colour,)
