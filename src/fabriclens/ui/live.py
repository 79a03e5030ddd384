"""The live page's feed: `watch` samples as server-sent events, one per interval, for as long as
the page listens (and never longer than MAX_STREAM_S). Nothing is sampled until a page asks."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from fabriclens.measure.watch import LinkRate, running_verdict, sample_doc

MAX_STREAM_S = 3600.0
MAX_STREAMS = 4


class WatchSampler(Protocol):
    def start(self) -> list[str]: ...
    def sample(self) -> tuple[list[dict[str, Any]], list[LinkRate]]: ...


SamplerFactory = Callable[[], WatchSampler]


def host_sampler() -> WatchSampler:
    """The real sampler: this host's NICs, RDMA ports and GPUs (what `fabriclens watch` reads)."""
    from pathlib import Path

    from fabriclens.probes.gpu import open_gpus
    from fabriclens.probes.watch_sampler import Sampler

    return Sampler(Path("/"), open_gpus(live=True))


def event(name: str, doc: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(doc, separators=(',', ':'))}\n\n"


async def stream(factory: SamplerFactory, interval_s: float) -> AsyncIterator[str]:
    """Events: ``start`` (the links watched), then ``sample`` (a `watch` sample with the running
    verdict) every ``interval_s``."""
    sampler = await asyncio.to_thread(factory)
    links = await asyncio.to_thread(sampler.start)
    yield event("start", {"links": links, "interval_s": interval_s})
    started = time.monotonic()
    recent: list[dict[str, Any]] = []
    n = 0
    while time.monotonic() - started < MAX_STREAM_S:
        n += 1
        await asyncio.sleep(max(0.0, started + n * interval_s - time.monotonic()))
        gpus, rates = await asyncio.to_thread(sampler.sample)
        doc = sample_doc(time.monotonic() - started, gpus, rates)
        recent = [*recent[-9:], doc]
        yield event("sample", doc | {"running": running_verdict(recent)})
