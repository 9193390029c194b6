"""The ``costopt`` command line: thin typer commands over the library.

Business logic never lives here. Every command module imports its heavy dependencies inside the
command body so that ``costopt --help`` starts fast; ``main`` turns every error into one line on
stderr and a non-zero exit code, never a traceback:

* a ``CostoptError`` -> its one line and its exit code (2 bad input, 1 otherwise);
* click's own usage errors (``--top 0``, ``--format xml``, a missing or unknown option) -> ``costopt: error:``
  and click's message on one line, exit 2 (``_Group``), not click's four lines of usage text;
* Ctrl-C, whether Python's ``KeyboardInterrupt`` or DuckDB's ``RuntimeError("Query interrupted")``
  -> ``costopt: interrupted`` and exit 130 (every load is one transaction: nothing is half-written);
* a DuckDB error that escaped the layers below (a damaged file read lazily) -> one line, exit 1;
* anything else -> one line naming the exception, exit 1 (``COSTOPT_DEBUG=1`` re-raises it).

Start-up and exit are part of every command's time, so both are kept short:

* only the command that runs is registered with typer (``--help`` and an unknown name register all),
  so no other command's module is imported;
* a command that only reads (``READ_ONLY``) leaves with ``os._exit`` once its result is decided, after
  flushing stdout and stderr and closing every warehouse connection: the interpreter's teardown
  (freeing every module and object, DuckDB's and pyarrow's included) took ~0.1 s and wrote nothing.
  The exit code is the one ``sys.exit`` would give; a stdout that cannot be flushed (a closed pipe)
  exits 141, as a tool killed by SIGPIPE does. ``refresh`` (``DURABLE_ON_RETURN``) leaves the same way:
  by the time it returns, every load is committed (DuckDB writes its log at commit), its raw-payload
  thread pool has been joined, and any publish or notification has finished; the connections are then
  closed (a checkpoint) before ``os._exit``. Other commands that write keep the full teardown.
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
from collections.abc import Callable, Iterator  # noqa: E402
from typing import Any  # noqa: E402

import typer  # noqa: E402
import typer.core  # noqa: E402

from warehouse.errors import (  # noqa: E402
    CostoptError,
    Interrupted,
    UsageError,
    from_duckdb,
    is_duckdb_error,
    is_interrupt,
)


class _Group(typer.core.TyperGroup):
    """costopt's command group: click's own usage errors (``--top 0`` out of range, ``--format xml``, a missing
    ``--model``, an unknown option or command) become costopt's one line, as every check of costopt's own is.

    click would print its usage text, a "Try ... --help" line, a blank line and the error: four lines on stderr
    for a bad value where costopt's checks print one. Parsing happens in ``make_context`` (the group's own
    options) and in ``invoke`` (the command's context is made there), so both turn a ``click.UsageError`` into
    ``UsageError``, which ``_run`` prints as ``costopt: error: ...``, exit 2. A command body never raises click's
    errors (``_guarded``), and the help a bare ``costopt`` prints (``NoArgsIsHelpError``) is left to click.
    """

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        with _one_line_usage_errors():
            return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        with _one_line_usage_errors(ctx):
            return super().invoke(ctx)


@contextlib.contextmanager
def _one_line_usage_errors(group: Any = None) -> Iterator[None]:
    """click's message, without its closing full stop; a missing or unknown name also points at ``--help``, where
    the names are (a bad value's message already says what is allowed). ``group``: the group's context, whose
    ``invoked_subcommand`` names the command when click's error carries no context (``--since`` with no value).

    The exception classes are the ones typer raises: typer 0.28 carries its own copy of click (``typer._click``),
    whose errors are not ``click``'s, while older typers use click itself.
    """
    errors = sys.modules[typer.BadParameter.__module__]
    help_instead = getattr(errors, "NoArgsIsHelpError", ())  # click < 8.2 prints that help without an error
    try:
        yield
    except help_instead:
        raise
    except errors.UsageError as exc:
        message = exc.format_message().strip().removesuffix(".")
        bad_value = isinstance(exc, errors.BadParameter) and not isinstance(exc, errors.MissingParameter)
        if exc.ctx is not None and exc.ctx.parent is not None:
            where = exc.ctx.command_path
        elif group is not None and group.invoked_subcommand:
            where = f"{group.command_path} {group.invoked_subcommand}"
        else:
            where = "costopt"
        raise UsageError(message, hint=None if bad_value else f"see {where} --help") from None


app = typer.Typer(
    name="costopt",
    cls=_Group,
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


# commands that write nothing but their output (and, on first use, the seeded default warehouse, which
# they close before they print): these may skip the interpreter's teardown
READ_ONLY = frozenset({"plan", "estimate", "breakeven", "prices", "history", "sql", "runs", "status"})
# commands that write, but whose writes are all committed and whose threads are joined when they return
# (a refresh: loads committed, raw payloads written, publish and notification done): the teardown
# writes nothing for them either (~50 ms of a refresh). `schedule` and `import` keep the full teardown.
DURABLE_ON_RETURN = frozenset({"refresh"})
FAST_EXIT = READ_ONLY | DURABLE_ON_RETURN


def _register(args: list[str]) -> str | None:
    """Register the command named by ``args`` only (every command for ``--help`` or a name typer must refuse);
    returns that command's name, or None."""
    from cli.commands import registry

    name = args[0] if args and args[0] in registry.NAMES else None
    for command, function in registry.commands(name):
        app.command(command)(_guarded(function))
    if name is not None:
        # one registered command would otherwise become the whole app (`costopt --model ...`); a group
        # callback keeps `costopt <command> ...` as typer parses it with every command registered
        app.callback()(_group)
    return name


def _group() -> None:
    """GPU prices, training-time estimates and cost plans for rented GPUs."""


def _watch_ctrl_c() -> None:
    """Make Ctrl-C stop a running DuckDB query at once.

    Python runs its SIGINT handler only between bytecodes of the main thread, and DuckDB checks for
    it only between large units of work: a long query could take minutes to notice. The signal also
    wakes this thread (``signal.set_wakeup_fd``), which interrupts the warehouse connections. Only
    while Ctrl-C means "stop" (the default handler): ``costopt schedule`` installs its own handler
    to let a load in progress finish, and is left alone.
    """
    import threading

    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except ValueError:  # not the main thread
        return

    def watch() -> None:
        while data := os.read(read, 64):
            stop = signal.SIGINT in data and signal.getsignal(signal.SIGINT) is signal.default_int_handler
            db = sys.modules.get("warehouse.db")  # not imported yet: no connection to interrupt
            if stop and db is not None:
                db.interrupt_all()

    threading.Thread(target=watch, name="costopt-ctrl-c", daemon=True).start()


def _ctrl_c_in_a_callback(unraisable: Any) -> None:
    """``sys.unraisablehook``: a Ctrl-C that landed inside a callback Python cannot raise from (a weakref's, a
    ``__del__``) is delivered again, to the command, instead of printed as a traceback and lost.

    Python runs the SIGINT handler at the next bytecode of the main thread, and when that is inside a garbage
    collector's callback the ``KeyboardInterrupt`` is "ignored": printed with its traceback, and the command goes on
    as if no Ctrl-C had come (seen in tests/cli/test_failures under load: a refresh interrupted 0.7 s in).
    A thread sends SIGINT to the main thread again 50 ms later, by when the callback has returned: a real signal,
    so that a blocking call (a sleep, a socket read, a DuckDB query through the Ctrl-C watcher) is woken as by
    the first one (``_thread.interrupt_main`` only sets the flag, and a sleep would run to its end). Any other such
    error keeps Python's own report.
    """
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        import threading

        main = threading.main_thread().ident
        if main is not None:
            threading.Timer(0.05, signal.pthread_kill, (main, signal.SIGINT)).start()
        return
    sys.__unraisablehook__(unraisable)


def main(argv: list[str] | None = None) -> None:
    """The console script. ``argv`` (default: the process's arguments) is for callers in Python, which keep
    their interpreter: only the process's own entry point (no ``argv``) may skip the teardown."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        _run(args)
    except SystemExit as exc:
        if argv is None and (not args or args[0] in FAST_EXIT or args[0] in ("--help", "--version")):
            _exit_now(exc.code)
        raise


def _exit_now(code: object) -> None:
    """Leave at once with the exit status ``sys.exit(code)`` would give, nothing buffered lost."""
    db = sys.modules.get("warehouse.db")
    if db is not None:
        db.close_all()
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): Python prints it and exits 1
        sys.stderr.write(f"{code}\n")
        status = 1
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # the reader left (| head): quietly 141, as _stdout_gone answers
        status = 141
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(status)


def _run(args: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # from here on Ctrl-C unwinds cleanly
    sys.unraisablehook = _ctrl_c_in_a_callback
    try:
        if os.environ.get("_COSTOPT_COMPLETE"):  # the shell asks what completes a word (costopt completion)
            from cli.completion import prepare

            prepare()
        _watch_ctrl_c()
        _register(args)
        app(args=args, prog_name="costopt", complete_var="_COSTOPT_COMPLETE", standalone_mode=True)
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
