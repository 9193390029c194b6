"""Small CLI bugs a new-user audit found (audit B): examples in --help and README that the parsers refused,
errors that did not say what was wrong, and formats that did not carry what they promised."""

from __future__ import annotations

import re
from datetime import timedelta


def test_every_example_of_schedule_every_help_parses():
    """``schedule --help`` offered ``30m``, which the duration grammar refuses as ambiguous."""
    import typing

    from cli.commands.schedule import schedule_command
    from scraper.schedule import parse_every

    option = typing.get_type_hints(schedule_command, include_extras=True)["every"].__metadata__[0]
    examples = re.split(r",\s*", option.help.split(":", 1)[1].strip().rstrip("."))
    assert len(examples) >= 2
    for example in examples:
        assert parse_every(example) > timedelta(0), example
