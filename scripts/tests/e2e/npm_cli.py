"""Install a pinned agent CLI from npm for the end-to-end tests, on first use.

Each agent CLI the tests drive (Claude Code, Codex, Gemini CLI, OpenCode, ...) is an `NpmCli`:
its npm package, the file in `.ci/` pinning its version, where its binary lands under
`.cache/<name>/`, and a variable naming a binary to use instead. `ensure(cli, announce)`
installs the pinned version with npm into `.cache/<name>/` (npm's download cache in
`.cache/npm/`; nothing global, nothing under ~; `.cache/` is gitignored) unless it is there
already. A file lock per CLI makes concurrent pytest processes wait for one install instead
of both installing. Whatever stops the install is a `CliUnavailable` whose message is one
line saying what to do; fixtures make it a failure, never a skip.

`python3 scripts/tests/e2e/npm_cli.py NAME` (what the `.ci/install-*` scripts run) does the
same from a shell and prints the binary's path.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
CACHE = REPO_ROOT / ".cache"
NPM_CACHE = CACHE / "npm"
NPM_TIMEOUT_SECONDS = 900
VERSION_TIMEOUT_SECONDS = 60
_VERSION = re.compile(r"\d+\.\d+\.\d+")


class CliUnavailable(Exception):
    """The CLI is not there and cannot be installed; the message says what to do."""


@dataclass(frozen=True)
class NpmCli:
    """An agent CLI the tests install from npm.

    `binary` is the path under the CLI's prefix (`.cache/<name>/`); `override_env` names a
    variable pointing at a binary to use as it is instead.
    """

    name: str  # folder under .cache/ and the name people know it by
    title: str  # for messages: "Claude Code"
    package: str  # npm package
    version_file: str  # under .ci/
    binary: str  # relative to the prefix
    override_env: str

    @property
    def prefix(self) -> Path:
        return CACHE / self.name

    @property
    def cached_binary(self) -> Path:
        return self.prefix / self.binary

    def pinned_version(self) -> str:
        return (REPO_ROOT / ".ci" / self.version_file).read_text(encoding="utf-8").strip()


def ensure(cli: NpmCli, announce: Callable[[str], None]) -> Path:
    """The binary of `cli` the e2e tests run, installed first if needed.

    The variable `cli.override_env` names a binary to use as it is; otherwise the pinned
    version under `.cache/<name>/` is used, installed with npm when it is missing or another
    version. `announce` is told once, before a download starts.
    """
    configured = os.environ.get(cli.override_env)
    if configured:
        return _configured_binary(cli, Path(configured))
    version = cli.pinned_version()
    if installed_version(cli.cached_binary) == version:
        return cli.cached_binary
    npm = shutil.which("npm")
    if npm is None:
        raise CliUnavailable(
            f"npm not found: the end-to-end tests install {cli.title} {version} with npm into "
            f".cache/{cli.name}; install Node.js with npm (https://nodejs.org) and run "
            "pytest again"
        )
    with _install_lock(cli):
        # Another pytest process may have installed it while this one waited for the lock.
        if installed_version(cli.cached_binary) != version:
            announce(
                f"installing {cli.title} {version} into .cache/{cli.name} for the end-to-end tests"
            )
            _npm_install(cli, npm, version)
    found = installed_version(cli.cached_binary)
    if found != version:
        raise CliUnavailable(
            f"{cli.cached_binary} is not a working {cli.title} {version} after npm install "
            f"(its --version says {found or 'nothing'})"
        )
    return cli.cached_binary


def _configured_binary(cli: NpmCli, path: Path) -> Path:
    if path.is_file() and os.access(path, os.X_OK):
        return path
    raise CliUnavailable(
        f"{cli.override_env}={path} is not an executable file: point it at a {cli.name} "
        f"binary, or unset it to let the tests install {cli.title} {cli.pinned_version()} "
        f"into .cache/{cli.name}"
    )


def installed_version(binary: Path) -> str | None:
    """The first version number a binary's `--version` prints (`2.1.330 (Claude Code)`,
    `codex-cli 0.169.0`), or None when it does not run."""
    try:
        finished = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_SECONDS,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = _VERSION.search(finished.stdout)
    return found.group(0) if finished.returncode == 0 and found else None


@contextmanager
def _install_lock(cli: NpmCli) -> Iterator[None]:
    lock_file = CACHE / f"{cli.name}.lock"
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        yield


def _npm_install(cli: NpmCli, npm: str, version: str) -> None:
    cli.prefix.mkdir(parents=True, exist_ok=True)
    spec = f"{cli.package}@{version}"
    command = [
        npm,
        "install",
        "--prefix",
        str(cli.prefix),
        "--cache",
        str(NPM_CACHE),
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--loglevel=error",
        spec,
    ]
    try:
        finished = subprocess.run(
            command, capture_output=True, text=True, timeout=NPM_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise CliUnavailable(
            f"npm install of {spec} did not finish in {NPM_TIMEOUT_SECONDS} s"
        ) from exc
    if finished.returncode != 0:
        last_line = (finished.stderr.strip().splitlines() or ["no message"])[-1]
        raise CliUnavailable(
            f"npm install of {spec} into .cache/{cli.name} failed "
            f"(exit {finished.returncode}): {last_line}"
        )


CLAUDE_CODE = NpmCli(
    name="claude-code",
    title="Claude Code",
    package="@anthropic-ai/claude-code",
    version_file="claude-code-version",
    binary="node_modules/.bin/claude",
    override_env="LL_E2E_CLAUDE",
)

CODEX = NpmCli(
    name="codex",
    title="Codex CLI",
    package="@openai/codex",
    version_file="codex-version",
    binary="node_modules/.bin/codex",
    override_env="LL_E2E_CODEX",
)

GEMINI_CLI = NpmCli(
    name="gemini-cli",
    title="Gemini CLI",
    package="@google/gemini-cli",
    version_file="gemini-cli-version",
    binary="node_modules/.bin/gemini",
    override_env="LL_E2E_GEMINI",
)

OPENCODE = NpmCli(
    name="opencode",
    title="OpenCode",
    package="opencode-ai",
    version_file="opencode-version",
    # The platform package's binary itself: `opencode-ai/bin/opencode` is only linked to it
    # by a postinstall script, which npm may not run.
    binary="node_modules/opencode-linux-x64/bin/opencode",
    override_env="LL_E2E_OPENCODE",
)

QWEN_CODE = NpmCli(
    name="qwen-code",
    title="Qwen Code",
    package="@qwen-code/qwen-code",
    version_file="qwen-code-version",
    binary="node_modules/.bin/qwen",
    override_env="LL_E2E_QWEN",
)

KNOWN: dict[str, NpmCli] = {
    cli.name: cli for cli in (CLAUDE_CODE, CODEX, GEMINI_CLI, OPENCODE, QWEN_CODE)
}
"""Every CLI the tests install, by name (`python3 npm_cli.py NAME`)."""


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in KNOWN:
        print(f"usage: npm_cli.py {{{','.join(sorted(KNOWN))}}}", file=sys.stderr)
        return 2
    try:
        binary = ensure(KNOWN[argv[0]], lambda line: print(line, file=sys.stderr, flush=True))
    except CliUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(binary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
