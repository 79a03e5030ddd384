"""The published reference rows: every row has a source and a split, the split is the
deterministic rule of benchmarks/reference.py, and every row is predicted or excluded with a
reason that reference/README.md lists."""

from __future__ import annotations

import csv
from itertools import pairwise

import pytest

from reference import (
    all_collective_cases,
    all_inference_cases,
    all_training_cases,
    excluded_rows,
    reference_dir,
    scaling_pairs,
    split_for,
    split_key,
)

DATA_FILES = (
    "training.csv",
    "collectives.csv",
    "inference.csv",
    "training_more.csv",
    "collectives_more.csv",
    "inference_more.csv",
)


def _rows(name: str) -> list[dict[str, str]]:
    with (reference_dir() / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("name", DATA_FILES)
def test_every_row_has_an_id_a_source_and_the_rule_s_split(name: str) -> None:
    ids = set()
    for row in _rows(name):
        assert row["id"] and row["id"] not in ids, f"{name}: id {row['id']!r} missing or repeated"
        ids.add(row["id"])
        assert len(row["source"].strip()) >= 10, f"{name} {row['id']}: no source"
        assert row["split"] in ("calibration", "held_out"), f"{name} {row['id']}: split"
        assert row["split"] == split_for(row), (
            f"{name} {row['id']}: split {row['split']!r} is not the rule's {split_for(row)!r}"
        )


def test_split_rule_is_a_hash_of_what_the_row_is_and_keeps_groups_together() -> None:
    row = {"source": "paper", "model": "m", "gpus": "8", "scaling_group": ""}
    assert split_key(row) == "paper|m|8"
    assert split_for(row) == split_for(dict(row))  # deterministic
    grouped = [dict(row, gpus=str(g), scaling_group="g1") for g in (8, 16, 512)]
    assert len({split_for(r) for r in grouped}) == 1
    # the rule never looks at a measured value
    assert split_for(dict(row, value="1")) == split_for(dict(row, value="1000"))


def test_about_a_third_of_the_new_rows_are_held_out() -> None:
    rows = [r for n in DATA_FILES for r in _rows(n) if not r.get("exclude")]
    held = sum(r["split"] == "held_out" for r in rows) / len(rows)
    assert 0.2 <= held <= 0.5, held


def test_every_row_is_predicted_or_excluded_with_a_listed_reason() -> None:
    predicted = {
        c.row_id for c in all_training_cases() + all_collective_cases() + all_inference_cases()
    }
    excluded = {e.row_id: e for e in excluded_rows()}
    readme = (reference_dir() / "README.md").read_text("utf-8")
    for name in DATA_FILES:
        for row in _rows(name):
            rid = row["id"]
            if rid in excluded:
                assert rid not in predicted, f"{rid} is both excluded and predicted"
                assert len(excluded[rid].reason) >= 10, f"{rid}: reason too short"
                assert f"`{rid}`" in readme, f"{rid} excluded but not listed in reference/README.md"
            else:
                assert rid in predicted, f"{name} {rid} is neither predicted nor excluded"


def test_cases_carry_their_row_s_split() -> None:
    splits = {r["id"]: r["split"] for n in DATA_FILES for r in _rows(n)}
    for c in all_training_cases() + all_collective_cases() + all_inference_cases():
        assert c.split == splits[c.row_id]


def test_scaling_pairs_stay_in_one_split_and_order_by_scale() -> None:
    pairs = scaling_pairs(all_training_cases())
    assert pairs
    for p in pairs:
        assert p.small.split == p.large.split
        assert p.small.scale <= p.large.scale
        assert p.error_pp == pytest.approx(100 * (p.predicted_change - p.measured_change))


def test_an_inference_row_of_an_unknown_measured_kind_is_an_error_not_a_guess(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kind the harness does not know (a typo, a new metric) must not fall through to the
    decode-speed comparison: a TPOT in ms read as tokens/s would be off by orders of magnitude."""
    import reference

    real = reference._rows

    def rows(name: str) -> list[dict[str, str]]:
        out = real(name)
        if name == "inference_more.csv":
            out = [dict(out[0], measured="tpot_seconds")]
        return out

    monkeypatch.setattr(reference, "_rows", rows)
    with pytest.raises(ValueError, match="unknown measured kind 'tpot_seconds'"):
        list(reference.more_inference_cases())


def test_time_per_token_rows_compare_the_decode_step_and_batch_rows_the_batch_rate() -> None:
    """tpot_ms rows (a serving benchmark's mean time per output token) are compared with the
    model's decode step in ms, decode_batch_tokens_per_s rows with its batch rate, never with the
    per-request speed that includes prefill."""
    rows = {r["id"]: r for r in _rows("inference_more.csv")}
    cases = {c.row_id: c for c in all_inference_cases()}

    def series(kind: str) -> list[list]:
        """The kind's rows grouped by source, model, lengths, GPU and KV precision (one job),
        each ordered by batch."""
        groups: dict[tuple[str, ...], list] = {}
        for i, c in cases.items():
            r = rows.get(i)
            if r and r["measured"] == kind:
                key = (r["source"], r["model"], r["input_tokens"], r["output_tokens"], r["gpu"],
                       r["gpus"], r["kv_precision"])  # fmt: skip
                groups.setdefault(key, []).append((int(r["batch"]), c))
        return [[c for _, c in sorted(g, key=lambda bc: bc[0])] for g in groups.values()]

    tpot, batch = series("tpot_ms"), series("decode_batch_tokens_per_s")
    assert any(len(g) >= 2 for g in tpot) and any(len(g) >= 2 for g in batch)
    assert {c.unit for g in tpot for c in g} == {"ms/token"}
    assert {c.unit for g in batch for c in g} == {"tokens/s"}
    # a bigger batch of the same job: a longer step, more tokens per second for the whole batch
    for g in tpot + batch:
        assert all(a.predicted < b.predicted for a, b in pairwise(g))


def test_a_qlora_row_is_planned_on_its_4_bit_base() -> None:
    """reference/README.md: `base_bits` 4 marks a LoRA run on a 4-bit (NF4) base. The loader
    passes it to the planner (QLoRA: a 4-bit base dequantised each pass), so the same job on a
    16-bit base plans differently: Answer.AI's two RTX 4090 runs, LoRA (tm731) and QLoRA (tm733)."""
    import reference as R

    rows = {r["id"]: r for r in _rows("training_more.csv")}
    assert rows["tm733"]["base_bits"] == "4" and rows["tm731"]["base_bits"] == ""
    assert all(r["base_bits"] in ("", "4") for r in rows.values())
    assert all(r["workload"] == "lora" for r in rows.values() if r["base_bits"] == "4")
    seen: dict[str, int] = {}
    original = R.estimate_training_step

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen["bits"] = args[4].lora_base_bits
        return original(*args, **kwargs)

    try:
        R.estimate_training_step = spy
        R._more_training_case(rows["tm733"])
        assert seen["bits"] == 4
        R._more_training_case(rows["tm731"])
        assert seen["bits"] == 16
    finally:
        R.estimate_training_step = original
