"""Text from a file or the network made safe to print: no terminal control sequences.

A log line can carry escape sequences (colours, cursor moves, OSC 8 links, a title change, a
screen clear) that a terminal would obey. Printing goes through :func:`clean_text`: whole
ESC/CSI/OSC/DCS sequences are dropped, any other C0 or C1 control character (and DEL) is shown
escaped (``\\x07``). Tabs stay; newlines stay where the caller allows them.
"""

from __future__ import annotations

import re
from typing import Any

# CSI (ESC [ or 0x9b) ... final byte; OSC / DCS / SOS / PM / APC (ESC ] P X ^ _ or 0x9d 0x90 ...)
# up to BEL or ST (ESC \ or 0x9c), or to the end when cut off; any other ESC + one character
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -~]?"
)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_CONTROL_KEEP_NEWLINE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean_text(text: str, newlines: bool = False) -> str:
    """``text`` without terminal control sequences; other control characters escaped
    (``\\x1b`` shown as text). Newlines are escaped too unless ``newlines``."""
    if text.isprintable():
        return text
    text = _SEQUENCE.sub("", text)
    control = _CONTROL_KEEP_NEWLINE if newlines else _CONTROL
    return control.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def clean_doc(doc: Any) -> Any:
    """A copy of a JSON-like document with :func:`clean_text` applied to every string (keys
    too); newlines inside strings kept."""
    if isinstance(doc, str):
        return clean_text(doc, newlines=True)
    if isinstance(doc, dict):
        return {clean_doc(k): clean_doc(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [clean_doc(v) for v in doc]
    return doc
