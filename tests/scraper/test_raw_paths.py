"""Raw payloads belong to the warehouse whose folder holds them.

``raw_payloads.path`` was absolute: after ``cp o.duckdb c.duckdb``, a ``--keep-raw-days`` on the copy deleted every
file of ``o.raw/`` (and ``reparse`` of the original then failed), and a warehouse moved with its ``.raw/`` folder, as
the README says it may be, could not re-parse. Each test runs twice: on the paths written now (relative to the raw
folder) and on the absolute paths an older costopt wrote (``legacy``).
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from scraper import providers as registry
from scraper.job import run_job
from scraper.refresh import refresh
from scraper.reparse import reparse
from tests.scraper.test_refresh import ITEMS, record_dir
from warehouse.db import open_warehouse
from warehouse.paths import raw_dir

OLD = (datetime.now(UTC) - timedelta(days=30)).strftime("%Y-%m-%dT03:00:00Z")  # older than --keep-raw-days 5
NEWER = [dict(item, usd=item["usd"] * 0.9) for item in ITEMS]  # today's answer: another body, another file
NEW_TAG = '"v2"'  # and another ETag: the replay answers a matching one "not modified"


@pytest.fixture(autouse=True)
def fake_registry(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(registry, "REGISTRY", {"fake": "tests.scraper.test_refresh:FakeProvider"})
    monkeypatch.setattr("scraper.refresh.NAMES", ("fake",))
    monkeypatch.setattr("scraper.reparse.NAMES", ("fake",))


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def paths(db: Path) -> list[str | None]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [p for (p,) in con.execute("SELECT path FROM raw_payloads ORDER BY rowid").fetchall()]
    finally:
        con.close()


def warehouse(tmp_path: Path, db: Path, *, legacy: bool) -> dict[str, bytes]:
    """A warehouse with one old run of the fake provider; ``legacy``: its paths absolute, as an older costopt wrote
    them (a no-op on code that still writes them so). Returns its raw folder's files."""
    [loaded] = refresh(db, ["fake"], replay=record_dir(tmp_path / "rec", ITEMS, recorded_at=OLD))
    assert loaded.status == "ok"
    con = open_warehouse(db)
    con.execute("UPDATE scrape_runs SET started_at = started_at - INTERVAL 30 DAY")  # a run of a month ago
    if legacy:
        con.execute(
            "UPDATE raw_payloads SET path = ? || '/' || path WHERE path NOT LIKE '/%'", [str(raw_dir(db).absolute())]
        )
    con.close()
    kept = files(raw_dir(db))
    assert kept and all(p is not None for p in paths(db))
    return kept


@pytest.mark.parametrize("legacy", [False, True])
def test_pruning_a_copy_leaves_the_originals_raw_payloads(tmp_path, legacy):
    original, copy = tmp_path / "o.duckdb", tmp_path / "c.duckdb"
    kept = warehouse(tmp_path, original, legacy=legacy)
    shutil.copyfile(original, copy)
    _, code = run_job(copy, ["fake"], replay=record_dir(tmp_path / "again", NEWER, etag=NEW_TAG), keep_raw_days=5)
    assert code in (0, 3)
    assert files(raw_dir(original)) == kept  # the original's folder untouched
    old_row, new_row = paths(copy)
    assert old_row is None and new_row is not None  # the copy forgets the month-old payload, keeps today's
    assert list(files(raw_dir(copy))) == [new_row] and new_row not in kept
    [again] = reparse(original, ["fake"])
    assert (again.status, again.offers) == ("ok", 2)


@pytest.mark.parametrize("legacy", [False, True])
def test_a_warehouse_moved_with_its_raw_folder_still_reparses(tmp_path, legacy):
    before, after = tmp_path / "m1", tmp_path / "m2"
    before.mkdir()
    kept = warehouse(tmp_path, before / "w.duckdb", legacy=legacy)
    shutil.move(before, after)
    assert not (before / "w.raw").exists() and files(after / "w.raw") == kept
    [again] = reparse(after / "w.duckdb", ["fake"])
    assert (again.status, again.offers) == ("ok", 2)


def test_a_copy_of_an_older_warehouse_reads_the_originals_files_and_prunes_only_its_own(tmp_path):
    """A copy made without its raw folder still re-parses from the original's files while they exist; a prune of the
    moved original deletes the files of its new folder, whatever folder its rows once named."""
    original = tmp_path / "m1" / "o.duckdb"
    original.parent.mkdir()
    kept = warehouse(tmp_path, original, legacy=True)
    copy = tmp_path / "c.duckdb"
    shutil.copyfile(original, copy)
    [again] = reparse(copy, ["fake"])
    assert (again.status, again.offers) == ("ok", 2)
    shutil.move(original.parent, tmp_path / "m2")
    moved = tmp_path / "m2" / "o.duckdb"
    run_job(moved, ["fake"], replay=record_dir(tmp_path / "again", NEWER, etag=NEW_TAG), keep_raw_days=5)
    assert kept and list(files(raw_dir(moved))) == [paths(moved)[-1]]  # the month-old file gone, today's kept


def test_a_file_shared_with_a_recent_run_is_kept_however_each_row_names_it(tmp_path):
    from warehouse.prune import prune_raw

    db = tmp_path / "w.duckdb"
    kept = warehouse(tmp_path, db, legacy=True)  # the old run's rows: absolute
    con = open_warehouse(db)
    # a recent run recorded the same content, relative to the folder
    con.execute(
        "INSERT INTO raw_payloads SELECT run_id, url, now(), status, sha256, bytes, "
        "regexp_extract(path, '[0-9a-f]{2}/[^/]+$'), not_modified, scope FROM raw_payloads"
    )
    assert prune_raw(con, raw_dir(db), 5) == (0, 0)
    con.close()
    assert files(raw_dir(db)) == kept


def test_a_recorded_path_is_placed_in_this_warehouses_raw_folder(tmp_path):
    from warehouse.paths import raw_file, raw_own_file

    root = tmp_path / "w.raw"
    sha = "ab" + "0" * 62
    for stored in (f"ab/{sha}.gz", f"/elsewhere/o.raw/ab/{sha}.gz", f"o.raw/ab/{sha}.gz"):
        assert raw_own_file(root, stored) == root / "ab" / f"{sha}.gz"
    for stored in ("/etc/passwd", "../../etc/passwd", f"ab/../{sha}.gz", f"zz/{sha}.gz", ""):
        assert raw_own_file(root, stored) is None, stored  # not this warehouse's: never deleted
    assert raw_file(root, f"ab/{sha}.gz") is None  # kept nowhere
    (root / "ab").mkdir(parents=True)
    (root / "ab" / f"{sha}.gz").write_bytes(b"x")
    assert raw_file(root, f"/elsewhere/o.raw/ab/{sha}.gz") == root / "ab" / f"{sha}.gz"


def test_the_newest_answer_of_a_url_is_kept_however_old_and_a_replay_is_aged_from_its_run(tmp_path):
    """--keep-raw-days 0 deleted the payloads of the run just loaded; a replayed recording was pruned at once (its
    fetch time is its vintage); an answer later runs were told "not modified" about was deleted after N days while
    today's prices still rested on it. The newest stored answer of each URL is what reparse reads: it is kept."""
    db = tmp_path / "w.duckdb"
    [loaded] = refresh(db, ["fake"], replay=record_dir(tmp_path / "rec", ITEMS, recorded_at=OLD))
    assert loaded.status == "ok"
    stored = files(raw_dir(db))
    run_job(db, ["fake"], replay=record_dir(tmp_path / "rec", ITEMS, recorded_at=OLD), keep_raw_days=0)
    assert files(raw_dir(db)) == stored  # the newest answer of the URL, stored a moment ago from a month-old recording
    con = open_warehouse(db)
    con.execute("UPDATE scrape_runs SET started_at = started_at - INTERVAL 90 DAY")  # unchanged for three months
    con.close()
    run_job(db, ["fake"], keep_raw_days=5, replay=record_dir(tmp_path / "rec", ITEMS, recorded_at=OLD))
    assert files(raw_dir(db)) == stored
    [again] = reparse(db, ["fake"])
    assert (again.status, again.offers) == ("ok", 2)


def test_two_refreshes_storing_the_same_answer_at_once_both_succeed(tmp_path):
    """A manual refresh during the nightly run stored the same content under one fixed '<sha>.part': one renamed the
    other's file away and failed ("cannot keep the raw payloads")."""
    import threading

    from scraper.base import RawPayload
    from scraper.rawstore import store

    body = b'{"items": []}' * 40_000  # over the compression limit: written as is, slowly enough to overlap
    errors: list[BaseException] = []
    for attempt in range(20):
        root = tmp_path / f"r{attempt}"
        start = threading.Barrier(4)

        def keep(root: Path = root, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                store(root, RawPayload("https://x.test/p", datetime.now(UTC), 200, body=body))
            except BaseException as exc:  # any failure of any writer fails the test
                errors.append(exc)

        writers = [threading.Thread(target=keep) for _ in range(4)]
        for w in writers:
            w.start()
        for w in writers:
            w.join()
    assert errors == []
    assert all(len(files(tmp_path / f"r{attempt}")) == 1 for attempt in range(20))  # one file, no .part left over
