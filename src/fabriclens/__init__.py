"""fabriclens: see what the network does to large-language-model workloads.

The public API is re-exported lazily so that `import fabriclens` stays cheap.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
