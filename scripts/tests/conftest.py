"""Shared test settings.

Hypothesis keeps an example database and caches in `.hypothesis/` under the working
directory by default; tests must not write outside their temporary directories, so the
database is switched off and the caches go to pytest's base temporary directory. This has
to happen when pytest configures itself: Hypothesis writes its caches while tests are
collected, before any fixture runs.

No test may reach the real Anthropic API: the credentials of the machine running the tests
are dropped and the SDK's base URL points at a closed port on 127.0.0.1, so a test that
forgets to set up the local fake API fails with a connection error instead of sending a
request out. Tests that talk to the fake API set their own values.

Markers (registered in pyproject.toml; docs/testing.md): `e2e` and `temporal` are given
here, by folder and by the fixtures a test uses (`marks_by_place`), so a new
test in `e2e/` or on a Temporal server needs no marker of its own; `slow` is written on
the test.
`pytest -m "not e2e and not temporal and not slow"` is the quick development loop.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

if TYPE_CHECKING:
    from fixtures.temporal_servers import DevServer, TimeSkipping

TESTS = Path(__file__).resolve().parent
# A test in one of these folders, or using one of these fixtures, gets the marker.
FOLDER_MARKERS = {TESTS / "e2e": "e2e", TESTS / "temporal": "temporal"}
FIXTURE_MARKERS = {
    "claude_bin": "e2e",  # the real Claude Code CLI
    "temporal_test_server_path": "temporal",
    "time_skipping": "temporal",
    "temporal_cli_path": "temporal",
    "temporal_dev_server": "temporal",
}

_CLOSED_LOCAL_PORT = "http://127.0.0.1:9"  # discard: nothing listens there
for _credential in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
    os.environ.pop(_credential, None)
os.environ["ANTHROPIC_BASE_URL"] = _CLOSED_LOCAL_PORT

# pytest rewrites the asserts of ~350 test modules in each xdist worker: several CPU
# seconds each, every run, when nothing may be cached (PYTHONDONTWRITEBYTECODE=1, as on
# this project's machines). Its rewritten modules are cached (in the gitignored
# `__pycache__` folders beside them) even so: the quick loop is CPU-bound on two cores.
sys.dont_write_bytecode = False

settings.register_profile("ll-loop", database=None, deadline=None)
settings.load_profile("ll-loop")


@pytest.hookimpl(tryfirst=True)  # before xdist's own (one worker per core)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers per core, at most four more than the cores. Most of the
    suite's time is spent waiting on real processes (agent CLIs, Temporal servers, shell
    actions that sleep), not computing: on the 2-core CI machine 4 workers take the whole
    suite from 7.3 to 5.3 minutes. `PYTEST_XDIST_AUTO_NUM_WORKERS` still decides."""
    configured = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if configured:
        return int(configured)
    cores = os.cpu_count() or 1
    return min(2 * cores, cores + 4)


@pytest.hookimpl(trylast=True)  # after pytest's tmp_path plugin has set up its factory
def pytest_configure(config: pytest.Config) -> None:
    factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]
    set_hypothesis_home_dir(factory.getbasetemp() / "hypothesis")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for name in marks_by_place(item.path, getattr(item, "fixturenames", ())):
            item.add_marker(name)


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    return id_without_own_pid(val)  # every xdist worker must collect the same ids


# Here rather than in fixtures/: test_e2e_install.py runs this conftest in a copied
# repository without that folder. Tests reach them through the `root_conftest` fixture
# (`import conftest` finds whichever of the three conftest modules loaded last).
def marks_by_place(path: Path, fixtures: Iterable[str]) -> list[str]:
    """The markers (`e2e`, `temporal`) of a test in file `path` using `fixtures`."""
    names = {name for folder, name in FOLDER_MARKERS.items() if path.is_relative_to(folder)}
    names.update(FIXTURE_MARKERS[fixture] for fixture in fixtures if fixture in FIXTURE_MARKERS)
    return sorted(names)


def id_without_own_pid(val: object) -> str | None:
    """The test id of a parameter holding this process's pid, with `pid PID` in its place
    (None: pytest's own id). Two xdist workers have two pids: an id with the pid would
    differ between them, and xdist stops ('Different tests were collected between gw0
    and gw1'), e.g. for `f"loop 'demo' is running (pid {os.getpid()})"`."""
    own_pid = f"pid {os.getpid()}"
    if isinstance(val, str) and own_pid in val:
        return val.replace(own_pid, "pid PID")
    return None


@pytest.fixture(scope="session")
def graphviz_dot() -> Path:
    """graphviz's `dot`: skipped when missing, failed when missing in CI (`CI` set)."""
    from fixtures.external_tools import find_dot, require_tool

    return require_tool(find_dot, why="graphviz is needed to check DOT output")


@pytest.fixture(scope="session")
def mermaid_parser() -> Path:
    """The Mermaid parser's check script (installed with npm on first use); same rule."""
    from fixtures.external_tools import find_mermaid_parser, require_tool

    return require_tool(
        find_mermaid_parser, why="the mermaid parser is needed to check Mermaid output"
    )


# --- Temporal servers (scripts/tests/fixtures/temporal_servers.py), one per session -----


@pytest.fixture(scope="session")
def temporal_test_server_path() -> Path:
    """`temporal-test-server` (time-skipping): skipped when missing, failed in CI."""
    from fixtures.external_tools import require_tool
    from fixtures.temporal_servers import find_test_server

    return require_tool(find_test_server, why="the Temporal time-skipping test server is needed")


@pytest.fixture
def time_skipping(temporal_test_server_path: Path) -> Iterator[TimeSkipping]:
    """A time-skipping environment and its event loop: `time_skipping.run(coroutine)`.

    A fresh server per test (it starts in about 0.1 s): the server's time skipping is
    global, and a test that leaves it locked (a handle's result awaited and cancelled,
    say) would stop time for every later test on a shared one."""
    from fixtures.temporal_servers import time_skipping_environment

    with time_skipping_environment(temporal_test_server_path) as environment:
        yield environment


@pytest.fixture(scope="session")
def temporal_cli_path() -> Path:
    """The `temporal` CLI (its `server start-dev`): skipped when missing, failed in CI."""
    from fixtures.external_tools import require_tool
    from fixtures.temporal_servers import find_temporal_cli

    return require_tool(find_temporal_cli, why="the Temporal dev server is needed")


@pytest.fixture(scope="session")
def temporal_dev_server(
    temporal_cli_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DevServer]:
    """`temporal server start-dev` on 127.0.0.1, started once, stopped after the session."""
    from fixtures.temporal_servers import dev_server

    with dev_server(temporal_cli_path, tmp_path_factory.mktemp("temporal-dev")) as server:
        yield server
