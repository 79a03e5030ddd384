"""Copy a few of the browser tests' screenshots (test-artifacts/ui/, made by
`pytest tests/ui/test_browser.py`) to docs/img/ for the README, reduced to a 64-colour palette.

Run: python tools/ui_screenshots.py   (after the browser tests)"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
SHOWN = ("plan", "search", "capacity", "transfer", "datapath", "topo", "simulate",
         "report-logs", "report-bench-import", "live")  # fmt: skip


def main() -> int:
    from PIL import Image

    src, dst = ROOT / "test-artifacts" / "ui", ROOT / "docs" / "img"
    dst.mkdir(parents=True, exist_ok=True)
    for name in SHOWN:
        path = src / f"{name}.png"
        if not path.exists():
            print(f"missing {path}: run pytest tests/ui/test_browser.py first", file=sys.stderr)
            return 1
        image = Image.open(path).convert("RGB").quantize(colors=64)
        image.save(dst / f"ui-{name}.png", optimize=True)
        print(f"docs/img/ui-{name}.png {(dst / f'ui-{name}.png').stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
