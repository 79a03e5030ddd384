"""Data path: stage arithmetic, the narrowest pipe, checkpoint time."""

from __future__ import annotations

import pytest

from fabriclens.errors import InputError
from fabriclens.plan.datapath import plan_datapath


def test_four_a100s_fed_over_1gbe_are_storage_bound() -> None:
    """4 x A100 at 2,500 images/s each x 110 kB = 1.1 GB/s of input; 1GbE delivers 0.1175 GB/s."""
    plan = plan_datapath(
        gpu="a100",
        nodes=1,
        gpus_per_node=4,
        storage_network="1gbe",
        demand_per_gpu_bytes_per_s=2500 * 110e3,
    )
    assert plan.narrowest.name.startswith("storage network")
    assert plan.slowdown == pytest.approx(4 * 2500 * 110e3 / (0.94e9 / 8))
    faster = plan_datapath(
        gpu="a100",
        nodes=1,
        gpus_per_node=4,
        storage_network="25gbe",
        demand_per_gpu_bytes_per_s=2500 * 110e3,
    )
    assert faster.slowdown == 1.0
    assert any("would carry it" in a for a in plan.advice)


def test_shared_storage_and_checkpoints() -> None:
    plan = plan_datapath(gpu="h100-sxm", nodes=4, gpus_per_node=8, storage_network="100g-roce",
                         demand_per_gpu_bytes_per_s=1e6, storage_bytes_per_s=5e9, checkpoint_bytes=1.28e12)  # fmt: skip
    system = plan.stages[0]
    assert system.name.startswith("storage system") and system.demand_bytes_per_s == pytest.approx(
        32e6
    )
    # four nodes could write at 4 x 12 GB/s; the storage system takes 5 GB/s
    assert plan.checkpoint_s == pytest.approx(1.28e12 / 5e9)


def test_bad_inputs() -> None:
    with pytest.raises(InputError):
        plan_datapath(
            gpu="a100",
            nodes=0,
            gpus_per_node=4,
            storage_network="1gbe",
            demand_per_gpu_bytes_per_s=1,
        )
    with pytest.raises(InputError):
        plan_datapath(
            gpu="a100",
            nodes=1,
            gpus_per_node=4,
            storage_network="9gbe",
            demand_per_gpu_bytes_per_s=1,
        )
