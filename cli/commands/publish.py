"""``costopt publish --iceberg``: the price history as Apache Iceberg tables for a team's engines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.options import DbOption, FormatOption, WideOption
from cli.output import Column, Format

if TYPE_CHECKING:
    from scraper.job import Publisher

COLUMNS = ["table", "action", "mode", "rows_written", "rows_removed", "partitions", "total_rows", "bytes_written"]
TABLE_COLUMNS = [
    Column("table", kind="name"),
    Column("action", kind="name"),
    Column("mode", kind="name"),
    Column("rows_written", "written", "count"),
    Column("rows_removed", "replaced", "count"),
    Column("partitions", kind="count"),
    Column("total_rows", "rows", "count"),
    Column("bytes_written", "bytes", "count"),
]
CatalogUriOption = Annotated[
    str | None,
    typer.Option(
        "--catalog-uri",
        help="Iceberg catalog: sqlite:///PATH, postgresql://USER@HOST/DB or a REST URL "
        "(env COSTOPT_ICEBERG_CATALOG_URI; default a SQLite catalog in the data dir). No passwords here.",
        show_default=False,
    ),
]
LakeOption = Annotated[
    str | None,
    typer.Option(
        "--warehouse",
        help="Where the table files go: a directory or s3://bucket/prefix (env COSTOPT_ICEBERG_WAREHOUSE).",
        show_default=False,
    ),
]
NamespaceOption = Annotated[
    str | None,
    typer.Option(
        "--namespace", help="Iceberg namespace (env COSTOPT_ICEBERG_NAMESPACE; default costopt).", show_default=False
    ),
]


PublishOption = Annotated[
    bool,
    typer.Option(
        "--publish",
        help="After each run that loaded prices, publish to Iceberg (like `costopt publish --iceberg`); "
        "a failed publish exits 4 and never touches the warehouse.",
    ),
]


def publish_target(
    db_path: Path, publish: bool, catalog_uri: str | None, warehouse: str | None, namespace: str | None
) -> Publisher | None:
    """The ``--publish`` callback for refresh and schedule, checked now (not at 3 a.m.), or None."""
    from warehouse.errors import UsageError

    if not publish:
        given = [
            flag
            for flag, value in (("--catalog-uri", catalog_uri), ("--warehouse", warehouse), ("--namespace", namespace))
            if value
        ]
        if given:
            raise UsageError(f"{', '.join(given)} only apply with --publish")
        return None
    from warehouse.iceberg.catalog import require_pyiceberg, resolve_target
    from warehouse.iceberg.publish import publisher

    target = resolve_target(catalog_uri, warehouse, namespace)
    require_pyiceberg()
    return publisher(db_path, target)


def publish_command(
    iceberg: Annotated[bool, typer.Option("--iceberg", help="Publish as Apache Iceberg tables.")] = False,
    catalog_uri: CatalogUriOption = None,
    warehouse: LakeOption = None,
    namespace: NamespaceOption = None,
    full: Annotated[
        bool, typer.Option("--full", help="Compare every published row with the warehouse, not just what changed.")
    ] = False,
    db: DbOption = None,
    format: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Publish price_history, offers, scrape_runs, gpus and spot_risk to an Iceberg catalog.

    Incremental (a nightly publish writes what changed), idempotent (nothing changed: no new snapshot),
    one atomic commit per table. The warehouse is only read. Exit 1 if the publish failed.
    """
    from cli.output import emit, note
    from cli.warehouse_access import resolve_db
    from warehouse.errors import UsageError
    from warehouse.iceberg.catalog import resolve_target
    from warehouse.iceberg.publish import publish

    if not iceberg:
        raise UsageError("say what to publish: --iceberg (Apache Iceberg tables) is the only format so far")
    target = resolve_target(catalog_uri, warehouse, namespace)
    report = publish(resolve_db(db), target, full=full)
    rows = [t.as_dict() for t in report.tables]
    if format is Format.json:
        from cli.output import to_json

        typer.echo(
            to_json(
                {
                    "target": report.target,
                    "namespace": report.namespace,
                    "watermark_run_id": report.watermark,
                    "changed": report.changed,
                    "seconds": round(report.seconds, 2),
                    "tables": rows,
                }
            )
        )
        return
    emit(
        rows,
        COLUMNS if format is not Format.table else TABLE_COLUMNS,
        format,
        title=f"Published to {report.target}",
        wide=wide,
    )
    if format is Format.table:
        state = "published" if report.changed else "already up to date (no new snapshot)"
        note(f"costopt: {state}: warehouse run {report.watermark}, {report.seconds:.1f}s")
        for t in report.tables:
            note(f"  {report.namespace}.{t.table}: {t.metadata_location}")
