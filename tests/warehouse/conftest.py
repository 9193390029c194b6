"""Fixtures for the Iceberg publish tests: a warehouse seeded from the bundled fixtures, a local target."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.warehouse.iceberg_support import seed


@pytest.fixture(scope="session")
def seeded_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("seeded") / "seeded.duckdb"
    seed(path)
    return path


@pytest.fixture
def seeded(seeded_template: Path, tmp_path: Path) -> Path:
    """A warehouse loaded from the bundled fixtures (a copy per test)."""
    path = tmp_path / "wh.duckdb"
    shutil.copy(seeded_template, path)
    return path


@pytest.fixture
def target(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A SQLite catalog and a local table location, both in the test's directory."""
    from warehouse.iceberg.catalog import resolve_target

    return resolve_target(f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "lake"), None)
