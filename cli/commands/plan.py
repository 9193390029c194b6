"""``costopt plan``: what a training job costs and how long it takes on every current offer."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.commands.estimate import (
    ActiveOption,
    CheckpointOption,
    EmbeddingsOption,
    HiddenOption,
    LayersOption,
    MeasuredOption,
    MethodOption,
    MfuOption,
    MicroBatchOption,
    ModelOption,
    NoCheckpointOption,
    PrecisionOption,
    RecomputeOption,
    SeqLenOption,
    StackOption,
    TokensOption,
    VocabOption,
    build_job,
    recompute_setting,
    sequence_note,
    shape_note,
)
from cli.completion import complete_gpu, complete_provider
from cli.options import DbOption, ExactOption, FormatOption, WideOption
from cli.output import Format

JSON_KEYS = [
    "provider", "instance_type", "region", "gpu", "gpus_per_instance", "instances", "pricing",
    "usd_per_instance_hour",
]  # fmt: skip
CSV_COLUMNS = [
    *JSON_KEYS, "regions", "usd_per_gpu_hour", "listings", "market_basis", "data_origin", "source_time",
    "source_basis", "source_age_hours", "wall_low", "wall_expected", "wall_high", "cost_low", "cost_expected",
    "cost_high", "on_demand_cost_usd", "savings_usd", "speed_basis", "pareto", "slow", "notes",
    # the rest of the JSON's fields, after the columns CSV readers already know: the price's source, when it was
    # observed and in force since, the marketplace listings' countries, and the precision and interruption terms
    "source", "observed_at", "effective_since", "listing_countries", "precision", "added_hours", "spot_overhead",
    "hazard_source", "fabric", "extrapolated_because", "mfu_ceiling_binds", "recompute", "tensor_parallel",
]  # fmt: skip
"""The CSV holds every field of the JSON's options, flattened: the ``price_*`` fields without their prefix,
``wall_hours`` and ``cost_usd`` as ``wall_low`` ... ``cost_high``, lists (regions, countries) space-separated, the
reasons of ``extrapolated_because`` (sentences with commas) "; "-separated."""


def _notes(row: dict[str, Any], horizon_days: float, precision: str = "bf16") -> list[str]:
    """Short flags for the table; the long reasons are in --explain and the JSON."""
    notes = []
    if _precision(row["gpu"], precision) != precision:
        notes.append("fp16 (no bf16)")
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
    if row["recompute"] == "full":
        notes.append("full recompute")
    if row["tensor_parallel"] > 1:
        notes.append(f"TP{row['tensor_parallel']}")
    if row["speed_basis"] == "extrapolated":
        notes.append("speed extrapolated")
    return notes


def plan_command(
    model: ModelOption,
    tokens: TokensOption,
    gpu: Annotated[
        list[str] | None, typer.Option("--gpu", help="Only this GPU (repeatable).", autocompletion=complete_gpu)
    ] = None,
    provider: Annotated[
        list[str] | None,
        typer.Option("--provider", help="Only this provider (repeatable).", autocompletion=complete_provider),
    ] = None,
    region: Annotated[list[str] | None, typer.Option("--region", help="Only this region (repeatable).")] = None,
    spot: Annotated[bool, typer.Option("--spot", help="Show only spot and interruptible options.")] = False,
    no_spot: Annotated[bool, typer.Option("--no-spot", help="Show only on-demand options.")] = False,
    deadline: Annotated[
        str | None, typer.Option("--deadline", help="Expected wall time at most: 90min, 36h, 14d, 2w, 3mo.")
    ] = None,
    budget: Annotated[float | None, typer.Option("--budget", help="Expected cost at most, USD.")] = None,
    max_gpus: Annotated[int, typer.Option("--max-gpus", help="At most this many GPUs in one job.")] = 256,
    top: Annotated[
        int | None,
        typer.Option("--top", min=1, help="Show this many options (table: 15; json/csv: all).", show_default=False),
    ] = None,
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
    layers: LayersOption = None,
    hidden: HiddenOption = None,
    vocab: VocabOption = None,
    embeddings: EmbeddingsOption = None,
    method: MethodOption = "full",
    precision: PrecisionOption = "bf16",
    seq_len: SeqLenOption = None,
    micro_batch: MicroBatchOption = 1,
    checkpointing: CheckpointOption = False,
    no_checkpointing: NoCheckpointOption = False,
    recompute: RecomputeOption = None,
    stack: StackOption = None,
    measured: MeasuredOption = None,
    mfu: MfuOption = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
    wide: WideOption = False,
    exact: ExactOption = False,
) -> None:
    """Cost and time of a training job on every offer that can hold it, cheapest first, with spot savings."""
    from optimizer.estimate import stack_class

    stack = stack_class(stack, mfu)  # --mfu replaces the stack class: both at once is refused, as in estimate
    from dataclasses import replace

    from cli.names import check_providers, check_regions
    from cli.options import either
    from cli.output import emit, to_rounded_json
    from cli.warehouse_access import open_for_reading
    from optimizer import inputs
    from optimizer.market import MarketPolicy
    from optimizer.plan import Constraints, build_plan, every_option_slow, stale_prices
    from optimizer.units import parse_duration_hours, positive
    from warehouse.gpus import catalog

    showing = either(spot, no_spot, "--spot", "--no-spot")
    setting = recompute_setting(recompute, checkpointing, no_checkpointing)
    job = build_job(
        model, tokens, active_params, method, precision, seq_len, micro_batch, setting, stack, measured,
        layers=layers, hidden=hidden, vocab=vocab, embeddings=embeddings,
    )  # fmt: skip
    constraints = Constraints(
        gpus=tuple(gpu or ()),
        providers=tuple(provider or ()),
        regions=tuple(region or ()),
        spot=showing,
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
        # one rule for names: an unknown provider or region is exit 2 with the known ones, not "no offer left"
        named = check_providers(wh.con, provider)
        places = check_regions(wh.con, region, providers=named, countries=True)
        constraints = replace(constraints, providers=tuple(named or ()), regions=tuple(places or ()))
        offers = inputs.current_offers(wh.con)
        risk = inputs.spot_risk(wh.con)
        as_of = inputs.prices_as_of(wh.con)
        note_text = wh.prices_note
        # without --all-counts only the default view's rows are made (plan.total still counts every option)
        plan = build_plan(
            job, offers, gpus, constraints, spot_risk=risk, mfu_override=mfu, view="all" if all_counts else "default"
        )
        view = plan.options
        best = view[0]
        buy_line = _buy_line(wh.con, best) if buy else None
    flops = job.flops().total
    horizon_days = constraints.horizon_hours / 24
    premium = constraints.market.bid_premium
    if top is None and format is Format.table:
        top = 15
    rows = [dict(r, bid_premium=premium) for r in (view if top is None else view[:top])]
    if format is not Format.table and len(rows) < len(view):
        from cli.output import note

        note(f"costopt: {len(rows)} of {len(view)} options (--top {top}); leave out --top for all")
    rows = [dict(r, notes=_notes(r, horizon_days, job.precision)) for r in rows]
    stale = stale_prices(rows)
    warnings = [_stale_line(stale)] if stale else []
    too_slow = every_option_slow(view, constraints)
    if too_slow:
        warnings.append(too_slow)
    from cli.plan_table import batch_line

    batch = batch_line(rows)
    if batch:
        warnings.append(batch)
    job_info = {
        "model": job.model.name,
        "total_params": job.model.total_params,
        "active_params": job.model.active_params,
        # the shape behind the attention FLOPs and memory, and where each part comes from (as estimate's JSON)
        "layers": job.model.layers,
        "hidden": job.model.hidden,
        "shape_basis": job.model.shape_basis,
        "vocab": job.model.vocab,
        "vocab_basis": job.model.vocab_basis,
        "embeddings": job.model.embeddings,
        "embeddings_basis": job.model.embeddings_basis,
        "tokens": job.tokens,
        "flops": flops,
        "method": job.method,
        "precision": job.precision,
        "stack": job.team if mfu is None else None,  # --mfu: no stack class applies
        "measured": str(job.measured) if job.measured is not None else None,
        "mfu": mfu,
        "recompute": job.recompute,
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
                "precision": _precision(r["gpu"], job.precision),
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
                "speed_basis": r["speed_basis"],
                "extrapolated_because": r["extrapolated_because"],
                "mfu_ceiling_binds": r["mfu_ceiling_binds"],
                "fabric": r["fabric"],
                "recompute": r["recompute"],
                "tensor_parallel": r["tensor_parallel"],
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
            "options_total": plan.total,
            "horizon_days": horizon_days,
            "market_price": constraints.market.price,
            "warnings": warnings,
            "options": options,
        }
        if buy_line is not None:
            data["buy"] = buy_line
        if show_infeasible:
            data["dropped"] = plan.dropped
        print(to_rounded_json(data, exact=exact))
        return
    if format is Format.csv:
        from cli.output import rounded

        flat = [
            dict(
                r,
                notes="; ".join(r["notes"]),
                regions=" ".join(r["regions"]),
                listing_countries=" ".join(r["countries"] or []),
                precision=_precision(r["gpu"], job.precision),
                spot_overhead=r["spot_overhead"] if r["pricing"] != "on_demand" else None,
                hazard_source=r["hazard_source"] or None,
                extrapolated_because="; ".join(r["extrapolated_because"]),
                mfu_ceiling_binds=" ".join(r["mfu_ceiling_binds"]),
            )
            for r in rows
        ]
        flat = flat if exact else [rounded(r) for r in flat]
        emit(flat, CSV_COLUMNS, format)
        return
    _print_human(
        job_info,
        note_text,
        rows,
        plan,
        len(view),
        buy_line,
        show_infeasible,
        explain,
        job,
        horizon_days,
        warnings,
        wide,
    )


def _print_human(
    info, note_text, rows, plan, shown, buy_line, show_infeasible, explain, job, horizon_days, warnings, wide
) -> None:
    from cli.output import say
    from cli.plan_table import band_line, origin_legend, print_plan_table, scope_line, speed_line
    from optimizer.units import human_count

    print(
        f"{info['model']} ({human_count(info['active_params'])} active params) x {human_count(info['tokens'])} tokens "
        f"= {info['flops']:.3g} FLOPs ({info['method']}, {info['precision']})"
    )
    shape = shape_note(job.model)
    if shape:
        say(shape)
    if job.seq_len_basis in ("assumed", "preset-assumed"):
        say(sequence_note(job))
    print(note_text)
    if info["measured"]:
        say(
            f"speed: your measured {info['measured']} (--measured), carried to each GPU and count by the model's "
            "terms; no stack class"
        )
    if info["mfu"] is not None:
        say(
            f"speed: {info['mfu']:.1%} MFU as given (--mfu) on every GPU, of its datasheet peak; not the calibrated "
            "model: no stack class, no range"
        )
    marks = origin_legend(r["data_origin"] for r in rows)
    slow = sum(1 for r in rows if r["slow"])
    footer = [
        f"* = Pareto front: no option is both cheaper and faster. Options slower than {horizon_days:g} days come last"
        + (f" ({slow} of these: the last {slow})." if slow else "."),
        band_line(rows, _range_basis(job)) if info["mfu"] is None else "",
        speed_line(rows),
        scope_line(rows),
        _precision_line(rows, info["precision"]),
        _ethernet_line(rows),
        _recompute_line(rows, job, mfu_given=info["mfu"] is not None),
        "age: since the source's own time (AWS offer-file publication, a recording's declared vintage, else when "
        "observed)" + ("; " + "; ".join(marks) + " (fixtures/<provider>/README.md)" if marks else ""),
        "--all-counts for every instance count, --explain for assumptions, --format json for scripts",
    ]
    print_plan_table(
        rows,
        title=f"Cheapest {len(rows)} of {shown} options by expected cost ({plan.total} with every count)",
        footer=[line for line in footer if line],
        wide=wide,
    )
    for line in warnings:
        say(line, indent="  ")
    if buy_line is not None:
        say(buy_line["line"], indent="  ")
    if show_infeasible and plan.dropped:
        print(f"\ndropped ({len(plan.dropped)}):")
        for d in plan.dropped[:200]:
            print(f"  {d['offer']}: {d['reason']}")
    if explain:
        _explain(job, wide, info["mfu"])


def _ethernet_line(rows: list[dict[str, Any]]) -> str:
    """Rows that rent several instances with no cluster network between them: the notes say "Ethernet", but at
    100 columns the notes are hidden, and such a row can top a plan."""
    ethernet = [r for r in rows if r["instances"] > 1 and r["fabric"] == "ethernet"]
    if not ethernet:
        return ""
    return (
        f"{len(ethernet)} of these rows rent several instances with no cluster network (RDMA) between them "
        "(note 'Ethernet'): their scale-out penalty is a stated guess, no calibration run"
    )


def _recompute_line(rows: list[dict[str, Any]], job, mfu_given: bool = False) -> str:
    """Rows whose job fits only with full activation recomputation (note 'full recompute'), and how their time was
    charged for it; at 100 columns the notes are hidden."""
    from optimizer.mfu import RECOMPUTE_FULL

    full = sum(1 for r in rows if r["recompute"] == "full")
    if not full:
        return ""
    if mfu_given:
        charged = "not charged under --mfu (your MFU is taken to include it)"
    elif job.measured is not None:
        charged = "charged against the strategy your measured run is taken to have run (--explain)"
    else:
        charged = f"their MFU charged x{RECOMPUTE_FULL:g}"
    why = "the job fits their GPUs only that way" if job.recompute == "auto" else "as asked (--recompute full)"
    return f"{full} of these rows recompute every layer's forward pass (note 'full recompute'): {why}, {charged}"


def _precision_line(rows: list[dict[str, Any]], precision: str) -> str:
    """Which shown GPUs run the job in another precision than asked (bf16 on V100/T4: fp16 mixed precision)."""
    other = sorted({r["gpu"] for r in rows if _precision(r["gpu"], precision) != precision})
    if not other:
        return ""
    return f"precision: {', '.join(other)} have no bf16 tensor cores: the job runs there in fp16 mixed precision"


def _precision(gpu: str, precision: str) -> str:
    """The precision the job runs in on ``gpu`` (bf16 runs as fp16 on V100 and T4)."""
    from warehouse.gpus import catalog

    spec = catalog().get(gpu)
    return spec.precision_used(precision) if spec is not None else precision


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


def _range_basis(job) -> str:
    """What the footer's range is, as measured out of sample (``mfu.range_claim``): a class's, or --measured's."""
    from optimizer import mfu

    if job.measured is not None:
        from optimizer.measured import DOUBLING_STEP

        return (
            f"--measured: on the measured GPU the goodput's band, its slow end x{DOUBLING_STEP:g} per doubling of GPUs "
            f"or servers away (stated); on other GPUs the same-team transfer band, {mfu.transfer_claim()}"
        )
    return mfu.range_claim(job.stack)


def _explain(job, wide: bool = False, mfu_given: float | None = None) -> None:
    """Every assumption the plan rests on, one row each: what, the value used, and where it comes from. With
    ``mfu_given`` (--mfu) the model's factors are not used and are not listed."""
    from cli.output import Column, print_table
    from optimizer import defaults, measured, memory, mfu, network
    from warehouse import spot_buckets

    fit = mfu.FITTED
    band_low, band_high = fit.band(job.stack)
    team = (
        "  x software stack",
        f"{job.stack}: x{fit.stack(job.stack):g}",
        f"--stack; {mfu.STACKS[job.stack]}",
    )
    band = (
        "MFU band",
        f"x{band_low:g} (slowest) to x{band_high:g} (fastest)",
        f"{mfu.range_claim(job.stack)} ({job.stack}'s own where 3 organisations stand behind it)",
    )
    if job.measured is not None:
        t_low, t_high = fit.transfer_band()
        g_low, g_high = measured.GOODPUT_RANGE
        team = (
            "  x your stack (--measured)",
            f"{job.measured}: its MFU x {measured.GOODPUT:g} goodput / the model's tuned MFU there",
            "your measurement; goodput stated (Llama 3 report: > 90 % effective training time)",
        )
        band = (
            "MFU band",
            f"on the measured GPU goodput {g_low:g}-{g_high:g} of {measured.GOODPUT:g}, its slow end "
            f"x{measured.DOUBLING_STEP:g} per doubling of GPUs or servers away (not below x{t_low:g}); on other GPUs "
            f"x{t_low:g}-x{t_high:g}",
            f"stated; on other GPUs a run predicted from another run of its team: {mfu.transfer_claim()}",
        )
    attention = f" + attention 12.L.d.S per token, {sequence_note(job)}"
    # the model's MFU: its factors, band and ceiling; under --mfu none applies, and one row says what does
    model: list[tuple[str, str, str]] = [
        ("realized MFU, base", f"{fit.base:g} on A100-80GB nodes", "fitted on published whole runs"),
        ("  x bandwidth per FLOP", f"(GB/s per TFLOPS / A100's)^{fit.bandwidth_exponent:g}", "fitted"),
        team,
        (
            "  x scale-out",
            f"1 / (1 + {fit.thin_params_per_gpu:.0e} x GPUs / N_active), across nodes",
            "fitted (T); form stated",
        ),
        (
            "  x node scaling",
            ", ".join(f"{k} {v:g}" for k, v in mfu.NODE_PENALTY.items()) + " per doubling of nodes",
            "stated: Llama 3 report (InfiniBand); Ethernet a guess",
        ),
        (
            "  x slowest link",
            f"PCIe 1/(1 + {mfu.PCIE_PENALTY:g} x log2 GPUs on it; one GPU per instance: all of the job's); across "
            "instances min(that, compute / network time of a micro-batch)",
            f"PCIe stated; network arithmetic: {network.TRAFFIC_BYTES_PER_PARAM['full']:g} B/parameter per "
            "micro-batch at the instance's bandwidth (optimizer/data/cluster_networks.csv); none stated: "
            f"{defaults.LONE_GPU_RDMA_GBPS.value:g} Gbit/s assumed for a one-GPU instance over RDMA, else not charged",
        ),
        ("  x mixture-of-experts", f"x{fit.moe:g}", "fitted"),
        (
            "  x full recomputation",
            f"x{mfu.RECOMPUTE_FULL:g} on the options that run it (note 'full recompute')",
            "arithmetic: 8.N.D of work for 6.N.D; selective's small cost is inside the calibrated base",
        ),
        ("  x V100/T4", f"x{fit.older:g}", "stated: Megatron-LM V100 vs A100 papers"),
        ("  x qlora", f"x{mfu.QLORA:g}", "stated: dequantization on every matmul"),
        (
            "  x AMD",
            ", ".join(f"{k} x{v:g}" + amd_span(k) for k, v in mfu.AMD_FACTOR.items()),
            "stated: CDNA 2 from AMD-OLMo's rate, CDNA 3 from benchmarks (optimizer/rocm_benchmarks.py)",
        ),
        band,
        ("MFU ceiling", f"{mfu.MFU_CEILING:g}", "no published whole run sustained more"),
    ]
    if mfu_given is not None:
        model = [("realized MFU", f"{mfu_given:g} on every GPU, of its datasheet peak", "given: --mfu (no range)")]
    rows: list[tuple[str, str, str]] = [
        (
            "FLOPs",
            f"6 x N_active x D{attention}",
            "PaLM (Chowdhery et al. 2022); an untied input embedding is a lookup, left out (presets)",
        ),
        *model,
        ("precision", f"{job.precision}; bf16 runs as fp16 on V100/T4", "GPU table: fp16_tflops, bf16_tflops"),
        ("FP8 speed-up over BF16", f"x{mfu.FP8_GAIN:g}", "stated: whole FP8 runs (round 4); benchmarks 1.28-1.42"),
        (
            "optimizer and weight state",
            ", ".join(f"{k} {v:g}" for k, v in memory.STATE_BYTES_PER_PARAM.items()) + " bytes/param",
            "mixed-precision Adam; ZeRO-3 sharding",
        ),
        ("usable GPU memory", f"{memory.USABLE_FRACTION:.0%}", "CUDA context, fragmentation"),
        _activations_row(job),
        (
            "fabric",
            "RDMA where the provider documents a cluster network for the instance family (AWS p4d/p5/p6 "
            "EFA, GCP A3/A4, Azure 'r' sizes, CoreWeave HGX); Ethernet otherwise; a marketplace option is one listing",
            "optimizer/data/cluster_networks.csv",
        ),
        (
            "instance counts",
            "minimum, doublings, largest under --max-gpus, smallest meeting --deadline",
            "search rule",
        ),
    ]
    for name, a in defaults.SPOT_HAZARD.items():
        rows.append((f"spot hazard, {name}", f"{a.value:.4g} {a.unit}", a.source))
    buckets = ", ".join(f"{b.label} -> {b.planning_pct:g} %" for b in spot_buckets.AWS_BUCKETS)
    rows.append(
        (
            "AWS Spot Advisor buckets",
            buckets,
            f"midpoints; open top bucket read as {spot_buckets.OPEN_BUCKET_PLANNING_PCT:g} %; "
            "lambda = -ln(1 - f) / 730 h",
        )
    )
    for label, a in (("checkpoint write", defaults.CHECKPOINT_WRITE_GBPS), ("restart", defaults.RESTART_HOURS)):
        rows.append((label, f"{a.value:g} {a.unit}", a.source))
    rows += [
        (
            "interruption overhead",
            "(M/tau) e^(R/M) (e^((tau+C)/M) - 1) - 1, M = 1/(k.lambda)",
            "Daly 2006; tau: Daly's optimum unless --checkpoint-every",
        ),
        (
            "marketplace price",
            "i-th of k instances at max(i-th cheapest listing, --market-price quantile)",
            "rule",
        ),
        (
            "marketplace listings",
            f"reliability >= {defaults.MIN_RELIABILITY.value:g}, at least {defaults.MIN_LISTINGS.value:g}",
            f"{defaults.MIN_RELIABILITY.source}; {defaults.MIN_LISTINGS.source}",
        ),
        ("marketplace bids", f"floor + {defaults.BID_PREMIUM.value:.0%}", defaults.BID_PREMIUM.source),
    ]
    for label, a in (("horizon", defaults.HORIZON_DAYS), ("stale after", defaults.STALE_DAYS)):
        rows.append((label, f"{a.value:g} {a.unit}", a.source))
    print()
    print_table(
        [list(r) for r in rows],
        [Column("what", "assumption", "text"), Column("value", "value", "text"), Column("source", "source", "text")],
        title="Assumptions (every one is a flag or a constant in optimizer/)",
        wide=wide,
    )


def _activations_row(job) -> tuple[str, str, str]:
    """--explain's row for activation recomputation: the rule each option's memory verdict and time follow."""
    from optimizer.estimate import RECOMPUTE_KEEPS, measured_recompute

    keeps = "; ".join(f"{name}: {what}" for name, what in RECOMPUTE_KEEPS.items())
    if job.recompute == "auto":
        value = f"--recompute auto: per option, selective where it fits the option's GPUs, else full ({keeps})"
    else:
        value = f"--recompute {job.recompute} on every option ({RECOMPUTE_KEEPS[job.recompute]})"
    value += (
        "; tensor parallelism with sequence parallelism inside the instance (note 'TPn'): none where the "
        "activations fit, else the smallest of 2, 4, 8 that fits, on NVLink/Infinity Fabric GPUs only; no time "
        "charged for it (the calibrated MFU comes from published runs at scale that used it)"
    )
    source = (
        "Korthikanti et al. 2022 (arXiv:2205.05198) with fused attention, activations / t with tensor and sequence "
        "parallelism; states sharded ZeRO-3/FSDP over all GPUs"
    )
    if job.measured is not None:
        source += f"; your measured run taken to have run {measured_recompute(job)}"
    return ("activations", value, source)


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


def amd_span(architecture: str) -> str:
    """A stated ROCm factor's range where no whole run checks it (the band spans it), for --explain."""
    from optimizer import mfu

    span = mfu.AMD_FACTOR_RANGE.get(architecture)
    return f" ({span[0]:g}-{span[1]:g}, spanned by the range)" if span else ""
