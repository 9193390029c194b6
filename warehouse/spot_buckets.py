"""AWS Spot Instance Advisor interruption buckets: the ONE definition the scraper, optimizer and README share.

The Advisor (``spot-advisor-data.json``) gives no rate per instance type, only a bucket index ``r``
into ``ranges``: ``<5%``, ``5-10%``, ``10-15%``, ``15-20%``, ``>20%`` -- the share of that type's spot
capacity AWS reclaimed during the trailing month. Two things follow from a bucket:

* what is **stored** (``spot_risk.interruption_pct_min/max``): the bucket's bounds as AWS states
  them. The top bucket is open: ">20%" says only "more than 20 % a month", so its upper bound is
  stored as 100 (AWS's own ``max`` for it is 100 too);
* what is **planned with** (:func:`planning_pct`): one monthly frequency per bucket, its midpoint --
  except the open top bucket, whose midpoint would be a number AWS never gave. It is read as the
  midpoint of [lower bound, 2 x lower bound]: ">20%" -> 30 % (:data:`OPEN_BUCKET_PLANNING_PCT`), an
  **assumption**: interruption rates across instance types are concentrated near the low end (AWS:
  most types are below 5 %), so the mass of ">20%" is more likely just above 20 % than near 100 %
  (reading it as 20-100 %, midpoint 60 %, would be 2.6 times the hazard). ``--explain`` and the
  README say so.

Both the scraper (``scraper/providers/aws.py``) and the optimizer (``optimizer/spot.py``) import this
module; neither imports the other (DESIGN.md: cli -> optimizer, scraper -> warehouse).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

HOURS_PER_MONTH = 730.0
OPEN_TOP_PCT = 100.0  # stored upper bound of an open ">x%" bucket
OPEN_BUCKET_PLANNING_PCT = 30.0  # assumption: how the optimizer reads ">20%" (midpoint of 20-40 %); see planning_pct


@dataclass(frozen=True, slots=True)
class Bucket:
    """One Advisor interruption bucket: the label as AWS writes it and its monthly-frequency bounds in percent."""

    index: int
    label: str
    pct_min: float
    pct_max: float  # OPEN_TOP_PCT for the open top bucket
    open: bool = False

    @property
    def planning_pct(self) -> float:
        return planning_pct(self.pct_min, self.pct_max)


# The Advisor's ranges as published (June 2025 file; labels and AWS's ``max`` figures differ: AWS's
# ``max`` of "5-10%" is 11, of "10-15%" 16, of "15-20%" 22 -- the labels are what a user reads and
# what is stored).
AWS_BUCKETS: tuple[Bucket, ...] = (
    Bucket(0, "<5%", 0.0, 5.0),
    Bucket(1, "5-10%", 5.0, 10.0),
    Bucket(2, "10-15%", 10.0, 15.0),
    Bucket(3, "15-20%", 15.0, 20.0),
    Bucket(4, ">20%", 20.0, OPEN_TOP_PCT, open=True),
)


def planning_pct(pct_min: float, pct_max: float) -> float:
    """The monthly interruption frequency (percent) the optimizer plans with for a stored bucket.

    A closed bucket: its midpoint. The open top bucket (stored upper bound 100, or an upper bound not
    above the lower one): the midpoint of [lower, 2 x lower], i.e. 1.5 x the lower bound -- 30 % for
    AWS's ">20%" (:data:`OPEN_BUCKET_PLANNING_PCT`).
    """
    if is_open(pct_min, pct_max):
        return min(99.0, pct_min * 1.5)
    return (pct_min + pct_max) / 2


def is_open(pct_min: float, pct_max: float) -> bool:
    return pct_max >= OPEN_TOP_PCT or pct_max <= pct_min


def hazard_per_hour(pct_min: float, pct_max: float) -> float:
    """Per-instance-hour hazard from a bucket: monthly frequency f -> lambda = -ln(1 - f) / 730 h."""
    share = min(0.99, planning_pct(pct_min, pct_max) / 100)
    return -math.log(1 - share) / HOURS_PER_MONTH


def describe(pct_min: float, pct_max: float) -> str:
    """How a stored bucket reads in a plan's hazard source.

    E.g. "AWS Spot Advisor >20%/month (read as 30 %: assumption)".
    """
    if is_open(pct_min, pct_max):
        return f"AWS Spot Advisor >{pct_min:g}%/month (read as {planning_pct(pct_min, pct_max):g} %: assumption)"
    return f"AWS Spot Advisor {pct_min:g}-{pct_max:g}%/month (midpoint {planning_pct(pct_min, pct_max):g} %)"


def bucket_bounds(ranges: list[dict[str, Any]]) -> dict[int, Bucket]:
    """Advisor ``ranges`` -> bucket index -> :class:`Bucket`, read from each label.

    The label carries the human range ("<5%", "5-10%", ">20%"); AWS's ``max`` is used only when a
    label cannot be read, and then the lower bound is the previous bucket's upper.
    """
    bounds: dict[int, Bucket] = {}
    previous_max = 0.0
    for item in sorted(ranges, key=lambda r: r.get("index", 0)):
        label = str(item.get("label", ""))
        upper = float(item.get("max", OPEN_TOP_PCT))
        low, high, is_open = previous_max, upper, upper >= OPEN_TOP_PCT
        if m := re.fullmatch(r"\s*<\s*(\d+(?:\.\d+)?)\s*%\s*", label):
            low, high, is_open = 0.0, float(m.group(1)), False
        elif m := re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?)\s*%\s*", label):
            low, high, is_open = float(m.group(1)), float(m.group(2)), False
        elif m := re.fullmatch(r"\s*>\s*(\d+(?:\.\d+)?)\s*%\s*", label):
            low, high, is_open = float(m.group(1)), OPEN_TOP_PCT, True
        index = int(item["index"])
        bounds[index] = Bucket(index, label, low, high, is_open)
        previous_max = high
    return bounds
