"""Terminal control sequences never reach the terminal (safe_text.clean_text)."""

from __future__ import annotations

import pytest

from fabriclens.safe_text import clean_doc, clean_text


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\x1b[31mred\x1b[0m b", "ared b"),  # CSI colour
        ("x\x1b]0;title\x07y", "xy"),  # OSC window title, BEL-terminated
        ("x\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\", "xlink"),  # OSC 8 link, ST-terminated
        ("c1\x9b2Jz", "c1z"),  # 8-bit CSI (C1)
        ("cut\x1b[", "cut"),  # a sequence cut off at the end
        ("bell\x07 tab\tok", "bell\\x07 tab\tok"),  # BEL escaped, tab kept
        ("del\x7f", "del\\x7f"),
        ("nl\nx", "nl\\x0ax"),
        ("ünï [/x]", "ünï [/x]"),
    ],
)
def test_clean_text(raw: str, shown: str) -> None:
    assert clean_text(raw) == shown


def test_clean_doc_keeps_newlines_and_shape() -> None:
    doc = {"a\x1b[0m": ["x\ny", 3, None, {"k": "\x1bc"}]}
    assert clean_doc(doc) == {"a": ["x\ny", 3, None, {"k": ""}]}
