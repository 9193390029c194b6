"""The ``plan`` table: the widest of costopt's tables, laid out to read at 100 columns.

At 100 columns a row says which option (provider, GPUs x per instance x instances, region, pricing),
its price per GPU-hour, the expected wall time and cost, and what spot saves; the instance type,
the price's age, each row's range and the notes follow as the terminal widens, and ``--wide`` shows
them all. The ranges of wall time and cost come from one calibrated MFU band, so they are nearly the
same multiple of the expected figure on every row: the footer states that multiple once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cli.output import Column, age_text

ORIGIN_MARKS = {"derived": "\u2020", "generated": "\u2021"}  # dagger, double dagger
ORIGIN_LEGEND = {
    "derived": "\u2020 derived: published prices written into the provider's format",
    "generated": "\u2021 generated: sampled listings reproducing published statistics",
}


def origin_legend(origins: Iterable[str | None]) -> list[str]:
    """The legend lines for the marks the rows shown carry: generated or derived data is labelled wherever shown."""
    present = set(origins)
    return [ORIGIN_LEGEND[o] for o in ("derived", "generated") if o in present]


# On the wall time: the option lies outside what the calibration covers (optimizer/scope.py): the speed of its GPU
# family rests on its datasheet, not on published whole runs, or the job (method, size, sequence, GPUs, batch) is
# beyond the calibration's runs. The notes say "speed extrapolated" too, but at 100 columns the notes are hidden, and
# such rows can top a plan (MI300X, B200).
SPEED_MARK = "\u00a7"  # section sign
PRICING_LABELS = {"on_demand": "on-demand", "spot": "spot", "interruptible": "interruptible"}

COLUMNS = [
    Column("pareto", "*", "name"),
    Column("provider", "provider", "name"),
    Column("instance", "instance", "name", drop=4),
    Column("shape", "GPU x n x inst", "name"),
    Column("region", "region", "name", drop=2),
    Column("pricing", "pricing", "name"),
    Column("price", "$/GPU-h", "figure"),
    Column("age", "age", "figure", drop=5),
    Column("wall", "wall time", "figure"),
    Column("wall_range", "wall range", "figure", drop=7),
    Column("cost", "cost", "figure"),
    Column("cost_range", "cost range", "figure", drop=6),
    Column("saves", "spot saves", "figure"),
    Column("notes", "notes", "text", drop=3),
]


def money(value: float | None) -> str:
    return "" if value is None else f"${value:,.0f}"


def regions(row: dict[str, Any]) -> str:
    """``us-east-1``, ``us-east-1 +2`` for collapsed regions; a marketplace row names its listings' countries."""
    if row.get("listings") is not None and row.get("countries") is not None:
        countries = row["countries"]
        where = f", {countries[0]}" if len(countries) == 1 else ""
        return f"{row['listings']} listings{where}"
    names = row["regions"]
    return names[0] if len(names) == 1 else f"{names[0]} +{len(names) - 1}"


def cells(row: dict[str, Any]) -> dict[str, str]:
    """One option as the table's cells."""
    from optimizer.units import human_hours

    saves = ""
    if row["savings_usd"] is not None and row["on_demand_cost_usd"]:
        saves = (
            f"{money(row['savings_usd'])} ({row['savings_usd'] / row['on_demand_cost_usd']:.0%})"
            if row["savings_usd"]
            else "no saving"
        )
    notes = list(row["notes"])
    if row.get("added_hours") is not None and row["pricing"] != "on_demand":
        added = row["added_hours"]
        notes.append(f"spot adds {'-' if added < 0 else ''}{human_hours(abs(added) or 1e-9)}")
    return {
        "pareto": "*" if row["pareto"] else "",
        "provider": row["provider"],
        "instance": row["instance_type"],
        "shape": f"{row['gpu']} x{row['gpus_per_instance']} x{row['instances']}",
        "region": regions(row),
        "pricing": PRICING_LABELS.get(row["pricing"], row["pricing"]),
        "price": f"${row['usd_per_gpu_hour']:.2f}{ORIGIN_MARKS.get(row['data_origin'], '')}",
        "age": age_text(row["source_age_hours"]),
        "wall": human_hours(row["wall_expected"]) + (SPEED_MARK if row["speed_basis"] == "extrapolated" else ""),
        "wall_range": f"{human_hours(row['wall_low'])}-{human_hours(row['wall_high'])}",
        "cost": money(row["cost_expected"]),
        "cost_range": f"{money(row['cost_low'])}-{money(row['cost_high'])}",
        "saves": saves,
        "notes": "; ".join(notes),
    }


def speed_line(rows: list[dict[str, Any]]) -> str:
    """The legend of SPEED_MARK for the rows whose GPU family has no published whole run (``scope_line``: the rest)."""
    from optimizer import mfu
    from warehouse.gpus import catalog

    gpus = sorted(
        {r["gpu"] for r in rows if r["speed_basis"] == "extrapolated" and any(x.kind == "gpu" for x in _reasons(r))}
    )
    if not gpus:
        return ""
    specs = catalog()
    amd = [spec for g in gpus if (spec := specs.get(g)) is not None and mfu.amd_factor_range(spec) is not None]
    return (
        f"{SPEED_MARK} speed extrapolated ({', '.join(gpus)}): no published whole training run on these GPU families "
        "is in the calibration; the time rests on the datasheet"
        + "".join(f" and, for {spec.name}, {mfu.describe_software_factor(spec)}" for spec in amd)
    )


def _reasons(row: dict[str, Any]) -> tuple[Any, ...]:
    """A row's reasons for lying outside the calibration (``scope.Reason``), none under --mfu's given speed."""
    return row["scope"].reasons if row["speed_basis"] == "extrapolated" else ()


def scope_line(rows: list[dict[str, Any]]) -> str:
    """The rest of SPEED_MARK's legend: the rows outside what the calibration covers for another reason than their GPU
    family (LoRA, the model's size, the sequence length, more GPUs or a larger batch than any run), each reason once,
    with how many of the rows shown it concerns."""
    counts: dict[str, int] = {}
    for row in rows:
        for reason in {x.summary for x in _reasons(row) if x.kind != "gpu"}:
            counts[reason] = counts.get(reason, 0) + 1
    if not counts:
        return ""
    parts = [f"{'every row' if n == len(rows) else f'{n} of these rows'}: {text}" for text, n in counts.items()]
    also = " also" if any(x.kind == "gpu" for r in rows for x in _reasons(r)) else " speed extrapolated,"
    return f"{SPEED_MARK}{also} outside what the calibration covers: " + "; ".join(parts)


def batch_line(rows: list[dict[str, Any]]) -> str:
    """A warning when shown options step on a larger global batch, or take fewer optimizer steps, than any calibration
    run (``scope.judge``'s warning, said once for the plan): more GPUs do not always make a job that trains."""
    wide = [r for r in rows if any(x.kind in ("batch", "steps") for x in r["scope"].reasons)]
    if not wide:
        return ""
    which = "every one of these options steps" if len(wide) == len(rows) else f"{len(wide)} of these options step"
    return (
        f"warning: {which} on more tokens per optimizer step, or takes fewer optimizer steps, than any calibration run "
        "(listed under the table): the time assumes every GPU stays busy, not that the model trains well on so large "
        "a batch; fewer GPUs, or more tokens"
    )


def band_line(rows: list[dict[str, Any]], basis: str) -> str:
    """The ranges as multiples of the expected figure, said once for the rows shown, with what they are
    (``basis``: ``mfu.range_claim``'s words, what the range held out of sample). Where the MFU ceiling sets a row's
    fastest plausible figure (``mfu_ceiling_binds``: an A100 row's x0.74 where the band alone gives x0.65) the line
    says so, or the multiples would read as the band's."""
    lows = [r["wall_low"] / r["wall_expected"] for r in rows if r["wall_expected"]]
    highs = [r["wall_high"] / r["wall_expected"] for r in rows if r["wall_expected"]]
    if not lows:
        return ""

    def span(values: list[float]) -> str:
        low, high = min(values), max(values)
        return f"x{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"x{low:.2f}-{high:.2f}"

    capped = sum(1 for r in rows if "high" in r["mfu_ceiling_binds"])
    outside = sum(1 for r in rows if r["speed_basis"] == "extrapolated")
    if outside:
        held = "every row" if outside == len(rows) else f"{outside} of these rows"
        basis = f"on {held}, marked {SPEED_MARK}, outside the calibration: carried over, not held; inside it, {basis}"
    where = "every row" if capped == len(rows) else f"{capped} of these rows"
    ceiling = f": the MFU ceiling sets it on {where}" if capped else ""
    return (
        f"range: wall time and cost run from {span(lows)} (fastest plausible{ceiling}) to {span(highs)} (slowest "
        f"plausible) of the expected figure ({basis})"
    )


def print_plan_table(rows: list[dict[str, Any]], *, title: str, footer: list[str], wide: bool) -> None:
    from cli.output import print_table

    table = [cells(r) for r in rows]
    keys = [c.key for c in COLUMNS]
    print_table([[t[k] for k in keys] for t in table], COLUMNS, title=title, caption=footer, wide=wide)
