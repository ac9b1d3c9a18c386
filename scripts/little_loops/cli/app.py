"""`ll-loop`'s command line: the parser, and the entry point that runs it.

`build_parser()` is every subcommand with its flags and help texts; `rewrite_shorthand`
turns `ll-loop <loop> ...` into `ll-loop run <loop> ...`. `main_loop(argv)` is the only
entry; it parses, hands the parsed command to `dispatch.py`, and never raises: argparse
usage errors exit 2; Ctrl-C exits 130; a closed stdout (`ll-loop list | head -1`) exits
141 without a word; any other exception becomes its line and exit code in
`error_boundary.py`.

Start-up stays short (`ll-loop --help` is measured in `benchmarks/`): this module imports
only argparse and the light `cli` helpers; the dispatch, each subcommand's module, and with
them the loop engine, are imported when a subcommand runs.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import TypeAlias

from little_loops import __version__
from little_loops.cli.exit_codes import (
    BROKEN_PIPE,
    EXIT_CODE_TABLE,
    INTERRUPTED,
    USAGE,
)
from little_loops.cli.output import DIAGRAM_FORMATS, standard_streams, write_error_line
from little_loops.cli.output import silence_stdout as _silence_stdout

SUBCOMMANDS = (
    "run",
    "validate",
    "compile",
    "list",
    "status",
    "stop",
    "approve",
    "reject",
    "resume",
    "history",
    "show",
    "schema",
    "fragments",
    "watch",
    "worker",
    "report",
)
# Flags that only make sense for `run`: `ll-loop --dry-run x` means `ll-loop run --dry-run x`.
_RUN_SHORT_FLAGS = ("-n", "-b", "-q", "-v")
_RUN_LONG_FLAGS = (
    "--max-iterations",
    "--max-steps",
    "--no-llm",
    "--llm-model",
    "--dry-run",
    "--background",
    "--follow",
    "--quiet",
    "--verbose",
    "--queue",
    "--stall-threshold",
    "--context",
    "--max-cost",
    "--max-tokens",
    "--notify",
    "--engine",
    "--detach",
)


def rewrite_shorthand(argv: list[str]) -> list[str]:
    """`ll-loop <loop> ...` -> `ll-loop run <loop> ...` (reference rule, plus run flags)."""
    if not argv or argv[0] in SUBCOMMANDS:
        return argv
    first = argv[0]
    if not first.startswith("-") or _is_run_flag(first):
        return ["run", *argv]
    return argv


def _is_run_flag(word: str) -> bool:
    if word.startswith("--"):
        name = word.split("=", 1)[0]
        return len(name) > 2 and any(flag.startswith(name) for flag in _RUN_LONG_FLAGS)
    return word[:2] in _RUN_SHORT_FLAGS


# --- parser ----------------------------------------------------------------------------


def _at_least_one(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _context_assignment(text: str) -> tuple[str, str]:
    from little_loops.cli.context_option import context_assignment

    return context_assignment(text)


def _not_negative(text: str) -> int:
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def _positive_dollars(text: str) -> float:
    try:
        value = float(text.strip().removeprefix("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an amount in US dollars, got {text!r}") from None
    if not math.isfinite(value):  # 1e999 reads as inf, nan as nan
        raise argparse.ArgumentTypeError(f"must be a finite amount, got {text!r}")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text!r}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: '{text}'") from None


def _add_engine_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        choices=("local", "temporal"),
        help="where runs live: this machine (default) or a Temporal server "
        "(LL_TEMPORAL_ADDRESS); default from LL_ENGINE",
    )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("loop", help="loop name (.loops/<name>.yaml) or path to a loop file")
    _add_engine_option(parser)
    parser.add_argument(
        "-n",
        "--max-iterations",
        type=_at_least_one,
        help="override max_iterations (>= 1); little-loops HEAD files: their max_iterations "
        "(the step cap, or the pass cap when max_steps is set)",
    )
    parser.add_argument(
        "--max-steps",
        type=_at_least_one,
        metavar="N",
        help="override the step cap (>= 1): max_steps of a HEAD file, max_iterations otherwise",
    )
    # `--max N` meant `--max-iterations N` before `--max-cost` existed (an abbreviation);
    # an exact option keeps it meaning that instead of becoming ambiguous.
    parser.add_argument("--max", dest="max_iterations", type=_at_least_one, help=argparse.SUPPRESS)
    parser.add_argument("--no-llm", action="store_true", help="no LLM calls (judge by exit code)")
    parser.add_argument("--llm-model", help="model for every LLM evaluation of this run")
    parser.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    parser.add_argument("-v", "--verbose", action="store_true", help="show action output live")
    parser.add_argument(
        "--queue",
        action="store_true",
        help="if a running loop shares the scope, wait for it to end instead of refusing",
    )
    parser.add_argument(
        "--stall-threshold",
        type=_not_negative,
        metavar="N",
        help="override stall_threshold for this run (0 turns the stall guard off)",
    )
    parser.add_argument(
        "--max-cost",
        type=_positive_dollars,
        metavar="USD",
        help="the run's budget in US dollars (overrides max_cost_usd; kept on resume); "
        "reached: the run stops, exit 8",
    )
    parser.add_argument(
        "--max-tokens",
        type=_at_least_one,
        metavar="N",
        help="the run's budget in input + output tokens (overrides max_tokens; kept on "
        "resume); reached: the run stops, exit 8",
    )
    parser.add_argument(
        "--notify",
        metavar="CMD",
        help="shell command run (detached, 60 s at most) when the run ends or needs someone, "
        "with LL_LOOP, LL_EVENT, LL_STATUS, LL_MESSAGE, LL_STATE_FILE set; replaces the "
        "loop's notify: ('' for none)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The `ll-loop` parser with its eight subcommands."""
    parser = argparse.ArgumentParser(
        prog="ll-loop",
        description="Run FSM automation loops. `ll-loop <loop> [flags]` means "
        "`ll-loop run <loop> [flags]`.",
        epilog=EXIT_CODE_TABLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"ll-loop {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="command", required=True)
    _add_running_commands(sub)
    _add_file_commands(sub)
    _add_state_commands(sub)
    _add_report(sub)
    return parser


Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _add_running_commands(sub: Subparsers) -> None:
    """`run` and `resume`: they run the loop, so they share flags and the exit-code table."""
    run = _documented_parser(sub, "run", "run a loop")
    _add_run_options(run)
    run.add_argument(
        "input",
        nargs="?",
        metavar="INPUT",
        help="little-loops HEAD files: the value of the loop's input_key (default "
        "${context.input}); a JSON object sets the keys it shares with the loop's context",
    )
    run.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    run.add_argument("-b", "--background", action="store_true", help="run detached, log to file")
    run.add_argument(
        "--context",
        action="append",
        type=_context_assignment,
        metavar="KEY=VALUE",
        help="set ${context.KEY} for this run, over the loop file's context (repeatable; "
        "resume keeps it)",
    )
    run.add_argument("--follow", action="store_true", help=_FOLLOW_HELP)
    run.add_argument(
        "--detach", action="store_true", help="--engine temporal: start the run and return"
    )
    resume = _documented_parser(sub, "resume", "continue a paused or interrupted loop")
    _add_run_options(resume)
    resume.add_argument(
        "-b", "--background", action="store_true", help="resume detached, log to file"
    )
    resume.add_argument("--follow", action="store_true", help=_FOLLOW_HELP)
    # Only on `resume`: on `run` it would make the documented `--max 3` ambiguous.
    resume.add_argument(
        "--max-continuations",
        type=_at_least_one,
        help="raise max_continuations (handoffs a run may be continued after) for this run",
    )
    resume.add_argument(
        "--from-history",
        action="store_true",
        help="first bring back the newest unfinished run a later `run` moved to .loops/.history/",
    )
    resume.add_argument(
        "--prompt",
        help="--engine temporal: the continuation prompt to resume a handoff with "
        "(instead of the one the action gave)",
    )
    _add_worker_command(sub)


def _add_worker_command(sub: Subparsers) -> None:
    worker = sub.add_parser(
        "worker", help="run this checkout's loops for a Temporal server (--engine temporal)"
    )
    worker.add_argument("--address", metavar="HOST:PORT", help="default: LL_TEMPORAL_ADDRESS")
    worker.add_argument("--namespace", metavar="N", help="default: LL_TEMPORAL_NAMESPACE")
    worker.add_argument(
        "--task-queue", metavar="Q", help="default: ll-loop@<host>:<this checkout's path>"
    )
    only = worker.add_mutually_exclusive_group()
    only.add_argument(
        "--activities-only",
        action="store_true",
        help="run the checkout's actions only; another worker of the queue runs the workflows",
    )
    only.add_argument(
        "--workflows-only",
        action="store_true",
        help="run the queue's workflows only (any machine; give --task-queue); the "
        "checkout's worker runs the actions",
    )


_FOLLOW_HELP = "with --background: follow the run here as `ll-loop watch` does"


def _documented_parser(sub: Subparsers, name: str, summary: str) -> argparse.ArgumentParser:
    return sub.add_parser(
        name,
        help=summary,
        epilog=EXIT_CODE_TABLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _add_file_commands(sub: Subparsers) -> None:
    """`validate`, `compile`, `list`: about loop files."""
    sub.add_parser("validate", help="check a loop file").add_argument(
        "loop", help="loop name (.loops/<name>.yaml) or path to a loop file"
    )
    compile_parser = sub.add_parser("compile", help="compile a paradigm file to FSM YAML")
    compile_parser.add_argument("input", help="paradigm YAML file (a path)")
    compile_parser.add_argument("-o", "--output", help="output file (default: <input>.fsm.yaml)")
    list_parser = sub.add_parser("list", help="list loops, or unfinished runs with --running")
    list_parser.add_argument(
        "--running",
        action="store_true",
        help="list unfinished runs (running, paused, interrupted, stalled)",
    )
    list_parser.add_argument("--json", action="store_true", help="print JSON")
    _add_list_filters(list_parser)
    _add_engine_option(list_parser)
    _add_show_commands(sub)


def _add_list_filters(parser: argparse.ArgumentParser) -> None:
    """Filters of HEAD loops' metadata (a legacy loop is public, with no category or label)."""
    parser.add_argument(
        "--visibility",
        choices=("public", "internal", "example", "all"),
        help="only loops of this visibility (default: public, and a count of the others)",
    )
    parser.add_argument("--all", action="store_true", help="every visibility (= --visibility all)")
    parser.add_argument("--category", metavar="C", help="only loops of category C")
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="L",
        help="only loops with label L (repeatable: any of them; case-insensitive)",
    )


def _add_show_commands(sub: Subparsers) -> None:
    """`show` and `schema`: a loop at a glance, and the JSON Schema of loop files."""
    show = sub.add_parser("show", help="show a loop: limits, guards, states, routes, diagram")
    show.add_argument("loop", help="loop name (.loops/<name>.yaml) or path to a loop file")
    show.add_argument(
        "--diagram",
        nargs="?",
        const=DIAGRAM_FORMATS[0],
        choices=DIAGRAM_FORMATS,
        help="print the state graph as Mermaid (default) or Graphviz DOT",
    )
    show.add_argument("--json", action="store_true", help="print JSON")
    sub.add_parser("schema", help="print the JSON Schema of loop files (for editors)")
    sub.add_parser(
        "fragments", help="list the fragments of a fragment library (name, first description line)"
    ).add_argument("library", help="library file (a path, or a name under .loops/)")


def _add_state_commands(sub: Subparsers) -> None:
    """`status`, `stop`, `history`: about the saved run of a loop."""
    where = "loop name, file stem or path"
    status = sub.add_parser("status", help="show the saved state of a loop")
    status.add_argument("loop", help=where)
    status.add_argument("--json", action="store_true", help="print the state as JSON")
    _add_engine_option(status)
    stop = sub.add_parser("stop", help="stop a running loop")
    stop.add_argument("loop", help=where)
    _add_engine_option(stop)
    _add_answer_commands(sub, where)
    _add_history(sub, where)
    watch = _documented_parser(sub, "watch", "follow a run from another terminal")
    _add_engine_option(watch)
    watch.add_argument("loop", help=where)
    watch.add_argument("-v", "--verbose", action="store_true", help="show action output live")
    watch.add_argument(
        "--wait",
        action="store_true",
        help="if no run is under way (none yet, finished or paused), wait for one and follow it",
    )


def _add_answer_commands(sub: Subparsers, where: str) -> None:
    """`approve`, `reject`: answer the question a `human_approval` state waits on."""
    approve = sub.add_parser(
        "approve", help="approve what a run waits on (human_approval); exit 1 if none waits"
    )
    approve.add_argument("loop", help=where)
    approve.add_argument(
        "--edit",
        metavar="TEXT",
        help="approve with changes: the state's on_edit route, TEXT in ${captured.<state>.edit}",
    )
    _add_engine_option(approve)
    reject = sub.add_parser(
        "reject", help="reject what a run waits on (human_approval); exit 1 if none waits"
    )
    reject.add_argument("loop", help=where)
    reject.add_argument("--reason", metavar="TEXT", help="why (${captured.<state>.reason})")
    _add_engine_option(reject)


def _add_history(sub: Subparsers, where: str) -> None:
    history = sub.add_parser("history", help="show what a run did (the latest, or --run N)")
    history.add_argument("loop", help=where)
    _add_engine_option(history)
    history.add_argument(
        "-n",
        "--tail",
        type=_not_negative,
        default=50,
        help="show the last N lines or events (default 50; 0: all)",
    )
    history.add_argument("--state", metavar="NAME", help="only what state NAME did")
    history.add_argument(
        "--event",
        metavar="TYPE",
        action="append",
        default=[],
        help="only events of TYPE (repeatable), e.g. route, action_complete, evaluate",
    )
    history.add_argument(
        "--since",
        type=_since,
        metavar="TIME",
        help="only events from TIME on: ISO (2026-11-23T02:00), a time today (02:00) "
        "or an age (30m, 2h, 1d)",
    )
    which = history.add_mutually_exclusive_group()
    which.add_argument("--runs", action="store_true", help="list the runs kept, numbered")
    which.add_argument("--run", type=_at_least_one, metavar="N", help="show run N of --runs")
    output = history.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the events as a JSON array")
    output.add_argument("--jsonl", action="store_true", help="print one JSON event per line")
    output.add_argument(
        "--raw", action="store_true", help="the reference's lines: <ts> <event>: {dict}"
    )


def _add_report(sub: Subparsers) -> None:
    report = sub.add_parser(
        "report", help="what the runs of a loop did and cost, per run and per state"
    )
    report.add_argument("loop", nargs="?", help="loop name, file stem or path (default: all)")
    report.add_argument(
        "--since",
        type=_since,
        metavar="WHEN",
        help="only runs started from WHEN on: ISO (2026-11-23T02:00), a time today (02:00) "
        "or an age (30m, 2h, 1d)",
    )
    report.add_argument("--json", action="store_true", help="print one JSON document")
    _add_engine_option(report)


def _since(text: str) -> object:
    from little_loops.cli.history_query import since_argument

    return since_argument(text)


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code argparse chose (help: 0, usage error: 2).

    An unknown flag is reported with the usage of the subcommand it was given to.
    """
    try:
        parsed, extra = parser.parse_known_args(argv)
        extra = _late_run_input(parsed, extra)
        if extra:
            subparser = subcommand_parser(parser, parsed.command)
            subparser.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else USAGE
        if code == USAGE and argv and argv[0] in SUBCOMMANDS:
            _hint_shadowed_loop(argv[0])
        return code


def _late_run_input(parsed: argparse.Namespace, extra: list[str]) -> list[str]:
    """`run <loop> -v INPUT`: argparse settles an optional positional at the first
    positional it meets, so an INPUT after a flag is left over; it is the input."""
    if getattr(parsed, "command", None) != "run" or parsed.input is not None:
        return extra
    if extra and not extra[0].startswith("-"):
        parsed.input = extra[0]
        return extra[1:]
    return extra


def _hint_shadowed_loop(word: str) -> None:
    from little_loops.cli.resolve import shadowing_loop_file

    path = shadowing_loop_file(word)
    if path is not None:
        write_error_line(f"ll-loop: did you mean 'll-loop run {word}'? ({path} exists)")


def subcommand_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of subcommand `name` (its usage is what a mistake in it should show)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen: argparse.ArgumentParser = action.choices[name]
            return chosen
    raise KeyError(name)  # pragma: no cover - build_parser always adds the subcommands


def _refuse_missing_command(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """`ll-loop` alone, or an unknown option where the command goes, is a usage error
    (exit 2) that names the problem (issue 23 item 17). The reference printed the help
    and exited 1 for `ll-loop` alone, and `ll-loop -weird` said a command is required."""
    if not argv:
        parser.error("no command given: ll-loop <loop>, or ll-loop <command> (see ll-loop --help)")
    first = argv[0]
    if first.startswith("-") and first not in _TOP_LEVEL_OPTIONS and not _is_run_flag(first):
        parser.error(f"unknown option '{first}' (a command or a loop name comes first)")


_TOP_LEVEL_OPTIONS = frozenset({"-h", "--help", "--version"})


def _refuse_misspelt_command(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """`ll-loop stauts x`: a word close to a command that names no loop is a typo (exit 2).

    Any other word is a loop name (`ll-loop <loop>` means `ll-loop run <loop>`).
    """
    if not argv or argv[0] in SUBCOMMANDS or argv[0].startswith("-"):
        return  # a command or a flag: nothing to import for (`--help` stays light)
    from little_loops.cli.command_typos import misspelt_command

    nearest = misspelt_command(argv[0], SUBCOMMANDS)
    if nearest is not None:
        parser.error(f"unknown command '{argv[0]}' (did you mean '{nearest}'?)")


def _parse_and_dispatch(argv: list[str]) -> int:
    parser = build_parser()
    try:
        _refuse_missing_command(parser, argv)
        _refuse_misspelt_command(parser, argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else USAGE
    parsed = _parse(parser, rewrite_shorthand(argv))
    if isinstance(parsed, int):
        return parsed
    from little_loops.cli.dispatch import dispatch

    return dispatch(parsed)


def __getattr__(name: str) -> dict[str, Callable[[argparse.Namespace], int]]:
    """`app.COMMANDS`: the dispatch table, where it lived before `dispatch.py` (looked up
    when asked, so that `--help` does not import the dispatch)."""
    if name == "COMMANDS":
        from little_loops.cli.dispatch import COMMANDS

        return COMMANDS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- entry -----------------------------------------------------------------------------


def main_loop(argv: Sequence[str] | None = None) -> int:
    """Run `ll-loop` with `argv` (default: the process arguments); return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None:  # the `ll-loop` process itself, not a call from a test or a program
        from little_loops.cli.signals import restore_interrupt

        restore_interrupt()
    with standard_streams():
        code = _dispatch_safely(args)
    if argv is None:
        _exit_past_temporal_client(code)
    return code


def _dispatch_safely(args: list[str]) -> int:
    try:
        return _parse_and_dispatch(args)
    except KeyboardInterrupt:
        write_error_line("ll-loop: interrupted")
        return INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE
    except Exception as exc:
        from little_loops.cli.error_boundary import exit_for_error

        return exit_for_error(exc)


def _exit_past_temporal_client(code: int) -> None:
    """The Temporal client can crash at interpreter exit (sdk-python #300): once a
    command has loaded it (the Temporal engine, or a local run asking whether its loop's
    workflow is open), end the process here with the exit code already decided."""
    engine = sys.modules.get("little_loops.cli.temporal_engine")
    used = engine is not None and getattr(engine, "used", False)
    if used or "little_loops.fsm.temporal.marker_check" in sys.modules:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
