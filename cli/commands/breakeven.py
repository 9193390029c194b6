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
    rent_trend: Annotated[
        str | None,
        typer.Option(
            "--rent-trend",
            help="How rents change a year, e.g. -30%/y or 0 (default: fitted on the price history, "
            "or a stated default when it is too short).",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
    exact: ExactOption = False,
) -> None:
    """Capex, opex and the rent they compete with: break-even at today's rent and along the rent trend."""
    import sys

    from cli.output import print_table, say, to_rounded_csv_row, to_rounded_json
    from cli.warehouse_access import open_for_reading
    from optimizer import inputs
    from optimizer.breakeven import Inputs
    from optimizer.buy_or_rent import choose_trend, report
    from optimizer.rent_trend import parse_rate
    from warehouse.errors import UsageError
    from warehouse.gpus import catalog

    spec = catalog().resolve(gpu)
    if rent_trend is not None:
        parse_rate(rent_trend)  # a bad value fails before anything is read
    observed: dict = {"current": None, "median": None, "median_days": 0, "cloud": None, "market": None}
    if rent_price is None or rent_trend is None:
        with open_for_reading(db) as wh:
            if rent_price is None:
                observed = inputs.rent_observed(wh.con, spec.name)
            trend = choose_trend(wh.con, spec.name, rent_trend)
    else:
        trend = choose_trend(None, spec.name, rent_trend)
    if rent_price is None:
        if observed["current"] is None:
            raise UsageError(f"no observed on-demand rent for {spec.name} in the warehouse: give --rent-price")
        rent, source = observed["current"], observed["current_from"]
    else:
        rent, source = rent_price, "--rent-price"
    common = dict(
        gpu=spec, count=count, utilization=utilization, power_price=power_price, pue=pue, life_years=life_years,
        residual=residual, server_cost=server_cost, hosting_per_kw_month=hosting_per_kw_month,
    )  # fmt: skip
    answer = report(
        Inputs(rent_usd_per_gpu_hour=rent, rent_source=source, **common),  # type: ignore[arg-type]
        trend,
        observed if rent_price is None else None,
    )
    result, along, at_median = answer.today, answer.along_trend, answer.at_history_median
    data = answer.as_dict()
    if format is Format.json:
        print(to_rounded_json(data, exact=exact))
        return
    if format is Format.csv:  # the JSON's one object flattened: dotted columns (cli/output.flattened), one row
        sys.stdout.write(to_rounded_csv_row(data, exact=exact))
        return

    a = data["assumptions"]
    life = f"{life_years:g}-year life"

    def months(r) -> str:  # type: ignore[no-untyped-def]
        if r.months_to_break_even is not None:
            return f"{r.months_to_break_even:.1f}"
        return "never" + (f" ({r.months_needed:.1f} months needed)" if r.months_needed is not None else "")

    def util(r) -> str:  # type: ignore[no-untyped-def]
        if r.break_even_utilization is not None:
            return f"{r.break_even_utilization:.0%}"
        return "never" + (f" ({r.utilization_needed:.0%} needed)" if r.utilization_needed else "")

    hours = f"{result.break_even_hours:,.0f}" if result.break_even_hours is not None else "never"
    t = answer.trend
    if t.basis == "fit":
        trend_from = (
            f"fitted on {t.offers} offers of {', '.join(t.providers)}, {t.first_day}..{t.last_day} "
            f"(95 %: {t.low:+.1%} to {t.high:+.1%}; the daily cheapest of all: {t.naive_rate_per_year or 0:+.1%})"
        )
    elif t.basis == "default":
        trend_from = f"stated default, {t.why_default}: rent halves as GPU price-performance doubles (Epoch AI)"
    else:
        trend_from = "--rent-trend"
    rows = [
        ["capex", f"${result.capex_usd:,.0f}", a["capex_source"]],
        ["power per hour of use", f"${a['power_usd_per_hour_of_use']:,.2f}",
         f"{a['it_power_kw']:.1f} kW x PUE {pue:g} x ${power_price:g}/kWh"],
        ["hosting per month", f"${a['hosting_usd_per_month']:,.0f}",
         f"{a['it_power_kw']:.1f} kW x ${hosting_per_kw_month:g}/kW-month, busy or idle"],
        ["rent per hour", f"${result.rent_usd_per_hour:,.2f}", f"{count} x ${rent:.2f}/GPU-h, {source}"],
        ["months to break even", months(result), f"at {utilization:.0%} utilization, within a {life}, today's rent"],
        ["break-even utilization", util(result), f"pays off exactly over the {life}, today's rent"],
        ["break-even hours of use", hours, "by the break-even month, today's rent"],
        ["rent trend", f"{t.rate_per_year:+.1%} a year", trend_from],
        ["rent at end of life", f"${answer.rent_at_end_of_life:.2f}/GPU-h", f"today's ${rent:.2f} along the trend"],
        ["months, along the trend", months(along), f"at {utilization:.0%} utilization, the rent as projected"],
        ["utilization, along the trend", util(along), f"pays off exactly over the {life}"],
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
        say(f"at today's rent: {result.never}", indent="  ")
    if along.never:
        say(f"along the rent trend: {along.never}", indent="  ")
    say(
        f"assumes: PUE {pue:g}, ${power_price:g}/kWh, ${hosting_per_kw_month:g}/kW-month hosting, "
        f"{life}, {residual:.0%} residual; every assumption is a flag (--help)"
    )
