"""The warehouse commands end to end: values in their output, one-line errors, exit codes."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests.conftest import T0, run_costopt
from warehouse.db import open_warehouse
from warehouse.load import RunRecord, load_run

costopt = run_costopt


@pytest.fixture
def seeded(db_path, make_record):
    """A warehouse with two nights of AWS and Lambda prices (no bundled snapshot involved)."""
    con = open_warehouse(db_path)
    day = timedelta(days=1)
    for at, p5 in ((T0, 98.32), (T0 + day, 55.04)):
        load_run(
            con,
            RunRecord(
                "aws",
                "live",
                at,
                at,
                prices=[
                    make_record("p5.48xlarge", p5, at=at),
                    make_record("p5.48xlarge", 30.0, pricing="spot", at=at),
                    make_record("g6.xlarge", 0.8048, gpu="L4", gpu_count=1, at=at),
                ],
            ),
        )
        load_run(
            con,
            RunRecord(
                "lambda",
                "live",
                at,
                at,
                prices=[
                    make_record("gpu_8x_h100_sxm5", 23.92, provider="lambda", region="us", at=at),
                ],
            ),
        )
    con.close()
    return db_path


def test_prices_json_is_sorted_cheapest_gpu_hour_first_with_values(seeded):
    out = costopt("prices", "--db", str(seeded), "--gpu", "h100", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [(r["provider"], r["instance_type"], r["pricing"]) for r in rows] == [
        ("lambda", "gpu_8x_h100_sxm5", "on_demand"),
        ("aws", "p5.48xlarge", "spot"),
        ("aws", "p5.48xlarge", "on_demand"),
    ]
    assert rows[0]["usd_per_gpu_hour"] == pytest.approx(2.99)
    assert rows[2]["usd_per_hour"] == pytest.approx(55.04)
    assert rows[2]["usd_per_gpu_hour"] == pytest.approx(6.88)
    assert rows[2]["source"].startswith("https://")


def test_prices_filters_spot_and_provider(seeded):
    out = costopt("prices", "--db", str(seeded), "--spot", "--format", "csv")
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("provider,region,instance_type,gpu,gpu_count,pricing,usd_per_hour")
    assert len(lines) == 2 and ",spot," in lines[1] and ",30.0," in lines[1]


def test_prices_table_shows_the_price_and_its_origin(seeded):
    out = costopt("prices", "--db", str(seeded), "--provider", "aws")
    assert out.returncode == 0
    assert "p5.48xlarge" in out.stdout and "55.04" in out.stdout and "6.880" in out.stdout
    # the caption says where and when the prices come from, in UTC whatever the host's TZ (rich may wrap it)
    assert "prices: live, 2 providers, as of 2026-11-02 03:00 UTC;" in " ".join(out.stdout.split())


def test_prices_region_takes_a_marketplace_listing_country(seeded, make_record):
    """`--region US` was refused ("unknown region"): a Vast.ai group's region is `all`, its listings carry the
    countries. A country now shows each group with listings there at the median of those listings, labelled."""
    from dataclasses import replace

    from scraper.providers.vastai import market_stats
    from warehouse.records import Listing

    listings = [Listing(16.0, "US", 0.99), Listing(20.0, "DE", 0.99), Listing(30.0, "US", 0.98)]
    group = replace(
        make_record("H100-SXMx8.verified.datacenter", 20.0, provider="vastai", region="all", at=T0 + timedelta(days=1)),
        stats=market_stats([x.usd_per_hour for x in listings], listings),
    )
    con = open_warehouse(seeded)
    load_run(con, RunRecord("vastai", "live", T0 + timedelta(days=1), T0 + timedelta(days=1), prices=[group]))
    con.close()
    # (this warehouse's Lambda prices are in a region spelled "us", which a plain `--region us` names)
    us = costopt("prices", "--db", str(seeded), "--provider", "vastai", "--region", "us", "--format", "json")
    assert us.returncode == 0, us.stderr
    assert [
        (r["region"], r["usd_per_hour"], r["usd_per_gpu_hour"], r["market_basis"]) for r in json.loads(us.stdout)
    ] == [
        ("US", 23.0, 2.875, "median of 2 listings in US")  # (16 + 30) / 2; the group's median is 20
    ]
    out = costopt("prices", "--db", str(seeded), "--region", "DE", "--region", "us-east-1", "--gpu", "H100", "--format",
                  "json")  # fmt: skip
    rows = [
        (r["provider"], r["region"], r["pricing"], r["usd_per_hour"], r["market_basis"]) for r in json.loads(out.stdout)
    ]
    assert rows == [
        ("vastai", "DE", "on_demand", 20.0, "1 listing in DE"),
        ("aws", "us-east-1", "spot", 30.0, None),
        ("aws", "us-east-1", "on_demand", 55.04, None),
    ]
    every = json.loads(costopt("prices", "--db", str(seeded), "--provider", "vastai", "--format", "json").stdout)
    assert [(r["region"], r["usd_per_hour"], r["market_basis"]) for r in every] == [
        ("all", 20.0, "median of 3 listings")
    ]
    table = costopt("prices", "--db", str(seeded), "--region", "DE")
    assert "the median of its listings there (market_basis in json/csv)" in " ".join(table.stdout.split())


def test_unknown_gpu_lists_the_known_ones(seeded):
    out = costopt("prices", "--db", str(seeded), "--gpu", "H1000")
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1
    assert "unknown GPU 'H1000'" in out.stderr and "H100-SXM" in out.stderr and "A100-80GB" in out.stderr


def test_unknown_provider_is_one_line(seeded):
    out = costopt("prices", "--db", str(seeded), "--provider", "oracle")
    assert out.returncode == 2
    assert out.stderr == (
        "costopt: error: unknown provider 'oracle' (--provider); "
        "known providers: aws, azure, coreweave, gcp, lambda, vastai\n"
    )


def test_sql_reads_and_refuses_writes(seeded):
    out = costopt("sql", "--db", str(seeded), "SELECT count(*) AS n FROM price_history", "--format", "json")
    assert json.loads(out.stdout) == [{"n": 5}]
    for statement in (
        "DELETE FROM prices",
        "CREATE TABLE x (a INT)",
        "ATTACH 'other.duckdb' AS o",
        "COPY prices TO 'out.csv'",
    ):
        bad = costopt("sql", "--db", str(seeded), statement)
        assert bad.returncode != 0, statement
        assert bad.stderr.startswith("costopt: error:") and bad.stderr.count("\n") == 1
    assert costopt("sql", "--db", str(seeded), "SELECT count(*) AS n FROM prices", "-f", "csv").stdout == "n\n5\n"


def test_bad_sql_gives_duckdb_message(seeded):
    out = costopt("sql", "--db", str(seeded), "SELEC 1")
    assert out.returncode != 0 and "syntax error" in out.stderr.lower()


def test_history_summary_values(seeded):
    out = costopt("history", "--db", str(seeded), "--gpu", "H100", "--since", "2026-10-01", "--format", "json")
    daily = json.loads(out.stdout)
    aws = [r for r in daily if r["provider"] == "aws" and r["pricing"] == "on_demand"]
    assert [round(r["min_usd_per_gpu_hour"], 3) for r in aws] == [12.29, 6.88]


def test_history_rejects_a_bad_period(seeded):
    out = costopt("history", "--db", str(seeded), "--gpu", "H100", "--since", "yesterday")
    assert out.returncode == 2 and "90d" in out.stderr


def test_runs_lists_the_log(seeded):
    out = costopt("runs", "--db", str(seeded), "--format", "json")
    runs = json.loads(out.stdout)
    assert len(runs) == 4 and {r["status"] for r in runs} == {"ok"}
    assert runs[0]["provider"] == "lambda"


def test_corrupt_database_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.duckdb"
    bad.write_text("this is not a database\n" * 100)
    out = costopt("prices", "--db", str(bad))
    assert out.returncode == 1
    assert "not a costopt warehouse" in out.stderr and "Traceback" not in out.stderr
    assert bad.read_text() == "this is not a database\n" * 100


def test_every_command_has_help():
    from cli.commands.registry import NAMES, commands

    assert [name for name, _ in commands()] == NAMES and len(NAMES) >= 10
    for name, function in commands():
        assert function.__doc__, name
        out = costopt(name, "--help")
        assert out.returncode == 0 and "Usage" in out.stdout, name


@pytest.fixture
def recorded(db_path, make_record):
    """Lambda prices from a recording declared derived (figures of 60 days earlier), Vast.ai's generated."""
    from dataclasses import replace

    con = open_warehouse(db_path)
    vintage = T0 - timedelta(days=60)
    for provider, origin, usd in (("lambda", "derived", 23.92), ("vastai", "generated", 16.0)):
        record = make_record("gpu_8x_h100_sxm5", usd, provider=provider, region="us", at=T0)
        record = replace(record, source_time=vintage, source_basis="declared")
        load_run(con, RunRecord(provider, "replay", T0, T0, prices=[record], data_origin=origin, figures_as_of=vintage))
    con.close()
    return db_path


def test_prices_label_derived_and_generated_data_and_age_them_from_their_vintage(recorded):
    """Generated or derived data is labelled wherever it is shown, and a price's age is its figures' own."""
    rows = json.loads(costopt("prices", "--db", str(recorded), "--format", "json").stdout)
    assert [(r["provider"], r["data_origin"]) for r in rows] == [("vastai", "generated"), ("lambda", "derived")]
    assert rows[0]["source_time"].startswith("2026-09-02T03:00:00") and rows[0]["source_age_hours"] > 60 * 24
    table = " ".join(costopt("prices", "--db", str(recorded)).stdout.split())
    assert "2.0000\u2021" in table and "2.9900\u2020" in table
    assert "\u2020 derived: published prices" in table and "\u2021 generated: sampled listings" in table
    history = " ".join(costopt("history", "--db", str(recorded), "--gpu", "H100", "--since", "all").stdout.split())
    assert "2.0000\u2021" in history and "2.9900\u2020" in history and "\u2021 generated" in history


def test_prices_of_live_scrapes_carry_no_mark(seeded):
    table = costopt("prices", "--db", str(seeded))
    assert "\u2020" not in table.stdout and "\u2021" not in table.stdout
    rows = json.loads(costopt("prices", "--db", str(seeded), "--format", "json").stdout)
    assert {r["data_origin"] for r in rows} == {"live"}


def test_breakeven_says_its_rent_is_derived_data_and_of_when(recorded):
    out = costopt("breakeven", "--db", str(recorded), "--gpu", "H100", "--count", "8", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert "cheapest cloud on-demand: lambda us gpu_8x_h100_sxm5 (derived data, as of 2026-09-02)" in out.stdout


def test_sql_keeps_every_column_of_a_repeated_name(seeded):
    """Two columns named alike each keep their own value, in order; the repeat is renamed as DuckDB renames it."""
    query = "SELECT 1 AS a, 2 AS a, 'x' AS gpu, gpu FROM current_prices WHERE provider = 'lambda'"
    table = costopt("sql", "--db", str(seeded), query)
    assert table.returncode == 0, table.stderr
    header, _rule, row = table.stdout.splitlines()[:3]
    assert header.split() == ["a", "a_1", "gpu", "gpu_1"] and row.split() == ["1", "2", "x", "H100-SXM"]
    csv = costopt("sql", "--db", str(seeded), query, "-f", "csv").stdout
    assert csv == "a,a_1,gpu,gpu_1\n1,2,x,H100-SXM\n"
    assert json.loads(costopt("sql", "--db", str(seeded), query, "-f", "json").stdout) == [
        {"a": 1, "a_1": 2, "gpu": "x", "gpu_1": "H100-SXM"}
    ]


def test_sql_table_shows_integers_beyond_a_float_exactly(seeded):
    """2**53 + 1 and the largest HUGEINT, as JSON and CSV give them (through a float they were ...992 and ...728)."""
    query = (
        "SELECT 9007199254740993::BIGINT AS n, 170141183460469231731687303715884105727::HUGEINT AS h, "
        "-9007199254740993::HUGEINT AS m"
    )
    out = costopt("sql", "--db", str(seeded), query)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[2].split() == [
        "9007199254740993",
        "170141183460469231731687303715884105727",
        "-9007199254740993",
    ]
    assert costopt("sql", "--db", str(seeded), query, "-f", "csv").stdout.splitlines()[1] == (
        "9007199254740993,170141183460469231731687303715884105727,-9007199254740993"
    )


@pytest.mark.parametrize(
    ("setting", "command"),
    [
        ("COSTOPT_DATA_DIR", ["prices", "--limit", "1"]),  # the default warehouse, created on first use
        ("COSTOPT_DB", ["refresh", "--replay", "fixtures/", "--provider", "lambda"]),
    ],
)
def test_a_data_directory_that_cannot_be_created_is_one_clear_line(tmp_path, setting, command):
    """A file where the data directory should be: the path and what is wrong (it was ``unexpected FileExistsError``)."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    value = str(blocker) if setting == "COSTOPT_DATA_DIR" else str(blocker / "wh.duckdb")
    out = costopt(*command, env={"COSTOPT_DATA_DIR": str(tmp_path / "unused"), setting: value})
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == (
        f"costopt: error: cannot create the directory {blocker} for the warehouse: {blocker} is a file, not a directory"
        " (choose another place with --db, COSTOPT_DB or COSTOPT_DATA_DIR)\n"
    )
