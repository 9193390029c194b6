"""The one rule for an absurd job, shared by ``plan`` and ``estimate``: more than a century of wall time.

A job that would run for longer than ``defaults.MAX_WALL_YEARS`` is almost surely a typo in ``--model`` or
``--tokens`` (``1e30`` for ``1e10``): answering it, with exit 0, prints figures nobody can use (a wall time of
10^19 days, a model named ``1e+18T``). ``plan`` applies it to its fastest option, ``estimate`` to the GPU count it
was given; both refuse with the same sentence, as an input error (exit 2).
"""

from __future__ import annotations

import math

from optimizer import defaults
from warehouse.errors import UsageError


def refuse_absurd_wall_time(wall_hours: float, *, on: str, remedy: str) -> None:
    """Raise ``UsageError`` when ``wall_hours`` (the expected wall time) is more than ``MAX_WALL_YEARS``.

    ``on`` says what the time is for (``on 8 x H100-SXM``, ``even on its fastest option (8 x H100-SXM)``) and
    ``remedy`` what else than the model and tokens would shorten it (``or give more --gpus``).
    """
    years = wall_hours / defaults.HOURS_PER_YEAR
    limit = defaults.MAX_WALL_YEARS.value
    if math.isnan(years) or years > limit:
        raise UsageError(
            f"the job would take {years:.3g} years {on}, more than {limit:g} years: check --tokens and --model "
            f"({remedy})"
        )
