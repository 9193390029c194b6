"""Fetching, parsing and loading prices: one module per provider, the refresh, the schedule, the importer.

Every import of httpx in costopt happens inside this package, so this is where httpx's own
command-line client is kept out: ``import httpx`` imports ``httpx._main`` (click, pygments and rich
for the ``httpx`` console script, ~55 ms) unless that import fails, and costopt never runs it. httpx
then provides a stub ``main`` that explains the CLI extra is missing.
"""

import sys

sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # `from ._main import main` -> ImportError
