"""One grammar for every duration a person types: ``--deadline``, ``--horizon``, ``--checkpoint-every``,
``--since`` and ``--every``.

A duration is a positive number and a unit, nothing else:

    s  sec  second(s)        seconds
    min  minute(s)           minutes
    h  hr  hour(s)           hours
    d  day(s)                days
    w  wk  week(s)           weeks (7 days)
    mo  month(s)             months of 30 days
    y  yr  year(s)           years of 365 days

``m`` alone is refused: it meant minutes in some tools and months in others (and in costopt, before one
grammar, 30 days in ``--since`` but minutes in ``--deadline``); the error says to write ``min`` or ``mo``.
A bare number is refused too (hours? days?): the error suggests the units. Units are case-insensitive
and may follow the number with a space (``36 h``). This module sits in the warehouse layer because
``--since`` (warehouse.history) and the optimizer's and scheduler's options all read it.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

from warehouse.errors import UsageError

SECONDS: dict[str, float] = {}
for _names, _seconds in (
    (("s", "sec", "secs", "second", "seconds"), 1.0),
    (("min", "mins", "minute", "minutes"), 60.0),
    (("h", "hr", "hrs", "hour", "hours"), 3600.0),
    (("d", "day", "days"), 86400.0),
    (("w", "wk", "wks", "week", "weeks"), 7 * 86400.0),
    (("mo", "mos", "month", "months"), 30 * 86400.0),
    (("y", "yr", "yrs", "year", "years"), 365 * 86400.0),
):
    for _name in _names:
        SECONDS[_name] = _seconds

FORMS = "90s, 90min, 36h, 14d, 2w, 6mo, 1y"
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_duration(text: str, *, what: str = "duration") -> timedelta:
    """``14d`` -> 14 days, ``90min``, ``36h``, ``2w``, ``6mo`` (180 days), ``1y`` (365 days), ``30s``.

    ``what`` names the option in the one-line error (``--deadline``).
    """
    raw = str(text)
    match = _DURATION.match(raw)
    if match is None:
        raise UsageError(f"cannot read {what} {text!r}: write a number and a unit, e.g. {FORMS}")
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit == "m":
        raise UsageError(
            f"{what} {text!r} is ambiguous: write {match.group(1)}min for minutes or {match.group(1)}mo for months"
        )
    if not unit:
        raise UsageError(f"{what} {text!r} needs a unit: {match.group(1)}h, {match.group(1)}d ... (forms: {FORMS})")
    if unit not in SECONDS:
        raise UsageError(f"cannot read {what} {text!r}: unknown unit {unit!r}; units: s, min, h, d, w, mo, y")
    seconds = number * SECONDS[unit]
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"{what} must be positive, got {text!r}")
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise UsageError(f"{what} {text!r} is too long") from None


def parse_hours(text: str, *, what: str = "duration") -> float:
    """A duration in hours (``14d`` -> 336.0)."""
    return parse_duration(text, what=what).total_seconds() / 3600
