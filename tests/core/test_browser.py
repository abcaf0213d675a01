"""The HTML report renders in a real browser (headless Chromium), skipped where none is installed."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from collections import Counter
from pathlib import Path

import pytest

from tokenbox_core import Layout
from tokenbox_core._demo import demo_layout
from tokenbox_core.report import COLOURS

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WIDTH, HEIGHT = 1000, 700
BAR_BAND = 200  # the header, budget bar, removed row and legend all lie in the first rows


def _browser() -> str | None:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png_rows(data: bytes, max_rows: int) -> tuple[int, int, list[bytes], int]:
    """Decode the first ``max_rows`` rows of an 8-bit RGB/RGBA, non-interlaced PNG (stdlib only)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, []
    width = height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(min(height, max_rows)):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                up_left = prev[i - channels] if i >= channels else 0
                line[i] = (line[i] + _paeth(left, prev[i], up_left)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows, channels


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _screenshot(browser: str, html: Path, png: Path, profile: Path) -> None:
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--user-data-dir={profile}",
            f"--screenshot={png}",
            f"--window-size={WIDTH},{HEIGHT}",
            html.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def layout() -> Layout:
    return demo_layout()


def test_report_renders_in_headless_chromium(tmp_path: Path, layout: Layout) -> None:
    """The demo's report renders: a non-trivial screenshot whose bar shows every emitted status colour."""
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium or Chrome installed (Debian: apt-get install chromium)")
    html, png = tmp_path / "report.html", tmp_path / "report.png"
    layout.to_html(str(html))
    _screenshot(browser, html, png, tmp_path / "profile")
    assert png.exists(), "the browser wrote no screenshot"
    data = png.read_bytes()
    assert len(data) > 10_000, "the screenshot is (nearly) empty"
    width, height, rows, channels = read_png_rows(data, BAR_BAND)
    assert (width, height) == (WIDTH, HEIGHT)
    pixels: Counter[tuple[int, int, int]] = Counter()
    for row in rows:
        for x in range(0, len(row), channels):
            pixels[(row[x], row[x + 1], row[x + 2])] += 1
    assert len(pixels) > 20, "the page rendered as a flat colour"
    swatch = 11 * 11  # the legend swatch; a bar segment must cover more than the swatches of its colour
    shown = {"critical" if s.critical else s.status for s in layout.sections if s.final_tokens > 0}
    shown |= {s.status for s in layout.sections if s.full_tokens > s.final_tokens and s.status != "kept"}
    for status in sorted(shown):
        count = pixels[_rgb(COLOURS[status])]
        assert count > 2 * swatch, f"{status} colour {COLOURS[status]} covers only {count} pixels"
    for status in ("expanded", "compressed"):  # not in the demo's layout: only their legend swatch
        if status not in shown:
            assert 0 < pixels[_rgb(COLOURS[status])] <= 2 * swatch


def test_png_reader_decodes_a_known_image() -> None:
    """The stdlib PNG reader used above decodes every filter type correctly."""
    width, channels = 3, 3
    rows = [bytes([10, 20, 30, 40, 50, 60, 70, 80, 90]), bytes([11, 21, 31, 41, 51, 61, 71, 81, 91])] * 3
    raw = bytearray()
    prev = bytes(width * channels)
    for kind, row in zip([0, 1, 2, 3, 4, 0], rows, strict=True):
        out = bytearray()
        for i, value in enumerate(row):
            left = row[i - channels] if i >= channels else 0
            up_left = prev[i - channels] if i >= channels else 0
            predictor = [0, left, prev[i], (left + prev[i]) >> 1, _paeth(left, prev[i], up_left)][kind]
            out.append((value - predictor) & 0xFF)
        raw += bytes([kind]) + out
        prev = row
    ihdr = struct.pack(">IIBBBBB", width, len(rows), 8, 2, 0, 0, 0)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b"")
    w, h, decoded, ch = read_png_rows(png, 100)
    assert (w, h, ch) == (3, 6, 3)
    assert decoded == rows
