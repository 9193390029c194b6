"""The ``costopt`` command line: thin typer commands over the library.

Business logic never lives here. Every command module imports its heavy dependencies inside the
command body so that ``costopt --help`` starts fast; ``main`` turns every error into one line on
stderr and a non-zero exit code, never a traceback:

* a ``CostoptError`` -> its one line and its exit code (2 bad input, 1 otherwise);
* Ctrl-C, whether Python's ``KeyboardInterrupt`` or DuckDB's ``RuntimeError("Query interrupted")``
  -> ``costopt: interrupted`` and exit 130 (every load is one transaction: nothing is half-written);
* a DuckDB error that escaped the layers below (a damaged file read lazily) -> one line, exit 1;
* anything else -> one line naming the exception, exit 1 (``COSTOPT_DEBUG=1`` re-raises it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


def _interrupted_while_starting(_signum: int, _frame: object) -> None:
    """Ctrl-C before a command runs (while modules import): nothing has been written; just leave."""
    sys.stderr.write("costopt: interrupted\n")
    os._exit(130)


# as early as this module is imported, before typer and the rest load; a ValueError means it was
# imported from a thread other than the main one, which is not a command-line start
with contextlib.suppress(ValueError):
    signal.signal(signal.SIGINT, _interrupted_while_starting)

import functools  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import typer  # noqa: E402

from warehouse.errors import CostoptError, Interrupted, from_duckdb, is_duckdb_error, is_interrupt  # noqa: E402

app = typer.Typer(
    name="costopt",
    help="GPU prices, training-time estimates and cost plans for rented GPUs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: rich would add ~0.1 s to every start
)


def _version(value: bool) -> None:
    """``--version``: the installed distribution's version, read only when asked (no import at start-up)."""
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("costopt")
        except PackageNotFoundError:  # run from a source tree that was never installed
            number = "unknown (not installed)"
        typer.echo(f"costopt {number}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print costopt's version and exit."
    ),
) -> None:
    """GPU prices, training-time estimates and cost plans for rented GPUs."""


def _guarded(function: Callable[..., Any]) -> Callable[..., Any]:
    """Run a command turning Ctrl-C and stray library errors into the project's errors.

    Done around each command (not around ``app()``) because click/typer handle ``KeyboardInterrupt``
    themselves, differently across versions (typer 0.29 exits 130 silently, click prints "Aborted!"
    and exits 1).
    """

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (CostoptError, typer.Exit):
            raise
        except BrokenPipeError:
            _stdout_gone()
        except KeyboardInterrupt:
            raise Interrupted("interrupted") from None
        except Exception as exc:
            if is_interrupt(exc):
                raise Interrupted("interrupted") from None
            if is_duckdb_error(exc):
                raise from_duckdb(exc) from None
            if os.environ.get("COSTOPT_DEBUG"):
                raise
            first = (str(exc).strip().splitlines() or [""])[0]
            raise CostoptError(
                f"unexpected {type(exc).__name__}: {first}", hint="COSTOPT_DEBUG=1 shows the traceback"
            ) from None

    return run


def _stdout_gone() -> None:
    """The reader of the pipe left (``costopt prices -f csv | head``): stop quietly with 141, as a Unix tool
    killed by SIGPIPE does, instead of an error about output nobody reads."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(141)


def _flush() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_gone()


def _register() -> None:
    from cli.commands import registry

    for name, function in registry.COMMANDS:
        app.command(name)(_guarded(function))


def _watch_ctrl_c() -> None:
    """Make Ctrl-C stop a running DuckDB query at once.

    Python runs its SIGINT handler only between bytecodes of the main thread, and DuckDB checks for
    it only between large units of work: a long query could take minutes to notice. The signal also
    wakes this thread (``signal.set_wakeup_fd``), which interrupts the warehouse connections. Only
    while Ctrl-C means "stop" (the default handler): ``costopt schedule`` installs its own handler
    to let a load in progress finish, and is left alone.
    """
    import threading

    from warehouse.db import interrupt_all

    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except ValueError:  # not the main thread
        return

    def watch() -> None:
        while data := os.read(read, 64):
            if signal.SIGINT in data and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                interrupt_all()

    threading.Thread(target=watch, name="costopt-ctrl-c", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # from here on Ctrl-C unwinds cleanly
    try:
        if os.environ.get("_COSTOPT_COMPLETE"):  # the shell asks what completes a word (costopt completion)
            from cli.completion import prepare

            prepare()
        _watch_ctrl_c()
        _register()
        app(args=argv, prog_name="costopt", complete_var="_COSTOPT_COMPLETE", standalone_mode=True)
    except SystemExit as exc:
        if exc.code == 130:  # typer's own answer to a Ctrl-C outside a command body: exit 130, silently
            sys.stderr.write("costopt: interrupted\n")
        _flush()
        raise
    except (Interrupted, KeyboardInterrupt):
        sys.stderr.write("costopt: interrupted\n")
        sys.exit(130)
    except CostoptError as exc:
        sys.stderr.write(f"costopt: error: {exc.one_line()}\n")
        sys.exit(exc.exit_code)
    finally:
        # the command is over (its result decided): a Ctrl-C during interpreter teardown must not
        # kill the process by the signal and turn a finished refresh into "killed"
        signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":
    main()
