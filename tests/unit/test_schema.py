"""Catalog entries check their own fields and name the one that is wrong."""

from __future__ import annotations

import pytest

from fabriclens.catalog import find_gpu, find_network
from fabriclens.catalog.schema import IntraLink, ModelSpec, Network


def _spec(**over: object) -> dict[str, object]:
    base: dict[str, object] = {"name": "m", "source": "test fixture", "layers": 2, "hidden": 64, "heads": 8,
                               "kv_heads": 8, "ffn": 128, "vocab": 100}  # fmt: skip
    return base | over


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"layers": 0}, "layers"),
        ({"hidden": 64.5}, "hidden"),
        ({"kv_heads": 3}, "kv_heads"),
        ({"mlp": "relu"}, "mlp"),
        ({"experts": 8, "experts_per_token": 9}, "experts_per_token"),
        ({"source": ""}, "source"),
        ({"layers": True}, "layers"),
    ],
)
def test_model_spec_rejects_with_the_field_name(over: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ModelSpec(**_spec(**over))  # type: ignore[arg-type]


def test_unknown_fields_and_other_entries() -> None:
    with pytest.raises(TypeError):
        ModelSpec(**_spec(colour="blue"))  # type: ignore[arg-type]
    net = find_network("ndr-ib")
    with pytest.raises(ValueError, match="efficiency"):
        Network(**{**net.__dict__, "efficiency": 1.5})
    with pytest.raises(ValueError, match="nvls_algbw_fraction"):
        IntraLink(name="x", source="test", kind="nvlink", bw_bytes_per_s=1e9, efficiency=0.8,
                  efficiency_source="test", latency_s=1e-6, max_gpus=8, nvls=True)  # fmt: skip
    assert find_gpu("h100").aliases and isinstance(find_gpu("h100").aliases, tuple)
