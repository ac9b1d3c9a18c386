"""The user guide's background-server example (§3.2) works when the server is slow to
start (issue 23, item 10): curl's "connection refused" is exit 7, which the exit-code
evaluator reads as `error`; the example turns it into a `failure` and polls again."""

from __future__ import annotations

import re
import socket
from pathlib import Path

from fixtures.cli_support import run_cli, write_loop

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "user-guide.md"


def _guide_states() -> str:
    """The YAML of the example, as the guide shows it."""
    text = GUIDE.read_text()
    section = text[text.index("#### Processes an action starts in the background") :]
    return re.search(r"```yaml\n(.*?)```", section, re.S)[1]  # type: ignore[index]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_example_waits_for_a_server_that_is_slow_to_start(tmp_path: Path) -> None:
    port = _free_port()
    states = _guide_states().replace("8000", str(port))
    # Slower than the first poll: the server starts listening a second later.
    slow = "action: sleep 1 && python3 -m http.server"
    states = states.replace("action: python3 -m http.server", slow, 1)
    loop = f"name: serve\ninitial: start\nstates:\n{states}  done:\n    terminal: true\n"
    write_loop(tmp_path, "serve", loop)
    done = run_cli(tmp_path, "run", "serve", timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Loop completed: done" in done.stdout
    assert done.stdout.count("-> poll") >= 2  # it polled before the server listened
