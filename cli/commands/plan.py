"""``costopt plan``: what a training job costs and how long it takes on every current offer."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.commands.estimate import (
    ActiveOption,
    CheckpointOption,
    MethodOption,
    MfuOption,
    MicroBatchOption,
    ModelOption,
    PrecisionOption,
    RecomputeOption,
    SeqLenOption,
    StackOption,
    TokensOption,
    build_job,
)
from cli.options import DbOption, FormatOption
from cli.output import Format

JSON_KEYS = [
    "provider", "instance_type", "region", "gpu", "gpus_per_instance", "instances", "pricing",
    "usd_per_instance_hour",
]  # fmt: skip
CSV_COLUMNS = [
    *JSON_KEYS, "regions", "usd_per_gpu_hour", "listings", "market_basis", "data_origin", "source_time",
    "source_basis", "source_age_hours", "wall_low", "wall_expected", "wall_high", "cost_low", "cost_expected",
    "cost_high", "on_demand_cost_usd", "savings_usd", "pareto", "slow", "notes",
]  # fmt: skip
ORIGIN_MARKS = {"derived": "\u2020", "generated": "\u2021"}  # dagger, double dagger


def _notes(row: dict[str, Any], horizon_days: float) -> list[str]:
    """Short flags for the table; the long reasons are in --explain and the JSON."""
    notes = []
    if row["slow"]:
        notes.append(f"slower than {horizon_days:g}d")
    if row.get("market_rule"):
        bid = f"bid floor+{row['bid_premium']:.0%} " if row["pricing"] == "interruptible" else ""
        notes.append(f"{bid}at {row['market_rule']}")
    if row["pricing"] in ("spot", "interruptible"):
        notes.append(f"+{row['spot_overhead']:.1%} interrupted")
        if row.get("savings_basis"):
            notes.append("vs cheapest on-demand")
        elif row.get("on_demand_cost_usd") is None:
            notes.append("no on-demand to compare")
    if row["instances"] > 1 and row["fabric"] == "ethernet":
        notes.append("Ethernet")
    return notes


def plan_command(
    model: ModelOption,
    tokens: TokensOption,
    gpu: Annotated[list[str] | None, typer.Option("--gpu", help="Only this GPU (repeatable).")] = None,
    provider: Annotated[list[str] | None, typer.Option("--provider", help="Only this provider (repeatable).")] = None,
    region: Annotated[list[str] | None, typer.Option("--region", help="Only this region (repeatable).")] = None,
    spot: Annotated[bool | None, typer.Option("--spot/--no-spot", help="Only spot/interruptible, or none.")] = None,
    deadline: Annotated[
        str | None, typer.Option("--deadline", help="Expected wall time at most: 36h, 14d, 2w.")
    ] = None,
    budget: Annotated[float | None, typer.Option("--budget", help="Expected cost at most, USD.")] = None,
    max_gpus: Annotated[int, typer.Option("--max-gpus", help="At most this many GPUs in one job.")] = 256,
    top: Annotated[int, typer.Option("--top", min=1, help="Show this many options.")] = 15,
    all_counts: Annotated[
        bool, typer.Option("--all-counts", help="Every instance count of every offer (default: cheapest + front).")
    ] = False,
    horizon: Annotated[
        str, typer.Option("--horizon", help="Options slower than this are listed last and flagged.")
    ] = "90d",
    market_price: Annotated[
        str, typer.Option("--market-price", help="Marketplace price basis: min, p10 or median of the listings.")
    ] = "median",
    min_reliability: Annotated[
        float, typer.Option("--min-reliability", help="Marketplace listings below this reliability are left out.")
    ] = 0.95,
    min_listings: Annotated[
        int, typer.Option("--min-listings", help="A marketplace group needs this many eligible listings.")
    ] = 3,
    bid_premium: Annotated[
        float, typer.Option("--bid-premium", help="Interruptible marketplace bids this share above the floor.")
    ] = 0.25,
    checkpoint_every: Annotated[
        str | None, typer.Option("--checkpoint-every", help="Checkpoint interval on spot (default: Young/Daly).")
    ] = None,
    show_infeasible: Annotated[bool, typer.Option("--show-infeasible", help="List what was dropped, and why.")] = False,
    explain: Annotated[bool, typer.Option("--explain", help="Print every assumption with its source.")] = False,
    buy: Annotated[bool, typer.Option("--buy", help="Add after how many such jobs owning the GPUs pays off.")] = False,
    active_params: ActiveOption = None,
    method: MethodOption = "full",
    precision: PrecisionOption = "bf16",
    seq_len: SeqLenOption = None,
    micro_batch: MicroBatchOption = 1,
    checkpointing: CheckpointOption = True,
    recompute: RecomputeOption = "selective",
    stack: StackOption = "typical",
    mfu: MfuOption = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """Cost and time of a training job on every offer that can hold it, cheapest first, with spot savings."""
    from cli.output import emit, to_json
    from cli.warehouse_access import open_for_reading
    from optimizer import inputs
    from optimizer.market import MarketPolicy
    from optimizer.plan import Constraints, build_plan, default_view, stale_prices
    from optimizer.units import parse_duration_hours, positive
    from warehouse.gpus import catalog

    job = build_job(
        model, tokens, active_params, method, precision, seq_len, micro_batch, checkpointing, recompute, stack
    )
    constraints = Constraints(
        gpus=tuple(gpu or ()),
        providers=tuple(provider or ()),
        regions=tuple(region or ()),
        spot=spot,
        deadline_hours=parse_duration_hours(deadline, what="--deadline") if deadline else None,
        budget_usd=positive(budget, "--budget") if budget is not None else None,
        max_gpus=max_gpus,
        checkpoint_interval_hours=(
            parse_duration_hours(checkpoint_every, what="--checkpoint-every") if checkpoint_every else None
        ),
        horizon_hours=parse_duration_hours(horizon, what="--horizon"),
        market=MarketPolicy(
            price=market_price, min_reliability=min_reliability, min_listings=min_listings, bid_premium=bid_premium
        ),
    )
    gpus = catalog()
    for name in constraints.gpus:
        gpus.resolve(name)
    with open_for_reading(db) as wh:
        offers = inputs.current_offers(wh.con)
        risk = inputs.spot_risk(wh.con)
        as_of = inputs.prices_as_of(wh.con)
        note_text = wh.prices_note
        plan = build_plan(job, offers, gpus, constraints, spot_risk=risk, mfu_override=mfu)
        view = plan.options if all_counts else default_view(plan.options)
        best = view[0]
        buy_line = _buy_line(wh.con, best) if buy else None
    flops = job.flops().total
    horizon_days = constraints.horizon_hours / 24
    premium = constraints.market.bid_premium
    rows = [dict(r, bid_premium=premium) for r in view[:top]]
    rows = [dict(r, notes=_notes(r, horizon_days)) for r in rows]
    stale = stale_prices(rows)
    warnings = [_stale_line(stale)] if stale else []
    job_info = {
        "model": job.model.name,
        "total_params": job.model.total_params,
        "active_params": job.model.active_params,
        "tokens": job.tokens,
        "flops": flops,
        "method": job.method,
        "precision": job.precision,
    }
    if format is Format.json:
        options = [
            {
                **{k: r[k] for k in JSON_KEYS},
                "regions": r["regions"],
                "usd_per_gpu_hour": r["usd_per_gpu_hour"],
                "listings": r["listings"],
                "listing_countries": r["countries"] or None,
                "market_basis": r["market_basis"],
                "data_origin": r["data_origin"],
                "price_age_hours": r["source_age_hours"],
                "price_source_time": r["source_time"],
                "price_source_basis": r["source_basis"],
                "price_observed_at": r["observed_at"],
                "price_effective_since": r["effective_since"],
                "price_source": r["source"],
                "wall_hours": {"low": r["wall_low"], "expected": r["wall_expected"], "high": r["wall_high"]},
                "cost_usd": {"low": r["cost_low"], "expected": r["cost_expected"], "high": r["cost_high"]},
                "on_demand_cost_usd": r["on_demand_cost_usd"],
                "savings_usd": r["savings_usd"],
                "added_hours": r["added_hours"],
                "spot_overhead": r["spot_overhead"] if r["pricing"] != "on_demand" else None,
                "hazard_source": r["hazard_source"] or None,
                "pareto": r["pareto"],
                "slow": r["slow"],
                "notes": r["notes"],
            }
            for r in rows
        ]
        data: dict[str, Any] = {
            "job": job_info,
            "prices_as_of": as_of,
            "prices": note_text,
            "options_total": len(plan.options),
            "horizon_days": horizon_days,
            "market_price": constraints.market.price,
            "warnings": warnings,
            "options": options,
        }
        if buy_line is not None:
            data["buy"] = buy_line
        if show_infeasible:
            data["dropped"] = plan.dropped
        print(to_json(data))
        return
    if format is Format.csv:
        flat = [dict(r, notes="; ".join(r["notes"]), regions=" ".join(r["regions"])) for r in rows]
        emit(flat, CSV_COLUMNS, format)
        return
    _print_human(
        job_info, note_text, rows, plan, len(view), buy_line, show_infeasible, explain, job, horizon_days, warnings
    )


def _print_human(
    info, note_text, rows, plan, shown, buy_line, show_infeasible, explain, job, horizon_days, warnings
) -> None:
    from cli.output import print_table
    from optimizer.units import human_count, human_hours

    print(
        f"{info['model']} ({human_count(info['active_params'])} active params) x {human_count(info['tokens'])} tokens "
        f"= {info['flops']:.3g} FLOPs ({info['method']}, {info['precision']})"
    )
    print(note_text)

    def money(v: float | None) -> str:
        return "" if v is None else f"${v:,.0f}"

    table = []
    origins = set()
    for r in rows:
        savings = ""
        if r["savings_usd"] is not None and r["on_demand_cost_usd"]:
            savings = f"{money(r['savings_usd'])} ({r['savings_usd'] / r['on_demand_cost_usd']:.0%})"
            if r["added_hours"] is not None:
                savings += f", {'+' if r['added_hours'] >= 0 else '-'}{human_hours(abs(r['added_hours']) or 1e-9)}"
        mark = ORIGIN_MARKS.get(r["data_origin"], "")
        if mark:
            origins.add(r["data_origin"])
        table.append(
            [
                "*" if r["pareto"] else "",
                r["provider"],
                r["instance_type"],
                f"{r['gpu']} x{r['gpus_per_instance']} x{r['instances']}",
                _regions(r),
                r["pricing"],
                f"${r['usd_per_gpu_hour']:.2f}{mark}",
                _age(r["source_age_hours"]),
                f"{human_hours(r['wall_expected'])} ({human_hours(r['wall_low'])}-{human_hours(r['wall_high'])})",
                f"{money(r['cost_expected'])} ({money(r['cost_low'])}-{money(r['cost_high'])})",
                savings,
                "; ".join(r["notes"]),
            ]
        )
    header = ["", "provider", "instance", "GPU x n x inst", "region", "pricing", "$/GPU-h", "age",
              "wall time (range)", "cost (range)", "spot saves", "notes"]  # fmt: skip
    print_table(
        table,
        header,
        title=f"Cheapest {len(rows)} of {shown} options by expected cost ({len(plan.options)} with every count)",
    )
    print(
        f"* = Pareto front: no option is both cheaper and faster. Options slower than {horizon_days:g} days come "
        "last. Wall time and cost: expected (fastest plausible - slowest plausible)."
    )
    legend = {
        "derived": "\u2020 derived: published prices written into the provider's format",
        "generated": "\u2021 generated: sampled listings reproducing published statistics",
    }
    marks = [legend[o] for o in ("derived", "generated") if o in origins]
    print(
        "age: since the source's own time (AWS offer-file publication, a recording's declared vintage, else when "
        "observed)" + ("; " + "; ".join(marks) + " (fixtures/<provider>/README.md)" if marks else "")
    )
    print("--all-counts for every instance count, --explain for assumptions, --format json for scripts")
    for line in warnings:
        print(line)
    if buy_line is not None:
        print(buy_line["line"])
    if show_infeasible and plan.dropped:
        print(f"\ndropped ({len(plan.dropped)}):")
        for d in plan.dropped[:200]:
            print(f"  {d['offer']}: {d['reason']}")
    if explain:
        _explain(job)


def _regions(row: dict[str, Any]) -> str:
    """``us-east-1``, ``us-east-1 +2`` for collapsed regions; a marketplace row names its listings' countries."""
    if row.get("listings") is not None and row.get("countries") is not None:
        countries = row["countries"]
        where = f", {countries[0]}" if len(countries) == 1 else ""
        return f"{row['listings']} listings{where}"
    regions = row["regions"]
    return regions[0] if len(regions) == 1 else f"{regions[0]} +{len(regions) - 1}"


def _age(hours: float | None) -> str:
    if hours is None:
        return ""
    return f"{hours:.0f}h" if hours < 48 else f"{hours / 24:.0f}d"


def _stale_line(stale: list[dict[str, Any]]) -> str:
    from optimizer import defaults

    parts = []
    for s in stale:
        what = {"published": "published", "declared": "figures as of", "observed": "observed"}.get(
            s["source_basis"], "as of"
        )
        parts.append(f"{s['provider']} ({what} {str(s['source_time'])[:10]}, {s['age_hours'] / 24:.0f} days)")
    return (
        f"warning: prices older than {defaults.STALE_DAYS.value:g} days by their source's own time: "
        + ", ".join(parts)
        + "; `costopt refresh` fetches current ones"
    )


def _explain(job) -> None:
    from optimizer import defaults, memory, mfu
    from warehouse import spot_buckets

    print("\nassumptions (value, source):")
    print(f"  FLOPs: 6 x N_active x D{' + attention 12.L.d.S per token' if job.flops().attention else ''} (PaLM)")
    fit = mfu.FITTED
    print(
        f"  realized MFU: base {fit.base} on A100-80GB x bandwidth-per-FLOP^{fit.bandwidth_exponent} "
        f"x scale-out (below ~{fit.thin_params_per_gpu:.0e} active params per GPU) x node scaling {mfu.NODE_PENALTY} "
        f"x MoE {fit.moe} x {mfu.RECOMPUTE_FULL} with --recompute full; "
        f"band x{fit.band_low}-x{fit.band_high}: calibrated on published whole runs (bench/calibration.py)"
    )
    print(f"  {mfu.describe_stack(job.stack)}")
    print(f"  FP8 speed-up over BF16: x{mfu.FP8_GAIN} (torchtitan, OLMo-core published throughputs)")
    print(
        f"  memory: {memory.STATE_BYTES_PER_PARAM} bytes/param by method, {memory.USABLE_FRACTION:.0%} of GPU memory "
        "usable, ZeRO-3 sharding, activations with checkpointing unless --no-checkpointing"
    )
    print("  fabric: RDMA between 8-GPU NVLink/Infinity Fabric instances of cloud providers, Ethernet otherwise")
    print(
        "  instance counts: the minimum that holds the job, its doublings, the largest under --max-gpus and, with "
        "--deadline, the smallest that meets it"
    )
    for name, a in defaults.SPOT_HAZARD.items():
        print(f"  spot hazard {name}: {a.value:.4g} {a.unit} ({a.source})")
    buckets = ", ".join(f"{b.label} -> {b.planning_pct:g} %" for b in spot_buckets.AWS_BUCKETS)
    print(
        f"  AWS Spot Advisor buckets, monthly interruption frequency planned with: {buckets} (midpoints; the open "
        f"top bucket read as {spot_buckets.OPEN_BUCKET_PLANNING_PCT:g} %: assumption); lambda = -ln(1 - f) / 730 h"
    )
    for label, a in (("checkpoint write", defaults.CHECKPOINT_WRITE_GBPS), ("restart", defaults.RESTART_HOURS)):
        print(f"  {label}: {a.value:g} {a.unit} ({a.source})")
    print(
        "  interruption overhead: Daly's exponential model (M/tau) e^(R/M) (e^((tau+C)/M) - 1) - 1 with "
        "M = 1/(k.lambda), checkpoint interval Daly's higher-order optimum unless --checkpoint-every (Daly 2006)"
    )
    print(
        f"  marketplace price: the i-th of k instances at max(i-th cheapest listing, --market-price quantile); "
        f"listings with reliability >= {defaults.MIN_RELIABILITY.value:g} ({defaults.MIN_RELIABILITY.source}); "
        f"at least {defaults.MIN_LISTINGS.value:g} listings ({defaults.MIN_LISTINGS.source})"
    )
    print(f"  marketplace bids: {defaults.BID_PREMIUM.source}")
    for label, a in (("horizon", defaults.HORIZON_DAYS), ("stale after", defaults.STALE_DAYS)):
        print(f"  {label}: {a.value:g} {a.unit} ({a.source})")


def _buy_line(con, best: dict[str, Any]) -> dict[str, Any]:
    """After how many such jobs owning the option's GPUs pays off, at the option's own rent per hour of use."""
    from optimizer import inputs
    from optimizer.breakeven import Inputs, breakeven, jobs_to_pay_off
    from warehouse.errors import UsageError
    from warehouse.gpus import catalog

    gpu = catalog().resolve(best["gpu"])
    count = best["gpus_per_instance"] * best["instances"]
    rent = inputs.rent_observed(con, gpu.name)
    hours_of_use = best["wall_expected"] / (1 + best["spot_overhead"])  # owned GPUs are not interrupted
    per_gpu_hour = best["cost_expected"] / hours_of_use / count  # what the job pays per GPU-hour of work
    try:
        result = breakeven(
            Inputs(
                gpu=gpu,
                count=count,
                rent_usd_per_gpu_hour=per_gpu_hour,
                rent_source="the plan's first option, per GPU-hour of work",
            )
        )
    except UsageError as exc:
        return {"line": f"buy: {exc}", "jobs_to_pay_off": None, "never": None}
    jobs = jobs_to_pay_off(result, hours_of_use)
    life = result.assumptions["life_years"]
    if jobs is not None:
        line = (
            f"buy: owning {count} x {gpu.name} (capex ${result.capex_usd:,.0f}) pays off after {jobs:g} such jobs "
            f"({result.months_to_break_even:.1f} months at {result.assumptions['utilization']:.0%} utilization)"
        )
    else:
        line = f"buy: owning {count} x {gpu.name} (capex ${result.capex_usd:,.0f}) at this rent: {result.never}"
    return {
        "line": line,
        "jobs_to_pay_off": jobs,
        "never": result.never,
        "months_to_break_even": result.months_to_break_even,
        "life_years": life,
        "capex_usd": result.capex_usd,
        "rent_usd_per_gpu_hour": per_gpu_hour,
        "rent_90d_median": rent["median"],
    }
