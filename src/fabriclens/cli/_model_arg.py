"""The MODEL argument: a catalog name, a config.json path, or an architecture given by flags."""

from __future__ import annotations

from fabriclens.catalog.schema import ModelSpec
from fabriclens.errors import InputError


def resolve_model(
    model: str | None,
    *,
    layers: int | None,
    hidden: int | None,
    heads: int | None,
    kv_heads: int | None,
    ffn: int | None,
    vocab: int | None,
    mlp: str,
    experts: int,
    experts_per_token: int,
    seq_len: int | None,
    positions: str | None = None,
    norm: str | None = None,
) -> ModelSpec:
    """Build the model spec; flags describe a custom architecture when no model is named."""
    arch_flags = (layers, hidden, heads)
    if model is not None:
        if any(v is not None for v in arch_flags):
            raise InputError(
                "give either a MODEL or --layers/--hidden/--heads, not both",
                "drop the MODEL argument to describe a custom architecture",
            )
        for flag, given in (("--positions", positions), ("--norm", norm)):
            if given is not None:
                raise InputError(
                    f"{flag} describes a custom model; {model!r} has its own",
                    f"drop {flag}, or describe the model with --layers/--hidden/--heads",
                )
        from fabriclens.catalog import find_model

        return find_model(model)
    if any(v is None for v in arch_flags):
        raise InputError(
            "no model given",
            "name one (fabriclens catalog models), give a config.json path, "
            "or describe it with --layers, --hidden and --heads",
        )
    assert layers is not None and hidden is not None and heads is not None
    if mlp not in ("swiglu", "gelu"):
        raise InputError(f"--mlp {mlp!r} is unknown", "use swiglu or gelu")
    positions = (positions or "rotary").strip().lower()
    if positions not in ("rotary", "learned", "alibi"):
        raise InputError(f"--positions {positions!r} is unknown", "use rotary, learned or alibi")
    norm = (norm or "rms").strip().lower()
    if norm not in ("rms", "layer"):
        raise InputError(f"--norm {norm!r} is unknown", "use rms or layer")
    for name, value in (("layers", layers), ("hidden", hidden), ("heads", heads)):
        if value < 1:
            raise InputError(
                f"--{name} must be at least 1 (got {value})", f"give a positive --{name}"
            )
    if hidden % heads:
        raise InputError(
            f"--hidden {hidden} is not divisible by --heads {heads}", "fix --hidden or --heads"
        )
    kv = kv_heads or heads
    if heads % kv:
        raise InputError(f"--heads {heads} is not a multiple of --kv-heads {kv}", "fix --kv-heads")
    width = ffn or (4 * hidden if mlp == "gelu" else 256 * ((8 * hidden // 3 + 255) // 256))
    if experts and not 0 < experts_per_token <= experts:
        raise InputError(
            "--experts-per-token must be between 1 and --experts", "set --experts-per-token"
        )
    try:
        return ModelSpec(
            name="custom",
            title=f"custom {layers}L x {hidden}",
            source="command-line flags",
            layers=layers,
            hidden=hidden,
            heads=heads,
            kv_heads=kv,
            ffn=width,
            vocab=vocab or 32000,
            mlp=mlp,  # type: ignore[arg-type]  # checked above
            # a learned table holds the positions it was trained on; others stretch
            max_positions=(seq_len or 4096)
            if positions == "learned"
            else max(seq_len or 4096, 4096),
            positions=positions,  # type: ignore[arg-type]  # checked above
            norm=norm,  # type: ignore[arg-type]  # checked above
            experts=experts,
            experts_per_token=experts_per_token,
            moe_ffn=width if experts else 0,
        )
    except ValueError as exc:
        raise InputError(f"custom model: {exc}", "fix the architecture flags") from None
