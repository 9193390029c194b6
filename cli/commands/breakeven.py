"""``costopt breakeven``: when owning GPUs beats renting them, at the prices actually observed."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.options import DbOption, FormatOption
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
        float | None, typer.Option("--rent-price", help="Rent per GPU-hour (default: cheapest observed on-demand).")
    ] = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
) -> None:
    """Capex, opex and the rent they compete with: break-even hours, utilization and months."""
    from cli.output import print_table, to_json
    from cli.warehouse_access import open_for_reading
    from optimizer import inputs
    from optimizer.breakeven import Inputs, breakeven
    from warehouse.errors import UsageError
    from warehouse.gpus import catalog

    spec = catalog().resolve(gpu)
    observed: dict = {"current": None, "median": None, "median_days": 0}
    if rent_price is None:
        with open_for_reading(db) as wh:
            observed = inputs.rent_observed(wh.con, spec.name)
        if observed["current"] is None:
            raise UsageError(f"no observed on-demand rent for {spec.name} in the warehouse: give --rent-price")
        rent, source = observed["current"], f"cheapest current on-demand: {observed['current_from']}"
    else:
        rent, source = rent_price, "--rent-price"
    result = breakeven(
        Inputs(
            gpu=spec, count=count, rent_usd_per_gpu_hour=rent, rent_source=source, utilization=utilization,
            power_price=power_price, pue=pue, life_years=life_years, residual=residual, server_cost=server_cost,
            hosting_per_kw_month=hosting_per_kw_month,
        )
    )  # fmt: skip
    data = result.as_dict()
    data["assumptions"]["rent_90d_median_usd_per_gpu_hour"] = observed["median"]
    data["assumptions"]["rent_90d_days_observed"] = observed["median_days"]
    if observed["median"] and rent_price is None:
        alt = breakeven(
            Inputs(
                gpu=spec,
                count=count,
                rent_usd_per_gpu_hour=observed["median"],
                rent_source="median",
                utilization=utilization,
                power_price=power_price,
                pue=pue,
                life_years=life_years,
                residual=residual,
                server_cost=server_cost,
                hosting_per_kw_month=hosting_per_kw_month,
            )
        )
        data["assumptions"]["break_even_hours_at_90d_median"] = alt.break_even_hours
    if format is not Format.table:
        print(to_json(data))
        return

    def opt(v: float | None, fmt: str) -> str:
        return "never" if v is None else format_value(v, fmt)

    rows = [
        ["capex", f"${result.capex_usd:,.0f}", data["assumptions"]["capex_source"]],
        ["opex per hour of use", f"${result.opex_usd_per_hour:,.2f}",
         f"power ${data['assumptions']['power_usd_per_hour']:.2f} + hosting "
         f"${data['assumptions']['hosting_usd_per_hour_of_use']:.2f}"],
        ["rent per hour", f"${result.rent_usd_per_hour:,.2f}", f"{count} x ${rent:.2f}/GPU-h, {source}"],
        ["break-even hours of use", opt(result.break_even_hours, ",.0f"), "capex x (1 - residual) / (rent - opex)"],
        ["break-even utilization", opt(result.break_even_utilization, ".0%"), f"over {life_years:g} years"],
        ["months to break even", opt(result.months_to_break_even, ".1f"), f"at {utilization:.0%} utilization"],
    ]  # fmt: skip
    if observed["median"]:
        rows.append(
            [
                "90-day median rent",
                f"${observed['median']:.2f}/GPU-h",
                f"break-even {opt(data['assumptions'].get('break_even_hours_at_90d_median'), ',.0f')} hours",
            ]
        )
    print_table(rows, ["", "value", "from"], title=f"Buy vs rent: {count} x {spec.name}")
    print(
        f"assumes: PUE {pue:g}, ${power_price:g}/kWh, ${hosting_per_kw_month:g}/kW-month hosting, "
        f"{life_years:g}-year life, {residual:.0%} residual; every assumption is a flag (--help)"
    )


def format_value(value: float, fmt: str) -> str:
    return format(value, fmt)
