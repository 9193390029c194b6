"""Shared helpers for the Iceberg publish tests: a seeded warehouse, its figures, and real readers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from warehouse.db import open_warehouse

# what the tests compare between the warehouse, pyiceberg and DuckDB: row count and one sum per table
FIGURES = {
    "price_history": ("usd_per_hour", "price_history"),
    "offers": ("gpu_count", "offers"),
    "scrape_runs": ("offers", "scrape_runs"),
    "gpus": ("memory_gb", "gpus"),
    "spot_risk": ("savings_pct", "spot_risk"),
}


def seed(path: Path, replay: Path | None = None, providers: list[str] | None = None) -> None:
    """Load recorded responses through the real refresh (the bundled fixtures by default)."""
    from scraper.providers import NAMES
    from scraper.refresh import refresh

    root = replay or REPO / "fixtures"
    names = providers or [n for n in NAMES if (root / n / "replay.json").is_file()]
    outcomes = refresh(path, names, replay=root, keep_raw=False)
    bad = [(o.provider, o.status, o.error) for o in outcomes if o.status != "ok"]
    assert not bad, bad


def warehouse_figures(path: Path) -> dict[str, tuple[int, float]]:
    con = open_warehouse(path, read_only=True)
    try:
        out = {}
        for table, (column, source) in FIGURES.items():
            n, total = con.execute(f"SELECT count(*), coalesce(sum({column}), 0) FROM {source}").fetchall()[0]
            out[table] = (int(n), round(float(total), 6))
        return out
    finally:
        con.close()


def iceberg_figures(catalog, namespace: str = "costopt") -> dict[str, tuple[int, float]]:  # type: ignore[no-untyped-def]
    import pyarrow.compute as pc

    out = {}
    for table, (column, _) in FIGURES.items():
        data = catalog.load_table(f"{namespace}.{table}").scan().to_arrow()
        total = pc.sum(data.column(column)).as_py() or 0
        out[table] = (data.num_rows, round(float(total), 6))
    return out


def duckdb_reader() -> tuple[Path, Path, Path]:
    """The DuckDB CLI and its iceberg + avro extensions that `make test` installs, or skip saying why."""
    root = Path(sys.prefix) / "iceberg-readers"
    cli = root / "duckdb_cli" / "duckdb"
    iceberg = sorted(root.glob("duckdb_extension_iceberg/extensions/*/iceberg.duckdb_extension"))
    avro = sorted(root.glob("duckdb_extension_avro/extensions/*/avro.duckdb_extension"))
    if not cli.is_file() or not iceberg or not avro:
        pytest.skip(
            f"DuckDB's Iceberg reader is not installed in {root}: `make test` (target iceberg-readers) installs "
            "duckdb-cli and duckdb-extension-iceberg/-avro from PyPI there; DuckDB's own INSTALL needs the network"
        )
    return cli, iceberg[-1], avro[-1]


def duckdb_query(sql: str) -> list[dict[str, object]]:
    """Run ``sql`` in the DuckDB CLI (its own DuckDB, a separate process) with the iceberg extension loaded."""
    cli, iceberg, avro = duckdb_reader()
    script = f"LOAD '{avro}'; LOAD '{iceberg}'; SET TimeZone = 'UTC'; {sql}"
    done = subprocess.run([str(cli), "-json", "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    text = done.stdout.strip()
    return json.loads(text) if text else []


def local_path(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path) if uri.startswith("file://") else uri
