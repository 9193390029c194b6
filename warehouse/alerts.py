"""After each run, compare with the previous state and say what a person should look at.

The checks are deliberately few and plain: large price moves, offers gone and new, a provider
failing run after run, and a provider returning far fewer offers than it usually does (the usual
sign that a page changed shape while still parsing).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

FAILURES_IN_A_ROW = 3
FEWER_OFFERS_RATIO = 0.5  # fewer than half the median of the recent successful runs
RECENT_RUNS = 7
GONE_WARNING_SHARE = 0.2


@dataclass(frozen=True, slots=True)
class Alert:
    run_id: int | None
    provider: str
    kind: str  # large_move | offers_gone | offers_new | failing | fewer_offers | implausible_move | ...
    severity: str  # info | warning | error
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_run(con: duckdb.DuckDBPyConnection, run_id: int) -> list[Alert]:
    """Alerts for one finished run (ok or failed)."""
    return check_runs(con, [run_id]).get(run_id, [])


def check_runs(con: duckdb.DuckDBPyConnection, run_ids: list[int]) -> dict[int, list[Alert]]:
    """Alerts for several finished runs (ok or failed), by run id: a few set-based queries for all of them.

    A refresh asks about six runs at once; the same checks one run at a time took ~8 queries each.
    """
    facts = con.execute(
        f"""SELECT r.run_id, r.provider, r.status, r.offers, r.prices_closed, r.error,
               (SELECT list(s.status ORDER BY s.run_id DESC) FROM (
                   SELECT status, run_id FROM scrape_runs s WHERE s.provider = r.provider
                   AND s.status IN ('ok', 'failed') AND s.run_id <= r.run_id ORDER BY s.run_id DESC
                   LIMIT {FAILURES_IN_A_ROW}) s) AS recent,
               -- offers first seen at this run's observation time -- unless an earlier run observed the
               -- same moment (a replay of the same recording), in which case nothing is new
               (SELECT count(*) FROM scrape_runs s WHERE s.provider = r.provider AND s.status = 'ok'
                   AND s.run_id < r.run_id AND s.observed_at = r.observed_at) AS same_moment,
               (SELECT count(*) FROM offers o WHERE o.provider = r.provider AND o.first_seen = r.observed_at) AS new,
               (SELECT count(*) FROM scrape_runs s WHERE s.provider = r.provider AND s.status = 'ok'
                   AND s.run_id < r.run_id) AS earlier_runs,
               -- runs of the same parser version only: a parser that regroups offers (Vast.ai's parser 2 no
               -- longer splits groups by country) changes the count without the source changing
               (SELECT list(s.offers) FROM (
                   SELECT offers FROM scrape_runs s WHERE s.provider = r.provider AND s.status = 'ok'
                   AND s.run_id < r.run_id AND s.parser_version IS NOT DISTINCT FROM r.parser_version
                   ORDER BY s.run_id DESC LIMIT {RECENT_RUNS}) s) AS usual,
               (SELECT count(*) FROM prices p JOIN offers o USING (offer_id)
                   WHERE o.provider = r.provider AND p.valid_to IS NULL) AS listed
           FROM scrape_runs r WHERE list_contains(?::BIGINT[], r.run_id)""",
        [list(run_ids)],
    ).fetchall()
    moves: dict[int, list[tuple[Any, ...]]] = {}
    for row in con.execute(
        """SELECT f.run_id, o.region, o.instance_type, f.pricing, f.old_usd, f.new_usd, f.change_pct
           FROM price_flags f JOIN offers o USING (offer_id) WHERE list_contains(?::BIGINT[], f.run_id)
           ORDER BY f.run_id, abs(f.change_pct) DESC""",
        [list(run_ids)],
    ).fetchall():
        moves.setdefault(row[0], []).append(row[1:])
    found: dict[int, list[Alert]] = {}
    for run_id, provider, status, offers, closed, error, recent, same_moment, new, earlier, usual, listed in facts:
        found[run_id] = _alerts(
            run_id,
            provider,
            status,
            offers,
            closed,
            error,
            recent=recent or [],
            moves=moves.get(run_id, []),
            new=0 if same_moment else int(new),
            earlier_runs=int(earlier),
            usual=usual or [],
            listed=int(listed),
        )
    return found


def _alerts(
    run_id: int,
    provider: str,
    status: str,
    offers: int,
    closed: int,
    error: str | None,
    *,
    recent: list[str],
    moves: list[tuple[Any, ...]],
    new: int,
    earlier_runs: int,
    usual: list[int],
    listed: int,
) -> list[Alert]:
    alerts: list[Alert] = []
    if status == "failed":
        if len(recent) == FAILURES_IN_A_ROW and all(r == "failed" for r in recent):
            alerts.append(
                Alert(
                    run_id,
                    provider,
                    "failing",
                    "error",
                    f"{provider} failed {FAILURES_IN_A_ROW} runs in a row: {error}",
                )
            )
        return alerts
    if status != "ok":
        return alerts
    if moves:
        region, itype, pricing, old, new_usd, change = moves[0]
        alerts.append(
            Alert(
                run_id,
                provider,
                "large_move",
                "warning",
                f"{provider}: {len(moves)} price(s) moved more than 60 %; largest {itype} {region} {pricing} "
                f"${old:.4g} -> ${new_usd:.4g} ({100 * change:+.0f} %)",
            )
        )
    previous_open = offers - new
    if earlier_runs:
        if closed:
            share = closed / max(previous_open + closed, 1)
            severity = "warning" if share > GONE_WARNING_SHARE else "info"
            alerts.append(
                Alert(run_id, provider, "offers_gone", severity, f"{provider}: {closed} price(s) no longer listed")
            )
        if new:
            alerts.append(Alert(run_id, provider, "offers_new", "info", f"{provider}: {new} new offer(s)"))
    # A run that skipped unchanged sources (AWS regions whose publication did not change) parses only
    # part of the provider's offers; the prices it carried forward are still listed, so they count.
    listed = max(offers or 0, listed)
    if usual and listed < FEWER_OFFERS_RATIO * statistics.median(usual):
        alerts.append(
            Alert(
                run_id,
                provider,
                "fewer_offers",
                "warning",
                f"{provider}: {listed} offers, far fewer than usual (median {statistics.median(usual):.0f} "
                f"over the last {len(usual)} runs) — did the source change?",
            )
        )
    return alerts


def record(con: duckdb.DuckDBPyConnection, alerts: list[Alert]) -> None:
    if alerts:
        now = datetime.now(UTC)
        con.execute(
            "INSERT INTO alerts SELECT unnest(?::BIGINT[]), unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
            "unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), unnest(?::TIMESTAMPTZ[])",
            [
                [a.run_id for a in alerts],
                [a.provider for a in alerts],
                [a.kind for a in alerts],
                [a.severity for a in alerts],
                [a.message for a in alerts],
                [now for _ in alerts],
            ],
        )
