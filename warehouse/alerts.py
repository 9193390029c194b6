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
    kind: str  # large_move | offers_gone | offers_new | failing | fewer_offers
    severity: str  # info | warning | error
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> Any:
    return con.execute(sql, params).fetchall()[0][0]


def check_run(con: duckdb.DuckDBPyConnection, run_id: int) -> list[Alert]:
    """Alerts for one finished run (ok or failed)."""
    row = con.execute(
        "SELECT provider, status, offers, prices_closed, observed_at, error FROM scrape_runs WHERE run_id = ?",
        [run_id],
    ).fetchall()
    if not row:
        return []
    provider, status, offers, closed, observed, error = row[0]
    alerts: list[Alert] = []
    recent = con.execute(
        "SELECT status FROM scrape_runs WHERE provider = ? AND status IN ('ok', 'failed') AND run_id <= ? "
        "ORDER BY run_id DESC LIMIT ?",
        [provider, run_id, FAILURES_IN_A_ROW],
    ).fetchall()
    if status == "failed":
        if len(recent) == FAILURES_IN_A_ROW and all(r[0] == "failed" for r in recent):
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
    moves = con.execute(
        """SELECT o.region, o.instance_type, f.pricing, f.old_usd, f.new_usd, f.change_pct
           FROM price_flags f JOIN offers o USING (offer_id) WHERE f.run_id = ? ORDER BY abs(f.change_pct) DESC""",
        [run_id],
    ).fetchall()
    if moves:
        region, itype, pricing, old, new, change = moves[0]
        alerts.append(
            Alert(
                run_id,
                provider,
                "large_move",
                "warning",
                f"{provider}: {len(moves)} price(s) moved more than 60 %; largest {itype} {region} {pricing} "
                f"${old:.4g} -> ${new:.4g} ({100 * change:+.0f} %)",
            )
        )
    # offers first seen at this run's observation time -- unless an earlier run observed the same moment
    # (a replay of the same recording), in which case nothing is new
    same_moment = _one(
        con,
        "SELECT count(*) FROM scrape_runs WHERE provider = ? AND status = 'ok' AND run_id < ? AND observed_at = ?",
        [provider, run_id, observed],
    )
    new = (
        0
        if same_moment
        else _one(con, "SELECT count(*) FROM offers WHERE provider = ? AND first_seen = ?", [provider, observed])
    )
    previous_open = offers - new
    earlier_runs = _one(
        con, "SELECT count(*) FROM scrape_runs WHERE provider = ? AND status = 'ok' AND run_id < ?", [provider, run_id]
    )
    if earlier_runs:
        if closed:
            share = closed / max(previous_open + closed, 1)
            severity = "warning" if share > GONE_WARNING_SHARE else "info"
            alerts.append(
                Alert(run_id, provider, "offers_gone", severity, f"{provider}: {closed} price(s) no longer listed")
            )
        if new:
            alerts.append(Alert(run_id, provider, "offers_new", "info", f"{provider}: {new} new offer(s)"))
    usual = [
        r[0]
        for r in con.execute(
            # runs of the same parser version only: a parser that regroups offers (Vast.ai's parser 2 no longer
            # splits groups by country) changes the count without the source changing
            "SELECT offers FROM scrape_runs WHERE provider = ? AND status = 'ok' AND run_id < ? "
            "AND parser_version IS NOT DISTINCT FROM (SELECT parser_version FROM scrape_runs WHERE run_id = ?) "
            "ORDER BY run_id DESC LIMIT ?",
            [provider, run_id, run_id, RECENT_RUNS],
        ).fetchall()
    ]
    # A run that skipped unchanged sources (AWS regions whose publication did not change) parses only
    # part of the provider's offers; the prices it carried forward are still listed, so they count.
    listed = max(offers or 0, _one(con, "SELECT count(*) FROM current_prices WHERE provider = ?", [provider]))
    if status == "ok" and usual and listed < FEWER_OFFERS_RATIO * statistics.median(usual):
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
        con.executemany(
            "INSERT INTO alerts VALUES (?,?,?,?,?,?)",
            [[a.run_id, a.provider, a.kind, a.severity, a.message, now] for a in alerts],
        )
