"""Record the histories the replay test replays.

    python scripts/tests/temporal/record_histories.py [LOOP ... | --scenarios]

Starts a Temporal dev server (`temporal server start-dev`, from the dev extra) on
127.0.0.1 in a temporary directory, runs each named example loop of `.loops/` (default:
every one that runs without Claude, and the scenarios no example takes) in a copy of
`.loops/` with a worker in this process, and writes
`scripts/tests/temporal/histories/<name>.json`. See history_replay.py.
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
    SCENARIOS,
    examples_without_claude,
    project_with_examples,
    record,
    save_history,
)
from temporalio.client import Client


async def record_all(
    server: DevServer, project: Path, names: list[str], *, scenarios: bool
) -> None:
    client = await Client.connect(server.address, namespace=server.namespace)
    for scenario in SCENARIOS if scenarios else ():
        for name, history in (await scenario(client, project)).items():
            save_history(history, HISTORIES_DIR / f"{name}.json")
            print(f"{name}: {len(history.events)} events")
    for name in names:
        # The id its replay gives it (`load_history`): a run that starts child workflows
        # (a `parallel:` fan-out) names them after it.
        recording = await record(client, project, name, workflow_id=f"recorded-{name}")
        path = HISTORIES_DIR / f"{name}.json"
        save_history(recording.history, path)
        events = len(recording.history.events)
        status = recording.outcome.state["status"]
        print(f"{name}: {events} events, {recording.resumes} resumes, {status} -> {path}")


def main(argv: list[str]) -> int:
    scenarios = not argv or "--scenarios" in argv
    names = [name for name in argv if name != "--scenarios"] or (
        [] if argv else examples_without_claude()
    )
    with tempfile.TemporaryDirectory(prefix="ll-loop-record-") as directory:
        root = Path(directory)
        project = project_with_examples(root / "project")
        (root / "server").mkdir()
        with dev_server(find_temporal_cli(), root / "server") as server:
            asyncio.run(record_all(server, project, names, scenarios=scenarios))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
