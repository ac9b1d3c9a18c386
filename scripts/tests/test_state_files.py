"""Tests for `little_loops.fsm.store.state_files`: the state record and the files of one loop."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from little_loops.fsm.errors import StateFileError
from little_loops.fsm.store.state_files import (
    RUNNING_DIR,
    LoopState,
    StatePersistence,
    is_process_alive,
    state_problem,
)

REFERENCE_KEYS = [
    "loop_name",
    "current_state",
    "iteration",
    "captured",
    "prev_result",
    "last_result",
    "started_at",
    "updated_at",
    "status",
]


def make_state(**overrides: Any) -> LoopState:
    fields: dict[str, Any] = {
        "loop_name": "demo",
        "current_state": "check",
        "iteration": 2,
        "captured": {"count": {"output": "5\n", "stderr": "", "exit_code": 0, "duration_ms": 3}},
        "prev_result": {"output": "5\n", "exit_code": 0, "state": "check"},
        "last_result": {"verdict": "failure", "details": {"value": 5.0}},
        "started_at": "2026-01-01T00:00:00.000001+00:00",
        "updated_at": "",
        "status": "running",
    }
    fields.update(overrides)
    return LoopState(**fields)


def valid_dict(**overrides: Any) -> dict[str, Any]:
    data = make_state().to_dict()
    data.update(overrides)
    return data


@pytest.fixture
def persistence(tmp_path: Path) -> StatePersistence:
    files = StatePersistence("demo", tmp_path / ".loops")
    files.initialize()
    return files


# --- LoopState ---------------------------------------------------------------------------


def test_to_dict_writes_reference_keys_then_version() -> None:
    data = make_state().to_dict()
    assert list(data) == [*REFERENCE_KEYS, "version"]
    assert data["version"] == 1
    assert data["prev_result"] == {"output": "5\n", "exit_code": 0, "state": "check"}


def test_to_dict_writes_nulls_for_reference_keys() -> None:
    data = make_state(prev_result=None, last_result=None).to_dict()
    assert data["prev_result"] is None
    assert data["last_result"] is None


def test_to_dict_orders_additive_keys_after_reference_keys() -> None:
    state = make_state(
        continuation_prompt="go on",
        pid=42,
        host="box",
        terminated_by="handoff",
        error="boom",
        elapsed_ms=0,
        handoff_count=2,
        resumed_at="2026-01-02T00:00:00+00:00",
        phase="entered",
    )
    assert list(state.to_dict()) == [
        *REFERENCE_KEYS,
        "continuation_prompt",
        "version",
        "pid",
        "host",
        "terminated_by",
        "error",
        "elapsed_ms",
        "handoff_count",
        "resumed_at",
        "phase",
    ]


def test_round_trip_keeps_every_field() -> None:
    state = make_state(
        continuation_prompt="go on", pid=7, host="h", handoff_count=1, phase="routed"
    )
    assert LoopState.from_dict(state.to_dict()) == state


def test_from_dict_reads_reference_file_with_defaults() -> None:
    data = {
        "loop_name": "x",
        "current_state": "a",
        "iteration": 0,
        "started_at": "t",
        "status": "running",
        "surprise": [1, 2],
    }
    state = LoopState.from_dict(data)
    assert state == LoopState("x", "a", 0, {}, None, None, "t", "", "running")


def test_from_dict_missing_required_key_raises_key_error() -> None:
    data = valid_dict()
    del data["status"]
    with pytest.raises(KeyError) as info:
        LoopState.from_dict(data)
    assert info.value.args == ("status",)


def test_from_dict_wrong_type_raises_value_error_naming_the_key() -> None:
    with pytest.raises(ValueError) as info:
        LoopState.from_dict(valid_dict(iteration="three"))
    assert str(info.value) == "'iteration' must be an integer, got a string"


@pytest.mark.parametrize(
    ("loose", "read"),
    [
        ({"iteration": "3"}, {"iteration": 3}),
        ({"iteration": " 3 "}, {"iteration": 3}),
        ({"iteration": 3.0}, {"iteration": 3}),
        ({"pid": "12", "elapsed_ms": 1500.0}, {"pid": 12, "elapsed_ms": 1500}),
        ({"handoff_count": None}, {"handoff_count": 0}),
        ({"captured": None, "updated_at": None}, {"captured": {}, "updated_at": ""}),
        ({"captured": {"a": 1, "b": "text"}}, {"captured": {"a": 1, "b": "text"}}),
    ],
)
def test_from_dict_reads_loose_values_the_reference_accepted(
    loose: dict[str, Any], read: dict[str, Any]
) -> None:
    """The reference's `from_dict` checked no types: usable loose values load."""
    assert state_problem(valid_dict(**loose)) is None
    assert LoopState.from_dict(valid_dict(**loose)) == make_state(**read)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([1], "expected a JSON object, got an array"),
        ("x", "expected a JSON object, got a string"),
        (3.5, "expected a JSON object, got a number"),
        (True, "expected a JSON object, got a boolean"),
        (None, "expected a JSON object, got null"),
        (
            {"loop_name": "x"},
            "missing required keys 'current_state', 'iteration', 'started_at', 'status'",
        ),
        (valid_dict(version=2), "unsupported version 2 (this ll-loop reads version 1)"),
        (valid_dict(version="1"), "unsupported version '1' (this ll-loop reads version 1)"),
        (valid_dict(version=True), "unsupported version True (this ll-loop reads version 1)"),
        (valid_dict(iteration=True), "'iteration' must be an integer, got a boolean"),
        (valid_dict(iteration=3.5), "'iteration' must be an integer, got a number"),
        (valid_dict(captured=[]), "'captured' must be an object, got an array"),
        (valid_dict(prev_result="x"), "'prev_result' must be an object or null, got a string"),
        (valid_dict(pid="twelve"), "'pid' must be an integer or null, got a string"),
        (valid_dict(handoff_count="x"), "'handoff_count' must be an integer, got a string"),
        (valid_dict(phase="half"), "'phase' must be 'entered', 'routed' or null, got 'half'"),
    ],
)
def test_state_problem_names_the_problem(data: object, problem: str) -> None:
    assert state_problem(data) == problem


def test_state_problem_accepts_valid_state() -> None:
    assert state_problem(valid_dict(phase=None, pid=None)) is None


# --- save_state --------------------------------------------------------------------------


def test_paths_follow_the_reference_layout(tmp_path: Path) -> None:
    files = StatePersistence("demo", tmp_path)
    assert files.loop_name == "demo"
    assert files.loops_dir == tmp_path
    assert files.running_dir == tmp_path / RUNNING_DIR
    assert files.state_file == tmp_path / ".running" / "demo.state.json"
    assert files.events_file == tmp_path / ".running" / "demo.events.jsonl"


def test_default_loops_dir_is_relative_dot_loops() -> None:
    assert StatePersistence("demo").state_file == Path(".loops/.running/demo.state.json")


def test_initialize_creates_parents_and_tolerates_existing(tmp_path: Path) -> None:
    files = StatePersistence("demo", tmp_path / "a" / "b")
    files.initialize()
    files.initialize()
    assert files.running_dir.is_dir()


def test_save_state_writes_indented_json_without_newline(persistence: StatePersistence) -> None:
    state = make_state()
    persistence.save_state(state)
    text = persistence.state_file.read_text(encoding="utf-8")
    assert state.updated_at.endswith("+00:00")
    assert text == json.dumps(state.to_dict(), indent=2)
    assert not text.endswith("\n")


def test_save_state_leaves_no_temp_file(persistence: StatePersistence) -> None:
    persistence.save_state(make_state())
    persistence.save_state(make_state(iteration=3))
    assert sorted(os.listdir(persistence.running_dir)) == ["demo.state.json"]
    loaded = persistence.load_state()
    assert loaded is not None
    assert loaded.iteration == 3


def test_save_state_removes_temp_file_when_replace_fails(persistence: StatePersistence) -> None:
    persistence.state_file.mkdir()
    (persistence.state_file / "keep").write_text("x")
    with pytest.raises(OSError):
        persistence.save_state(make_state())
    assert sorted(os.listdir(persistence.running_dir)) == ["demo.state.json"]


def test_save_state_writes_a_hidden_temp_file_then_renames_it(
    persistence: StatePersistence, monkeypatch: pytest.MonkeyPatch
) -> None:
    renamed: list[tuple[str, str]] = []
    real_replace = os.replace

    def replace(source: str, target: str) -> None:
        renamed.append((os.path.basename(source), str(target)))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    persistence.save_state(make_state())
    persistence.save_state(make_state())
    assert [target for _, target in renamed] == [str(persistence.state_file)] * 2
    names = [name for name, _ in renamed]
    assert all(re.fullmatch(r"\.demo\.state\.json\.[0-9a-f]{8}\.tmp", name) for name in names)
    assert names[0] != names[1]


def test_save_state_removes_temp_file_when_fsync_fails(
    persistence: StatePersistence, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="Input/output error"):
        persistence.save_state(make_state())
    assert os.listdir(persistence.running_dir) == []


def test_short_writes_are_finished(
    persistence: StatePersistence, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that stores only part of the bytes (a disk filling up) is completed."""
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))
    state = make_state()
    persistence.save_state(state)
    persistence.append_event({"event": "a", "pad": "z" * 20})
    with persistence.keep_events_open():
        persistence.append_event({"event": "b"})
    monkeypatch.undo()
    assert persistence.state_file.read_text() == json.dumps(state.to_dict(), indent=2)
    assert persistence.read_events() == [{"event": "a", "pad": "z" * 20}, {"event": "b"}]


def test_save_state_needs_the_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        StatePersistence("demo", tmp_path).save_state(make_state())


def test_clear_state_removes_stray_temp_files_only(persistence: StatePersistence) -> None:
    persistence.save_state(make_state())
    running = persistence.running_dir
    (running / ".demo.state.json.0a1b2c3d.tmp").write_text("{")
    (running / ".other.state.json.0a1b2c3d.tmp").write_text("{")
    (running / "demo.events.jsonl").write_text("")
    persistence.clear_state()
    persistence.clear_state()
    assert sorted(os.listdir(running)) == [".other.state.json.0a1b2c3d.tmp", "demo.events.jsonl"]


def test_clear_state_without_directory_is_quiet(tmp_path: Path) -> None:
    StatePersistence("demo", tmp_path).clear_state()
    assert not (tmp_path / RUNNING_DIR).exists()


def test_clear_all_removes_both_files(persistence: StatePersistence) -> None:
    persistence.save_state(make_state())
    persistence.append_event({"event": "loop_start"})
    persistence.clear_all()
    persistence.clear_events()
    assert os.listdir(persistence.running_dir) == []


# --- load_state ---------------------------------------------------------------------------


def test_load_state_missing_file_is_none(persistence: StatePersistence) -> None:
    assert persistence.load_state() is None
    assert persistence.load_state_checked() is None


def test_load_state_reads_reference_file_without_version(persistence: StatePersistence) -> None:
    data = {key: value for key, value in valid_dict().items() if key != "version"}
    persistence.state_file.write_text(json.dumps(data), encoding="utf-8")
    assert persistence.load_state_checked() == make_state()


DAMAGED = [
    (
        b'{"loop_name": "demo", "current_st',
        "invalid JSON at line 1, column 23: Unterminated string starting",
    ),
    (
        b'{"loop_name": "demo",',
        "invalid JSON at line 1, column 22: Expecting property name enclosed in double quotes",
    ),
    (b"[1, 2]", "expected a JSON object, got an array"),
    (b"", "the file is empty"),
    (b"  \n", "the file is empty"),
    (b'{"a": "\xff"}', "not UTF-8 text (bad byte at offset 7)"),
    (
        json.dumps({k: v for k, v in valid_dict().items() if k != "current_state"}).encode(),
        "missing required key 'current_state'",
    ),
    (
        json.dumps(valid_dict(version=2)).encode(),
        "unsupported version 2 (this ll-loop reads version 1)",
    ),
    (json.dumps(valid_dict(status=None)).encode(), "'status' must be a string, got null"),
    (
        b"1" * 5000,
        "invalid JSON: Exceeds the limit (4300 digits) for integer string "
        "conversion: value has 5000 digits; use sys.set_int_max_str_digits() to increase the limit",
    ),
]


@pytest.mark.parametrize(("content", "problem"), DAMAGED)
def test_damaged_state_file_raises_state_file_error(
    persistence: StatePersistence, content: bytes, problem: str
) -> None:
    persistence.state_file.write_bytes(content)
    with pytest.raises(StateFileError) as info:
        persistence.load_state_checked()
    path = str(persistence.state_file)
    assert (info.value.path, info.value.problem) == (path, problem)
    assert str(info.value) == f"{path}: {problem}"
    assert persistence.load_state() is None


def test_deeply_nested_json_is_reported_not_crashing(persistence: StatePersistence) -> None:
    persistence.state_file.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(StateFileError) as info:
        persistence.load_state_checked()
    assert (
        info.value.problem == "invalid JSON: maximum recursion depth exceeded while decoding "
        "a JSON array from a unicode string"
    )


def test_unreadable_state_file_is_reported(persistence: StatePersistence) -> None:
    persistence.state_file.mkdir()
    with pytest.raises(StateFileError) as info:
        persistence.load_state_checked()
    assert info.value.problem == "cannot be read: Is a directory"


def test_damaged_file_user_lines_tell_how_to_recover(persistence: StatePersistence) -> None:
    persistence.state_file.write_bytes(b"[]")
    with pytest.raises(StateFileError) as info:
        persistence.load_state_checked()
    assert info.value.user_lines() == [
        f"{persistence.state_file}: damaged state file: expected a JSON object, got an array",
        "  to start over, delete it or run the loop again (ll-loop run <loop>)",
    ]


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=200))
def test_random_bytes_only_ever_raise_state_file_error(
    persistence: StatePersistence, content: bytes
) -> None:
    persistence.state_file.write_bytes(content)
    try:
        loaded = persistence.load_state_checked()
    except StateFileError as exc:
        assert exc.path == str(persistence.state_file)
    else:
        assert isinstance(loaded, LoopState)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(
    max_examples=100,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@pytest.mark.slow
@given(changes=st.dictionaries(st.sampled_from([*valid_dict(), "pid", "phase"]), JSON_VALUES))
def test_wrong_values_only_ever_raise_state_file_error(
    persistence: StatePersistence, changes: dict[str, Any]
) -> None:
    persistence.state_file.write_text(json.dumps(valid_dict(**changes)), encoding="utf-8")
    try:
        loaded = persistence.load_state_checked()
    except StateFileError:
        assert state_problem(valid_dict(**changes)) is not None
    else:
        assert loaded == LoopState.from_dict(valid_dict(**changes))


# --- events -------------------------------------------------------------------------------


def test_append_event_writes_one_compact_line_each(persistence: StatePersistence) -> None:
    persistence.append_event({"event": "loop_start", "ts": "t", "loop": "demo"})
    persistence.append_event({"event": "state_enter", "ts": "t", "state": "é", "iteration": 1})
    assert persistence.events_file.read_bytes() == (
        b'{"event": "loop_start", "ts": "t", "loop": "demo"}\n'
        b'{"event": "state_enter", "ts": "t", "state": "\\u00e9", "iteration": 1}\n'
    )


def test_append_event_converts_unserialisable_values_with_str(
    persistence: StatePersistence,
) -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    persistence.append_event({"event": "a", "path": Path("x/y"), "when": {1, 2}.__class__})
    tuple_keyed: dict[Any, Any] = {"event": "b", (1, 2): "tuple key", "n": [Path("p")]}
    persistence.append_event(tuple_keyed)
    persistence.append_event({"event": "c", "cycle": cycle})
    events = persistence.read_events()
    assert events[0] == {"event": "a", "path": "x/y", "when": "<class 'set'>"}
    assert events[1] == {"event": "b", "(1, 2)": "tuple key", "n": ["p"]}
    # Past 64 levels the rest is written with str(), so a cycle ends in its repr.
    assert events[2] == {"event": "c", "cycle": json.loads("[" * 64 + '"[[...]]"' + "]" * 64)}


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_kept_events_file_is_opened_once_by_the_first_event(
    persistence: StatePersistence,
) -> None:
    before = _open_descriptors()
    with persistence.keep_events_open():
        assert not persistence.events_file.exists()
        persistence.append_event({"event": "a"})
        persistence.append_event({"event": "b"})
        assert _open_descriptors() == before + 1
    assert _open_descriptors() == before
    persistence.append_event({"event": "c"})  # opened and closed for this event alone
    assert _open_descriptors() == before
    assert persistence.events_file.read_bytes() == (
        b'{"event": "a"}\n{"event": "b"}\n{"event": "c"}\n'
    )


def test_clearing_kept_events_starts_a_new_file(persistence: StatePersistence) -> None:
    before = _open_descriptors()
    with persistence.keep_events_open():
        persistence.append_event({"event": "old"})
        persistence.clear_events()
        assert not persistence.events_file.exists()
        assert _open_descriptors() == before
        persistence.append_event({"event": "new"})
    assert persistence.read_events() == [{"event": "new"}]


def test_a_kept_events_file_that_cannot_be_opened_fails_that_event(tmp_path: Path) -> None:
    persistence = StatePersistence("demo", tmp_path / "missing")
    with persistence.keep_events_open():
        with pytest.raises(FileNotFoundError):
            persistence.append_event({"event": "a"})
        persistence.initialize()
        persistence.append_event({"event": "b"})
    assert persistence.read_events() == [{"event": "b"}]


def test_concurrent_appends_never_interleave(persistence: StatePersistence) -> None:
    # Half of the writers keep their descriptor open, as a run does.
    writer = (
        "import contextlib, sys\n"
        "from pathlib import Path\n"
        "from little_loops.fsm.store.state_files import StatePersistence\n"
        "files = StatePersistence('demo', Path(sys.argv[1]))\n"
        "kept = files.keep_events_open() if int(sys.argv[2]) % 2 else contextlib.nullcontext()\n"
        "with kept:\n"
        "    for i in range(100):\n"
        "        event = {'event': 'x', 'writer': sys.argv[2], 'i': i, 'pad': 'z' * 20000}\n"
        "        files.append_event(event)\n"
    )
    processes = [
        subprocess.Popen([sys.executable, "-c", writer, str(persistence.loops_dir), str(n)])
        for n in range(4)
    ]
    assert [process.wait() for process in processes] == [0, 0, 0, 0]
    lines = persistence.events_file.read_bytes().split(b"\n")
    assert lines[-1] == b""
    events = [json.loads(line) for line in lines[:-1]]
    assert len(events) == 400
    for n in range(4):
        mine = [event["i"] for event in events if event["writer"] == str(n)]
        assert mine == list(range(100))


def test_read_events_skips_blank_damaged_and_non_object_lines(
    persistence: StatePersistence,
) -> None:
    persistence.events_file.write_bytes(
        b'{"event": "a"}\n\n   \nnot json\n[1]\n{"event": "\xff"}\n{"event": "b"}\n{"event": '
    )
    assert persistence.read_events() == [{"event": "a"}, {"event": "b"}]


def test_read_events_without_file_is_empty(persistence: StatePersistence) -> None:
    assert persistence.read_events() == []
    assert persistence.read_events_tail(5) == []


def write_numbered_events(path: Path, count: int, pad: int = 0) -> None:
    lines = (json.dumps({"event": "e", "n": n, "pad": "p" * pad}) for n in range(count))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("n", [-3, 0])
def test_tail_of_nothing_is_empty(persistence: StatePersistence, n: int) -> None:
    write_numbered_events(persistence.events_file, 3)
    assert persistence.read_events_tail(n) == []


def test_tail_longer_than_file_returns_everything(persistence: StatePersistence) -> None:
    write_numbered_events(persistence.events_file, 3)
    assert [e["n"] for e in persistence.read_events_tail(10)] == [0, 1, 2]


def test_tail_skips_bad_lines_and_reads_the_unterminated_last_line(
    persistence: StatePersistence,
) -> None:
    persistence.events_file.write_bytes(
        b'{"event": "a"}\n{"event": "b"}\nbroken\n\n{"event": "c"}\n{"event": "d"}'
    )
    assert persistence.read_events_tail(3) == [{"event": "b"}, {"event": "c"}, {"event": "d"}]
    assert persistence.read_events_tail(4) == persistence.read_events()


def test_tail_joins_lines_that_cross_block_boundaries(persistence: StatePersistence) -> None:
    write_numbered_events(persistence.events_file, 40, pad=9000)
    tail = persistence.read_events_tail(25)
    assert [event["n"] for event in tail] == list(range(15, 40))
    assert tail == persistence.read_events()[-25:]


def read_byte_count() -> int:
    with open("/proc/self/io", encoding="ascii") as io_stats:
        return int(io_stats.readline().split()[1])  # "rchar: N"


def test_tail_of_100k_lines_reads_only_the_end(persistence: StatePersistence) -> None:
    write_numbered_events(persistence.events_file, 100_000, pad=40)
    file_size = persistence.events_file.stat().st_size
    before = read_byte_count()
    tail = persistence.read_events_tail(50)
    read_bytes = read_byte_count() - before
    assert [event["n"] for event in tail] == list(range(99_950, 100_000))
    assert file_size > 6_000_000
    assert read_bytes < 200_000


# --- processes ----------------------------------------------------------------------------


def test_is_process_alive_for_this_process() -> None:
    assert is_process_alive(os.getpid()) is True


@pytest.mark.parametrize("pid", [None, 0, -1, 2**70])
def test_is_process_alive_rejects_impossible_pids(pid: int | None) -> None:
    assert is_process_alive(pid) is False


def test_is_process_alive_false_after_the_process_was_reaped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert is_process_alive(child.pid) is False


def test_is_process_alive_true_for_a_process_we_may_not_signal() -> None:
    # As an unprivileged user, pid 1 exists but kill(1, 0) raises PermissionError.
    probe = (
        "import os\n"
        "from little_loops.fsm.store.state_files import is_process_alive\n"
        "if os.getuid() == 0:\n"
        "    os.setuid(65534)\n"
        "try:\n"
        "    os.kill(1, 0)\n"
        "except PermissionError:\n"
        "    print('denied', is_process_alive(1))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "denied True\n", "")
