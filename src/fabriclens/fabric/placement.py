"""Where a job's ranks land: servers in order (topology-aware: neighbours share leaves and
scalable units) or a random set of servers (what a busy scheduler hands out). Ranks fill a
server's GPUs in order, so tensor-parallel groups stay inside a server."""

from __future__ import annotations

from typing import Any

import numpy as np

from fabriclens.errors import InputError

PLACEMENTS = ("topology", "random")


def place_servers(
    job_servers: int, fabric_servers: int, placement: str = "topology", seed: int = 0
) -> np.ndarray[Any, Any]:
    """Server indices of the job, in rank order."""
    if placement not in PLACEMENTS:
        raise InputError(f"unknown placement {placement!r}", f"use one of {', '.join(PLACEMENTS)}")
    if job_servers > fabric_servers:
        raise InputError(
            f"the job needs {job_servers} servers; the fabric has {fabric_servers}",
            "design a larger fabric (topo --servers) or use fewer GPUs",
        )
    if placement == "topology":
        return np.arange(job_servers)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(fabric_servers, size=job_servers, replace=False))[
        rng.permutation(job_servers)
    ]
