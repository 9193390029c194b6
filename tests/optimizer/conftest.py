"""Fixtures shared by the calibration tests: the cross-validation of what ships is computed once per session."""

from __future__ import annotations

import pytest

from optimizer import calibration
from optimizer.calibration import HeldOut


@pytest.fixture(scope="session")
def shipped_held_out() -> list[HeldOut]:
    """Every calibration run predicted by the whole procedure that ships, constants and ranges, without its
    organisation (``calibration.cross_validated``; about 70 s on 2 cores since round 21, 35 s before)."""
    return calibration.cross_validated(calibration.cases(), workers=2)
