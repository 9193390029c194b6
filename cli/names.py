"""The name rule (``warehouse.names``) applied to the options of the commands that read the warehouse."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb


def check_providers(
    con: duckdb.DuckDBPyConnection | None, given: list[str] | None, *, flag: str = "--provider"
) -> list[str] | None:
    """``--provider`` values in canonical spelling; unknown ones refused (exit 2) with the known ones:
    the registry's, and with a warehouse (``con``) every provider it holds data of."""
    from scraper.providers import NAMES
    from warehouse.names import resolve, warehouse_providers

    known = [*NAMES, *(warehouse_providers(con) if con is not None and given else [])]
    return resolve("provider", given, known, flag=flag)


def check_regions(
    con: duckdb.DuckDBPyConnection,
    given: list[str] | None,
    *,
    providers: list[str] | None = None,
    countries: bool = False,
) -> list[str] | None:
    """``--region`` values as the warehouse spells them; unknown ones refused (exit 2) with the known ones
    (those of the ``--provider`` given, if any)."""
    from warehouse.names import resolve, warehouse_regions

    if not given:
        return None
    known = warehouse_regions(con, providers=providers, countries=countries)
    return resolve("region", given, known, flag="--region")


def check_gpus(given: list[str] | None) -> list[str] | None:
    """``--gpu`` values as canonical GPU names (aliases resolved); unknown ones refused with the known ones."""
    if not given:
        return None
    from warehouse.gpus import catalog

    names: list[str] = []
    for name in given:
        canonical = catalog().resolve(name).name
        if canonical not in names:
            names.append(canonical)
    return names
