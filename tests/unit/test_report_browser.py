"""The fleet report page in a real headless browser (Debian's chromium, installed by
scripts/harness-setup.sh): the DOM after rendering holds the numbers, and the screenshot shows the
charts (their bar colours are on the picture). Report data: the recorded EKS and MIG answers."""
import shutil
import struct
import subprocess
import tempfile
import zlib

import pytest

from ansible_collections.gpufleet.k8s.plugins.module_utils.fleet.fleet_report import build_report, render_files
from report_fixtures import live, plan_of

BLUE = (0x25, 0x63, 0xeb)     # GPUs per pool
ORANGE = (0xd9, 0x77, 0x06)   # utilisation
GREEN = (0x16, 0xa3, 0x4a)    # requested share


def chromium(*args):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium is missing: run scripts/harness-setup.sh (Debian package chromium)"
    profile = tempfile.mkdtemp(prefix="gpufleet-chromium-")
    try:
        return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               "--no-first-run", "--user-data-dir=" + profile] + list(args),
                              capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def png_pixels(path):
    """RGB(A) pixels of an 8-bit PNG (what chromium writes), with the five PNG row filters undone."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 0xff
            elif ftype == 2:
                line[x] = (line[x] + b) & 0xff
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xff
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xff
        rows.append(bytes(line))
        prev = line
    colours = {}
    for line in rows:
        for x in range(0, stride, bpp):
            rgb = tuple(line[x:x + 3])
            colours[rgb] = colours.get(rgb, 0) + 1
    return width, height, colours


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
