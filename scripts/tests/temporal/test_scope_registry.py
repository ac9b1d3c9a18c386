"""`scope` on Temporal (fsm/temporal/scope_registry.py) on the time-skipping server: the
checkout's registry workflow grants and refuses claims one at a time, loop runs give
their scope back when they end, pause or are stopped, and a run terminated without
giving it back does not hold it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fixtures.temporal_servers import TimeSkipping

try:
    from temporalio.client import WorkflowExecutionStatus
    from workflow_support import checkout_with, run_input, runs_for

    from little_loops.fsm.temporal import scope_registry
    from little_loops.fsm.temporal.client import LoopRuns, ScopeTakenError
    from little_loops.fsm.temporal.payloads import ResumeSignal
    from little_loops.fsm.temporal.scope_registry import ScopeClaim, ScopeConflict
    from little_loops.fsm.temporal.worker import build_worker
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.validation import load_loop

WAIT_SECONDS = 120.0


def _loop(name: str, *scope: str) -> FSMLoop:
    states = {"only": {"terminal": True}}
    return FSMLoop.from_dict(
        {"name": name, "initial": "only", "states": states, "scope": list(scope)}
    )


def _claim(runs: LoopRuns, name: str, *scope: str) -> ScopeClaim:
    """A claim of `scope` (under `runs.checkout`) by the run of loop `name`."""
    paths = [str(runs.checkout.resolve() / path) for path in scope]
    return ScopeClaim(runs.workflow_id(name), name, paths)


def _held(claims: list[Any]) -> dict[str, list[str]]:
    return {claim.loop: claim.paths for claim in claims}


def test_claims_that_overlap_are_refused_naming_the_holder_and_the_path(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    runs = runs_for(time_skipping, tmp_path)

    async def scenario() -> list[ScopeConflict | None]:
        async with build_worker(runs.client, runs.task_queue):
            return [
                await runs.claim(_claim(runs, "a", "src")),
                await runs.claim(_claim(runs, "c", "docs")),  # disjoint: granted too
                await runs.claim(_claim(runs, "b", "src/parser")),  # inside a's
                await runs.claim(_claim(runs, "d", ".")),  # holds a's and c's
            ]

    answers = time_skipping.run(scenario())
    src = str(tmp_path.resolve() / "src")
    assert answers[:2] == [None, None]
    assert answers[2] == ScopeConflict(runs.workflow_id("a"), "a", src + "/parser")
    assert answers[3] == ScopeConflict(runs.workflow_id("a"), "a", src)


def test_the_same_run_claiming_again_is_granted_and_a_release_frees_the_paths(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    runs = runs_for(time_skipping, tmp_path)

    async def scenario() -> tuple[list[ScopeConflict | None], dict[str, list[str]]]:
        async with build_worker(runs.client, runs.task_queue):
            answers = [
                await runs.claim(_claim(runs, "a", "src")),
                await runs.claim(_claim(runs, "a", "src", "lib")),  # a resume: paths replaced
            ]
            refused = await runs.claim(_claim(runs, "b", "lib"))
            await runs.release_scope(runs.workflow_id("a"))
            answers += [refused, await runs.claim(_claim(runs, "b", "lib"))]
            return answers, _held(await runs.scope_claims())

    answers, held = time_skipping.run(scenario())
    assert answers[:2] == [None, None]
    assert answers[2] is not None and answers[2].loop == "a"
    assert answers[3] is None
    assert held == {"b": [str(tmp_path.resolve() / "lib")]}


def test_the_registry_continues_as_new_with_its_claims(
    time_skipping: TimeSkipping, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scope_registry, "OPERATIONS_PER_RUN", 3)
    runs = runs_for(time_skipping, tmp_path)

    async def scenario() -> tuple[dict[str, list[str]], ScopeConflict | None, Any]:
        async with build_worker(runs.client, runs.task_queue):
            await runs.claim(_claim(runs, "a", "a"))
            first = await runs.client.get_workflow_handle(runs.scope_registry_id()).describe()
            for name in ("b", "c", "d", "e"):
                await runs.claim(_claim(runs, name, name))
            await runs.release_scope(runs.workflow_id("b"))
            refused = await runs.claim(_claim(runs, "f", "a/x"))
            held = _held(await runs.scope_claims())
            first_run = runs.client.get_workflow_handle(first.id, run_id=first.run_id)
            return held, refused, (await first_run.describe()).status

    held, refused, first_status = time_skipping.run(scenario())
    assert first_status == WorkflowExecutionStatus.CONTINUED_AS_NEW
    assert sorted(held) == ["a", "c", "d", "e"]
    assert refused is not None and refused.loop == "a"


def test_a_refused_start_says_so_in_the_local_engines_words(
    time_skipping: TimeSkipping, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the shared path is shown relative to here, as locally
    checkout = checkout_with(tmp_path, "slow", _scoped("slow", "sleep 300"))
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> str:
        async with build_worker(runs.client, runs.task_queue):
            fsm, run = _start(runs, "slow")
            await runs.claim_scope(fsm)
            await runs.start(run)
            with pytest.raises(ScopeTakenError) as refused:
                await runs.claim_scope(_loop("b", "src/parser"))
            await runs.stop("slow")
            return "\n".join(refused.value.user_lines())

    assert time_skipping.run(scenario()) == (
        f"Loop b shares scope 'src/parser' with running loop slow (workflow "
        f"{runs.workflow_id('slow')})\n"
        "  to wait until it ends instead: add --queue"
    )


# --- loop runs give their scope back ------------------------------------------------------

SCOPED = """\
name: NAME
initial: work
scope: [src]
states:
  work:
    action: "ACTION"
    next: done
  done:
    terminal: true
"""


def _scoped(name: str, action: str) -> str:
    return SCOPED.replace("NAME", name).replace("ACTION", action)


def _start(runs: LoopRuns, name: str) -> Any:
    fsm = load_loop(runs.loops_dir / f"{name}.yaml")
    return fsm, run_input(runs, name)


def test_a_run_that_ends_gives_its_scope_back(time_skipping: TimeSkipping, tmp_path: Path) -> None:
    checkout = checkout_with(tmp_path, "quick", _scoped("quick", "echo done"))
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        async with build_worker(runs.client, runs.task_queue):
            fsm, run = _start(runs, "quick")
            await runs.claim_scope(fsm)
            during = _held(await runs.scope_claims())
            handle = await runs.start(run)
            await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            return during, await _settled(runs)

    during, after = time_skipping.run(scenario())
    assert list(during) == ["quick"]
    assert after == {}


def test_a_stopped_run_gives_its_scope_back_and_a_resume_claims_it_again(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    checkout = checkout_with(tmp_path, "slow", _scoped("slow", "sleep 300"))
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> dict[str, list[str]]:
        async with build_worker(runs.client, runs.task_queue):
            fsm, run = _start(runs, "slow")
            await runs.claim_scope(fsm)
            handle = await runs.start(run)
            await _wait_for(lambda: _action_started(runs, "slow"))
            await runs.stop("slow")
            outcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            assert outcome.state["status"] == "interrupted"
            return await _settled(runs)

    assert time_skipping.run(scenario()) == {}


def test_a_handoff_pause_gives_the_scope_back_until_the_resume(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    hello = (Path(__file__).resolve().parents[3] / ".loops" / "hello.yaml").read_text()
    checkout = checkout_with(tmp_path, "hello", hello + "scope: [src]\n")
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        async with build_worker(runs.client, runs.task_queue):
            fsm, run = _start(runs, "hello")
            await runs.claim_scope(fsm)
            handle = await runs.start(run)
            await runs.follow("hello", lambda event: None)  # until it pauses
            paused = await _settled(runs)
            await runs.claim_scope(fsm)  # as `ll-loop resume` does
            await runs.resume("hello", ResumeSignal(prompt="wave goodbye"))
            await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            return paused, await _settled(runs)

    paused, done = time_skipping.run(scenario())
    assert paused == {}
    assert done == {}


def test_a_terminated_holder_does_not_keep_the_scope(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    checkout = checkout_with(tmp_path, "slow", _scoped("slow", "sleep 300"))
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> dict[str, list[str]]:
        async with build_worker(runs.client, runs.task_queue):
            fsm, run = _start(runs, "slow")
            await runs.claim_scope(fsm)
            handle = await runs.start(run)
            await handle.terminate("gone without a word")
            await runs.claim_scope(_loop("next", "src/x"))  # the dead claim is cleared
            return _held(await runs.scope_claims())

    assert list(time_skipping.run(scenario())) == ["next"]


def test_a_queued_claim_waits_for_the_holder_to_end(
    time_skipping: TimeSkipping, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    checkout = checkout_with(tmp_path, "slow", _scoped("slow", "sleep 300"))
    runs = runs_for(time_skipping, checkout)
    said: list[str] = []

    async def scenario() -> dict[str, list[str]]:
        async with build_worker(runs.client, runs.task_queue):
            fsm, run = _start(runs, "slow")
            await runs.claim_scope(fsm)
            handle = await runs.start(run)
            queued = asyncio.ensure_future(
                runs.claim_scope(
                    _loop("next", "src"), queue=True, on_wait=said.append, poll_seconds=0.1
                )
            )
            await _wait_for(lambda: _true(bool(said)))
            assert not queued.done()
            await runs.stop("slow")
            await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            await asyncio.wait_for(queued, WAIT_SECONDS)
            return _held(await runs.scope_claims())

    assert list(time_skipping.run(scenario())) == ["next"]
    assert said == [
        f"Loop next waits for running loop slow (workflow {runs.workflow_id('slow')}), "
        "which shares scope 'src' (Ctrl-C to give up)"
    ]


# --- helpers ----------------------------------------------------------------------------


async def _true(value: bool) -> bool:
    return value


async def _wait_for(condition: Any) -> None:
    for _ in range(int(WAIT_SECONDS / 0.1)):
        if await condition():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"waited {WAIT_SECONDS:.0f}s")


async def _action_started(runs: LoopRuns, name: str) -> bool:
    from little_loops.fsm.temporal.workflow import LoopWorkflow

    page = await runs.handle(name).query(LoopWorkflow.events, 0)
    return any(event["event"] == "action_start" for event in page.events)


async def _settled(runs: LoopRuns) -> dict[str, list[str]]:
    """The claims once the release signals sent so far have reached the registry."""
    for _ in range(50):
        held = _held(await runs.scope_claims())
        if not held:
            return held
        await asyncio.sleep(0.1)
    return _held(await runs.scope_claims())
