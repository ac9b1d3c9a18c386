"""The test suite's own set-up (docs/testing.md, "Running the tests"): the markers of the
quick loop, test ids every xdist worker agrees on, and npm installs that wait for one
another instead of racing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from fixtures.external_tools import MERMAID_CHECK_SCRIPT

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parents[1]
ROOT_CONFTEST = TESTS / "conftest.py"


@pytest.fixture
def root_conftest(pytestconfig: pytest.Config) -> ModuleType:
    """scripts/tests/conftest.py as pytest loaded it."""
    for plugin in pytestconfig.pluginmanager.get_plugins():
        path = getattr(plugin, "__file__", None)
        if isinstance(plugin, ModuleType) and path and Path(path).resolve() == ROOT_CONFTEST:
            return plugin
    raise LookupError("scripts/tests/conftest.py is not loaded")


def test_the_markers_of_the_quick_loop_are_registered(pytestconfig: pytest.Config) -> None:
    registered = [line.split(":")[0] for line in pytestconfig.getini("markers")]
    assert {"e2e", "temporal", "slow"} <= set(registered)


@pytest.mark.parametrize(
    ("path", "fixtures", "expected"),
    [
        (TESTS / "e2e" / "test_e2e_llm.py", ("project",), ["e2e"]),
        (TESTS / "temporal" / "test_codec.py", (), ["temporal"]),
        (TESTS / "test_benchmarks.py", ("tmp_path", "temporal_cli_path"), ["temporal"]),
        (TESTS / "test_cli_run.py", ("tmp_path", "time_skipping"), ["temporal"]),
        (TESTS / "test_x.py", ("claude_bin", "temporal_dev_server"), ["e2e", "temporal"]),
        (TESTS / "test_cli_run.py", ("tmp_path", "monkeypatch"), []),
    ],
)
def test_e2e_and_temporal_are_given_by_folder_and_by_fixture(
    path: Path, fixtures: tuple[str, ...], expected: list[str], root_conftest: ModuleType
) -> None:
    assert root_conftest.marks_by_place(path, fixtures) == expected


def collected(marker: str, *files: str) -> list[str]:
    """The ids `pytest --collect-only -m marker` lists among `files` (under scripts/tests)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-m", marker]
        + [f"scripts/tests/{name}" for name in files],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_the_collection_marks_the_e2e_folder_and_nothing_else_as_e2e() -> None:
    ids = collected("e2e", "e2e/test_e2e_harness.py", "test_cli_plan.py")
    assert ids and all(i.startswith("scripts/tests/e2e/test_e2e_harness.py::") for i in ids)


@pytest.mark.slow
def test_the_collection_marks_temporal_by_folder_and_by_server_fixture() -> None:
    ids = collected("temporal", "temporal/test_codec.py", "test_benchmarks.py", "test_cli_plan.py")
    outside = [i for i in ids if not i.startswith("scripts/tests/temporal/test_codec.py::")]
    assert outside == [
        "scripts/tests/test_benchmarks.py::test_quick_temporal_benchmark_prints_every_figure"
    ]
    assert len(ids) > len(outside)


@pytest.mark.parametrize("message", [f"loop 'demo' is running (pid {os.getpid()})"])
def test_a_parameter_holding_this_processs_pid_gets_an_id_without_it(
    message: str, request: pytest.FixtureRequest
) -> None:
    """Two xdist workers have two pids: an id with the pid would differ between them, and
    xdist stops with 'Different tests were collected between gw0 and gw1'."""
    assert request.node.name == (
        "test_a_parameter_holding_this_processs_pid_gets_an_id_without_it"
        "[loop 'demo' is running (pid PID)]"
    )


def test_other_parameters_keep_pytests_own_ids(root_conftest: ModuleType) -> None:
    assert root_conftest.id_without_own_pid("pid 1 (not ours)") is None
    assert root_conftest.id_without_own_pid(os.getpid()) is None


FAKE_NPM = """\
#!/bin/sh
# npm install --prefix DIR ...: note the call, take a while, leave a mermaid package.
echo install >> "$NPM_CALLS"
sleep 1
mkdir -p "$3/node_modules/mermaid"
echo '{}' > "$3/node_modules/mermaid/package.json"
"""

FIND_PARSER = """\
import sys
from pathlib import Path
from types import ModuleType
import fixtures.external_tools as tools
cache = Path(sys.argv[1])
tools.MERMAID_PREFIX = cache / "mermaid-parser"
tools.MERMAID_LOCK = cache / "mermaid-parser.lock"
tools.NPM_CACHE = cache / "npm"
print(tools.find_mermaid_parser())
"""


def test_concurrent_workers_install_the_mermaid_parser_once(tmp_path: Path) -> None:
    """Two processes (two xdist workers) needing the parser at once: one npm install,
    and both get the same, whole check script."""
    bin_dir, cache, calls = tmp_path / "bin", tmp_path / "cache", tmp_path / "npm-calls"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "NPM_CALLS": str(calls),
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    script = textwrap.dedent(FIND_PARSER)
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(cache)], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    found = [worker.communicate(timeout=60)[0].strip() for worker in workers]
    check_script = cache / "mermaid-parser" / "mermaid_check.mjs"
    assert [worker.returncode for worker in workers] == [0, 0]
    assert found == [str(check_script), str(check_script)]
    assert calls.read_text() == "install\n"
    assert check_script.read_bytes() == MERMAID_CHECK_SCRIPT.read_bytes()
