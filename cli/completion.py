"""Shell completion: the script for each shell, and the values ``--provider`` and ``--gpu`` complete to.

The shell asks ``costopt`` itself what completes a word (typer's protocol: the script sets
``_COSTOPT_COMPLETE=complete_<shell>`` and the words typed so far, and costopt answers instead of
running a command); ``costopt completion SHELL`` prints the script that wires this up. The value
callbacks read only the provider registry and the GPU table, never the warehouse, so a TAB is instant.
"""

from __future__ import annotations

SHELLS = ("bash", "zsh", "fish", "powershell")
COMPLETE_VAR = "_COSTOPT_COMPLETE"


def complete_provider(incomplete: str) -> list[str]:
    from scraper.providers import NAMES

    return [name for name in NAMES if name.startswith(incomplete.lower())]


def complete_gpu(incomplete: str) -> list[str]:
    from warehouse.gpus import catalog

    return [name for name in catalog().names if name.lower().startswith(incomplete.lower())]


def script(shell: str) -> str:
    """The completion script for ``shell`` (typer's, wired to ``costopt``)."""
    from typer.completion import get_completion_script

    return get_completion_script(prog_name="costopt", complete_var=COMPLETE_VAR, shell=shell)


def prepare() -> None:
    """Before the app answers a completion request: typer's completion classes, which its scripts speak to."""
    from typer.completion import completion_init

    completion_init()
