"""A real all-reduce over torch.distributed (gloo, CPU), timed like nccl-tests.

Run one copy per lab host, e.g. on a 2-host lab:
  fabriclens lab exec h1 -- python examples/allreduce.py --rank 0 --world 2 --master 198.18.0.1
  fabriclens lab exec h2 -- python examples/allreduce.py --rank 1 --world 2 --master 198.18.0.1
Prints size, time, algbw and busbw (GB/s = 1e9 B/s, busbw = algbw x 2(n-1)/n).
Needs torch (pip install torch==2.13.0 for the CPU build).
"""

from __future__ import annotations

import argparse
import datetime
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--master", required=True, help="address of rank 0")
    parser.add_argument("--size", default="100e6", help="bytes")
    parser.add_argument("--iters", type=int, default=5)
    args = parser.parse_args()

    import os

    # inside a lab host, the host name resolves to loopback: tell gloo which interface to use
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "eth0")
    import torch
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"tcp://{args.master}:29500", rank=args.rank,
        world_size=args.world, timeout=datetime.timedelta(seconds=60),
    )  # fmt: skip
    n = int(float(args.size)) // 4
    x = torch.ones(n, dtype=torch.float32)
    dist.all_reduce(x)  # warm-up: connections and buffers
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(args.iters):
        dist.all_reduce(x)
    dt = (time.perf_counter() - t0) / args.iters
    if args.rank == 0:
        size = n * 4
        algbw = size / dt / 1e9
        busbw = algbw * 2 * (args.world - 1) / args.world
        print(f"all_reduce {size / 1e6:.0f} MB on {args.world} ranks: {dt * 1e3:.1f} ms, "
              f"algbw {algbw:.3f} GB/s, busbw {busbw:.3f} GB/s")  # fmt: skip
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
