"""Conditions of rules kept as data: equality, or `<fact>_min` / `<fact>_max` bounds.
A bound on a fact that was not measured (None) does not hold.

Shared by the selection guide (plan/advise) and the diagnosis rules (diagnose/): a rule fires
when every condition holds. No expressions are evaluated; unknown facts are an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def fact_name(key: str) -> str:
    """The fact a condition key names (`nodes_min` -> `nodes`)."""
    return key.removesuffix("_min").removesuffix("_max")


def holds(when: Mapping[str, Any], facts: Mapping[str, Any]) -> bool:
    """True when every condition in ``when`` holds for ``facts``."""
    for key, want in when.items():
        value = facts[fact_name(key)]
        if value is None and key.endswith(("_min", "_max")):
            return False
        if key.endswith("_min"):
            if value < want:
                return False
        elif key.endswith("_max"):
            if value > want:
                return False
        elif value != want:
            return False
    return True


def check_known(rule_id: str, when: Mapping[str, Any], known: set[str]) -> None:
    """Raise when a rule names a fact nobody provides (a broken rules file is our bug)."""
    for key in when:
        if fact_name(key) not in known:
            raise RuntimeError(f"rule {rule_id}: unknown fact {key!r}")
