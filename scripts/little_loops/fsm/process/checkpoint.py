"""Git checkpoints (`checkpoint: git`): commit the project's work so a stopped loop loses none.

After each completed iteration and each handoff the executor asks `GitCheckpointer` for a
checkpoint. If the working directory is inside a git work tree with changes, they are
committed (`git add -A` + `git commit`) with a message naming the loop, the state and the
iteration. Choices:

- The whole work tree is committed, except the loop runtime directories
  `<loops_dir>/.running/` and `<loops_dir>/.history/` (state files change at every state
  and would make a commit every iteration on their own). `.gitignore` is respected.
- An identity is supplied (`ll-loop <ll-loop@localhost>`) only for the parts of it git
  has no configuration for; a configured user (or `GIT_AUTHOR_*` variables) is used.
- Checkpoints are safety nets, so nothing may block them: hooks are skipped
  (`--no-verify`), signing is off for them (`commit.gpgsign=false`, so no passphrase
  prompt can hang a loop), git never prompts (`GIT_TERMINAL_PROMPT=0`, stdin closed), and
  every git call has a time limit. Nothing is ever pushed.
- Not a git work tree (or no git): one warning, then every later checkpoint is skipped
  quietly. A commit that fails (a held `index.lock`, a full disk) is a warning each time
  and the loop carries on.

Results are returned, never printed: the caller decides how to show them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from little_loops.fsm.model.checkpoint_result import CheckpointResult

__all__ = [
    "DEFAULT_IDENTITY",
    "GIT_TIMEOUT",
    "RUNTIME_DIRS",
    "CheckpointResult",
    "GitCheckpointer",
    "checkpoint_message",
]

DEFAULT_IDENTITY = (("user.name", "ll-loop"), ("user.email", "ll-loop@localhost"))
GIT_TIMEOUT = 60.0
RUNTIME_DIRS = (".running", ".history")


class _GitFailed(Exception):
    """A git command could not run or exited non-zero; the message says which and why."""


def checkpoint_message(loop_name: str, state: str, iteration: int, reason: str) -> str:
    """The commit message: loop, state and iteration; `reason` is `iteration` or `handoff`."""
    if reason == "handoff":
        return f"ll-loop {loop_name}: checkpoint at handoff in '{state}' (iteration {iteration})"
    return f"ll-loop {loop_name}: checkpoint after '{state}' (iteration {iteration})"


class GitCheckpointer:
    """Commits the work tree of `workdir` on request; see the module doc for the rules."""

    def __init__(
        self,
        loop_name: str,
        *,
        workdir: Path | None = None,
        loops_dir: Path | None = None,
        git: str = "git",
        timeout: float = GIT_TIMEOUT,
    ) -> None:
        self.loop_name = loop_name
        self.workdir = workdir or Path.cwd()
        self.loops_dir = loops_dir or self.workdir / ".loops"
        self.git = git
        self.timeout = timeout
        self._disabled = False
        self._pathspecs: list[str] | None = None
        self._identity: list[str] | None = None

    def checkpoint(
        self, state: str, iteration: int, *, reason: str = "iteration"
    ) -> CheckpointResult:
        """Commit the current changes, if any; never raises for git problems."""
        if self._disabled:
            return CheckpointResult("skipped")
        if self._pathspecs is None:
            warning = self._probe()
            if warning is not None:
                self._disabled = True
                return CheckpointResult("skipped", warning=warning)
        message = checkpoint_message(self.loop_name, state, iteration, reason)
        try:
            return self._commit(message)
        except _GitFailed as exc:
            return CheckpointResult("failed", message=message, warning=f"checkpoint failed: {exc}")

    # --- steps -------------------------------------------------------------------------

    def _probe(self) -> str | None:
        """Learn the repository layout once; the warning text when there is none."""
        try:
            top = self._git("rev-parse", "--show-toplevel")
        except _GitFailed as exc:
            reason = str(exc)
            if "not a git repository" in reason or "must be run in a work tree" in reason:
                reason = f"{self.workdir} is not in a git work tree"
            return f"checkpoint: git: {reason}, so no checkpoints will be made"
        self._pathspecs = [":(top)", *self._runtime_excludes(Path(top))]
        self._identity = self._missing_identity()
        return None

    def _runtime_excludes(self, top: Path) -> list[str]:
        excludes = []
        for name in RUNTIME_DIRS:
            runtime = (self.workdir / self.loops_dir / name).resolve()
            if runtime.is_relative_to(top.resolve()):
                relative = runtime.relative_to(top.resolve()).as_posix()
                excludes.append(f":(top,exclude){relative}")
        return excludes

    def _missing_identity(self) -> list[str]:
        overrides: list[str] = []
        for key, value in DEFAULT_IDENTITY:
            try:
                configured = self._git("config", "--get", key)
            except _GitFailed:  # exit 1: the key is not set anywhere
                configured = ""
            if not configured:
                overrides += ["-c", f"{key}={value}"]
        return overrides

    def _commit(self, message: str) -> CheckpointResult:
        assert self._pathspecs is not None and self._identity is not None
        changes = self._git(
            "status", "--porcelain", "--untracked-files=all", "--", *self._pathspecs
        )
        if not changes:
            return CheckpointResult("clean")
        self._git("add", "-A", "--", *self._pathspecs)
        settings = [*self._identity, "-c", "commit.gpgsign=false"]
        self._git(*settings, "commit", "--no-verify", "--quiet", "-m", message)
        commit = self._git("rev-parse", "--short", "HEAD")
        return CheckpointResult("committed", commit=commit, message=message)

    def _git(self, *args: str) -> str:
        """Run git in the work directory; its stdout, stripped, or `_GitFailed`."""
        environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
        try:
            completed = subprocess.run(
                [self.git, *args],
                cwd=self.workdir,
                env=environment,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="backslashreplace",
                timeout=self.timeout,
                check=False,
            )
        except FileNotFoundError:
            raise _GitFailed(f"'{self.git}' not found") from None
        except OSError as exc:
            raise _GitFailed(f"cannot run '{self.git}': {exc.strerror or exc}") from None
        except subprocess.TimeoutExpired:
            raise _GitFailed(f"git {args[0]} took longer than {self.timeout:g}s") from None
        if completed.returncode != 0:
            raise _GitFailed(_failure_text(args, completed))
        return completed.stdout.strip()


def _failure_text(args: tuple[str, ...], completed: subprocess.CompletedProcess[str]) -> str:
    command = next(arg for arg in args if not arg.startswith("-") and "=" not in arg)
    lines = [line.strip() for line in completed.stderr.splitlines() if line.strip()]
    # git explains itself over several lines; the `fatal:`/`error:` one says what failed.
    errors = [line for line in lines if line.startswith(("fatal:", "error:"))]
    said = (errors or lines or [f"exit code {completed.returncode}"])[0]
    return f"git {command}: {said}"
