"""A real browser for the HTML reports: Debian's chromium, headless, driven from its command
line (no driver package): `render(page, width)` loads a copy of the page with a probe script
added and reads back what the browser laid out (the document's width against the window's,
the headings, the text of <main> as rendered, each table box that scrolls), `screenshot`
writes a PNG of the whole page at a width.

`make test` installs chromium first (the Makefile's `browser` step); `chromium()` is None, with
the reason, only where it is not installed and cannot be.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--disable-extensions", "--mute-audio")

PROBE = """<script>
window.addEventListener('load', function () {
  var d = document.documentElement, main = document.querySelector('main') || document.body;
  var wraps = [].filter.call(document.querySelectorAll('.wrap'), function (w) { return w.scrollWidth > w.clientWidth + 1; });
  var r = {scrollWidth: d.scrollWidth, innerWidth: window.innerWidth, scrollHeight: d.scrollHeight,
           h2: [].map.call(document.querySelectorAll('h2'), function (e) { return e.innerText; }),
           scrolling_tables: wraps.map(function (w) { var h = w.previousElementSibling; return h ? h.innerText : '?'; }),
           images: [].map.call(document.images, function (i) { return [i.naturalWidth, i.width]; }),
           text: main.innerText};
  var p = document.createElement('pre'); p.id = 'gpuscope-probe'; p.textContent = JSON.stringify(r);
  document.body.appendChild(p);
});
</script>"""


def chromium() -> tuple[str | None, str]:
    """(the chromium binary, '') or (None, why not)."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path, ""
    return None, ("chromium is not installed and could not be (`make test` installs it with apt-get as "
                  "root: run `apt-get install -y chromium`)")


def _run(args: list[str], timeout: int = 60) -> subprocess.CompletedProcess:
    binary, why = chromium()
    assert binary, why
    with tempfile.TemporaryDirectory(prefix="gpuscope-chromium-") as profile:
        return subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                              text=True, timeout=timeout, check=False)


def render(page: Path, width: int, height: int = 900) -> dict:
    """What the browser laid out for `page` in a window `width` x `height` px."""
    probe = page.with_name(page.stem + ".probe.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    r = _run([f"--window-size={width},{height}", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()])
    m = re.search(r'<pre id="gpuscope-probe">(.*?)</pre>', r.stdout, re.S)
    assert m, f"chromium rendered nothing (rc {r.returncode}): {r.stderr[-800:]}"
    import html

    return json.loads(html.unescape(m.group(1)))


def screenshot(page: Path, out: Path, width: int, page_height: int | None = None) -> Path:
    """A PNG of the whole page at `width` px (the window as tall as the page, `page_height`
    when known, at most 12,000 px)."""
    if page_height is None:
        page_height = int(render(page, width)["scrollHeight"])
    height = min(12_000, max(600, int(page_height)))
    _run([f"--window-size={width},{height}", "--virtual-time-budget=5000", f"--screenshot={out}",
          page.as_uri()])
    assert out.exists() and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"no screenshot of {page}"
    return out
