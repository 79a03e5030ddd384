"""Max-min fair rates by progressive filling, vectorised over a sparse flow x link incidence.

All unfrozen flows grow at the same pace; when a link fills, the flows crossing it freeze at
their current rate; repeat until every flow is frozen (Bertsekas & Gallager, *Data Networks*,
§6.5.2). A flow may load a link with a weight (a fraction of its rate: a flow sprayed over a
bundle). Each round is one ``np.bincount`` over the incidence; rounds = distinct bottleneck
levels, so a symmetric fabric finishes in one or two.
"""

from __future__ import annotations

from typing import Any

import numpy as np

REL_TOL = 1e-9


def max_min_rates(
    flow: np.ndarray[Any, Any],
    link: np.ndarray[Any, Any],
    weight: np.ndarray[Any, Any],
    capacity: np.ndarray[Any, Any],
    n_flows: int,
) -> np.ndarray[Any, Any]:
    """Rates (capacity's unit) of ``n_flows`` flows; entry i says flow[i] loads link[i] by
    weight[i] x its rate. Flows that touch no link get ``inf``."""
    n_links = capacity.size
    rate = np.zeros(n_flows)
    remaining = capacity.astype(float).copy()
    has_link = np.bincount(flow, minlength=n_flows) > 0
    active = has_link.copy()
    entry = active[flow]
    while entry.any():
        load = np.bincount(link[entry], weights=weight[entry], minlength=n_links)
        used = load > 0
        step = float(np.min(remaining[used] / load[used]))
        rate[active] += step
        remaining[used] -= step * load[used]
        full = used & (remaining <= REL_TOL * np.maximum(capacity, 1e-300))
        active[flow[entry & full[link]]] = False
        entry = active[flow]
    rate[~has_link] = np.inf
    return rate


def max_min_rates_python(
    paths: list[list[tuple[int, float]]], capacity: list[float]
) -> list[float]:
    """The same progressive filling in plain Python (the benchmark's baseline): ``paths[f]``
    lists (link, weight) pairs of flow f."""
    rate = [0.0] * len(paths)
    remaining = list(capacity)
    active = {f for f, p in enumerate(paths) if p}
    while active:
        load: dict[int, float] = {}
        for f in active:
            for li, w in paths[f]:
                load[li] = load.get(li, 0.0) + w
        step = min(remaining[li] / w for li, w in load.items())
        for f in active:
            rate[f] += step
        full = set()
        for li, w in load.items():
            remaining[li] -= step * w
            if remaining[li] <= REL_TOL * max(capacity[li], 1e-300):
                full.add(li)
        active = {f for f in active if not any(li in full for li, _ in paths[f])}
    return [r if paths[f] else float("inf") for f, r in enumerate(rate)]
