"""Hive-partitioned Parquet for other engines (DuckDB, Spark, Trino, polars read it as it is).

The column lists are explicit, so a schema change cannot silently change a published format. The
export is written beside the target and renamed into place, so a reader never sees half of one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from warehouse.errors import UsageError, is_duckdb_error, is_interrupt

if TYPE_CHECKING:
    import duckdb

PRICE_COLUMNS = (
    "offer_id",
    "provider",
    "region",
    "instance_type",
    "gpu",
    "gpu_count",
    "pricing",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "valid_from",
    "valid_to",
    "last_seen",
    "first_run",
    "last_run",
    "source",
    "source_time",
    "source_basis",
    "effective_since",
)
"""The ``price_history`` view's columns: ``offer_id`` and ``first_run``/``last_run`` join to ``scrape_runs``."""
RUN_COLUMNS = (
    "run_id",
    "provider",
    "mode",
    "started_at",
    "finished_at",
    "observed_at",
    "status",
    "offers",
    "prices_changed",
    "prices_closed",
    "unknown_items",
    "flags",
    "bytes_downloaded",
    "seconds",
    "error",
    "source_urls",
    "parser_version",
    "notes",
    "data_origin",
    "figures_as_of",
)
GPU_COLUMNS = (
    "name",
    "vendor",
    "memory_gb",
    "memory_bandwidth_gb_s",
    "bf16_tflops",
    "fp16_tflops",
    "fp8_tflops",
    "tdp_w",
    "intra_node",
    "purchase_price_usd",
    "purchase_price_date",
    "purchase_price_source",
)


def export_parquet(con: duckdb.DuckDBPyConnection, target: Path) -> dict[str, int]:
    """Write ``target/price_history/provider=*/date=*/*.parquet`` plus runs and GPUs; return row counts.

    ``date=`` is the UTC day of ``valid_from`` (the session time zone is UTC). A target that is a
    file, a directory that is not an earlier export, or a place that cannot be written is a one-line
    error, and nothing is left behind.
    """
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} is a file, not a directory; --parquet takes a directory to write")
    try:
        foreign = target.exists() and any(target.iterdir()) and not (target / "price_history").is_dir()
    except OSError as exc:
        raise UsageError(f"cannot read {target}: {exc.strerror or exc}") from None
    if foreign:
        raise UsageError(f"{target} exists and is not a costopt export; choose an empty or new directory")
    staging = target.with_name(f".{target.name}.part")
    try:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
    except OSError as exc:
        raise UsageError(f"cannot write the export next to {target}: {exc.strerror or exc}") from None
    try:
        _write(con, target, staging)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
        if is_duckdb_error(exc) and not is_interrupt(exc):
            raise UsageError(f"cannot write {target}: {str(exc).splitlines()[0]}") from None
        raise
    return _counts(con)


def _counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {
        "price_history": con.execute("SELECT count(*) FROM price_history").fetchall()[0][0],
        "scrape_runs": con.execute("SELECT count(*) FROM scrape_runs").fetchall()[0][0],
        "gpus": con.execute("SELECT count(*) FROM gpus").fetchall()[0][0],
    }


def _write(con: duckdb.DuckDBPyConnection, target: Path, staging: Path) -> None:
    con.execute(
        f"""COPY (SELECT {", ".join(PRICE_COLUMNS)}, strftime(valid_from, '%Y-%m-%d') AS date
                  FROM price_history ORDER BY provider, valid_from)
            TO '{_sql_path(staging / "price_history")}'
            (FORMAT parquet, PARTITION_BY (provider, date), COMPRESSION zstd)"""
    )
    con.execute(
        f"COPY (SELECT {', '.join(RUN_COLUMNS)} FROM scrape_runs ORDER BY run_id) "
        f"TO '{_sql_path(staging / 'scrape_runs.parquet')}' (FORMAT parquet)"
    )
    con.execute(
        f"COPY (SELECT {', '.join(GPU_COLUMNS)} FROM gpus ORDER BY name) "
        f"TO '{_sql_path(staging / 'gpus.parquet')}' (FORMAT parquet)"
    )
    # swap in: the previous export steps aside, the new one takes its name, and an interruption
    # between the two renames puts the previous one back
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    moved = False
    try:
        if target.exists():
            os.replace(target, old)
            moved = True
        os.replace(staging, target)
    except BaseException:
        if moved and not target.exists():
            os.replace(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")
