"""One percentile definition for marketplace prices, shared by the scraper (stored p10/median) and the
optimizer (the price a plan rents at): linear interpolation between neighbours, numpy's default."""

from __future__ import annotations

import math


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation quantile of ascending values: position q*(n-1) between neighbours."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)
