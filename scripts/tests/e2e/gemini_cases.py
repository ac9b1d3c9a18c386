"""What the real Gemini CLI prints for each way a run can go: the cases, run and recorded.

Each `GeminiCase` is a prompt and the fake API's rules for it (a reply with text, a shell
tool call, or an error). `run_case` runs the real `gemini` headless against
`FakeGeminiServer`, as the `gemini` host adapter runs it. The transcripts in
`scripts/tests/fixtures/gemini_stream/<case>.jsonl` (stdout as printed) and their exit
codes (`exit_codes.json`) were recorded with

    python scripts/tests/e2e/gemini_cases.py [CASE ...]

and `test_e2e_gemini_host.py` runs every case again and compares the shape of what it
prints with the recording (`shape`), so the fixtures the fast tests read stay honest.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fake_gemini import FakeGeminiServer, GeminiRule, auth_error, quota_error, server_error
from gemini_cli import FAKE_MODEL, gemini_env

from little_loops.fsm.process.hosts.gemini import GeminiHost

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gemini_stream"
EXIT_CODES = FIXTURES / "exit_codes.json"
CASE_TIMEOUT = 120.0
# Fields that change from run to run: replaced by their name in `shape`.
_VOLATILE = frozenset({"timestamp", "session_id", "tool_id", "duration_ms"})


@dataclass(frozen=True)
class GeminiCase:
    name: str
    prompt: str
    rule: GeminiRule


CASES = (
    GeminiCase(
        "handoff_text",
        "Say the handoff line",
        GeminiRule("handoff line", text="Half way there.\nCONTEXT_HANDOFF: continue with step 2"),
    ),
    GeminiCase(
        "tool_output_handoff",
        "Run the tool",
        GeminiRule(
            "Run the tool",
            shell="echo 'CONTEXT_HANDOFF: said by the tool' | tee tool_out.txt",
            closing="The tool ran; all is fine.",
        ),
    ),
    GeminiCase("daily_quota", "Say hi", GeminiRule("Say hi", error=quota_error(per_day=True))),
    GeminiCase(
        "quota_retry_after",
        "Say hi",
        GeminiRule("Say hi", error=quota_error(retry_delay="3600s")),
    ),
    GeminiCase(
        "quota_after_tool",
        "Run the tool",
        GeminiRule(
            "Run the tool",
            shell="echo step 1 done",
            closing_error=quota_error(retry_delay="3600s"),
        ),
    ),
    GeminiCase("server_error", "Say hi", GeminiRule("Say hi", error=server_error(500))),
    GeminiCase("overloaded", "Say hi", GeminiRule("Say hi", error=server_error(503))),
    GeminiCase("bad_key", "Say hi", GeminiRule("Say hi", error=auth_error())),
)
BY_NAME = {case.name: case for case in CASES}


def run_gemini(
    binary: Path,
    env: dict[str, str],
    cwd: Path,
    prompt: str,
    *,
    resume: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`gemini` run the way the adapter runs it (its argv), stdin closed."""
    argv = GeminiHost().command(str(binary), prompt, model=FAKE_MODEL, resume_session=resume).argv
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CASE_TIMEOUT,
        check=False,
    )


def run_case(case: GeminiCase, binary: Path, root: Path) -> subprocess.CompletedProcess[str]:
    """Run `case` in `root` (its home and work folders made there)."""
    home, work = root / "home", root / "work"
    home.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    with FakeGeminiServer(root / "api.jsonl") as server:
        server.rules = [case.rule]
        env = gemini_env(base_url=server.base_url, home=home, gemini_bin=binary)
        return run_gemini(binary, env, work, case.prompt)


def shape(stdout: str) -> list[Any]:
    """The JSON lines of `stdout` with the fields that change per run blanked."""
    return [_blank(json.loads(line)) for line in stdout.splitlines() if line.startswith("{")]


def _blank(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (k if k in _VOLATILE else _blank(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_blank(item) for item in value]
    return value


def record(names: list[str], binary: Path) -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    codes = json.loads(EXIT_CODES.read_text()) if EXIT_CODES.exists() else {}
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            finished = run_case(BY_NAME[name], binary, Path(tmp))
        (FIXTURES / f"{name}.jsonl").write_text(finished.stdout, encoding="utf-8")
        codes[name] = finished.returncode
        print(f"{name}: exit {finished.returncode}")
    EXIT_CODES.write_text(json.dumps(codes, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    from npm_cli import GEMINI_CLI, ensure

    chosen = sys.argv[1:] or list(BY_NAME)
    record(chosen, ensure(GEMINI_CLI, lambda line: print(line, file=sys.stderr)))
