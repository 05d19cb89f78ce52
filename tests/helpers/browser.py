"""Debian's headless chromium (installed by scripts/harness-setup.sh) for the report pages' browser tests
(tests/unit/test_report_browser.py, test_fleet_overview_browser.py): run it, and read the PNG it writes."""
import shutil
import struct
import subprocess
import tempfile
import zlib


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
