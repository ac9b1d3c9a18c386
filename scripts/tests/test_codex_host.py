"""The codex host adapter (issue 24, spec agent-hosts.md §1) on output recorded from the real
Codex CLI 0.169.0 against the fake Responses API (`fixtures/codex_stream/`: the stdout of
`codex exec --json`, and the entries of the session rollout files the adapter reads)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from little_loops.fsm.model.claude_run import RateLimitInfo
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.hosts import host_named
from little_loops.fsm.process.hosts.codex import CodexHost
from little_loops.fsm.process.hosts.codex_limits import kind_of_error, reset_from_message
from little_loops.fsm.process.hosts.codex_rollout import read_last_turn
from little_loops.fsm.process.hosts.codex_stream import CodexStream
from little_loops.fsm.process.hosts.openai_prices import openai_cost
from little_loops.fsm.process.output_streams import OutputReaders

FIXTURES = Path(__file__).parent / "fixtures" / "codex_stream"
CAP = 1024 * 1024
PLAIN_THREAD = "01a2156b-13ab-7f90-943c-091491a9862e"
LIMIT_THREAD = "01a2156b-1c13-7a81-b472-5c011ba1cc0b"
LIMIT_MESSAGE = "You\u2019ve hit your usage limit. Try again at 1:16 AM."
LIMIT_RESET = 1795655790.0  # the fake's x-codex-primary-reset-at, from the rollout


def fixture(name: str) -> str:
    return (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8")


def read(name: str, *, chunk: int | None = None) -> tuple[CodexStream, list[str]]:
    said: list[str] = []
    stream = CodexStream(OutputReaders(on_line=said.append, on_text=None), cap=CAP)
    text = fixture(name)
    step = chunk or len(text)
    for start in range(0, len(text), step):
        stream.feed(text[start : start + step])
    stream.close()
    return stream, said


@pytest.fixture
def codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Codex home (`CODEX_HOME`) the adapter reads rollout files from."""
    home = tmp_path / "codexhome"
    (home / "sessions").mkdir(parents=True)
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def put_rollout(home: Path, thread: str, text: str) -> Path:
    day = home / "sessions" / "2026" / "11" / "26"
    day.mkdir(parents=True, exist_ok=True)
    path = day / f"rollout-2026-11-26T01-14-28-{thread}.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def utc() -> Iterator[None]:
    """Codex prints a reset as a local time of day; read it in UTC here."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", "UTC")
        time.tzset()
        yield
    time.tzset()


def test_codex_is_a_registered_host() -> None:
    host = host_named("codex")
    assert isinstance(host, CodexHost)
    assert (host.default_program, host.program_env) == ("codex", "LL_CODEX_BIN")
    assert host.install_hint == "npm install -g @openai/codex (or set LL_CODEX_BIN)"
    assert host.takes_model and host.can_resume


def test_command_is_headless_exec_with_model_and_resume() -> None:
    """§1 Headless invocation: JSON events, no approvals/sandbox, options before `resume`."""
    host = CodexHost()
    flags = ["--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    assert host.command("codex", "do it").argv == ["codex", "exec", *flags, "--", "do it"]
    resumed = host.command("/bin/codex", "-next", resume_session="t-1", model="gpt-5-codex")
    assert resumed.argv == [
        "/bin/codex", "exec", *flags, "-m", "gpt-5-codex", "resume", "t-1", "--", "-next"
    ]  # fmt: skip
    assert resumed.env is None


@pytest.mark.parametrize("chunk", [None, 7])
def test_plain_run_hands_on_the_agents_message(chunk: int | None) -> None:
    """§1 stdout of a plain run: the session id, the agent's text, tokens split as the record
    counts them (cached input apart from input); the model-metadata warning is not said."""
    stream, said = read("plain", chunk=chunk)
    run = stream.run
    assert said == ["hello there", "CONTEXT_HANDOFF: step 2"]
    assert run.session_id == PLAIN_THREAD
    assert run.result_text == "hello there\nCONTEXT_HANDOFF: step 2"
    assert (run.input_tokens, run.cache_read_tokens, run.output_tokens) == (23, 100, 7)
    assert not run.is_error and run.retries == 0
    assert stream.output_with_marker(None) == ("hello there\nCONTEXT_HANDOFF: step 2\n", False)


def test_tool_output_is_not_the_agent_speaking() -> None:
    """§1: a shell command whose output says CONTEXT_HANDOFF is not a handoff."""
    stream, said = read("tool_output")
    assert said == ["Done."]
    assert "CONTEXT_HANDOFF" not in stream.output()[0]


def test_plain_text_passes_through() -> None:
    said: list[str] = []
    stream = CodexStream(OutputReaders(on_line=said.append, on_text=None), cap=CAP)
    stream.feed('Reading additional input\n{"not": "codex"}\n')
    stream.close()
    assert said == ["Reading additional input", '{"not": "codex"}']
    assert stream.run.session_id is None


def test_failed_turn_is_an_error_with_its_message() -> None:
    stream, said = read("usage_limit")
    assert said == []
    assert stream.run.is_error and stream.run.result_text == LIMIT_MESSAGE
    assert stream.run.retries == 0  # the final error is printed twice, it is no retry
    assert stream.output()[0] == LIMIT_MESSAGE + "\n"


def test_resumed_turn_counts_its_own_tokens(codex_home: Path) -> None:
    """§1 Usage: after `resume` the stream's usage is the thread's total (246); the turn's
    own (123, 100 of them cached) comes from the rollout file."""
    stream, said = read("resumed")
    assert said == ["continued"] and stream.run.input_tokens == 246 - 200
    put_rollout(codex_home, PLAIN_THREAD, fixture("rollout_plain"))
    ending = CodexHost().ending(stream.run, exit_code=0, output="", stderr="", now=0.0)
    assert ending == HostEnding("success")
    run = stream.run
    assert (run.input_tokens, run.cache_read_tokens, run.output_tokens) == (23, 100, 7)
    assert run.cost_usd is None  # gpt-fake has no price
    assert run.rate_limit is None  # the resumed turn's answer carried no quota headers


@pytest.mark.parametrize("tail_bytes", [200, 3000, 10**6])
def test_last_turn_is_read_from_the_files_end(tmp_path: Path, tail_bytes: int) -> None:
    """A long rollout is read from its end (the whole file only when the last turn began
    before the window): the same last turn whatever the window."""
    path = put_rollout(tmp_path, PLAIN_THREAD, fixture("rollout_plain"))
    turn = read_last_turn(path, tail_bytes=tail_bytes)
    assert (turn.model, turn.quota, turn.error_info) == ("gpt-fake", None, None)
    assert turn.usage is not None and turn.usage["input_tokens"] == 123


def test_quota_use_becomes_the_runs_rate_limit(codex_home: Path) -> None:
    """Issue 24 item 4: codex's `rate_limits.primary.used_percent` as utilization 0..1."""
    lines = fixture("rollout_plain").splitlines(keepends=True)
    first_turn = lines[: 1 + next(i for i, line in enumerate(lines) if "task_complete" in line)]
    put_rollout(codex_home, PLAIN_THREAD, "".join(first_turn))
    stream, _ = read("plain")
    CodexHost().ending(stream.run, exit_code=0, output="", stderr="", now=0.0)
    assert stream.run.rate_limit == RateLimitInfo("allowed", 1795659268.0, "five_hour", 0.425)


def test_usage_limit_with_the_exact_reset_from_the_rollout(codex_home: Path) -> None:
    """§1 Errors: `usage_limit_exceeded` in the rollout; the reset is the quota window's."""
    put_rollout(codex_home, LIMIT_THREAD, fixture("rollout_limit"))
    stream, _ = read("usage_limit")
    ending = CodexHost().ending(stream.run, exit_code=1, output="", stderr="", now=0.0)
    assert ending == HostEnding("usage_limit", LIMIT_MESSAGE, LIMIT_RESET, "five_hour", True)
    assert stream.run.rate_limit == RateLimitInfo("rejected", LIMIT_RESET, "five_hour", 1.0)


def test_usage_limit_without_rollout_reads_the_time_of_day(codex_home: Path, utc: None) -> None:
    """No rollout file: the reset is the message's "try again at 1:16 AM" (local time)."""
    stream, _ = read("usage_limit")
    now = LIMIT_RESET - 120  # 01:14:30 UTC, when the fixture was recorded
    ending = CodexHost().ending(stream.run, exit_code=1, output="", stderr="", now=now)
    assert ending == HostEnding("usage_limit", LIMIT_MESSAGE, 1795655760.0)


@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [
        (
            "server_error",
            "transient",
            "We\u2019re currently experiencing high demand, which may cause temporary errors.",
        ),
        ("auth", "auth", "unexpected status 401 Unauthorized: bad key, url: "),
    ],
)
def test_failed_turns_are_classified(codex_home: Path, name: str, kind: str, message: str) -> None:
    """§1 Errors: a 5xx codex gave up on is transient; a 401 is an auth failure — from the
    rollout's `codex_error_info` and, without a rollout, from the message alone."""
    stream, _ = read(name)
    without = CodexHost().ending(stream.run, exit_code=1, output="", stderr="", now=0.0)
    thread = stream.run.session_id or ""
    put_rollout(codex_home, thread, fixture(f"rollout_{'boom' if kind == 'transient' else name}"))
    with_rollout = CodexHost().ending(stream.run, exit_code=1, output="", stderr="", now=0.0)
    assert without == with_rollout
    assert (with_rollout.kind, with_rollout.message[: len(message)]) == (kind, message)


def test_kinds_from_error_info_and_words() -> None:
    info = {"response_too_many_failed_attempts": {"http_status_code": 429}}
    assert kind_of_error(info, "") == "transient"
    assert kind_of_error("rate_limit_exceeded", "x") == "transient"
    assert kind_of_error(None, "Quota exceeded. Check your plan and billing details.") == (
        "usage_limit"
    )
    assert kind_of_error(None, "unexpected status 529 <unknown status code>: Overloaded") == (
        "transient"
    )
    assert kind_of_error(None, "exceeded retry limit, last status: 429 Too Many Requests") == (
        "transient"
    )
    assert kind_of_error(None, "something else broke") == "other"


def test_reset_time_of_day_is_the_next_one(utc: None) -> None:
    evening = 1795633200.0  # 2026-11-25 19:00 UTC
    assert reset_from_message("try again at 7:56 PM.", evening) == evening + 56 * 60
    assert reset_from_message("try again at 6:30 PM.", evening) == evening - 30 * 60
    assert reset_from_message("try again at 5:00 PM.", evening) == evening + 22 * 3600
    assert reset_from_message("no time here", evening) is None


def test_openai_list_prices() -> None:
    """Codex reports no cost: tokens at the model's list price (cached input cheaper)."""
    cost = openai_cost("gpt-5-codex", uncached_input=1_000_000, cached_input=1_000_000, output=10)
    assert cost == pytest.approx(1.25 + 0.125 + 10 * 10 / 1_000_000)
    assert openai_cost("gpt-fake", uncached_input=1, cached_input=0, output=1) is None


def test_fixture_threads_match() -> None:
    """The recorded stdout and rollout files are of the same runs."""
    first = json.loads(fixture("plain").splitlines()[0])
    assert first == {"type": "thread.started", "thread_id": PLAIN_THREAD}
    assert LIMIT_THREAD in fixture("usage_limit")
