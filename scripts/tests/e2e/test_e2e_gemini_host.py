"""The gemini host adapter against the real Gemini CLI (pinned in .ci/gemini-cli-version)
and the fake Gemini API on 127.0.0.1 (issue 24 item 7; spec agent-hosts.md §2).

Each test starts `gemini` with the adapter's own command line (stdin closed, as the runner
does), reads its stdout with the adapter's stream and classifies the ending with the
adapter's `ending`. The CLI's own retries are off (`general.maxAttempts: 1`) so an error
ends the run at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_gemini import FakeGeminiServer, GeminiRule
from gemini_cases import BY_NAME, EXIT_CODES, FIXTURES, run_case, run_gemini, shape
from gemini_cli import FAKE_API_KEY, FAKE_MODEL, gemini_env

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.hosts import host_named
from little_loops.fsm.process.hosts.gemini_endings import next_pacific_midnight
from little_loops.fsm.process.hosts.gemini_prices import cost_of_tokens
from little_loops.fsm.process.output_streams import OutputReaders

pytestmark = pytest.mark.slow
CAP = 1024 * 1024
STREAM_PATH = f"/v1beta/models/{FAKE_MODEL}:streamGenerateContent"


@dataclass
class GeminiRun:
    run: ClaudeRun
    ending: HostEnding
    said: list[str]
    output: str
    now: float
    stdout: str
    exit_code: int


@dataclass
class Gemini:
    """The real gemini, its home in tmp_path, the fake API and a work folder."""

    binary: Path
    home: Path
    work: Path
    server: FakeGeminiServer

    def run(self, prompt: str, *, resume: str | None = None) -> GeminiRun:
        env = gemini_env(base_url=self.server.base_url, home=self.home, gemini_bin=self.binary)
        finished = run_gemini(self.binary, env, self.work, prompt, resume=resume)
        return read_run(finished.stdout, finished.stderr, finished.returncode)


def read_run(stdout: str, stderr: str, exit_code: int) -> GeminiRun:
    host = host_named("gemini")
    said: list[str] = []
    stream = host.stream(OutputReaders(on_line=said.append, on_text=None), cap=CAP)
    stream.feed(stdout)
    stream.close()
    output, _ = stream.output_with_marker(None)
    now = time.time()
    ending = host.ending(stream.run, exit_code=exit_code, output=output, stderr=stderr, now=now)
    return GeminiRun(stream.run, ending, said, output, now, stdout, exit_code)


def recorded(case: str) -> tuple[list[Any], int]:
    """The shape and exit code `gemini_cases.py` recorded for `case`."""
    text = (FIXTURES / f"{case}.jsonl").read_text(encoding="utf-8")
    return shape(text), json.loads(EXIT_CODES.read_text())[case]


@pytest.fixture
def gemini(tmp_path: Path, gemini_bin: Path) -> Iterator[Gemini]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    with FakeGeminiServer(tmp_path / "api.jsonl") as server:
        yield Gemini(gemini_bin, home, work, server)


def test_plain_run_gives_text_session_tokens_and_price_table_cost(gemini: Gemini) -> None:
    """A plain run: the agent's text (deltas joined), its session, tokens, list-price cost;
    the CLI prints what `fixtures/gemini_stream/handoff_text.jsonl` recorded."""
    case = BY_NAME["handoff_text"]
    gemini.server.rules = [case.rule]
    done = gemini.run(case.prompt)
    assert (shape(done.stdout), done.exit_code) == recorded(case.name)
    assert done.ending == HostEnding("success")
    assert done.said == ["Half way there.", "CONTEXT_HANDOFF: continue with step 2"]
    assert done.output == "Half way there.\nCONTEXT_HANDOFF: continue with step 2\n"
    assert done.run.session_id is not None and len(done.run.session_id) == 36
    assert (done.run.input_tokens, done.run.cache_read_tokens, done.run.output_tokens) == (
        23,
        100,
        7,
    )
    assert done.run.cost_usd == cost_of_tokens(FAKE_MODEL, uncached=23, cached=100, output=7)
    (turn,) = gemini.server.turns()
    assert turn.path == STREAM_PATH
    assert turn.headers["x-goog-api-key"] == FAKE_API_KEY
    assert turn.user_text().endswith(case.prompt)


def test_tool_output_is_not_the_agent_speaking(gemini: Gemini) -> None:
    """The shell tool really runs; its output (with CONTEXT_HANDOFF:) is not handed on."""
    case = BY_NAME["tool_output_handoff"]
    gemini.server.rules = [case.rule]
    done = gemini.run(case.prompt)
    assert (shape(done.stdout), done.exit_code) == recorded(case.name)
    assert done.ending == HostEnding("success")
    assert (gemini.work / "tool_out.txt").read_text() == "CONTEXT_HANDOFF: said by the tool\n"
    assert done.said == ["The tool ran; all is fine."]
    assert done.output == "The tool ran; all is fine.\n"


def test_resume_continues_the_same_session_in_a_new_process(gemini: Gemini) -> None:
    """agent-hosts.md §2 Sessions: `--resume <id>` sends the earlier turns again."""
    gemini.server.rules = [
        GeminiRule("first step", text="First step done."),
        GeminiRule("second step", text="Second step done."),
    ]
    first = gemini.run("Do the first step")
    assert first.run.session_id is not None
    second = gemini.run("Do the second step", resume=first.run.session_id)
    assert second.ending == HostEnding("success")
    assert second.run.session_id == first.run.session_id
    assert second.output == "Second step done.\n"
    contents = gemini.server.turns()[-1].body["contents"]
    spoken = [(c["role"], [p.get("text", "") for p in c["parts"]][-1]) for c in contents]
    assert spoken == [
        ("user", "Do the first step"),
        ("model", "First step done."),
        ("user", "Do the second step"),
    ]


ERROR_CASES = ("daily_quota", "quota_retry_after", "quota_after_tool")
ERROR_CASES += ("server_error", "overloaded", "bad_key")


@pytest.mark.parametrize("case", ERROR_CASES)
def test_errors_print_what_was_recorded_and_end_as_classified(
    case: str, tmp_path: Path, gemini_bin: Path
) -> None:
    """Each recorded error (fixtures/gemini_stream/) run again: same events, same exit
    code, and the ending the fast tests expect from the recording, with its reset."""
    finished = run_case(BY_NAME[case], gemini_bin, tmp_path)
    assert (shape(finished.stdout), finished.returncode) == recorded(case)
    done = read_run(finished.stdout, finished.stderr, finished.returncode)
    kind, resets_at = ERROR_ENDINGS[case](done.now)
    assert (done.ending.kind, done.ending.resets_at) == (kind, resets_at)


ERROR_ENDINGS: dict[str, Callable[[float], tuple[str, float | None]]] = {
    "daily_quota": lambda now: ("usage_limit", next_pacific_midnight(now)),
    "quota_retry_after": lambda now: ("usage_limit", now + 3600),
    "quota_after_tool": lambda now: ("usage_limit", now + 3600),
    "server_error": lambda now: ("transient", None),
    "overloaded": lambda now: ("transient", None),
    "bad_key": lambda now: ("auth", None),
}
