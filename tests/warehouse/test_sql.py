"""``warehouse.sql``: the names a result's columns are given."""

from __future__ import annotations

import duckdb
import pytest

from warehouse.sql import run_read_only, unique_names


@pytest.mark.parametrize(
    "query",
    [
        "SELECT 1 AS a, 2 AS a",
        "SELECT 1 AS a, 2 AS a, 3 AS a",
        "SELECT 1 AS a, 2 AS a, 3 AS a_1",
        "SELECT 1 AS a_1, 2 AS a, 3 AS a",
        "SELECT 1 AS a, 2 AS A, 3 AS a, 4 AS a_1, 5 AS a_2",
        "SELECT 1 AS b, 2 AS c",
    ],
)
def test_repeated_names_are_renamed_as_duckdb_renames_them(query):
    con = duckdb.connect()
    raw = [d[0] for d in con.execute(query).description]
    wrapped = [d[0] for d in con.execute(f"SELECT * FROM ({query})").description]
    assert unique_names(raw) == wrapped


def test_rows_keep_each_columns_value():
    columns, rows = run_read_only(duckdb.connect(), "SELECT 1 AS a, 2 AS a, 3 AS A")
    assert columns == ["a", "a_1", "A_2"] and rows == [{"a": 1, "a_1": 2, "A_2": 3}]
