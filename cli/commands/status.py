"""``costopt status``: the warehouse, each provider's configuration and runs, and what to do next."""

from __future__ import annotations

from typing import Any

from cli.options import DbOption, FormatOption, WideOption
from cli.output import Column, Format

COLUMNS = [
    Column("provider", kind="name"),
    Column("state", kind="name"),
    Column("credential", "key", "name"),
    Column("regions", kind="name", drop=2),
    Column("success", "last success", "name"),
    Column("failure", "last failure", "name", drop=1),
    Column("prices", "prices", "figure"),
    Column("age", "age", "figure"),
]


def status_command(db: DbOption = None, format: FormatOption = Format.table, wide: WideOption = False) -> None:
    """Warehouse path, size and schema; each provider's key (set or not), regions, last success and failure,
    price age; and what to do next. Read-only: never creates or changes the warehouse."""
    from cli.output import note, to_json
    from cli.warehouse_access import resolve_db
    from scraper.status import status

    report = status(resolve_db(db), on_wait=note)
    if format is not Format.table:
        data = report.as_dict()
        if format is Format.csv:
            from cli.output import emit

            emit([_flat(p) for p in data["providers"]], list(_flat(data["providers"][0])), format)
            return
        print(to_json(data))
        return
    _print(report, wide)


def _flat(p: dict[str, Any]) -> dict[str, Any]:
    """One provider as a CSV row."""
    success, failure, prices = p["last_success"] or {}, p["last_failure"] or {}, p["prices"] or {}
    return {
        "provider": p["name"],
        "state": p["state"],
        "credential": p["credential"],
        "credential_required": p["credential_required"],
        "credential_set": p["credential_set"],
        "regions": " ".join(p["regions"]) if p["regions"] is not None else "all",
        "last_success_at": success.get("started_at"),
        "last_success_mode": success.get("mode"),
        "last_failure_at": failure.get("started_at"),
        "last_failure_status": failure.get("status"),
        "last_failure_error": failure.get("error"),
        "failures_since_success": p["failures_since_success"],
        "current_prices": prices.get("current"),
        "observed_at": prices.get("observed_at"),
        "observed_age_hours": prices.get("observed_age_hours"),
        "oldest_source_time": prices.get("oldest_source_time"),
        "oldest_source_age_hours": prices.get("oldest_source_age_hours"),
    }


def _when(run: dict[str, Any] | None) -> str:
    if not run:
        return "never"
    mode = "" if run["mode"] == "live" else f" ({run['mode']})"
    return f"{run['started_at']:%Y-%m-%d %H:%M}{mode}"


def _print(report: Any, wide: bool) -> None:
    from cli.output import age_text, print_table, say

    wh = report.warehouse
    if wh["exists"]:
        size = f"{wh['bytes'] / 1e6:,.1f} MB, raw payloads {wh['raw_payloads_bytes'] / 1e6:,.1f} MB"
        schema = f"schema version {wh['schema_version']}" + (
            f" (this costopt: {wh['schema_latest']})" if wh["schema_version"] != wh["schema_latest"] else ""
        )
        say(f"warehouse: {wh['path']} ({size}; {schema})", indent="  ")
    else:
        print(f"warehouse: {wh['path']} (not created yet)")
    if report.history:
        h = report.history
        say(
            f"history: {h['imported_intervals']:,} imported price intervals "
            f"{h['first']:%Y-%m-%d}..{h['last']:%Y-%m-%d} from {', '.join(h['archives'])}",
            indent="  ",
        )
    rows = []
    for p in report.providers:
        if p.credential is None:
            key = "-"
        else:
            key = "set" if p.credential_set else "MISSING" if p.credential_required else "not set"
        regions = "error" if p.config_error else "all" if p.regions is None else _regions(p.regions)
        prices = p.prices or {}
        rows.append(
            [
                p.name,
                p.state,
                key,
                regions,
                _when(p.last_success),
                _when(p.last_failure) if p.last_failure else "",
                f"{prices['current']:,}" if prices else "",
                age_text(prices.get("observed_age_hours")) if prices else "",
            ]
        )
    print_table(
        rows,
        COLUMNS,
        title=f"Providers, as of {report.checked_at:%Y-%m-%d %H:%M} UTC",
        caption="prices: current prices; age: since a run last confirmed them (the figures' own dates: `costopt plan`)",
        wide=wide,
    )
    keys = [
        f"{p.credential} ({p.name}, {'required' if p.credential_required else 'optional'}"
        + (f"; without it: {p.without_credential}" if not p.credential_required else "")
        + ")"
        for p in report.providers
        if p.credential
    ]
    say("keys: " + "; ".join(keys), indent="  ")
    failures = [p for p in report.providers if p.last_failure and p.last_failure.get("error")]
    for p in failures:
        f = p.last_failure
        say(f"last failure, {p.name} ({f['status']} {f['started_at']:%Y-%m-%d %H:%M}): {f['error']}", indent="  ")
    print("next:")
    for step in report.next_steps:
        say(f"  - {step}", indent="    ")


def _regions(regions: list[str]) -> str:
    return regions[0] if len(regions) == 1 else f"{regions[0]} +{len(regions) - 1}"
