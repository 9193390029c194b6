"""What the read commands load and how their tables are drawn (issue 15, item 7: speed).

Speed itself is measured in bench/cli_speed.py, never asserted here; these tests keep the reasons for it:
the read commands (prices, sql, history, plan) import neither rich (tables are drawn by cli/output.py) nor
pytz (times are read as epoch microseconds) nor, where DuckDB's compiled engine module is there, the duckdb
Python package (warehouse/db.py, ``core=True``); and a connection opened that way answers exactly as one
opened through the package does.
"""

from __future__ import annotations

import importlib.util
import io
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli.output import Column, emit, format_cells, print_table
from tests.conftest import REPO, same_answer

READS = [
    ("prices",),
    ("prices", "--format", "json", "--limit", "3"),
    ("sql", "SELECT provider, count(*) AS offers, min(usd_per_gpu_hour) AS cheapest FROM current_prices GROUP BY 1"),
    ("history", "--gpu", "H100"),
    ("plan", "--model", "8B", "--tokens", "100B"),
]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scraper.providers import NAMES
    from scraper.refresh import refresh

    db = tmp_path_factory.mktemp("read") / "wh.duckdb"
    outcomes = refresh(db, list(NAMES), replay=REPO / "fixtures", mode="replay", keep_raw=False, env={})
    assert {o.status for o in outcomes} == {"ok"}
    return db


def _env(db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**env, "COSTOPT_DB": str(db), "COLUMNS": "100"}


@pytest.mark.parametrize("args", READS, ids=lambda a: " ".join(a[:2]))
def test_read_commands_import_no_rich_no_pytz_no_duckdb_package(warehouse, args):
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cli.app", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_env(warehouse),
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip()
    imported = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert not {m for m in imported if m == "rich" or m.startswith("rich.")}
    assert "pytz" not in imported
    if importlib.util.find_spec("_duckdb") is not None:  # DuckDB releases that ship the engine as _duckdb
        assert "_duckdb" in imported and "duckdb" not in imported


def test_the_engine_alone_answers_as_the_package_does(warehouse):
    """The same reads through a core connection (a fresh process, no duckdb package) and through the package."""
    script = (
        "import pickle, sys\n"
        "from pathlib import Path\n"
        "from warehouse.db import open_warehouse\n"
        "from tests.cli.test_read_path import reads\n"
        "con = open_warehouse(Path(sys.argv[1]), read_only=True, core=True)\n"
        "data = reads(con)\n"
        "sys.stdout.buffer.write(pickle.dumps((type(con).__module__, 'duckdb' in sys.modules, data)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(warehouse)], capture_output=True, cwd=REPO, env=_env(warehouse), timeout=120
    )
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    module, package_loaded, core = pickle.loads(out.stdout)
    assert module in ("_duckdb", "duckdb")
    import duckdb  # this process: the package, as writers use it

    from warehouse.db import open_warehouse

    con = open_warehouse(warehouse, read_only=True)
    try:
        assert type(con) is duckdb.DuckDBPyConnection
        full = reads(con)
    finally:
        con.close()
    if importlib.util.find_spec("_duckdb") is not None:
        assert not package_loaded
    assert same_answer(core, full)  # ages (now() - a time, to 0.01 h) may differ by the seconds between the reads
    assert len(core["offers"]) > 1000 and core["offers"][0]["observed_at"].endswith("+00")


def reads(con) -> dict:  # type: ignore[no-untyped-def]
    """What the read commands fetch, as plain Python values (also run in the subprocess above)."""
    from datetime import UTC, datetime

    from cli.warehouse_access import prices_note
    from optimizer import inputs
    from warehouse.history import daily_cheapest
    from warehouse.queries import current_prices
    from warehouse.sql import run_read_only

    return {
        "note": prices_note(con),
        "prices": current_prices(con, limit=200),
        "offers": inputs.current_offers(con),
        "risk": inputs.spot_risk(con),
        "daily": daily_cheapest(con, "H100-SXM", datetime(2020, 1, 1, tzinfo=UTC)),
        "sql": run_read_only(
            con,
            "SELECT 1.5::DECIMAL(4,2) AS d, INTERVAL 3 DAY AS i, DATE '2026-01-31' AS day, "
            "TIMESTAMPTZ '2026-01-31 12:00:00+00' AS t, [1, 2] AS l, {'a': 1} AS s",
        ),
    }


# --- the plain-text table ---------------------------------------------------------------------------


def _table(rows, columns, width: int, monkeypatch, **options) -> str:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", str(width))
    out = io.StringIO()
    print_table(rows, columns, out=out, **options)
    return out.getvalue()


def test_a_table_has_a_header_a_rule_and_aligned_columns(monkeypatch):
    columns = [Column("name", "provider", "name"), Column("price", "$/GPU-h", "figure"), Column("n", "GPUs", "int")]
    text = _table([["aws", "$1.10", "8"], ["coreweave", "$12.50", "16"]], columns, 100, monkeypatch, title="Prices")
    assert text.splitlines() == [
        "Prices",
        "provider   $/GPU-h  GPUs",
        "\u2500" * 24,
        "aws          $1.10     8",
        "coreweave   $12.50    16",
    ]


def test_text_wraps_between_words_and_headers_sit_at_the_bottom(monkeypatch):
    columns = [Column("a", "id", "name"), Column("b", "wall time", "figure"), Column("c", "note", "text")]
    rows = [["x1", "22.0d", "a long note that must wrap between its words"]]
    text = _table(rows, columns, 40, monkeypatch)  # (below 40, $COLUMNS is not believed)
    lines = text.splitlines()
    assert lines[0].rstrip() == "     wall"  # the header wraps between its words, bottom-aligned (right: a figure)
    assert lines[1].startswith("id   time  note")
    assert lines[2] == "\u2500" * 40
    body = lines[3:]
    assert body[0].startswith("x1  22.0d  ")
    assert " ".join(line[11:].strip() for line in body) == rows[0][2]  # whole words, none split
    assert len(body) == 2 and all(len(line) <= 40 for line in lines)


def test_droppable_columns_are_hidden_and_named_and_wide_shows_them(monkeypatch):
    columns = [Column("a", "instance", "name"), Column("b", "region", "name", drop=1), Column("c", "price", "figure")]
    rows = [["Standard_ND96isr_H100_v5", "southcentralus", "$98.32"]]
    narrow = _table(rows, columns, 45, monkeypatch)
    assert "southcentralus" not in narrow
    assert " ".join(narrow.splitlines()[3:]) == "hidden to fit 45 columns: region (--wide shows every column)"
    wide = _table(rows, columns, 45, monkeypatch, wide=True)
    assert "Standard_ND96isr_H100_v5  southcentralus  $98.32" in wide and "hidden" not in wide


def test_a_value_that_cannot_fit_is_cut_with_an_ellipsis_and_said(monkeypatch):
    """Only when hiding every droppable column is not enough; names give up room before figures."""
    columns = [Column("a", "instance", "name"), Column("b", "price", "figure")]
    name = "a-very-long-instance-name-indeed-of-forty-six-chars"
    text = _table([[name, "$1.00"]], columns, 40, monkeypatch)
    lines = text.splitlines()
    assert all(len(line) <= 40 for line in lines[:3]) and lines[2].endswith("\u2026  $1.00")
    assert lines[2].startswith(name[:20])
    assert "values cut with ... to fit 40 columns" in " ".join(lines[3:])


def test_empty_results_say_none_and_footers_say_what_was_cut(monkeypatch):
    assert _table([], [Column("a")], 100, monkeypatch, title="Alerts") == "Alerts: none\n"
    monkeypatch.setenv("COLUMNS", "100")
    out = io.StringIO()
    emit([{"a": 1.5, "b": "x"}, {"a": 10, "b": "y"}], ["a", "b"], "table", out=out, total=7, caption="2 rows")
    lines = out.getvalue().splitlines()
    assert [re.split(r" {2,}", line.strip()) for line in lines[2:4]] == [["1.5", "x"], ["10.0", "y"]]
    assert lines[-2:] == ["2 rows", "showing 2 of 7; --limit to change"]


def test_table_numbers_are_formatted_from_the_exact_value():
    """Counts, figures beside decimals and DECIMALs keep every digit (a float holds 2**53 + 1 as 2**53)."""
    from decimal import Decimal

    big = 2**53 + 1
    rows = [
        {"n": big, "mixed": big, "d": Decimal("123456789012345678901234.56")},
        {"n": 1, "mixed": 0.25, "d": Decimal("1.5")},
    ]
    columns = [Column("n", kind="count"), Column("mixed", kind="number"), Column("d")]
    cells, _ = format_cells(rows, columns)
    assert cells == [
        ["9,007,199,254,740,993", "9,007,199,254,740,993.00", "123,456,789,012,345,678,901,234.56"],
        ["1", "0.25", "1.50"],
    ]


@pytest.mark.slow
def test_first_commands_started_together_seed_the_default_warehouse_once(tmp_path):
    """Four first commands at once each found the default warehouse empty and each loaded the bundled snapshot."""
    from tests.conftest import run_costopt

    env = {**os.environ, "COSTOPT_DATA_DIR": str(tmp_path / "data")}
    env.pop("COSTOPT_DB", None)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", "from cli.app import main; main()", "prices", "--limit", "1"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in results]
    assert sum("was empty: loaded the bundled price snapshot" in err for _, err in results) == 1
    runs = run_costopt("sql", "SELECT count(*) AS n FROM scrape_runs WHERE mode = 'snapshot'", "-f", "csv", env=env)
    assert runs.stdout == "n\n6\n"  # one snapshot run per provider, not four
