"""Shared invariants, checked on every provider's records before every load (and in tests).

A record that breaks a per-record rule (unknown GPU, price beyond the sanity ceiling) is dropped and
counted, so one odd upstream row cannot block a provider's other prices. A duplicate key means the
parser itself is wrong, so it fails the provider's run instead.
"""

from __future__ import annotations

import math
from collections import Counter

from warehouse.errors import ValidationError
from warehouse.gpus import GpuCatalog
from warehouse.records import PriceRecord

MAX_USD_PER_GPU_HOUR = 150.0  # no GPU rents for more than this; a higher figure is a unit or parse error
MIN_USD_PER_GPU_HOUR = 0.005


def problems(record: PriceRecord, gpus: GpuCatalog) -> list[tuple[str, str]]:
    """(category, message) for every invariant the record breaks."""
    found: list[tuple[str, str]] = []
    spec = gpus.get(record.gpu)
    if spec is None:
        found.append(("unknown GPU", f"unknown GPU {record.gpu!r}"))
    elif spec.name != record.gpu:
        found.append(("alias GPU name", f"GPU {record.gpu!r} is an alias of {spec.name!r}"))
    per_gpu = record.usd_per_gpu_hour
    if not math.isfinite(per_gpu) or per_gpu > MAX_USD_PER_GPU_HOUR:
        found.append(("above ceiling", f"${per_gpu:.2f}/GPU-hour is above ${MAX_USD_PER_GPU_HOUR:.0f}"))
    if per_gpu < MIN_USD_PER_GPU_HOUR:
        found.append(("below floor", f"${per_gpu:.4f}/GPU-hour is below the sanity floor"))
    if record.stats is not None and not (record.stats.min <= record.usd_per_hour <= record.stats.max):
        found.append(("stats mismatch", "marketplace price outside its own distribution"))
    return found


def validate(records: list[PriceRecord], gpus: GpuCatalog) -> tuple[list[PriceRecord], Counter[str], list[str]]:
    """Return the valid records, a count of dropped ones by reason, and a few examples."""
    seen: set[tuple[str, str, str, str]] = set()
    kept: list[PriceRecord] = []
    dropped: Counter[str] = Counter()
    examples: list[str] = []
    for record in records:
        if record.key in seen:
            raise ValidationError(f"{record.provider}: duplicate price key {record.key}")
        seen.add(record.key)
        found = problems(record, gpus)
        if found:
            dropped[found[0][0]] += 1
            if len(examples) < 10:
                examples.append(f"{'/'.join(record.key)}: {found[0][1]}")
            continue
        kept.append(record)
    return kept, dropped, examples
