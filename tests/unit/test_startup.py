"""A single `plan` must not pay for imports it does not need (numpy, rich)."""

from __future__ import annotations

import subprocess
import sys


def test_plan_json_imports_neither_numpy_nor_rich() -> None:
    code = (
        "import io, sys, contextlib\n"
        "from fabriclens.cli.app import run\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert run(['plan', 'llama-3.1-8b', '--gpus', '16', '--network', 'ndr-ib', '--json']) == 0\n"
        "print(','.join(m for m in ('numpy', 'rich') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "", f"imported: {out.stdout.strip()}"
