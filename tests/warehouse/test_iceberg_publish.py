"""`costopt publish --iceberg`: read back with pyiceberg and DuckDB, incremental, idempotent, atomic."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.warehouse.iceberg_support import (
    duckdb_query,
    iceberg_figures,
    local_path,
    seed,
    warehouse_figures,
)
from warehouse.db import open_warehouse
from warehouse.iceberg.catalog import PublishError, open_catalog, resolve_target
from warehouse.iceberg.publish import NS_WATERMARK, WATERMARK, publish
from warehouse.iceberg.tables import PRICE_HISTORY, TABLES


def snapshots(catalog, name: str) -> list[int]:  # type: ignore[no-untyped-def]
    return [s.snapshot_id for s in catalog.load_table(f"costopt.{name}").snapshots()]


def changed_lambda(tmp_path: Path) -> Path:
    """The Lambda recording a day later: H100 SXM x8 cut from $3.99 to $3.49 per GPU-hour, 1x H100 PCIe gone."""
    root = tmp_path / "replay2"
    shutil.copytree(REPO / "fixtures" / "lambda", root / "lambda")
    manifest = json.loads((root / "lambda" / "replay.json").read_text())
    manifest["recorded_at"] = "2026-11-21T03:00:00Z"
    (root / "lambda" / "replay.json").write_text(json.dumps(manifest))
    page = (root / "lambda" / "pricing.html").read_text()
    assert page.count("$3.99") == 1
    lines = [line for line in page.splitlines() if "1x NVIDIA H100 PCIe" not in line]
    (root / "lambda" / "pricing.html").write_text("\n".join(lines).replace("$3.99", "$3.49"))
    return root


def test_first_publish_reads_back_equal_with_pyiceberg(seeded: Path, target) -> None:  # type: ignore[no-untyped-def]
    report = publish(seeded, target)
    assert [t.table for t in report.tables] == [s.name for s in TABLES]
    assert [t.action for t in report.tables] == ["written"] * len(TABLES)  # every table has rows to publish
    catalog = open_catalog(target)
    expected = warehouse_figures(seeded)
    assert expected["price_history"][0] > 1000 and expected["offers"][0] > 500 and expected["gpus"][0] > 20
    assert iceberg_figures(catalog) == expected
    # the published columns are the declared ones, in order, and the layout is the declared one
    ph = catalog.load_table("costopt.price_history")
    assert tuple(ph.schema().column_names) == PRICE_HISTORY.column_names
    assert [(f.name, str(f.transform)) for f in ph.spec().fields] == [
        ("provider", "identity"),
        ("valid_to_month", "month"),
    ]
    # every snapshot says which warehouse run it reflects; the namespace says the whole set does
    con = open_warehouse(seeded, read_only=True)
    newest = con.execute("SELECT max(run_id) FROM scrape_runs").fetchall()[0][0]
    con.close()
    assert report.watermark == newest
    assert ph.current_snapshot().summary.additional_properties[WATERMARK] == str(newest)
    assert catalog.load_namespace_properties("costopt")[NS_WATERMARK] == str(newest)
    # values survive the trip: one interval, field by field
    row = ph.scan(row_filter="provider == 'lambda' AND instance_type == 'gpu_8x_h100_sxm'").to_arrow().to_pylist()
    assert len(row) == 1
    assert row[0]["usd_per_hour"] == pytest.approx(3.99 * 8) and row[0]["gpu"] == "H100-SXM"
    assert row[0]["valid_to"] is None and row[0]["valid_from"] == datetime(2026, 11, 20, 3, tzinfo=UTC)
    # the GPU table tells fp16 from bf16: V100 has FP16 tensor cores only
    v100 = catalog.load_table("costopt.gpus").scan(row_filter="name == 'V100-16GB'").to_arrow().to_pylist()
    assert [(g["bf16_tflops"], g["fp16_tflops"]) for g in v100] == [(None, 125.0)]


def test_duckdb_reads_the_published_tables(seeded: Path, target) -> None:  # type: ignore[no-untyped-def]
    publish(seeded, target)
    catalog = open_catalog(target)
    expected = warehouse_figures(seeded)
    from tests.warehouse.iceberg_support import FIGURES

    for table, (column, _) in FIGURES.items():
        metadata = local_path(catalog.load_table(f"costopt.{table}").metadata_location)
        rows = duckdb_query(f"SELECT count(*) AS n, coalesce(sum({column}), 0) AS s FROM iceberg_scan('{metadata}')")
        assert (rows[0]["n"], round(float(rows[0]["s"]), 6)) == expected[table], table
    metadata = local_path(catalog.load_table("costopt.price_history").metadata_location)
    by_provider = duckdb_query(
        f"SELECT provider, count(*) AS n, min(valid_from)::VARCHAR AS since FROM iceberg_scan('{metadata}') "
        "GROUP BY provider ORDER BY provider"
    )
    con = open_warehouse(seeded, read_only=True)
    con.execute("SET TimeZone = 'UTC'").fetchall()
    want = con.execute(
        "SELECT provider, count(*), min(valid_from)::VARCHAR FROM price_history GROUP BY provider ORDER BY provider"
    ).fetchall()
    con.close()
    assert [(r["provider"], r["n"], r["since"]) for r in by_provider] == [tuple(w) for w in want]


def test_publishing_twice_writes_nothing(seeded: Path, target) -> None:  # type: ignore[no-untyped-def]
    publish(seeded, target)
    catalog = open_catalog(target)
    before = {s.name: snapshots(catalog, s.name) for s in TABLES}
    lake = Path(local_path(target.warehouse))
    files = sorted(p for p in lake.rglob("*") if p.is_file())
    report = publish(seeded, target)
    assert not report.changed and {t.action for t in report.tables} == {"unchanged"}
    assert {s.name: snapshots(catalog, s.name) for s in TABLES} == before  # no new snapshot, not even an empty one
    assert sorted(p for p in lake.rglob("*") if p.is_file()) == files


def test_a_refresh_with_changed_prices_publishes_new_and_closed_intervals(
    seeded: Path,
    target,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    publish(seeded, target)
    catalog = open_catalog(target)
    ph = catalog.load_table("costopt.price_history")
    untouched = {f.file.file_path for f in ph.scan(row_filter="provider != 'lambda'").plan_files()}
    seed(seeded, changed_lambda(tmp_path), ["lambda"])

    report = publish(seeded, target)
    result = {t.table: t for t in report.tables}
    assert result["price_history"].mode == "incremental" and result["price_history"].action == "written"
    assert result["scrape_runs"].rows_written == 1  # the new Lambda run, appended
    assert result["gpus"].action == "unchanged" and result["offers"].action == "unchanged"
    assert iceberg_figures(catalog) == warehouse_figures(seeded)

    ph = catalog.load_table("costopt.price_history")
    cut = datetime(2026, 11, 21, 3, tzinfo=UTC)
    sxm = ph.scan(row_filter="instance_type == 'gpu_8x_h100_sxm'").to_arrow().sort_by("valid_from").to_pylist()
    assert [(r["usd_per_hour"], r["valid_from"], r["valid_to"]) for r in sxm] == [
        (pytest.approx(3.99 * 8), datetime(2026, 11, 20, 3, tzinfo=UTC), cut),
        (pytest.approx(3.49 * 8), cut, None),
    ]
    pcie = ph.scan(row_filter="instance_type == 'gpu_1x_h100_pcie'").to_arrow().to_pylist()
    assert [r["valid_to"] for r in pcie] == [cut]
    still = ph.scan(row_filter="instance_type == 'gpu_8x_a100_80gb'").to_arrow().to_pylist()
    assert [(r["valid_to"], r["last_seen"]) for r in still] == [(None, cut)]
    # only Lambda's partitions were written: every other provider's data files are the same files
    assert {f.file.file_path for f in ph.scan(row_filter="provider != 'lambda'").plan_files()} == untouched
    assert result["price_history"].bytes_written < 50_000


def test_a_failure_mid_publish_leaves_the_last_good_snapshot(
    seeded: Path,
    target,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    publish(seeded, target)
    catalog = open_catalog(target)
    good = catalog.load_table("costopt.price_history").current_snapshot().snapshot_id
    expected = iceberg_figures(catalog)
    seed(seeded, changed_lambda(tmp_path), ["lambda"])
    warehouse_bytes = seeded.read_bytes()

    from pyiceberg.table import Transaction

    real = Transaction.commit_transaction

    def fail_on_prices(self):  # type: ignore[no-untyped-def]
        if self._table.name()[-1] == "price_history":
            raise OSError("disk full (simulated) while committing")
        return real(self)

    monkeypatch.setattr(Transaction, "commit_transaction", fail_on_prices)
    with pytest.raises(PublishError, match=r"costopt\.price_history: publish failed, the table keeps its last"):
        publish(seeded, target)
    catalog = open_catalog(target)
    assert catalog.load_table("costopt.price_history").current_snapshot().snapshot_id == good
    figures = iceberg_figures(catalog)
    assert figures["price_history"] == expected["price_history"]  # readable, exactly as before
    assert figures["scrape_runs"][0] == expected["scrape_runs"][0] + 1  # committed before it: ahead, never behind
    assert seeded.read_bytes() == warehouse_bytes  # the warehouse is only read

    monkeypatch.setattr(Transaction, "commit_transaction", real)
    report = publish(seeded, target)
    assert {t.table for t in report.tables if t.action == "written"} == {"price_history"}
    assert iceberg_figures(open_catalog(target)) == warehouse_figures(seeded)


def test_drift_is_reconciled_and_full_repairs_edits(
    seeded: Path,
    target,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    publish(seeded, target)
    catalog = open_catalog(target)
    # another writer deletes published rows: its snapshot carries no costopt watermark
    catalog.load_table("costopt.price_history").delete("provider == 'coreweave' AND pricing == 'spot'")
    report = publish(seeded, target)
    ph = next(t for t in report.tables if t.table == "price_history")
    assert (ph.mode, ph.note) == ("full", "last commit not by costopt: reconciled in full")
    assert iceberg_figures(catalog) == warehouse_figures(seeded)

    # history removed behind the watermark: the nightly count check notices and reconciles in full
    seed(seeded, changed_lambda(tmp_path), ["lambda"])
    assert next(t for t in publish(seeded, target).tables if t.table == "price_history").mode == "incremental"
    con = open_warehouse(seeded)
    con.execute("DELETE FROM prices WHERE valid_to IS NOT NULL AND usd_per_hour = 3.99 * 8").fetchall()
    con.close()
    lines: list[str] = []
    report = publish(seeded, target, log=lines.append)
    ph = next(t for t in report.tables if t.table == "price_history")
    assert (ph.mode, ph.note, ph.rows_removed - ph.rows_written) == ("full", "drift: reconciled in full", 1)
    assert any("drifted from the warehouse" in line for line in lines)
    assert iceberg_figures(catalog) == warehouse_figures(seeded)

    # an edit that keeps the count is invisible to the nightly check, and --full finds it
    table = catalog.load_table("costopt.gpus")
    data = table.scan().to_arrow()
    import pyarrow as pa
    import pyarrow.compute as pc

    edited = data.set_column(
        data.schema.get_field_index("memory_gb"), "memory_gb", pc.multiply(data["memory_gb"], pa.scalar(2.0))
    )
    props = table.current_snapshot().summary.additional_properties
    table.overwrite(edited, snapshot_properties={k: v for k, v in props.items() if k.startswith("costopt.")})
    assert iceberg_figures(catalog)["gpus"] != warehouse_figures(seeded)["gpus"]
    report = publish(seeded, target, full=True)
    assert next(t for t in report.tables if t.table == "gpus").action == "written"
    assert iceberg_figures(catalog) == warehouse_figures(seeded)


def test_a_column_added_to_the_spec_reaches_the_table(
    seeded: Path,
    target,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import warehouse.iceberg.publish as pub
    from warehouse.iceberg import tables

    older = tables.TableSpec(
        **{**{f: getattr(tables.OFFERS, f) for f in tables.TableSpec.__slots__}, "columns": tables.OFFERS.columns[:-1]}
    )
    monkeypatch.setattr(pub, "TABLES", tuple(older if s is tables.OFFERS else s for s in tables.TABLES))
    publish(seeded, target)
    catalog = open_catalog(target)
    assert "first_seen" not in catalog.load_table("costopt.offers").schema().column_names
    monkeypatch.setattr(pub, "TABLES", tables.TABLES)
    report = publish(seeded, target, full=True)
    offers = catalog.load_table("costopt.offers")
    assert offers.schema().column_names[-1] == "first_seen"  # added, not renamed or retyped
    assert next(t for t in report.tables if t.table == "offers").action == "written"
    assert offers.scan().to_arrow().column("first_seen").null_count == 0  # --full fills it in


def test_publishing_an_empty_warehouse_is_a_clear_error(tmp_path: Path, target) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "empty.duckdb"
    open_warehouse(path).close()
    with pytest.raises(PublishError, match="nothing to publish"):
        publish(path, target)


def test_target_resolution_and_secrets(tmp_path: Path) -> None:
    from warehouse.errors import UsageError
    from warehouse.iceberg.catalog import catalog_properties

    t = resolve_target(None, None, None, env={}, data_dir=tmp_path)
    assert t.kind == "sql" and t.uri == f"sqlite:///{tmp_path / 'iceberg' / 'catalog.db'}"
    assert t.warehouse == (tmp_path / "iceberg" / "warehouse").as_uri() and t.namespace == "costopt"
    env = {
        "COSTOPT_ICEBERG_CATALOG_URI": "postgresql://costopt:hunter2@db.internal/lake",
        "COSTOPT_ICEBERG_WAREHOUSE": "s3://bucket/lake/",
        "AWS_ACCESS_KEY_ID": "AKIA-TEST",
        "AWS_SECRET_ACCESS_KEY": "s3cret",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
    }
    t = resolve_target(None, None, "team.prices", env=env)
    assert t.uri == "postgresql+psycopg2://costopt:hunter2@db.internal/lake" and t.warehouse == "s3://bucket/lake"
    assert "hunter2" not in t.describe() and "costopt:***@db.internal" in t.describe()
    props = catalog_properties(t, env)
    assert props["s3.secret-access-key"] == "s3cret" and props["s3.endpoint"] == "http://127.0.0.1:9000"
    rest = resolve_target("https://rest.example/catalog", None, None, env={})
    assert (rest.kind, rest.warehouse) == ("rest", None)
    props = catalog_properties(rest, {"COSTOPT_ICEBERG_TOKEN": "tok", "COSTOPT_ICEBERG_CREDENTIAL": "id:sec"})
    assert (props["type"], props["uri"], props["token"], props["credential"]) == (
        "rest",
        "https://rest.example/catalog",
        "tok",
        "id:sec",
    )
    with pytest.raises(UsageError, match="must not contain a password"):
        resolve_target("postgresql://u:pw@h/db", "s3://b/p", None, env={})
    with pytest.raises(UsageError, match="needs a warehouse location"):
        resolve_target("postgresql://u@h/db", None, None, env={})
    with pytest.raises(UsageError, match="not understood"):
        resolve_target("mysql://u@h/db", "/tmp/x", None, env={})
    with pytest.raises(UsageError, match="namespace"):
        resolve_target(None, None, "bad name;", env={}, data_dir=tmp_path)


def test_old_snapshots_are_expired_from_the_metadata(seeded: Path, target, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    publish(seeded, target)
    catalog = open_catalog(target)
    first = set(snapshots(catalog, "price_history"))
    seed(seeded, changed_lambda(tmp_path), ["lambda"])
    publish(seeded, target, keep_snapshots_days=0)  # keep nothing older than now: only the new commit's
    kept = snapshots(catalog, "price_history")
    table = catalog.load_table("costopt.price_history")
    assert kept and not first & set(kept) and table.current_snapshot().snapshot_id in kept
    assert iceberg_figures(catalog) == warehouse_figures(seeded)  # the data is all still there
