"""``costopt schedule``: refresh on a schedule, for months, unattended."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.commands.publish import CatalogUriOption, LakeOption, NamespaceOption, PublishOption, publish_target
from cli.commands.refresh import KeepRawOption, NotifyOption, ProvidersOption, ReplayOption
from cli.options import DbOption


def schedule_command(
    cron: Annotated[str | None, typer.Option("--cron", help="Crontab expression (default '0 3 * * *').")] = None,
    every: Annotated[str | None, typer.Option("--every", help="A fixed interval instead of cron: 6h, 30min.")] = None,
    timezone: Annotated[str, typer.Option("--timezone", help="Time zone of the cron expression.")] = "UTC",
    run_now: Annotated[bool, typer.Option("--run-now", help="Also run once right away.")] = False,
    jitter: Annotated[
        int | None,
        typer.Option(
            "--jitter",
            min=0,
            help="Random delay up to N seconds per run, at most a tenth of the time between runs "
            "(default 120 for runs an hour or more apart, else 0).",
            show_default=False,
        ),
    ] = None,
    provider: ProvidersOption = None,
    replay: ReplayOption = None,
    notify: NotifyOption = None,
    keep_raw_days: KeepRawOption = None,
    db: DbOption = None,
    publish: PublishOption = False,
    catalog_uri: CatalogUriOption = None,
    warehouse: LakeOption = None,
    namespace: NamespaceOption = None,
) -> None:
    """Run the refresh nightly (or every N hours) until stopped; SIGTERM finishes the load, exits 0 (Ctrl-C 130).

    The first run is at the first cron time (or one interval from now) unless --run-now. A suspect drop
    in offers is refused every night until a person confirms it once with
    `costopt refresh --provider NAME --accept-drop NAME` on the same warehouse.
    """
    from cli.names import check_providers
    from cli.options import only_one
    from cli.warehouse_access import resolve_db
    from scraper.schedule import make_trigger, serve

    only_one(cron=cron, every=every)
    provider = check_providers(None, provider)
    from scraper.providers import NAMES
    from scraper.refresh import check_config

    make_trigger(cron, every, timezone, jitter)  # bad input fails now, not at 3 a.m.
    check_config(list(provider or NAMES), replay=replay)
    if notify:
        from scraper.notify import check_url

        check_url(notify)
    path = resolve_db(db)
    publisher = publish_target(path, publish, catalog_uri, warehouse, namespace)
    code = serve(
        path,
        cron=cron,
        every=every,
        timezone=timezone,
        run_now=run_now,
        replay=replay,
        providers=provider,
        notify=notify,
        keep_raw_days=keep_raw_days,
        jitter=jitter,
        publish=publisher,
    )
    raise typer.Exit(code)
