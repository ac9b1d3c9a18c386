"""`ll-loop`'s dispatch: each parsed subcommand to the one function that does it.

The parser (`app.py`) hands over the parsed arguments; `dispatch` runs the subcommand's
function with validation warnings shown as bare stderr lines. The commands whose work
depends on the engine go through the `RunBackend` chosen once by `backend_for` (`--engine`,
else `LL_ENGINE`): this module never branches on the engine. Each command's module, and
with it the loop engine, is imported when that command runs.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from little_loops.cli.output import usage_error, write_error_line
from little_loops.cli.run_backend import (
    ApprovalBackend,
    HistoryRequest,
    ReportBackend,
    ResumeRequest,
    RunBackend,
    RunRequest,
)
from little_loops.cli.run_options import RunOptions

__all__ = ["COMMANDS", "backend_for", "dispatch", "run_options"]


def dispatch(parsed: argparse.Namespace) -> int:
    """Run the subcommand `parsed` names; return its exit code."""
    with _validation_warnings_to_stderr():
        return COMMANDS[parsed.command](parsed)


def backend_for(engine_flag: str | None) -> RunBackend:
    """The backend of `--engine` (else `LL_ENGINE`, else local)."""
    from little_loops.cli.engine_choice import engine_choice

    if engine_choice(engine_flag) == "temporal":
        from little_loops.cli.temporal_backend import TemporalBackend

        return TemporalBackend()
    from little_loops.cli.local_backend import LocalBackend

    return LocalBackend()


def run_options(args: argparse.Namespace) -> RunOptions:
    """The options `run` and `resume` share, from their parsed flags."""
    return RunOptions(
        max_iterations=args.max_iterations,
        max_continuations=getattr(args, "max_continuations", None),
        no_llm=args.no_llm,
        llm_model=args.llm_model,
        quiet=args.quiet,
        verbose=args.verbose,
        queue=args.queue,
        stall_threshold=args.stall_threshold,
        max_cost=args.max_cost,
        max_tokens=getattr(args, "max_tokens", None),
        context=tuple(getattr(args, "context", None) or ()),
        notify=args.notify,
        max_steps=args.max_steps,
        input=getattr(args, "input", None),
    )


# --- the commands that go to a backend ---------------------------------------------------


def _run(a: argparse.Namespace) -> int:
    if a.follow and not a.background:
        return usage_error("run", "--follow needs --background")
    request = RunRequest(
        dry_run=a.dry_run, background=a.background, follow=a.follow, detach=a.detach
    )
    return backend_for(a.engine).run(a.loop, run_options(a), request)


def _resume(a: argparse.Namespace) -> int:
    request = ResumeRequest(
        background=a.background, follow=a.follow, from_history=a.from_history, prompt=a.prompt
    )
    return backend_for(a.engine).resume(a.loop, run_options(a), request)


def _status(a: argparse.Namespace) -> int:
    return backend_for(a.engine).status(a.loop, as_json=a.json)


def _stop(a: argparse.Namespace) -> int:
    return backend_for(a.engine).stop(a.loop)


def _approve(a: argparse.Namespace) -> int:
    from little_loops.fsm.model.approval_records import ApprovalAnswer

    answer = ApprovalAnswer("yes") if a.edit is None else ApprovalAnswer("edit", text=a.edit)
    return _approval_backend(a.engine).answer(a.loop, answer)


def _reject(a: argparse.Namespace) -> int:
    from little_loops.fsm.model.approval_records import ApprovalAnswer

    return _approval_backend(a.engine).answer(a.loop, ApprovalAnswer("no", reason=a.reason))


def _approval_backend(engine_flag: str | None) -> ApprovalBackend:
    backend = backend_for(engine_flag)
    assert isinstance(backend, ApprovalBackend)  # both backends answer approvals
    return backend


def _history(a: argparse.Namespace) -> int:
    from little_loops.cli.history_query import EventFilter

    output = "json" if a.json else "jsonl" if a.jsonl else "raw" if a.raw else "lines"
    query = EventFilter(state=a.state, events=tuple(a.event), since=a.since)
    request = HistoryRequest(tail=a.tail, output=output, query=query, list_runs=a.runs, run=a.run)
    return backend_for(a.engine).history(a.loop, request)


def _report(a: argparse.Namespace) -> int:
    backend = backend_for(a.engine)
    assert isinstance(backend, ReportBackend)  # both backends report
    return backend.report(a.loop, since=a.since, as_json=a.json)


def _list(a: argparse.Namespace) -> int:
    from little_loops.cli.cmd_inspect import ListFilter, list_command

    if a.running:
        return backend_for(a.engine).list_running(as_json=a.json)
    visibility = "all" if a.all else a.visibility
    only = ListFilter(visibility=visibility, category=a.category, labels=tuple(a.label))
    return list_command(running=False, as_json=a.json, only=only)


# --- the commands of this checkout only --------------------------------------------------


def _validate(a: argparse.Namespace) -> int:
    from little_loops.cli.cmd_validate import validate_command

    return validate_command(a.loop)


def _compile(a: argparse.Namespace) -> int:
    from little_loops.cli.cmd_compile import compile_command

    return compile_command(a.input, a.output)


def _watch(a: argparse.Namespace) -> int:
    return backend_for(a.engine).watch(a.loop, verbose=a.verbose, wait=a.wait)


def _show(a: argparse.Namespace) -> int:
    from little_loops.cli.cmd_show import show_command

    return show_command(a.loop, diagram=a.diagram, as_json=a.json)


def _schema(a: argparse.Namespace) -> int:
    from little_loops.cli.cmd_schema import schema_command

    return schema_command()


def _fragments(a: argparse.Namespace) -> int:
    from little_loops.cli.cmd_fragments import fragments_command

    return fragments_command(a.library)


def _worker(a: argparse.Namespace) -> int:
    from little_loops.cli.temporal_engine import worker_command

    return worker_command(
        address=a.address,
        namespace=a.namespace,
        task_queue=a.task_queue,
        workflows=not a.activities_only,
        activities=not a.workflows_only,
    )


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": _run,
    "resume": _resume,
    "validate": _validate,
    "compile": _compile,
    "list": _list,
    "status": _status,
    "stop": _stop,
    "approve": _approve,
    "reject": _reject,
    "history": _history,
    "show": _show,
    "schema": _schema,
    "fragments": _fragments,
    "watch": _watch,
    "worker": _worker,
    "report": _report,
}


# --- validation warnings -----------------------------------------------------------------


class _StderrAtEmitHandler(logging.Handler):
    """Writes bare messages to whatever `sys.stderr` is when the record arrives."""

    def emit(self, record: logging.LogRecord) -> None:
        write_error_line(self.format(record))


@contextmanager
def _validation_warnings_to_stderr() -> Iterator[None]:
    """Validation warnings (`[WARNING] states.x: ...`) appear as bare stderr lines."""
    package_logger = logging.getLogger("little_loops")
    handler = _StderrAtEmitHandler(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(message)s"))
    old_level, old_propagate = package_logger.level, package_logger.propagate
    package_logger.addHandler(handler)
    package_logger.setLevel(logging.WARNING)
    package_logger.propagate = False
    try:
        yield
    finally:
        package_logger.removeHandler(handler)
        package_logger.setLevel(old_level)
        package_logger.propagate = old_propagate
