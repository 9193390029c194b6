"""How fast a GPU's rent falls: a log-linear fit on its price history, its projection, and a stated default.

Rents for a given GPU fall over its life (newer GPUs arrive, supply grows), so a break-even computed
at today's rent is too kind to buying. This module answers "at what rate per year?" from the
warehouse, with its uncertainty and the period it rests on:

* **Series**: the on-demand $/GPU-hour of every offer (provider x region x instance type, whole GPUs)
  on every UTC day it was listed, the cheapest where it had two prices that day; imported archives
  and scrapes alike.
* **Fit**: ordinary least squares of ln(price) on time with one level per offer (fixed effects), so
  the slope comes from how each offer's own price moved, not from which offers happen to be in the
  data. The daily cheapest over everything (``naive_rate_per_year``, also reported) is what a renter
  pays, but its trend mostly measures coverage: an archive that lists 60 Azure regions where a
  scrape reads 8, or a cheap marketplace that starts being recorded, looks like a price cut. The
  rate is ``exp(slope x 365.25) - 1`` per year.
* **Uncertainty**: the slope's standard error, widened for the serial correlation of daily prices
  (a price holds for weeks, so consecutive days are nearly the same observation): the residuals'
  lag-1 autocorrelation rho inflates it by sqrt((1 + rho) / (1 - rho)). The 95 % interval is
  slope +- 1.96 standard errors, as a rate per year. It is an interval for list prices moving the way
  they moved in the period, not a forecast of shocks.
* **Too little history** (no offer listed over at least ``MIN_SPAN_DAYS`` days, or fewer than
  ``MIN_DAYS`` offer-days): the stated default below, named as such with its source.
* **One provider is not the market**: a break-even competes with the rents a renter can get anywhere,
  and one provider's list price can stand still for years (GCP's a3-highgpu-8g: $88.49 an hour since
  May 2024) while the market moves, or be cut once (AWS p5, June 2025). So the fit is used only when
  at least ``MIN_PROVIDERS`` providers have history over ``MIN_SPAN_DAYS`` days each; with fewer, the
  stated default is used and the one-provider fit is still reported (``fit_rate_per_year``).

The projection is ``rent(t) = rent_now x (1 + rate)^t`` (t in years), the path break-even walks along.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from warehouse.errors import UsageError

if TYPE_CHECKING:
    import duckdb

MIN_SPAN_DAYS = 180  # a fit needs an offer listed over at least half a year ...
MIN_DAYS = 30  # ... and at least this many offer-days with a price
MIN_PROVIDERS = 2  # ... from at least this many providers with such a long history each
Z95 = 1.959964
DAYS_PER_YEAR = 365.25
MAX_RHO = 0.99  # cap on the autocorrelation used to widen the error (rho -> 1 would make it infinite)

# The stated default: FLOP/s per dollar of GPUs used for machine learning doubles every 2.07 years
# (95 % CI 1.54-3.13 years; Hobbhahn & Besiroglu, Epoch AI 2022, "Trends in GPU price-performance",
# https://www.alignmentforum.org/posts/c6KFvQcZggQKZzxr9/trends-in-gpu-price-performance). If a GPU's
# rent keeps pace with what the same compute costs on newer hardware, it falls by 2^(-1/2.07) - 1 =
# -28.5 % a year (-36.2 % to -19.9 % over that interval).
DEFAULT_DOUBLING_YEARS = (2.07, 1.54, 3.13)
DEFAULT_SOURCE = (
    "default: GPU price-performance for ML doubles every 2.07 years (95 % CI 1.54-3.13; Hobbhahn & "
    "Besiroglu, Epoch AI 2022, https://www.alignmentforum.org/posts/c6KFvQcZggQKZzxr9/"
    "trends-in-gpu-price-performance), so rent for the same compute halves as often"
)


def _halving_rate(years: float) -> float:
    return float(2 ** (-1 / years) - 1)


@dataclass(frozen=True, slots=True)
class RentTrend:
    """A rent trend for one GPU: the rate per year, its 95 % interval and what it rests on."""

    gpu: str
    rate_per_year: float  # -0.25: the rent falls 25 % a year
    low: float  # 95 % interval of the rate
    high: float
    basis: str  # "fit" | "default" | "override"
    source: str  # what the figure rests on, in words
    first_day: date | None = None
    last_day: date | None = None
    days: int = 0  # offer-days with a price in the fit
    offers: int = 0  # offers seen on at least two days (the others carry no trend)
    providers: tuple[str, ...] = ()
    rho: float | None = None  # lag-1 autocorrelation of the fit's residuals
    naive_rate_per_year: float | None = None  # the same fit on the cheapest of all providers per day
    why_default: str | None = None
    fit_rate_per_year: float | None = None  # the fit itself, also when the default was used instead

    def rent_at(self, rent_now: float, years: float) -> float:
        """The projected rent ``years`` from now (a price per hour in, the same unit out)."""
        return rent_now * (1 + self.rate_per_year) ** years

    def path(self, rent_now: float, years: float, steps_per_year: int = 12) -> list[tuple[float, float]]:
        """(years from now, projected rent) at the start of each step, now included, up to ``years``."""
        steps = max(1, math.ceil(years * steps_per_year))
        return [
            (min(years, n / steps_per_year), self.rent_at(rent_now, min(years, n / steps_per_year)))
            for n in range(steps + 1)
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "rate_per_year": round(self.rate_per_year, 4),
            "rate_low": round(self.low, 4),
            "rate_high": round(self.high, 4),
            "basis": self.basis,
            "source": self.source,
            "period": None if self.first_day is None else f"{self.first_day}..{self.last_day}",
            "offer_days": self.days,
            "offers": self.offers,
            "providers": list(self.providers),
            "autocorrelation": None if self.rho is None else round(self.rho, 3),
            "naive_rate_per_year": None if self.naive_rate_per_year is None else round(self.naive_rate_per_year, 4),
            "why_default": self.why_default,
            "fit_rate_per_year": None if self.fit_rate_per_year is None else round(self.fit_rate_per_year, 4),
        }


@dataclass(slots=True)
class _Fit:
    slope: float  # per day
    se: float  # widened for autocorrelation
    rho: float
    n: int  # days
    groups: int  # groups with at least two days
    first: date
    last: date


Run = tuple[int, int, float]  # first day, last day (inclusive, days from an origin), ln(price)


def _sum_t(a: int, b: int) -> float:
    """Sum of t for t = a..b (0 when b < a)."""
    return 0.0 if b < a else (a + b) * (b - a + 1) / 2


def _sum_tt(a: int, b: int) -> float:
    """Sum of t squared for t = a..b (0 when b < a); valid for negative a too."""

    def upto(k: int) -> float:  # sum of t^2 for t = 0..k, extended so upto(k) - upto(a-1) works for any a
        return k * (k + 1) * (2 * k + 1) / 6

    return 0.0 if b < a else upto(b) - upto(a - 1)


def _ols_runs(groups: dict[str, list[Run]]) -> _Fit | None:
    """ln(price) = level[group] + slope x day over piecewise-constant daily series, in closed form.

    A run of n days at one price contributes its sums (n, sum t, sum t^2, ...) at once, so years of
    daily prices cost what their price changes cost. ``None`` when no group spans two days.
    """
    stats = []
    for runs in groups.values():
        n = sum(b - a + 1 for a, b, _ in runs)
        if n < 2:
            continue
        st = sum(_sum_t(a, b) for a, b, _ in runs)
        stt = sum(_sum_tt(a, b) for a, b, _ in runs)
        sy = sum((b - a + 1) * y for a, b, y in runs)
        syy = sum((b - a + 1) * y * y for a, b, y in runs)
        sty = sum(y * _sum_t(a, b) for a, b, y in runs)
        sxx = stt - st * st / n
        if sxx <= 0:
            continue
        stats.append((runs, n, st / n, sy / n, sxx, sty - st * sy / n, syy - sy * sy / n))
    if not stats:
        return None
    sxx = sum(s[4] for s in stats)
    sxy = sum(s[5] for s in stats)
    n = sum(s[1] for s in stats)
    dof = n - len(stats) - 1
    if sxx <= 0 or dof <= 0:
        return None
    slope = sxy / sxx
    ssr = max(0.0, sum(s[6] for s in stats) - slope * sxy)
    # lag-1 autocorrelation of the residuals e_t = c_run - slope x t, over consecutive days of a group
    lagged = 0.0
    for runs, _, mean_t, mean_y, *_ in stats:
        previous_end: tuple[int, float] | None = None
        for a, b, y in runs:
            c = y - mean_y + slope * mean_t
            # inside the run: sum over t = a..b-1 of (c - slope t)(c - slope (t+1))
            m = b - a
            lagged += (m * c * c - 2 * c * slope * _sum_t(a, b - 1) + slope * slope * _sum_tt(a, b - 1)) - slope * (
                m * c - slope * _sum_t(a, b - 1)
            )
            if previous_end is not None and previous_end[0] == a - 1:
                lagged += previous_end[1] * (c - slope * a)
            previous_end = (b, c - slope * b)
    rho = min(max(lagged / ssr, 0.0), MAX_RHO) if ssr > 0 else MAX_RHO
    se = math.sqrt(ssr / dof / sxx) * math.sqrt((1 + rho) / (1 - rho))
    first = min(a for runs, *_ in stats for a, _, _ in runs)
    last = max(b for runs, *_ in stats for _, b, _ in runs)
    return _Fit(slope, se, rho, n, len(stats), _ORIGIN + timedelta(days=first), _ORIGIN + timedelta(days=last))


_ORIGIN = date(2000, 1, 1)


def runs_of(days: Iterable[tuple[str, date, float]]) -> dict[str, list[Run]]:
    """Daily ``(group, day, price)`` points -> runs of consecutive days at one price, per group."""
    out: dict[str, list[Run]] = {}
    for group, day, usd in sorted(days):
        t, y = (day - _ORIGIN).days, math.log(usd)
        runs = out.setdefault(group, [])
        if runs and runs[-1][1] == t - 1 and abs(runs[-1][2] - y) < 1e-12:
            runs[-1] = (runs[-1][0], t, y)
        elif runs and runs[-1][1] >= t:
            continue  # a second price for the same day: the first (the cheapest, by sort order) stands
        else:
            runs.append((t, t, y))
    return out


def _annual(slope_per_day: float) -> float:
    return math.exp(slope_per_day * DAYS_PER_YEAR) - 1


def fit(
    gpu: str, intervals: Iterable[tuple[str, str, date, date, float]], *, min_providers: int = MIN_PROVIDERS
) -> RentTrend:
    """The trend of ``(provider, offer, first day, last day, on-demand $/GPU-hour)`` price runs.

    Each run says the offer was listed at that price on every UTC day from its first to its last day
    (inclusive). Where two runs of one offer share a day (a price changed that day), the later price
    owns it. Falls back to the stated default when the history is too short, or when fewer than
    ``min_providers`` providers have a long enough history of their own.
    """
    by_offer: dict[str, list[tuple[date, date, float]]] = {}
    provider_of: dict[str, str] = {}
    for provider, offer, first, last, usd in intervals:
        if usd > 0 and last >= first:
            by_offer.setdefault(offer, []).append((first, last, usd))
            provider_of[offer] = provider
    groups: dict[str, list[Run]] = {}
    for offer, spans in by_offer.items():
        spans.sort()
        runs: list[Run] = []
        for n, (first, last, usd) in enumerate(spans):
            if n + 1 < len(spans):
                last = min(last, spans[n + 1][0] - timedelta(days=1))
            if runs:
                first = max(first, _ORIGIN + timedelta(days=runs[-1][1] + 1))
            if last >= first:
                runs.append(((first - _ORIGIN).days, (last - _ORIGIN).days, math.log(usd)))
        if runs:
            groups[offer] = runs
    days = sum(b - a + 1 for runs in groups.values() for a, b, _ in runs)
    longest = max((runs[-1][1] - runs[0][0] for runs in groups.values()), default=0)
    if not groups:
        return default_trend(gpu, "no on-demand price history")
    if longest < MIN_SPAN_DAYS or days < MIN_DAYS:
        return default_trend(
            gpu,
            f"{days} offer-days, the longest-listed offer over {longest} days; a fit needs {MIN_DAYS} "
            f"offer-days and an offer listed over {MIN_SPAN_DAYS} days",
        )
    found = _ols_runs(groups)
    if found is None:
        return default_trend(gpu, "the history cannot separate a trend from the offers' levels")
    providers = tuple(sorted({provider_of[o] for o, runs in groups.items() if runs[-1][1] > runs[0][0]}))
    cheapest: dict[int, float] = {}
    for runs in groups.values():
        for a, b, y in runs:
            for t in range(a, b + 1):
                cheapest[t] = min(y, cheapest.get(t, math.inf))
    naive = _ols_runs(runs_of(("all", _ORIGIN + timedelta(days=t), math.exp(y)) for t, y in cheapest.items()))
    reach: dict[str, tuple[int, int]] = {}  # per provider: its first and last day
    for offer, runs in groups.items():
        a, b = reach.get(provider_of[offer], (runs[0][0], runs[-1][1]))
        reach[provider_of[offer]] = (min(a, runs[0][0]), max(b, runs[-1][1]))
    long_enough = sorted(p for p, (a, b) in reach.items() if b - a >= MIN_SPAN_DAYS)
    if len(long_enough) < min_providers:
        held = ", ".join(long_enough) or "no provider"
        fallback = default_trend(
            gpu,
            f"only {held} has price history over {MIN_SPAN_DAYS} days; one provider's list price is not the "
            f"market (its own fit: {_annual(found.slope):+.1%} a year, {found.first}..{found.last})",
        )
        return dataclasses.replace(
            fallback,
            fit_rate_per_year=_annual(found.slope),
            naive_rate_per_year=None if naive is None else _annual(naive.slope),
        )
    return RentTrend(
        gpu=gpu,
        rate_per_year=_annual(found.slope),
        low=_annual(found.slope - Z95 * found.se),
        high=_annual(found.slope + Z95 * found.se),
        basis="fit",
        source=(
            f"log-linear fit on the daily on-demand $/GPU-hour of {found.groups} offers of "
            f"{', '.join(providers)}, {found.n} offer-days {found.first}..{found.last}, one level per offer"
        ),
        first_day=found.first,
        last_day=found.last,
        days=found.n,
        offers=found.groups,
        providers=providers,
        rho=found.rho,
        naive_rate_per_year=None if naive is None else _annual(naive.slope),
        fit_rate_per_year=_annual(found.slope),
    )


def default_trend(gpu: str, why: str) -> RentTrend:
    central, fast, slow = DEFAULT_DOUBLING_YEARS
    return RentTrend(
        gpu=gpu,
        rate_per_year=_halving_rate(central),
        low=_halving_rate(fast),
        high=_halving_rate(slow),
        basis="default",
        source=DEFAULT_SOURCE,
        why_default=why,
    )


def override(gpu: str, rate_per_year: float) -> RentTrend:
    """A trend the user states (``--rent-trend -30%/y``): no interval, named as the user's."""
    if not -1 < rate_per_year < 10:
        raise UsageError(f"--rent-trend must be above -100 % a year, got {rate_per_year:+.0%}")
    return RentTrend(gpu, rate_per_year, rate_per_year, rate_per_year, "override", "--rent-trend (stated by the user)")


_RATE = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s*(%)?\s*(?:/\s*(?:y|yr|year|a))?\s*$", re.I)


def parse_rate(text: str) -> float:
    """``-30%/y``, ``-30%``, ``-0.3`` or ``0`` -> a rate per year (-0.30)."""
    match = _RATE.match(text)
    if match is None:
        raise UsageError(f"cannot read --rent-trend {text!r}: use a rate per year such as -30%/y, -30% or -0.3")
    value = float(match.group(1))
    return value / 100 if match.group(2) else value


def series(
    con: duckdb.DuckDBPyConnection, gpu: str, *, since: date | None = None
) -> list[tuple[str, str, date, date, float]]:
    """``(provider, offer, first UTC day, last UTC day, on-demand $/GPU-hour)`` per price interval.

    An interval covers the UTC days it overlaps (a single observation covers its own day), as in
    ``costopt history``; whole-GPU offers only.
    """
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    start = since or date(1970, 1, 1)
    rows = con.execute(
        """SELECT o.provider, o.provider || '/' || o.region || '/' || o.instance_type,
                  greatest(p.valid_from, ?::DATE::TIMESTAMPTZ)::DATE,
                  CASE WHEN coalesce(p.valid_to, p.last_seen) > p.valid_from
                       THEN (coalesce(p.valid_to, p.last_seen) - INTERVAL 1 MICROSECOND)::DATE
                       ELSE p.valid_from::DATE END,
                  p.usd_per_hour / o.gpu_count
           FROM prices p JOIN offers o USING (offer_id)
           WHERE o.gpu = ? AND p.pricing = 'on_demand' AND o.gpu_count >= 1
             AND coalesce(p.valid_to, p.last_seen) >= ?::DATE::TIMESTAMPTZ""",
        [start, gpu, start],
    ).fetchall()
    return [(provider, offer, first, last, float(usd)) for provider, offer, first, last, usd in rows]


def rent_trend(con: duckdb.DuckDBPyConnection, gpu: str, *, since: date | None = None) -> RentTrend:
    """The fitted rent trend of ``gpu`` from the warehouse's history, or the stated default."""
    return fit(gpu, series(con, gpu, since=since))
