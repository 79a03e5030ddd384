"""fabriclens: see what the network does to large-language-model workloads.

`import fabriclens` stays cheap: import what you need from its packages, e.g.
`fabriclens.plan.planner.make_plans`, `fabriclens.model.collectives.estimate_collective`,
`fabriclens.lab.lab_session`.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
