"""``costopt breakeven``: when owning GPUs beats renting them, at the prices actually observed."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.options import DbOption, ExactOption, FormatOption
from cli.output import Format
from optimizer import defaults as d


def breakeven_command(
    gpu: Annotated[str, typer.Option("--gpu", help="GPU name or alias, e.g. H100.")],
    count: Annotated[int, typer.Option("--count", help="GPUs bought.")] = 8,
    utilization: Annotated[float, typer.Option("--utilization", help="Share of hours in use.")] = d.UTILIZATION.value,
    power_price: Annotated[float, typer.Option("--power-price", help="USD per kWh.")] = d.POWER_PRICE.value,
    pue: Annotated[float, typer.Option("--pue", help="Data-centre power usage effectiveness.")] = d.PUE.value,
    life_years: Annotated[float, typer.Option("--life-years", help="Depreciation life.")] = d.LIFE_YEARS.value,
    residual: Annotated[float, typer.Option("--residual", help="Resale value, share of capex.")] = d.RESIDUAL.value,
    server_cost: Annotated[
        float | None, typer.Option("--server-cost", help="Whole capex in USD (default: GPU price + server share).")
    ] = None,
    hosting_per_kw_month: Annotated[
        float, typer.Option("--hosting-per-kw-month", help="Colocation, USD per kW-month.")
    ] = d.HOSTING_PER_KW_MONTH.value,
    rent_price: Annotated[
        float | None,
        typer.Option(
            "--rent-price", help="Rent per GPU-hour (default: cheaper of cloud on-demand and the marketplace median)."
        ),
    ] = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
    exact: ExactOption = False,
) -> None:
    """Capex, opex and the rent they compete with: break-even hours, utilization and months."""
    from cli.output import print_table, say, to_rounded_json
    from cli.warehouse_access import open_for_reading
    from optimizer import inputs
    from optimizer.breakeven import Inputs, breakeven
    from warehouse.errors import UsageError
    from warehouse.gpus import catalog

    spec = catalog().resolve(gpu)
    observed: dict = {"current": None, "median": None, "median_days": 0, "cloud": None, "market": None}
    if rent_price is None:
        with open_for_reading(db) as wh:
            observed = inputs.rent_observed(wh.con, spec.name)
        if observed["current"] is None:
            raise UsageError(f"no observed on-demand rent for {spec.name} in the warehouse: give --rent-price")
        rent, source = observed["current"], observed["current_from"]
    else:
        rent, source = rent_price, "--rent-price"
    common = dict(
        gpu=spec, count=count, utilization=utilization, power_price=power_price, pue=pue, life_years=life_years,
        residual=residual, server_cost=server_cost, hosting_per_kw_month=hosting_per_kw_month,
    )  # fmt: skip
    result = breakeven(Inputs(rent_usd_per_gpu_hour=rent, rent_source=source, **common))  # type: ignore[arg-type]
    data = result.as_dict()
    at_median = None
    if observed["median"] and rent_price is None:
        at_median = breakeven(
            Inputs(rent_usd_per_gpu_hour=observed["median"], rent_source="90-day median", **common)  # type: ignore[arg-type]
        )
    data["rent"] = {
        "usd_per_gpu_hour": rent,
        "source": source,
        "cloud_on_demand": observed["cloud"],
        "marketplace_median": observed["market"],
        "history_median_usd_per_gpu_hour": observed["median"],
        "history_days_observed": observed["median_days"],
        "at_history_median": None
        if at_median is None
        else {k: at_median.as_dict()[k] for k in ("months_to_break_even", "break_even_utilization", "never")},
    }
    if format is not Format.table:
        print(to_rounded_json(data, exact=exact))
        return

    a = data["assumptions"]
    life = f"{life_years:g}-year life"

    def months(r) -> str:  # type: ignore[no-untyped-def]
        if r.months_to_break_even is not None:
            return f"{r.months_to_break_even:.1f}"
        return "never" + (f" ({r.months_needed:.1f} months needed)" if r.months_needed is not None else "")

    util = (
        f"{result.break_even_utilization:.0%}"
        if result.break_even_utilization is not None
        else "never" + (f" ({result.utilization_needed:.0%} needed)" if result.utilization_needed else "")
    )
    hours = f"{result.break_even_hours:,.0f}" if result.break_even_hours is not None else "never"
    rows = [
        ["capex", f"${result.capex_usd:,.0f}", a["capex_source"]],
        ["power per hour of use", f"${a['power_usd_per_hour_of_use']:,.2f}",
         f"{a['it_power_kw']:.1f} kW x PUE {pue:g} x ${power_price:g}/kWh"],
        ["hosting per month", f"${a['hosting_usd_per_month']:,.0f}",
         f"{a['it_power_kw']:.1f} kW x ${hosting_per_kw_month:g}/kW-month, busy or idle"],
        ["rent per hour", f"${result.rent_usd_per_hour:,.2f}", f"{count} x ${rent:.2f}/GPU-h, {source}"],
        ["months to break even", months(result), f"at {utilization:.0%} utilization, within a {life}"],
        ["break-even utilization", util, f"pays off exactly over the {life}"],
        ["break-even hours of use", hours, "by the break-even month"],
    ]  # fmt: skip
    if at_median is not None:
        rows.append(
            ["90-day median rent", f"${observed['median']:.2f}/GPU-h",
             f"months to break even at it: {months(at_median)} ({observed['median_days']} "
             f"day{'s' if observed['median_days'] != 1 else ''} observed)"]
        )  # fmt: skip
    for key, label in (("cloud", "cheapest cloud on-demand"), ("market", "marketplace median")):
        alt = observed.get(key)
        if alt is not None and rent_price is None:
            rows.append([label, f"${alt['usd_per_gpu_hour']:.2f}/GPU-h", alt["from"]])
    print_table(rows, ["", "value", "from"], title=f"Buy vs rent: {count} x {spec.name}")
    if result.never:
        say(result.never, indent="  ")
    say(
        f"assumes: PUE {pue:g}, ${power_price:g}/kWh, ${hosting_per_kw_month:g}/kW-month hosting, "
        f"{life}, {residual:.0%} residual, rent {a['rent_path']}; every assumption is a flag (--help)"
    )
