"""``costopt completion SHELL``: the shell completion script, to source or install."""

from __future__ import annotations

from typing import Annotated

import typer


def _shells(incomplete: str) -> list[str]:
    from cli.completion import SHELLS

    return [s for s in SHELLS if s.startswith(incomplete)]


def completion_command(
    shell: Annotated[
        str, typer.Argument(help="bash | zsh | fish | powershell", show_default=False, autocompletion=_shells)
    ],
) -> None:
    """Print the completion script for SHELL: eval "$(costopt completion bash)" in ~/.bashrc (zsh: ~/.zshrc).

    Completes commands, options, --provider and --gpu names, and --format values.
    """
    from cli.completion import SHELLS, script
    from warehouse.errors import UsageError

    if shell not in SHELLS:
        raise UsageError(f"unknown shell {shell!r}; known: {', '.join(SHELLS)}")
    print(script(shell))
