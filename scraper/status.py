"""``costopt status``: is this install healthy, and if not, what to do next.

One look answers what an operator asks before trusting a plan or after a night's cron mail: where the
warehouse is and how big, its schema version, how each provider is configured (is its credential set:
never its value; which regions it reads), when it last succeeded and last failed (with the reason), how
old its current prices are, and what to do about whatever is wrong. It only reads: the warehouse is
opened read-only, never created, migrated or seeded, so a monitor can call it every minute.

The rules for the per-provider ``state`` (what a monitor reads in ``--format json``):

* ``ok``: the last run loaded and the provider's prices were confirmed less than ``OVERDUE_HOURS`` ago;
* ``failing``: its latest run failed (or was cancelled) after its last success; the reason is kept;
* ``overdue``: nothing went wrong, but no run has confirmed its prices for ``OVERDUE_HOURS``;
* ``no key``: it needs a credential that is not set (GCP), and has never loaded live prices;
* ``snapshot``: its only prices are the bundled snapshot or replayed recordings, never a live scrape;
* ``never run``: nothing in the warehouse from it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import duckdb

OVERDUE_HOURS = 48.0  # a nightly job that missed one night is still fine; two is a problem
ALERT_DAYS = 7


@dataclass(slots=True)
class ProviderStatus:
    name: str
    state: str
    credential: str | None  # the environment variable it reads (never its value)
    credential_required: bool
    credential_set: bool
    without_credential: str
    regions: list[str] | None  # None: every region its source lists
    config_error: str | None  # a bad region variable, said as a refresh would say it
    base_url_overrides: dict[str, str]  # variable -> host (never a path or query: they may hold a token)
    last_success: dict[str, Any] | None
    last_failure: dict[str, Any] | None
    failures_since_success: int
    prices: dict[str, Any] | None  # current prices: count, newest observation and its age, oldest source time


@dataclass(slots=True)
class Status:
    checked_at: datetime
    warehouse: dict[str, Any]
    providers: list[ProviderStatus] = field(default_factory=list)
    history: dict[str, Any] | None = None
    alerts: dict[str, Any] | None = None
    next_steps: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).stat().st_size
            except OSError:
                continue
    return total


def _configuration(name: str, env: Mapping[str, str]) -> dict[str, Any]:
    from scraper.providers import provider_class
    from warehouse.errors import CostoptError

    cls = provider_class(name)
    provider = cls(env)
    regions: list[str] | None = None
    error = None
    try:
        configured = provider.configured_regions()
        regions = list(configured) if configured is not None else None
    except CostoptError as exc:
        error = exc.one_line()
    overrides = {}
    for variable in cls.base_urls:
        value = (env.get(variable) or "").strip()
        if value:
            overrides[variable] = urlsplit(value).netloc or "(not a URL)"
    key = cls.credential_var
    return {
        "credential": key,
        "credential_required": cls.credential_required,
        "credential_set": bool(key and (env.get(key) or "").strip()),
        "without_credential": cls.without_credential,
        "regions": regions,
        "config_error": error,
        "base_url_overrides": overrides,
    }


def _latest(con: duckdb.DuckDBPyConnection, where: str) -> dict[str, dict[str, Any]]:
    cursor = con.execute(
        f"""SELECT provider, run_id, mode, status, started_at, observed_at, offers, error
            FROM scrape_runs WHERE mode <> 'import' AND {where}
            QUALIFY row_number() OVER (PARTITION BY provider ORDER BY run_id DESC) = 1"""
    )
    names = [d[0] for d in cursor.description]
    return {row[0]: dict(zip(names[1:], row[1:], strict=True)) for row in cursor.fetchall()}


def _hours(now: datetime, then: datetime | None) -> float | None:
    return None if then is None else round((now - then).total_seconds() / 3600, 1)


def _read(con: duckdb.DuckDBPyConnection, now: datetime) -> dict[str, Any]:
    """Everything status needs from the warehouse, per provider."""
    con.execute("SET TimeZone = 'UTC'")
    success = _latest(con, "status = 'ok'")
    failure = _latest(con, "status IN ('failed', 'skipped', 'cancelled')")
    live = _latest(con, "status = 'ok' AND mode IN ('live', 'reparse')")
    since: dict[str, int] = {}
    for provider, count in con.execute(
        """SELECT r.provider, count(*) FROM scrape_runs r
           WHERE r.mode <> 'import' AND r.status IN ('failed', 'cancelled')
             AND r.run_id > coalesce((SELECT max(run_id) FROM scrape_runs s
                                      WHERE s.provider = r.provider AND s.status = 'ok' AND s.mode <> 'import'), 0)
           GROUP BY 1"""
    ).fetchall():
        since[provider] = int(count)
    prices = {}
    for provider, count, observed, oldest_source, origins in con.execute(
        """SELECT provider, count(*), max(observed_at), min(source_time),
                  list(DISTINCT data_origin ORDER BY data_origin)
           FROM current_prices GROUP BY provider"""
    ).fetchall():
        prices[provider] = {
            "current": int(count),
            "observed_at": observed,
            "observed_age_hours": _hours(now, observed),
            "oldest_source_time": oldest_source,
            "oldest_source_age_hours": _hours(now, oldest_source),
            "data_origin": list(origins),
        }
    history = None
    row = con.execute(
        """SELECT count(*), min(valid_from), max(coalesce(valid_to, last_seen)),
                  list(DISTINCT archive_repository ORDER BY archive_repository)
           FROM prices WHERE archive_repository IS NOT NULL"""
    ).fetchall()[0]
    if row[0]:
        history = {"imported_intervals": int(row[0]), "first": row[1], "last": row[2], "archives": list(row[3])}
    alerts: dict[str, Any] = {"days": ALERT_DAYS, "warning": 0, "error": 0, "latest": None}
    for severity, count in con.execute(
        f"SELECT severity, count(*) FROM alerts WHERE created_at > now() - INTERVAL {ALERT_DAYS} DAY GROUP BY 1"
    ).fetchall():
        if severity in alerts:
            alerts[severity] = int(count)
    latest = con.execute(
        "SELECT provider, severity, message, created_at FROM alerts WHERE severity <> 'info' "
        "ORDER BY created_at DESC LIMIT 1"
    ).fetchall()
    if latest:
        alerts["latest"] = dict(zip(("provider", "severity", "message", "created_at"), latest[0], strict=True))
    return {
        "success": success,
        "failure": failure,
        "live": live,
        "since": since,
        "prices": prices,
        "history": history,
        "alerts": alerts,
    }


def _state(config: dict[str, Any], data: dict[str, Any], name: str, now: datetime) -> str:
    success, failure = data["success"].get(name), data["failure"].get(name)
    if config["credential_required"] and not config["credential_set"] and name not in data["live"]:
        return "no key"
    if success is None:
        return "failing" if failure is not None and failure["status"] != "skipped" else "never run"
    if failure is not None and failure["run_id"] > success["run_id"] and failure["status"] != "skipped":
        return "failing"
    if name not in data["live"]:
        return "snapshot"
    age = _hours(now, (data["prices"].get(name) or {}).get("observed_at") or success["observed_at"])
    if age is not None and age > OVERDUE_HOURS:
        return "overdue"
    return "ok"


def _next_steps(status: Status, data: dict[str, Any]) -> list[str]:
    steps: list[str] = []
    wh = status.warehouse
    if wh["schema_version"] < wh["schema_latest"]:
        steps.append(
            f"the warehouse has schema version {wh['schema_version']} of {wh['schema_latest']}: the next "
            "`costopt refresh` migrates it"
        )
    by_state: dict[str, list[ProviderStatus]] = {}
    for p in status.providers:
        by_state.setdefault(p.state, []).append(p)
    for p in by_state.get("failing", []):
        reason = (p.last_failure or {}).get("error") or "no reason recorded"
        steps.append(f"{p.name} is failing ({p.failures_since_success} run(s) since its last success): {reason}")
        if "suspect" in reason:
            steps.append(
                f"if {p.name}'s drop in offers is real, confirm it once: "
                f"`costopt refresh --provider {p.name} --accept-drop {p.name}`"
            )
        else:
            steps.append(f"see `costopt runs --provider {p.name}`")
    for p in status.providers:
        if p.config_error:
            steps.append(f"{p.name}: {p.config_error}")
    for p in by_state.get("no key", []):
        steps.append(f"{p.name}: set {p.credential} to scrape it ({p.without_credential})")
    snap = by_state.get("snapshot", [])
    if snap:
        dates = sorted({str(p.last_success["observed_at"])[:10] for p in snap if p.last_success})
        steps.append(
            f"{', '.join(p.name for p in snap)}: prices are recorded, not live ({', '.join(dates)}): "
            "`costopt refresh` fetches live ones, and `costopt schedule` (or cron) keeps them fresh"
        )
    overdue = by_state.get("overdue", [])
    if overdue:
        steps.append(
            f"{', '.join(p.name for p in overdue)}: no run has confirmed their prices for over "
            f"{OVERDUE_HOURS:g} hours: is the nightly refresh running? (README: Scheduling the nightly refresh)"
        )
    alerts = data["alerts"]
    if alerts["warning"] or alerts["error"]:
        steps.append(
            f"{alerts['error']} error and {alerts['warning']} warning alert(s) in the last {ALERT_DAYS} days: "
            "`costopt runs --alerts`"
        )
    return steps or ["nothing to do: every provider loaded recently"]


def status(
    path: Path, *, env: Mapping[str, str] | None = None, now: datetime | None = None, on_wait: object = None
) -> Status:
    """The state of the warehouse at ``path`` and of each registered provider's configuration and runs."""
    from scraper.providers import NAMES
    from warehouse.db import connect, schema_version
    from warehouse.migrations import LATEST
    from warehouse.paths import raw_dir

    env = os.environ if env is None else env
    now = now or datetime.now(UTC)
    configs = {name: _configuration(name, env) for name in NAMES}
    exists = path.is_file()
    warehouse: dict[str, Any] = {
        "path": str(path),
        "exists": exists,
        "bytes": path.stat().st_size + (_wal.stat().st_size if (_wal := Path(f"{path}.wal")).is_file() else 0)
        if exists
        else 0,
        "raw_payloads_path": str(raw_dir(path)),
        "raw_payloads_bytes": _size(raw_dir(path)) if exists else 0,
        "schema_version": 0,
        "schema_latest": LATEST,
    }
    result = Status(checked_at=now, warehouse=warehouse)
    empty: dict[str, Any] = {
        "success": {},
        "failure": {},
        "live": {},
        "since": {},
        "prices": {},
        "history": None,
        "alerts": {"days": ALERT_DAYS, "warning": 0, "error": 0, "latest": None},
    }
    data = empty
    if exists:
        con = connect(path, read_only=True, on_wait=on_wait, core=True)  # plain SQL: the engine alone (warehouse.db)
        try:
            warehouse["schema_version"] = schema_version(con)
            if warehouse["schema_version"] >= 4:  # the provenance columns the queries read
                data = _read(con, now)
        finally:
            con.close()
    for name in NAMES:
        config = configs[name]
        result.providers.append(
            ProviderStatus(
                name=name,
                state=_state(config, data, name, now),
                last_success=data["success"].get(name),
                last_failure=data["failure"].get(name),
                failures_since_success=data["since"].get(name, 0),
                prices=data["prices"].get(name),
                **config,
            )
        )
    result.history = data["history"]
    result.alerts = data["alerts"]
    if not exists:
        result.next_steps = [
            f"no warehouse at {path} yet: `costopt refresh` builds it from live prices; any read command "
            "(`costopt prices`) loads the bundled snapshot into the default one"
        ] + [f"{p.name}: set {p.credential} to scrape it" for p in result.providers if p.state == "no key"]
    else:
        result.next_steps = _next_steps(result, data)
    return result
