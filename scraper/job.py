"""The refresh job: what ``costopt refresh`` and every scheduled run do, and the exit code they mean.

Exit codes, for monitors: 0 every provider loaded and nothing needs a look; 1 at least one provider
failed -- an upstream error, a page that changed shape, or a suspect drop in offers (its previous
prices are kept); 3 everything loaded but a warning was raised (a large move, many offers gone);
2 bad input; 4 the prices loaded but the publish that was asked for (``--publish``) failed (the
warehouse is unaffected; the next publish catches up); 130 interrupted (Ctrl-C), nothing half-written.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from pathlib import Path

from scraper.refresh import Cancelled, Outcome, Progress, refresh
from warehouse.errors import CostoptError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_ALERTS = 0, 1, 2, 3
EXIT_PUBLISH_FAILED = 4

Publisher = Callable[[Callable[[str], None]], str | None]
"""Called after a refresh that loaded something, with the log; returns None, or a one-line failure."""


def exit_code(outcomes: list[Outcome], *, requested: bool) -> int:
    if any(o.status in ("failed", "cancelled") or (requested and o.status == "skipped") for o in outcomes):
        return EXIT_FAILED
    if any(a.severity != "info" for o in outcomes for a in o.alerts):
        return EXIT_ALERTS
    return EXIT_OK


def run_job(
    db_path: Path,
    providers: list[str] | None = None,
    *,
    replay: Path | None = None,
    notify: str | None = None,
    keep_raw_days: int | None = None,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
    accept_drop: Collection[str] = (),
    publish: Publisher | None = None,
) -> tuple[list[Outcome], int]:
    """One refresh plus its follow-ups (pruning, publishing, notification); returns the outcomes and the exit code."""
    say = log or (lambda _line: None)
    if notify:
        from scraper.notify import check_url

        check_url(notify)
    started = datetime.now(UTC)
    try:
        outcomes = refresh(db_path, providers, replay=replay, progress=progress, cancel=cancel, accept_drop=accept_drop)
    except CostoptError as exc:
        # the run failed as a whole (the warehouse busy past the wait, damaged, not a warehouse): nothing is
        # in `costopt runs` to show it, so the webhook is the only place a lost night is seen
        if notify and not isinstance(exc, Cancelled):
            _notify_whole_run_failed(notify, exc.one_line(), started=started, db=db_path, say=say)
        raise
    code = exit_code(outcomes, requested=bool(providers))
    for o in outcomes:
        say(
            f"{_stamp()} {o.provider} {o.status} offers={o.offers} "
            f"changed={o.prices_changed} closed={o.prices_closed} flags={o.flags} bytes={o.bytes_downloaded} "
            f"{o.seconds:.1f}s" + (f" error={o.error}" if o.error else "")
        )
        for alert in o.alerts:
            say(f"{_stamp()} {o.provider} alert {alert.severity}: {alert.message}")
    if keep_raw_days is not None:
        from warehouse.db import open_warehouse
        from warehouse.paths import raw_dir
        from warehouse.prune import prune_raw

        con = open_warehouse(db_path)
        try:
            files, freed = prune_raw(con, raw_dir(db_path), keep_raw_days)
        finally:
            con.close()
        say(f"{_stamp()} pruned {files} raw payload file(s), {freed / 1e6:.1f} MB, older than {keep_raw_days} days")
    published = None
    if publish is not None and any(o.status == "ok" for o in outcomes):
        published = publish(say)
        if published:
            say(f"{_stamp()} {published}")
            code = EXIT_PUBLISH_FAILED if code in (EXIT_OK, EXIT_ALERTS) else code
    if notify:
        from scraper.notify import post, public_host, should_notify, summary

        body = summary(outcomes, started_at=started, db=str(db_path), exit_code=code)
        if published:
            body["failures"].append({"provider": "publish", "status": "failed", "error": published})
        if should_notify(body):
            problem = post(notify, body)
            # the host only: the URL itself is a secret (Slack, Teams)
            say(f"{_stamp()} {problem or f'notified {public_host(notify)}'}")
    return outcomes, code


def _notify_whole_run_failed(url: str, error: str, *, started: datetime, db: Path, say: Callable[[str], None]) -> None:
    from scraper.notify import post, public_host, summary

    body = summary([], started_at=started, db=str(db), exit_code=EXIT_FAILED)
    body["failures"].append({"provider": "all", "status": "failed", "error": error})
    problem = post(url, body)
    say(f"{_stamp()} {problem or f'notified {public_host(url)}'}")


def _stamp() -> str:
    """The UTC time every line of the job's log starts with (the scheduler's own lines too): a night's log is
    read by time, and the prune and notification lines had none."""
    return f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}"
