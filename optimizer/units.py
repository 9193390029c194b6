"""Parsing the sizes, counts and durations people type: ``8B``, ``1.5T``, ``2e12``, ``14d``, ``36h``.

Every parser raises ``UsageError`` naming the accepted forms, so a typo on the command line gets one
line that says how to write it, never a traceback.
"""

from __future__ import annotations

import math
import re

from warehouse.errors import UsageError

SUFFIXES = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_COUNT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmbgt]?)\s*$", re.IGNORECASE)


def parse_count(text: str, *, what: str = "value") -> float:
    """``8B`` -> 8e9, ``1.3b`` -> 1.3e9, ``175e9``, ``500M``, ``1.5T``; positive and finite only."""
    match = _COUNT.match(str(text))
    if match is None:
        raise UsageError(
            f"cannot read {what} {text!r}: write a number with an optional K/M/B/T suffix, e.g. 500M, 8B, 1.5T, 2e12"
        )
    value = float(match.group(1)) * SUFFIXES[match.group(2).lower()]
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{what} must be positive, got {text!r}")
    return value


def parse_duration_hours(text: str, *, what: str = "duration") -> float:
    """``14d`` -> 336.0, ``36h``, ``2w``, ``90min``, ``3mo``: costopt's one duration grammar
    (``warehouse.durations``: a number and a unit; ``m`` and bare numbers are refused as ambiguous)."""
    from warehouse.durations import parse_hours

    return parse_hours(text, what=what)


def positive(value: float, what: str) -> float:
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{what} must be positive, got {value:g}")
    return value


def fraction(value: float, what: str, *, allow_zero: bool = False) -> float:
    low_ok = value >= 0 if allow_zero else value > 0
    if not (math.isfinite(value) and low_ok and value <= 1):
        raise UsageError(f"{what} must be between 0 and 1, got {value:g}")
    return value


def human_count(value: float) -> str:
    """8e9 -> '8B', 1.5e12 -> '1.5T': the inverse of parse_count, for headers."""
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def human_hours(hours: float) -> str:
    """36.0 -> '1.5d': durations read at a glance."""
    if hours >= 48:
        return f"{hours / 24:.1f}d"
    if hours >= 1:
        return f"{hours:.1f}h"
    return f"{hours * 60:.0f}min"
