"""An emulated cluster on one Linux machine (network namespaces, shaped and impaired links)."""

from fabriclens.lab.lab import (
    Capabilities,
    Lab,
    detect,
    down_all,
    lab_session,
    leftovers,
    list_labs,
)
from fabriclens.lab.spec import LinkSpec

__all__ = [
    "Capabilities",
    "Lab",
    "LinkSpec",
    "detect",
    "down_all",
    "lab_session",
    "leftovers",
    "list_labs",
]
