"""The ``costopt`` command line: thin typer commands over the library.

Business logic never lives here. Every command module imports its heavy dependencies inside the
command body so that ``costopt --help`` starts fast; ``main`` turns every ``CostoptError`` into one
line on stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import sys

import typer

from warehouse.errors import CostoptError

app = typer.Typer(
    name="costopt",
    help="GPU prices, training-time estimates and cost plans for rented GPUs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: rich would add ~0.1 s to every start
)


def _register() -> None:
    from cli.commands import registry

    for name, function in registry.COMMANDS:
        app.command(name)(function)


def main(argv: list[str] | None = None) -> None:
    _register()
    try:
        app(args=argv, standalone_mode=True)
    except CostoptError as exc:
        sys.stderr.write(f"costopt: error: {exc.one_line()}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("costopt: interrupted\n")
        sys.exit(130)


if __name__ == "__main__":
    main()
