"""Shared fixtures: a fresh warehouse file and a factory for price records."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

from warehouse.records import PriceRecord

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "reference"
T0 = datetime(2026, 11, 1, 3, 0, tzinfo=UTC)
CRON_SCHEDULE = pytest.StashKey[object]()


def run_costopt(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``costopt ARGS`` as a user runs it: a fresh process started in the repository, ``env`` over this one's."""
    return subprocess.run(
        [sys.executable, "-c", "from cli.app import main; main()", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def script_module(path: Path, name: str) -> ModuleType:
    """A script outside the packages (a bench, a fixture generator) imported by its path, for its tables and functions.
    It sits in ``sys.modules`` while it runs: a dataclass looks its module up there while the class is built."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def same_answer(a: object, b: object) -> bool:
    """Equal values (JSON, or what the warehouse reads return), except that an age (``*age_hours``, to 0.01 h) may
    differ by the seconds between the two reads: compared exactly, two reads straddled a 36-second rounding step now
    and then."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(
            abs(a[k] - b[k]) <= 0.02
            if isinstance(k, str) and k.endswith("age_hours") and a[k] is not None and b[k] is not None
            else same_answer(a[k], b[k])
            for k in a
        )
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_answer(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that wait for the wall clock run last: what they wait for overlaps the rest of the suite."""
    items.sort(key=lambda item: item.get_closest_marker("wallclock") is not None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the real cron schedule now, if its test is going to run (see tests/ops/wallclock.py)."""
    if any(item.get_closest_marker("wallclock") for item in session.items):
        from tests.ops import wallclock

        session.config.stash[CRON_SCHEDULE] = wallclock.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    schedule = session.config.stash.get(CRON_SCHEDULE, None)
    if schedule is not None:
        schedule.stop()  # type: ignore[attr-defined]
        schedule.remove()  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may touch the user's real warehouse."""
    data = tmp_path_factory.mktemp("costopt-data")
    monkeypatch.setenv("COSTOPT_DATA_DIR", str(data))
    monkeypatch.delenv("COSTOPT_DB", raising=False)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "wh.duckdb"


@pytest.fixture
def make_record() -> Callable[..., PriceRecord]:
    def make(
        instance_type: str = "p5.48xlarge",
        usd: float = 55.04,
        *,
        provider: str = "aws",
        region: str = "us-east-1",
        gpu: str = "H100-SXM",
        gpu_count: float = 8,
        pricing: str = "on_demand",
        at: datetime = T0,
    ) -> PriceRecord:
        return PriceRecord(
            provider=provider,
            region=region,
            instance_type=instance_type,
            gpu=gpu,
            gpu_count=gpu_count,
            pricing=pricing,  # type: ignore[arg-type]
            usd_per_hour=usd,
            source=f"https://example.test/{provider}",
            observed_at=at,
        )

    return make
