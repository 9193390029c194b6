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
    *JSON_KEYS, "usd_per_gpu_hour", "age_hours", "wall_low", "wall_expected", "wall_high", "cost_low",
    "cost_expected", "cost_high", "on_demand_cost_usd", "savings_usd", "pareto", "notes",
]  # fmt: skip


def _notes(row: dict[str, Any]) -> list[str]:
    """Short flags for the table; the long reasons are in --explain and the JSON."""
    notes = []
    if row["pareto"]:
        notes.append("pareto")
    if row["pricing"] in ("spot", "interruptible"):
        notes.append(f"+{row['spot_overhead']:.1%} interruptions")
        if row.get("savings_basis"):
            notes.append("vs cheapest on-demand")
        elif row.get("on_demand_cost_usd") is None:
            notes.append("no on-demand to compare")
    if row["instances"] > 1 and row["fabric"] == "ethernet":
        notes.append("Ethernet between nodes")
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
    from optimizer.plan import Constraints, build_plan
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
        best = plan.options.row(0, named=True)
        buy_line = _buy_line(wh.con, best) if buy else None
    flops = job.flops().total
    rows = [dict(r, notes=_notes(r)) for r in plan.options.head(top).iter_rows(named=True)]
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
                "usd_per_gpu_hour": r["usd_per_gpu_hour"],
                "price_age_hours": r["age_hours"],
                "price_source": r["source"],
                "wall_hours": {"low": r["wall_low"], "expected": r["wall_expected"], "high": r["wall_high"]},
                "cost_usd": {"low": r["cost_low"], "expected": r["cost_expected"], "high": r["cost_high"]},
                "on_demand_cost_usd": r["on_demand_cost_usd"],
                "savings_usd": r["savings_usd"],
                "added_hours": r["added_hours"],
                "pareto": r["pareto"],
                "notes": r["notes"],
            }
            for r in rows
        ]
        data: dict[str, Any] = {"job": job_info, "prices_as_of": as_of, "prices": note_text, "options": options}
        if buy_line is not None:
            data["buy"] = buy_line
        if show_infeasible:
            data["dropped"] = plan.dropped
        print(to_json(data))
        return
    if format is Format.csv:
        emit([dict(r, notes="; ".join(r["notes"])) for r in rows], CSV_COLUMNS, format)
        return
    _print_human(job_info, as_of, note_text, rows, plan, top, buy_line, show_infeasible, explain, job)


def _print_human(info, _as_of, note_text, rows, plan, top, buy_line, show_infeasible, explain, job) -> None:
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
    for r in rows:
        savings = ""
        if r["savings_usd"] is not None and r["on_demand_cost_usd"]:
            savings = f"{money(r['savings_usd'])} ({r['savings_usd'] / r['on_demand_cost_usd']:.0%})"
            if r["added_hours"] is not None:
                savings += f", {'+' if r['added_hours'] >= 0 else '-'}{human_hours(abs(r['added_hours']) or 1e-9)}"
        table.append(
            [
                r["provider"],
                r["instance_type"],
                f"{r['gpu']} x{r['gpus_per_instance']} x{r['instances']}",
                r["region"],
                r["pricing"],
                f"${r['usd_per_gpu_hour']:.2f}",
                f"{r['age_hours']:.0f}h" if r["age_hours"] is not None else "",
                f"{human_hours(r['wall_expected'])} ({human_hours(r['wall_low'])}-{human_hours(r['wall_high'])})",
                f"{money(r['cost_expected'])} ({money(r['cost_low'])}-{money(r['cost_high'])})",
                savings,
                "; ".join(r["notes"]),
            ]
        )
    header = ["provider", "instance", "GPU x n x inst", "region", "pricing", "$/GPU-h", "age", "wall time (range)",
              "cost (range)", "spot saves", "notes"]  # fmt: skip
    print_table(table, header, title=f"Cheapest {len(rows)} of {plan.options.height} options by expected cost")
    print(
        "wall time and cost: expected (fastest plausible - slowest plausible); pareto = no option is both "
        "cheaper and faster; --explain for assumptions, --format json for scripts"
    )
    if buy_line is not None:
        print(buy_line["line"])
    if show_infeasible and plan.dropped:
        print(f"\ndropped ({len(plan.dropped)}):")
        for d in plan.dropped[:200]:
            print(f"  {d['offer']}: {d['reason']}")
    if explain:
        _explain(job)


def _explain(job) -> None:
    from optimizer import defaults, memory, mfu

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
    for name, a in defaults.SPOT_HAZARD.items():
        print(f"  spot hazard {name}: {a.value:.4g} {a.unit} ({a.source})")
    for label, a in (("checkpoint write", defaults.CHECKPOINT_WRITE_GBPS), ("restart", defaults.RESTART_HOURS)):
        print(f"  {label}: {a.value:g} {a.unit} ({a.source})")
    print("  checkpoint interval: Young/Daly sqrt(2C/(k.lambda)) unless --checkpoint-every")


def _buy_line(con, best: dict[str, Any]) -> dict[str, Any]:
    from optimizer import inputs
    from optimizer.breakeven import Inputs, breakeven, jobs_to_pay_off
    from warehouse.errors import UsageError
    from warehouse.gpus import catalog

    gpu = catalog().resolve(best["gpu"])
    count = best["gpus_per_instance"] * best["instances"]
    rent = inputs.rent_observed(con, gpu.name)
    try:
        result = breakeven(
            Inputs(
                gpu=gpu,
                count=count,
                rent_usd_per_gpu_hour=best["usd_per_gpu_hour"],
                rent_source="the plan's cheapest option",
            )
        )
    except UsageError as exc:
        return {"line": f"buy: {exc}", "jobs_to_pay_off": None}
    jobs = jobs_to_pay_off(result, best["wall_expected"], best["cost_expected"])
    line = (
        f"buy: owning {count} x {gpu.name} (capex ${result.capex_usd:,.0f}) pays off after {jobs:g} such jobs"
        if jobs is not None
        else f"buy: owning {count} x {gpu.name} never pays off at this rent"
    )
    return {"line": line, "jobs_to_pay_off": jobs, "capex_usd": result.capex_usd, "rent_90d_median": rent["median"]}
