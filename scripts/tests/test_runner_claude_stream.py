"""Slash commands through DefaultActionRunner with a fake `claude` printing stream-json
(recorded transcripts of the real CLI, `fixtures/claude_stream/`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from little_loops.fsm.engine.action_step import call_runner
from little_loops.fsm.process.runner import ActionResult, DefaultActionRunner
from little_loops.fsm.signal_detector import SignalDetector

TRANSCRIPTS = Path(__file__).parent / "fixtures" / "claude_stream"


def fake_claude(tmp_path: Path, transcript: str, *, exit_code: int = 0, then: str = "") -> Path:
    """A `claude` that notes its arguments, prints `transcript` and exits `exit_code`."""
    path = tmp_path / "claude"
    source = TRANSCRIPTS / f"{transcript}.jsonl"
    path.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > "{tmp_path}/argv"\n'
        f'cat "{source}"\n'
        f"{then}"
        f"exit {exit_code}\n"
    )
    path.chmod(0o755)
    return path


def argv_of(tmp_path: Path) -> list[str]:
    return (tmp_path / "argv").read_text().splitlines()


def test_the_agents_text_streams_and_the_output_is_the_result(tmp_path: Path) -> None:
    runner = DefaultActionRunner(claude_bin=str(fake_claude(tmp_path, "plain")))
    lines: list[str] = []
    log = tmp_path / "logs" / "1-work.log"
    result = runner.run("/work the parser", 10, True, on_line=lines.append, log_path=log)
    assert lines == ["All done.", "The parser works."]
    assert result.output == "All done.\nThe parser works.\n"
    assert (result.exit_code, result.error, result.output_truncated) == (0, None, False)
    # The log keeps the lines exactly as claude printed them.
    assert log.read_bytes() == (TRANSCRIPTS / "plain.jsonl").read_bytes()
    assert result.claude is not None
    assert (result.claude.cost_usd, result.claude.num_turns) == (0.00014000000000000001, 1)
    assert (result.claude.input_tokens, result.claude.output_tokens) == (10, 5)
    assert result.claude.session_id == "420a531f-6922-46b3-bb4e-a74155f771f2"


def test_the_flags_and_a_resumed_session(tmp_path: Path) -> None:
    runner = DefaultActionRunner(claude_bin=str(fake_claude(tmp_path, "plain")))
    runner.run("/work x", 10, True)
    assert argv_of(tmp_path) == [
        "--dangerously-skip-permissions",
        "--output-format",
        "stream-json",
        "--verbose",
        "-p",
        "/work x",
    ]
    runner.run("/work x", 10, True, resume_session="abc-123")
    assert argv_of(tmp_path)[4:] == ["--resume", "abc-123", "-p", "/work x"]


def test_without_a_reader_the_output_is_still_the_result(tmp_path: Path) -> None:
    runner = DefaultActionRunner(claude_bin=str(fake_claude(tmp_path, "spoken_handoff")))
    result = runner.run("/work", 10, True)
    assert result.output == "Module A done.\nCONTEXT_HANDOFF: y\n"


def test_a_handoff_in_a_tool_result_does_not_reach_the_scan(tmp_path: Path) -> None:
    runner = DefaultActionRunner(claude_bin=str(fake_claude(tmp_path, "tool_result_handoff")))
    scan = SignalDetector().scan()
    shown: list[str] = []
    result = call_runner(runner, "/work", 10, True, scan, shown.append, None)
    assert (shown, result.output) == (["I read the notes."], "I read the notes.\n")
    assert scan.actionable() is None


def test_a_spoken_handoff_reaches_the_scan(tmp_path: Path) -> None:
    runner = DefaultActionRunner(claude_bin=str(fake_claude(tmp_path, "spoken_handoff")))
    scan = SignalDetector().scan()
    call_runner(runner, "/work", 10, True, scan, None, None)
    signal = scan.actionable()
    assert signal is not None and (signal.signal_type, signal.payload) == ("handoff", "y")


def test_claudes_own_failure_is_still_a_refusal(tmp_path: Path) -> None:
    runner = DefaultActionRunner(
        claude_bin=str(fake_claude(tmp_path, "not_logged_in", exit_code=1))
    )
    result = runner.run("/work", 10, True)
    assert result.error == (
        "claude exited with code 1: Not logged in · Please run /login "
        "(log in by running `claude` once, or set ANTHROPIC_API_KEY)"
    )
    assert result.claude is not None and result.claude.is_error


def test_an_api_error_reports_its_status(tmp_path: Path) -> None:
    runner = DefaultActionRunner(
        claude_bin=str(fake_claude(tmp_path, "overloaded_retry", exit_code=1))
    )
    result = runner.run("/work", 10, True)
    assert result.error is not None and result.error.startswith(
        "claude exited with code 1: API Error: 529 Overloaded."
    )
    assert result.claude is not None
    assert (result.claude.api_error_status, result.claude.retries) == (529, 1)


def test_a_timeout_keeps_what_the_agent_said_so_far(tmp_path: Path) -> None:
    # Only the first two lines (init, the agent's text), then claude hangs.
    path = tmp_path / "claude"
    head = TRANSCRIPTS / "spoken_handoff.jsonl"
    path.write_text(f'#!/bin/sh\nhead -n 2 "{head}"\nexec sleep 30\n')
    path.chmod(0o755)
    result = DefaultActionRunner(claude_bin=str(path)).run("/work", 1, True)
    assert (result.exit_code, result.timed_out) == (124, True)
    assert result.output == "Module A done.\nCONTEXT_HANDOFF: y\n"
    assert result.claude is not None and result.claude.result_text is None


def test_a_result_beyond_the_cap_keeps_its_tail_behind_the_marker(tmp_path: Path) -> None:
    runner = DefaultActionRunner(claude_bin=str(fake_claude(tmp_path, "plain")), output_cap=9)
    log = tmp_path / "1-work.log"
    result = runner.run("/work", 10, True, log_path=log)
    assert result.output_truncated
    assert result.output == (
        f"[output truncated: 19 earlier bytes dropped; full output in {log}]\nr works.\n"
    )


def test_a_plain_text_claude_behaves_as_before(tmp_path: Path) -> None:
    path = tmp_path / "claude"
    path.write_text('#!/bin/sh\necho "fake claude: $*"\necho "CONTEXT_HANDOFF: go on"\n')
    path.chmod(0o755)
    scan = SignalDetector().scan()
    shown: list[str] = []
    result = call_runner(
        DefaultActionRunner(claude_bin=str(path)), "/x", 10, True, scan, shown.append, None
    )
    said = "fake claude: --dangerously-skip-permissions --output-format stream-json --verbose -p /x"
    assert shown == [said, "CONTEXT_HANDOFF: go on"]
    assert result.output == f"{said}\nCONTEXT_HANDOFF: go on\n"
    signal = scan.actionable()
    assert signal is not None and signal.payload == "go on"
    assert result.claude is not None and result.claude.to_dict() == {}


def test_a_shell_action_has_no_claude_report() -> None:
    result = DefaultActionRunner().run('echo \'{"type": "result", "session_id": 1}\'', 10, False)
    assert (result.output, result.claude) == ('{"type": "result", "session_id": 1}\n', None)


class PlainRunner:
    """A runner of the reference's shape: no streaming, no resume."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def run(self, action: str, timeout: float, is_slash_command: bool, **rest: Any) -> ActionResult:
        self.calls.append(rest)
        return ActionResult(output="ok", stderr="", exit_code=0, duration_ms=0)


class ResumingRunner(PlainRunner):
    supports_resume_session = True


def test_the_session_reaches_only_runners_that_resume(tmp_path: Path) -> None:
    plain, resuming = PlainRunner(), ResumingRunner()
    call_runner(plain, "/x", 10, True, None, None, None, "s-1")
    call_runner(resuming, "/x", 10, True, None, None, None, "s-1")
    call_runner(resuming, "/x", 10, True, None, None, None)
    assert (plain.calls, resuming.calls) == ([{}], [{"resume_session": "s-1"}, {}])
    runner = DefaultActionRunner(claude_bin=str(fake_claude(tmp_path, "plain")))
    call_runner(runner, "/x", 10, True, None, None, None, "s-2")
    assert argv_of(tmp_path)[4:6] == ["--resume", "s-2"]
