"""The century rule plan and estimate share (optimizer/absurd.py)."""

from __future__ import annotations

import pytest

from optimizer import defaults
from optimizer.absurd import refuse_absurd_wall_time
from warehouse.errors import UsageError

CENTURY_HOURS = defaults.MAX_WALL_YEARS.value * defaults.HOURS_PER_YEAR


def test_a_century_is_still_an_answer():
    refuse_absurd_wall_time(CENTURY_HOURS, on="on 8 x H100-SXM", remedy="or give more --gpus")


@pytest.mark.parametrize("hours", [CENTURY_HOURS * 1.001, 4.2e20, float("inf"), float("nan")])
def test_more_than_a_century_is_an_input_error(hours):
    with pytest.raises(UsageError) as refused:
        refuse_absurd_wall_time(hours, on="on 8 x H100-SXM", remedy="or give more --gpus")
    assert refused.value.exit_code == 2
    assert str(refused.value).startswith("the job would take ")
    assert str(refused.value).endswith(
        " years on 8 x H100-SXM, more than 100 years: check --tokens and --model (or give more --gpus)"
    )
    if hours == 4.2e20:
        assert "would take 4.79e+16 years" in str(refused.value)
