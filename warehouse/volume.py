"""The mass-disappearance guard: a source that suddenly answers with far fewer offers is broken, not empty.

A cloud or a marketplace never loses most of its GPU offers overnight; an upstream that answers
with an empty list, a stub page or a tenth of yesterday's rows is failing, even when it says 200.
Loading such an answer would close every missing price, so the refresh compares each *source*
(scope) of a provider with that source's last good run before loading:

* a scope that had offers and now has none is suspect;
* a scope with fewer than ``min_share`` of its last good count is suspect (default 0.5: under half);
* a run that read its sources but found no offer at all is suspect even with nothing to compare against.

A suspect run is recorded as failed, the provider's previous prices stay current, an error alert is
raised and the exit code is 1; ``--accept-drop PROVIDER`` loads it anyway when a person has
confirmed that the drop is real. Scopes whose source was unchanged (carried forward) are not
compared, nor are scopes the provider is no longer configured to read (a region removed from
``COSTOPT_AWS_REGIONS``).

The share is configured per provider: ``COSTOPT_GUARD_MIN_SHARE_<PROVIDER>`` (e.g.
``COSTOPT_GUARD_MIN_SHARE_VASTAI=0.3``), else ``COSTOPT_GUARD_MIN_SHARE``, else 0.5; ``0`` keeps
only the rule that a source may not drop to nothing.

Scope names and counts come from the providers (``scraper.base.Provider.scope_of``); this module
only stores and compares them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from warehouse.errors import UsageError

if TYPE_CHECKING:
    import duckdb

DEFAULT_MIN_SHARE = 0.5
SHARE_VARIABLE = "COSTOPT_GUARD_MIN_SHARE"
SPOT_RISK_SCOPE = "spot_risk"


def share_variable(provider: str) -> str:
    return f"{SHARE_VARIABLE}_{provider.upper()}"


def min_share(env: Mapping[str, str], provider: str) -> float:
    """The configured share for ``provider``; a value that is not a number in [0, 1] is a usage error."""
    for variable in (share_variable(provider), SHARE_VARIABLE):
        text = (env.get(variable) or "").strip()
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0.0 <= value <= 1.0:
            raise UsageError(f"{variable}={text!r}: give a share between 0 and 1, e.g. 0.5 (under half is suspect)")
        return value
    return DEFAULT_MIN_SHARE


@dataclass(frozen=True, slots=True)
class Drop:
    """One source that answered with far fewer offers than its last good run."""

    scope: str
    offers: int
    baseline: int | None  # the last good run's count; None when there is nothing to compare with
    baseline_run: int | None = None

    def describe(self) -> str:
        if self.baseline is None:
            return f"{self.scope}: {self.offers} offers, and no earlier run to compare with"
        run = f" (run {self.baseline_run})" if self.baseline_run is not None else ""
        return f"{self.scope}: {self.offers} offers, last good run{run} had {self.baseline}"


SHOWN_DROPS = 3


def suspect_message(provider: str, drops: list[Drop], share: float) -> str:
    """The one-line reason a run is refused, with what the rule was and how to override it."""
    rule = f"under {share:.0%} of the last good run" if share > 0 else "none"
    shown = "; ".join(d.describe() for d in drops[:SHOWN_DROPS])
    more = f" (and {len(drops) - SHOWN_DROPS} more sources)" if len(drops) > SHOWN_DROPS else ""
    return (
        f"suspect: {shown}{more} -- previous prices kept "
        f"(rule: {rule} is suspect; confirm a real change with --accept-drop {provider})"
    )


def baselines(con: duckdb.DuckDBPyConnection, provider: str) -> dict[str, tuple[int, int]]:
    """scope -> (offers, run id) of the newest successful run that read that scope."""
    rows = con.execute(
        """SELECT s.scope, s.offers, s.run_id FROM run_scopes s JOIN scrape_runs r USING (run_id)
           WHERE s.provider = ? AND r.status = 'ok'
           QUALIFY row_number() OVER (PARTITION BY s.scope ORDER BY s.run_id DESC) = 1""",
        [provider],
    ).fetchall()
    return {scope: (int(offers), int(run_id)) for scope, offers, run_id in rows}


def open_counts(con: duckdb.DuckDBPyConnection, provider: str, scope_of: Callable[[str, str], str]) -> dict[str, int]:
    """Per scope, the offers currently open: the baseline of a warehouse written before ``run_scopes``.

    A marketplace group counts its listings, as the runs do.
    """
    counts: Counter[str] = Counter()
    for region, pricing, weight in con.execute(
        """SELECT c.region, c.pricing, sum(coalesce(m.offer_count, 1)) FROM current_prices c
           LEFT JOIN market_current m USING (provider, region, instance_type, pricing)
           WHERE c.provider = ? GROUP BY ALL""",
        [provider],
    ).fetchall():
        counts[scope_of(region, pricing)] += int(weight)
    for region, rows in con.execute(
        "SELECT region, count(*) FROM spot_risk WHERE provider = ? AND run_id = (SELECT max(run_id) FROM spot_risk "
        "WHERE provider = ?) GROUP BY region",
        [provider, provider],
    ).fetchall():
        counts[scope_of(region, SPOT_RISK_SCOPE)] += int(rows)
    return dict(counts)


def check(
    con: duckdb.DuckDBPyConnection,
    provider: str,
    counts: Mapping[str, int],
    *,
    carried: Collection[str],
    expects: Callable[[str], bool],
    scope_of: Callable[[str, str], str],
    share: float,
) -> list[Drop]:
    """The scopes of this run that dropped to nothing or below ``share`` of their last good run."""
    stored = baselines(con, provider)
    fallback = open_counts(con, provider, scope_of) if not stored else {}
    known: dict[str, tuple[int, int | None]] = {scope: (n, None) for scope, n in fallback.items()}
    known.update(stored)
    drops: list[Drop] = []
    for scope in sorted(set(known) | set(counts)):
        if scope in carried or not expects(scope) or scope not in known:
            continue
        before, run_id = known[scope]
        now = int(counts.get(scope, 0))
        if before > 0 and (now == 0 or now < share * before):
            drops.append(Drop(scope, now, before, run_id))
    if not drops and not carried and sum(counts.values()) == 0:
        total = sum(n for scope, (n, _) in known.items() if expects(scope)) or None
        drops.append(Drop("every source", 0, total))
    return drops
