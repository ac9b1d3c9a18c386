"""Record the histories the replay test replays.

    python scripts/tests/temporal/record_histories.py [LOOP ...]

Starts a Temporal dev server (`temporal server start-dev`, from the dev extra) on
127.0.0.1 in a temporary directory, runs each named example loop of `.loops/` (default:
every one that runs without Claude) in a copy of `.loops/` with a worker in this
process, and writes `scripts/tests/temporal/histories/<loop>.json`. See history_replay.py.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/tests: `fixtures`
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fixtures.temporal_servers import DevServer, dev_server, find_temporal_cli
from history_replay import (
    HISTORIES_DIR,
    examples_without_claude,
    project_with_examples,
    record,
    save_history,
)
from temporalio.client import Client


async def record_all(server: DevServer, project: Path, names: list[str]) -> None:
    client = await Client.connect(server.address, namespace=server.namespace)
    for name in names:
        recording = await record(client, project, name)
        path = HISTORIES_DIR / f"{name}.json"
        save_history(recording.history, path)
        events = len(recording.history.events)
        status = recording.outcome.state["status"]
        print(f"{name}: {events} events, {recording.resumes} resumes, {status} -> {path}")


def main(argv: list[str]) -> int:
    names = argv or examples_without_claude()
    with tempfile.TemporaryDirectory(prefix="ll-loop-record-") as directory:
        root = Path(directory)
        project = project_with_examples(root / "project")
        (root / "server").mkdir()
        with dev_server(find_temporal_cli(), root / "server") as server:
            asyncio.run(record_all(server, project, names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
