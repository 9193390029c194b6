"""Publishing to the other kinds of target: an S3-compatible store and a PostgreSQL catalog.

Both run against real servers started here on 127.0.0.1 (moto's S3 server; a throwaway PostgreSQL
cluster made with initdb/pg_ctl). Where a server cannot be had, the test skips and says why.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.warehouse.iceberg_support import iceberg_figures, seed, warehouse_figures
from warehouse.iceberg.catalog import open_catalog, resolve_target
from warehouse.iceberg.publish import publish


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 with an empty bucket; credentials only in the environment."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        pytest.skip(f"moto's server mode is not installed ({exc}); it is in the test extra: pip install '.[test]'")
    import boto3

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for key, value in {
        "AWS_ACCESS_KEY_ID": "costopt-test",
        "AWS_SECRET_ACCESS_KEY": "costopt-test-secret",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
    }.items():
        monkeypatch.setenv(key, value)
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="lake")
    try:
        yield endpoint
    finally:
        server.stop()


def test_publish_to_s3_and_read_back(seeded: Path, tmp_path: Path, s3: str) -> None:
    import boto3

    target = resolve_target(f"sqlite:///{tmp_path / 'catalog.db'}", "s3://lake/costopt", None)
    report = publish(seeded, target)
    assert report.changed and all(t.metadata_location.startswith("s3://lake/costopt/") for t in report.tables)
    catalog = open_catalog(target)
    assert iceberg_figures(catalog) == warehouse_figures(seeded)
    keys = [o["Key"] for o in boto3.client("s3", endpoint_url=s3).list_objects_v2(Bucket="lake")["Contents"]]
    assert any(k.startswith("costopt/costopt/price_history/data/") and k.endswith(".parquet") for k in keys)
    assert any(k.startswith("costopt/costopt/price_history/metadata/") and k.endswith(".metadata.json") for k in keys)
    assert not publish(seeded, target).changed  # idempotent on S3 too
    assert "costopt-test-secret" not in target.describe() + "".join(str(t.as_dict()) for t in report.tables)


def _postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@pytest.fixture
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (as the ``postgres`` user when the tests run as root)."""
    bindir = _postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (no initdb): `apt-get install postgresql` to run this test")
    run_as: list[str] = []
    if os.geteuid() == 0:
        import pwd

        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run a throwaway cluster as")
        runuser = shutil.which("runuser")
        if runuser is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as a non-root user")
        run_as = [runuser, "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="costopt-pg-"))
    if run_as:
        os.chown(root, user.pw_uid, user.pw_gid)
    data, port = root / "data", free_port()
    owner = "postgres" if run_as else None
    init = subprocess.run(
        [*run_as, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", owner or "costopt"],
        capture_output=True,
        text=True,
        check=False,
    )
    if init.returncode:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"initdb failed here: {init.stderr.strip().splitlines()[-1] if init.stderr.strip() else '?'}")
    options = f"-h 127.0.0.1 -p {port} -k {root}"
    start = subprocess.run(
        [*run_as, str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start"],
        capture_output=True,
        text=True,
        check=False,
    )
    if start.returncode:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"pg_ctl could not start a cluster here: {start.stdout.strip()[-200:]}")
    try:
        yield f"postgresql://{owner or 'costopt'}@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*run_as, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


def test_publish_with_a_postgresql_catalog(seeded: Path, tmp_path: Path, postgres: str) -> None:
    target = resolve_target(postgres, str(tmp_path / "lake"), "team_lake")
    report = publish(seeded, target)
    assert report.namespace == "team_lake" and report.changed
    catalog = open_catalog(target)
    assert iceberg_figures(catalog, "team_lake") == warehouse_figures(seeded)
    import sqlalchemy

    engine = sqlalchemy.create_engine(target.uri)
    with engine.connect() as con:
        names = sorted(r[0] for r in con.execute(sqlalchemy.text("SELECT table_name FROM iceberg_tables")))
    engine.dispose()
    assert names == ["gpus", "offers", "price_history", "scrape_runs", "spot_risk"]  # the catalog lives in PostgreSQL
    # a second writer's view: a fresh catalog connection sees the same current snapshots
    again = open_catalog(resolve_target(postgres, str(tmp_path / "lake"), "team_lake"))
    assert not publish(seeded, target).changed
    assert iceberg_figures(again, "team_lake") == warehouse_figures(seeded)


def test_seed_helper_is_the_real_refresh(tmp_path: Path) -> None:
    """The publish tests stand on a warehouse loaded by the real refresh from the bundled fixtures."""
    path = tmp_path / "w.duckdb"
    seed(path, providers=["lambda"])
    assert warehouse_figures(path)["price_history"][0] == 20
