"""Look at an HTML report in headless Chromium, as a reader would, and measure it.

:func:`measure` opens a copy of a page at a window size, with a small script added (and
allowed by its hash in the page's own Content-Security-Policy) that waits for the page to
settle and then writes, as JSON into the DOM, what :data:`MEASURE_JS` finds: the scroll
position, and for each CSS selector or element ID asked, its box (in the viewport and in
the page), its text and whether a ``<details>`` is open.  Headless Chromium's viewport is
shorter than its window, so page positions are compared against the window size.
Chromium's ``--dump-dom`` prints the DOM, and the JSON is read back.

Debian's ``chromium`` package is installed by ``scripts/system-packages`` (the README's
test command); :func:`chromium` skips a test when it is missing, except with ``CI=true``,
where a missing browser fails the test.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

MEASURE_JS = """
setTimeout(function () {
  var asked = JSON.parse(document.getElementById("measure-ask").textContent);
  var out = {scrollY: window.scrollY, innerHeight: window.innerHeight, found: {}};
  asked.forEach(function (what) {
    var byId = what.charAt(0) === "#" && what.indexOf(" ") < 0;
    var el = byId ? document.getElementById(what.slice(1)) : document.querySelector(what);
    if (!el) { out.found[what] = null; return; }
    var box = el.getBoundingClientRect();
    out.found[what] = {top: box.top, bottom: box.bottom, pageTop: box.top + window.scrollY,
                       pageBottom: box.bottom + window.scrollY,
                       text: el.innerText, open: el.open === true, hidden: el.hidden === true};
  });
  var pre = document.createElement("pre");
  pre.id = "measure-out";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}, 300);
"""


def chromium() -> str:
    """The browser's path; a skip (a failure with ``CI=true``) when it is not installed."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed: scripts/system-packages installs it")
        pytest.skip("chromium is not installed (scripts/system-packages installs it)")
    return found


def _args(browser: str, profile: str, size: tuple[int, int]) -> list[str]:
    return [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={size[0]},{size[1]}",
        "--virtual-time-budget=3000",
    ]


def measure(
    page: Path, asked: list[str], *, fragment: str = "", size: tuple[int, int] = (1400, 900)
) -> dict[str, Any]:
    """Open ``page`` (``#fragment`` appended when given) and measure what ``asked`` names."""
    browser = chromium()
    text = page.read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(MEASURE_JS.encode()).digest()).decode()
    text = re.sub(
        r'(http-equiv="Content-Security-Policy" content="[^"]*script-src )',
        rf"\g<1>'sha256-{digest}' ",
        text,
        count=1,
    )
    ask = json.dumps(asked).replace("</", "<\\/")  # script text is not HTML-decoded
    extra = f'<script type="application/json" id="measure-ask">{ask}</script>'
    extra += f"<script>{MEASURE_JS}</script>"
    text = text.replace("</body>", extra + "</body>", 1)
    with tempfile.TemporaryDirectory(prefix="conformance-browser-") as work:
        copy = Path(work) / page.name
        copy.write_text(text, encoding="utf-8")
        url = copy.as_uri() + (f"#{fragment}" if fragment else "")
        done = subprocess.run(
            [*_args(browser, f"{work}/profile", size), "--dump-dom", url],
            capture_output=True,
            text=True,
            timeout=120,
        )
    found = re.search(r'<pre id="measure-out">(.*?)</pre>', done.stdout, re.S)
    assert found is not None, f"the page was not measured: {done.stderr[-1500:]}"
    data: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return data


def screenshot(page: Path, png: Path, *, size: tuple[int, int] = (1400, 900)) -> Path:
    """A PNG of the first screen of ``page`` at ``size``."""
    browser = chromium()
    with tempfile.TemporaryDirectory(prefix="conformance-browser-") as work:
        subprocess.run(
            [*_args(browser, f"{work}/profile", size), f"--screenshot={png}", page.as_uri()],
            capture_output=True,
            timeout=120,
            check=True,
        )
    return png


def png_size(png: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    data = png.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
