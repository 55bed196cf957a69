"""Screenshots of each kind of HTML report in a real browser (headless chromium), at 1280 and
800 px, into docs/screenshots/: `python tools/report_screenshots.py` (needs chromium: `make
test` installs it). The pictures are palette PNGs, so docs/ stays small."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from typer.testing import CliRunner  # noqa: E402

from gpuscope.cli import app  # noqa: E402
from tests import browser  # noqa: E402

D = REPO / "tests" / "data"
KINDS = {
    "analyze_cuzk_log": ["analyze", REPO / "examples" / "cuzk_daemon.log"],
    "analyze_training_run": ["analyze", D / "h200_foreign" / "runs" / "train_slow"],
    "analyze_nvidia_smi": ["analyze", D / "h200_bounds" / "smi" / "hbm_bound_query.csv"],
    "analyze_trace": ["analyze", D / "h200_foreign" / "traces" / "train_slow.json.gz"],
    "analyze_trace_ranks": ["analyze", D / "h200_bounds" / "traces" / "ranks2"],
    "compare_runs": ["compare", D / "h200_contention" / "pinned-c8", D / "h200_contention" / "pageable-c8",
                     "--bootstrap", "300"],
}


def main() -> int:
    from PIL import Image

    out_dir = REPO / "docs" / "screenshots"
    out_dir.mkdir(parents=True, exist_ok=True)
    binary, why = browser.chromium()
    if binary is None:
        print(why, file=sys.stderr)
        return 5
    with tempfile.TemporaryDirectory() as tmp:
        for kind, argv in KINDS.items():
            page = Path(tmp) / f"{kind}.html"
            r = CliRunner().invoke(app, [str(a) for a in argv] + ["--html", str(page)])
            if r.exit_code:
                print(f"{kind}: {r.output}", file=sys.stderr)
                return 1
            for width in (1280, 800):
                shot = browser.screenshot(page, Path(tmp) / f"{kind}-{width}.png", width)
                dst = out_dir / f"{kind}-{width}.png"
                with Image.open(shot) as im:
                    im.convert("RGB").quantize(colors=64).save(dst, optimize=True)
                print(f"wrote {dst.relative_to(REPO)} ({dst.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
