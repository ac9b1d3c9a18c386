"""Codex CLI as an agent host: `codex exec --json` (spec agent-hosts.md §1).

The command runs one turn headless with approvals and the sandbox off (the runner's own
wall clock and process group bound it), `-m` when a state names a model, and
`exec resume <thread>` to continue a session in a new process. `CodexStream` reads its
JSON events. `ending` completes the run record from the session's rollout file in the
user's Codex home (read only): the turn's own tokens, the model and so the list-price
cost, the quota use (`rate_limit`, utilization 0..1, for pacing), and how a failed turn
failed (with the exact reset of a usage limit).
"""

from __future__ import annotations

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.hosts.base import HostCommand
from little_loops.fsm.process.hosts.codex_limits import kind_of_error, reset_from_message
from little_loops.fsm.process.hosts.codex_rollout import (
    RolloutTurn,
    codex_home,
    find_rollout,
    read_last_turn,
)
from little_loops.fsm.process.hosts.codex_stream import CodexStream, read_usage_into
from little_loops.fsm.process.hosts.json_lines import TextSink
from little_loops.fsm.process.hosts.openai_prices import openai_cost

__all__ = ["EXEC_FLAGS", "CodexHost"]

EXEC_FLAGS = ("--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox")
"""JSON events on stdout; runs outside a git repository too; no approval prompts (none
could be answered headless) and no sandbox (a loop's prompts run the project's tools)."""

MESSAGE_CHARS = 500


class CodexHost:
    """Codex CLI (`@openai/codex`)."""

    name = "codex"
    default_program = "codex"
    program_env = "LL_CODEX_BIN"
    install_hint = "npm install -g @openai/codex (or set LL_CODEX_BIN)"
    takes_model = True
    can_resume = True

    def command(
        self,
        program: str,
        prompt: str,
        *,
        resume_session: str | None = None,
        model: str | None = None,
    ) -> HostCommand:
        chosen = ["-m", model] if model else []
        resume = ["resume", resume_session] if resume_session else []
        # Options go before `resume`; `--` keeps a prompt starting with `-` a prompt.
        return HostCommand([program, "exec", *EXEC_FLAGS, *chosen, *resume, "--", prompt])

    def stream(self, sink: TextSink | None, *, cap: int) -> CodexStream:
        return CodexStream(sink, cap=cap)

    def ending(
        self, run: ClaudeRun, *, exit_code: int, output: str, stderr: str, now: float
    ) -> HostEnding:
        turn = complete_from_rollout(run)
        if exit_code == 0 and not run.is_error:
            return HostEnding("success")
        message = _message(turn, run, output, stderr)
        kind = kind_of_error(turn.error_info, message)
        if kind != "usage_limit":
            return HostEnding(kind, message)
        quota = turn.quota
        if quota is not None and quota.status == "rejected" and quota.resets_at is not None:
            return HostEnding("usage_limit", message, quota.resets_at, quota.limit_type, True)
        return HostEnding("usage_limit", message, reset_from_message(message, now))


def complete_from_rollout(run: ClaudeRun) -> RolloutTurn:
    """Fill `run` from its session's rollout file: the turn's own tokens (the stream gave
    the thread's total), the cost at the model's list price, the quota use."""
    path = find_rollout(codex_home(), run.session_id) if run.session_id else None
    if path is None:
        return RolloutTurn()
    turn = read_last_turn(path)
    if turn.usage is not None:
        read_usage_into(run, turn.usage)
    if turn.model is not None:
        run.cost_usd = openai_cost(
            turn.model,
            uncached_input=run.input_tokens,
            cached_input=run.cache_read_tokens,
            output=run.output_tokens,
        )
    if turn.quota is not None:
        run.rate_limit = turn.quota
    return turn


def _message(turn: RolloutTurn, run: ClaudeRun, output: str, stderr: str) -> str:
    said = turn.error_message or (run.result_text if run.is_error else None)
    if not said:
        lines = (stderr or output).strip().splitlines()
        said = lines[-1] if lines else "codex ended without saying why"
    return said.strip()[:MESSAGE_CHARS]
