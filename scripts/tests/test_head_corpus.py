"""The HEAD corpus (spec/ll-head-dialect.md §2, the key inventory): small loop files in
`head_corpus/` that together write every key of the HEAD dialect. Every runnable file
loads as a HEAD loop, `ll-loop validate` and `ll-loop show` accept it, and each file whose
actions are all shell runs with the real `ll-loop` to the trace written in its header.

Trace format (one header line, `# Trace: <steps> ; <terminated_by>, exit <code>`), built
from the run's events file, in order:
- `a -v-> b`: a `route` event with verdict `v`; `a -> b`: a `route` without verdict (a
  `next:` state); `a -v(r)-> b` / `a -(r)-> b`: a `route` that also carries a reason
  (`action_failed`, `throttle_hard`, `maintain`, `max_steps`, ...);
- `a =e=> b`: a jump that has no `route` event of its own: `retry_exhausted` (§7.1) and the
  cap summaries `max_steps` / `max_iterations_reached` (§7.3, §7.4);
- `a [x -v-> y] -v-> b`: the route events of a sub-loop (depth 1) inside the parent state
  `a` that ran it (§4.7); brackets nest for deeper children;
- consecutive steps chain on the state name; `~ c` starts again at `c` when an event does
  not leave from where the last one arrived.
`# Args:` gives the extra `ll-loop run` arguments. Prompt and LLM states are only loaded,
validated and shown (`changelog-gate`), never run: no Claude is needed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import cli_env, run_cli
from jsonschema import Draft7Validator

from little_loops.fsm.loading import head_rules, head_shape, warn_once
from little_loops.fsm.loading.head_schema import shipped_schema_path
from little_loops.fsm.loading.pipeline import load_loop, parse_loop_yaml
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.model.head_parts import PARAMETER_TYPES
from little_loops.fsm.model.loop_vocabulary import (
    HEAD_ACTION_TYPES,
    HEAD_EVALUATE_KEYS,
    HEAD_EVALUATOR_TYPES,
    HEAD_LLM_KEYS,
    HEAD_LOOP_KEYS,
    HEAD_ROUTE_KEYS,
    HEAD_STATE_KEYS,
    HEAD_VERDICT_ROUTE_KEYS,
    LEGACY_EVALUATE_KEYS,
    LEGACY_LLM_KEYS,
    LEGACY_LOOP_KEYS,
    LEGACY_STATE_KEYS,
    SPECIAL_ROUTE_KEYS,
)

CORPUS = Path(__file__).parent / "head_corpus"
LIBRARIES = CORPUS / "lib"  # fragment libraries and abstract templates: never run
ALL_FILES = sorted(CORPUS.rglob("*.yaml"))
RUNNABLE = [path for path in ALL_FILES if LIBRARIES not in path.parents]
PROMPT_ACTION_TYPES = ("prompt", "slash_command")


def loop_ref(path: Path) -> str:
    """The name `ll-loop` knows the file by: its path under `.loops/` without `.yaml`."""
    return path.relative_to(CORPUS).with_suffix("").as_posix()


def raw(path: Path) -> dict[str, Any]:
    data, _ = parse_loop_yaml(path.read_text(), str(path))
    assert isinstance(data, dict), path
    return data


def header(path: Path, label: str) -> str | None:
    for line in path.read_text().splitlines():
        if line.startswith(f"# {label}:"):
            return line.removeprefix(f"# {label}:").strip()
    return None


# ---------------------------------------------------------------------------------------
# Coverage: the union of the keys the corpus writes, per vocabulary table.
# ---------------------------------------------------------------------------------------


def mappings(value: Any) -> Iterator[dict[str, Any]]:
    """The mappings in `value` (a mapping of mappings, or None)."""
    for item in (value or {}).values():
        if isinstance(item, dict):
            yield item


def state_like(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """States, `state_defs` bodies and fragment definitions (any state keys, §2.4)."""
    for key in ("states", "state_defs", "fragments"):
        yield from mappings(doc.get(key))


Used = dict[str, set[str]]


def used_keys() -> Used:
    """Per vocabulary table, the keys (or values, for types) the corpus writes."""
    used: Used = {}
    for path in ALL_FILES:
        doc = raw(path)
        _add_loop_keys(used, doc)
        parameter_maps = [doc.get("parameters")]
        for state in state_like(doc):
            _add_state_keys(used, state)
            parameter_maps.append(state.get("parameters"))
        for spec in (spec for specs in parameter_maps for spec in mappings(specs)):
            _add(used, "parameter", spec)
            _add(used, "parameter_type", [spec["type"]])
    return used


def _add(used: Used, table: str, keys: Any) -> None:
    used.setdefault(table, set()).update(keys)


def _add_loop_keys(used: Used, doc: dict[str, Any]) -> None:
    _add(used, "loop", doc)
    _add(used, "llm", doc.get("llm") or {})
    _add(used, "config", _flat(doc.get("config") or {}))
    _add(used, "commands", (key for row in doc.get("commands") or [] for key in row))
    _add(used, "targets", (key for row in doc.get("targets") or [] for key in row))
    _add(used, "pruning_profile", doc.get("pruning_profile") or {})
    _add(used, "repeated_failure", (doc.get("circuit") or {}).get("repeated_failure") or {})
    _add(used, "fragment", (key for fragment in mappings(doc.get("fragments")) for key in fragment))


def _add_state_keys(used: Used, state: dict[str, Any]) -> None:
    _add(used, "state", state)
    _add(used, "action_type", [state["action_type"]] if "action_type" in state else [])
    for table in ("route", "throttle", "learning", "cost_ceiling", "pruning_profile"):
        _add(used, table, state.get(table) or {})
    evaluate = state.get("evaluate") or {}
    _add(used, "evaluate", evaluate)
    _add(used, "evaluator_type", [evaluate["type"]] if "type" in evaluate else [])


def _flat(mapping: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in mapping.items():
        yield f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _flat(value, f"{prefix}{key}.")


EXPECTED: dict[str, set[str]] = {
    "loop": {*LEGACY_LOOP_KEYS, *HEAD_LOOP_KEYS},
    "state": {*LEGACY_STATE_KEYS, *HEAD_STATE_KEYS, *HEAD_VERDICT_ROUTE_KEYS},
    "evaluate": {*LEGACY_EVALUATE_KEYS, *HEAD_EVALUATE_KEYS},
    "evaluator_type": set(HEAD_EVALUATOR_TYPES),
    "action_type": set(HEAD_ACTION_TYPES),
    "route": {*HEAD_ROUTE_KEYS, *SPECIAL_ROUTE_KEYS},
    "llm": {*LEGACY_LLM_KEYS, *HEAD_LLM_KEYS},
    # §2.1 `config:`, read by the loader's `_CONFIG_CHECKS` (its top level is compared too).
    "config": {
        *head_shape._CONFIG_CHECKS,
        "automation.max_continuations",
        "continuation.max_continuations",
        "commands.confidence_gate",
        "commands.confidence_gate.readiness_threshold",
        "commands.confidence_gate.outcome_threshold",
    },
    "repeated_failure": set(head_shape._REPEATED_FAILURE_CHECKS),
    "throttle": {"normal_max", "warn_max", "hard_max"},
    "learning": set(head_shape._LEARNING_CHECKS),
    "pruning_profile": set(head_shape._PRUNING_CHECKS),
    "cost_ceiling": set(head_shape._COST_CEILING_CHECKS),
    "parameter": set(head_rules._PARAMETER_CHECKS),
    "parameter_type": set(PARAMETER_TYPES),
    "fragment": {"description", "parameters"},
    "commands": {"cmd", "comment"},
    "targets": {"file", "glob", "states"},
}


@pytest.mark.parametrize("table", sorted(EXPECTED))
def test_s2_the_corpus_writes_every_key_of_each_vocabulary_table(table: str) -> None:
    """§2.1-§2.4: a key the loader knows but no corpus file writes fails here."""
    missing = EXPECTED[table] - used_keys().get(table, set())
    assert sorted(missing) == []


def test_s2_every_shell_only_runnable_file_documents_its_trace() -> None:
    """§2: every runnable file runs to a documented trace unless it needs Claude."""
    untraced = [loop_ref(path) for path in RUNNABLE if header(path, "Trace") is None]
    assert [ref for ref in untraced if not needs_claude(raw(path_of(ref)))] == []
    assert untraced == ["changelog-gate"]


def path_of(ref: str) -> Path:
    return CORPUS / f"{ref}.yaml"


def needs_claude(doc: dict[str, Any]) -> bool:
    for state in state_like(doc):
        evaluate = state.get("evaluate") or {}
        action = str(state.get("action", ""))
        prompt_type = state.get("action_type") in PROMPT_ACTION_TYPES
        guessed_prompt = "action_type" not in state and action.startswith("/")
        if prompt_type or guessed_prompt or evaluate.get("type") == "llm_structured":
            return True
    return False


# ---------------------------------------------------------------------------------------
# Load, validate, show: every runnable file.
# ---------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose `.loops/` is a copy of the corpus."""
    shutil.copytree(CORPUS, tmp_path / ".loops")
    return tmp_path


@pytest.mark.parametrize("path", RUNNABLE, ids=loop_ref)
def test_s1_1_each_runnable_file_loads_as_a_head_loop(path: Path, project: Path) -> None:
    """§1.1: every corpus file is read in the HEAD dialect."""
    loop = load_loop(project / ".loops" / path.relative_to(CORPUS))
    assert isinstance(loop, HeadLoop)
    assert loop.dialect == "head"


@pytest.mark.parametrize("path", RUNNABLE, ids=loop_ref)
def test_s1_1_validate_accepts_each_file_and_names_the_head_dialect(
    path: Path, project: Path
) -> None:
    """§1.1: `ll-loop validate` exits 0 and prints `dialect: head`."""
    done = run_cli(project, "validate", loop_ref(path))
    assert (done.returncode, done.stdout.splitlines()[-1]) == (0, "  dialect: head")
    assert f"{loop_ref(path)} is valid" in done.stdout.splitlines()[0]


WARN_LINE = re.compile(
    r"^\[WARNING\] \.loops/little-loops-extras\.yaml: (\S+): (.*) \((\d+) uses?\)$"
)


def warn_once_lines(text: str) -> list[tuple[str, str, int]]:
    """(key path, reason, uses) of each "accept, warn once" warning line in `text`."""
    reasons = {
        *warn_once.LOOP_REASONS.values(),
        *warn_once.CONFIG_REASONS.values(),
        *warn_once.STATE_REASONS.values(),
        *warn_once.ACTION_TYPE_REASONS.values(),
        *warn_once.EVALUATE_TYPE_REASONS.values(),
        *warn_once.EVALUATE_REASONS.values(),
    }
    found = (WARN_LINE.match(line) for line in text.splitlines())
    return [(m[1], m[2], int(m[3])) for m in found if m and m[2] in reasons]


def key_name(path: str) -> str:
    """The key name a warning is about. Each action type and evaluator type is a name of
    its own (§1.2), so those keep their whole path (one use each in the corpus)."""
    last = path.rsplit(".", 1)[-1]
    return path if last in ("action_type", "type") else last


# Key names that are not types (`tamper_guard` etc. are loop and state keys: one name).
EXTRAS_NAMES = {
    *warn_once.LOOP_REASONS,
    *warn_once.CONFIG_REASONS,
    *warn_once.STATE_REASONS,
    *warn_once.EVALUATE_REASONS,
}


@pytest.mark.parametrize("command", ["validate", "show", "run"])
def test_s1_2_each_warn_once_key_gives_exactly_one_warning_line(
    command: str, project: Path
) -> None:
    """§1.2: one WARNING per key name per file per command, at the first key path, with
    the number of uses; every "accept, warn once" key of §2 is in `little-loops-extras`."""
    done = run_cli(project, command, "little-loops-extras")
    lines = warn_once_lines(done.stderr)
    names = [key_name(path) for path, _, _ in lines]
    assert len(names) == len(set(names)) == len(EXTRAS_NAMES) + 4
    assert {name for name in names if "." not in name} == EXTRAS_NAMES
    assert sorted((path, reason) for path, reason, _ in lines if "." in key_name(path)) == [
        ("states.judge.evaluate.type", warn_once.EVALUATE_TYPE_REASONS["comparator"]),
        ("states.pact.action_type", warn_once.ACTION_TYPE_REASONS["contract"]),
        ("states.pact.evaluate.type", warn_once.EVALUATE_TYPE_REASONS["contract"]),
        ("states.tool.action_type", warn_once.ACTION_TYPE_REASONS["mcp_tool"]),
    ]
    uses = {path: count for path, _, count in lines if count != 1}
    assert uses == {"tamper_guard": 2, "prepatch_check": 2, "pruning_profile": 2}


def show_expectations(path: Path) -> list[str]:
    """Lines `ll-loop show` must print for the file (§2.5)."""
    doc = raw(path)
    if "from" in doc:  # show uses the merged loop; the child's own keys are enough here
        doc = {key: doc[key] for key in ("name", "description") if key in doc}
    first, *rest = str(doc["description"]).strip().splitlines()
    lines = [f"Loop: {doc['name']}", f"Description: {first}", *(f"  {line}" for line in rest)]
    if "category" in doc:
        lines.append(f"Category: {doc['category']}")
    if "labels" in doc:
        lines.append(f"Labels: {', '.join(doc['labels'])}")
    if "visibility" in doc:
        lines.append(f"Visibility: {doc['visibility']}")
    for name, spec in (doc.get("parameters") or {}).items():
        lines.append(f"  {name}: {spec['type']}")  # the line goes on with required/default
    for row in doc.get("commands") or []:
        lines.append(f"  {row['cmd']}  # {row['comment']}")
    for state in mappings(doc.get("states")):
        if "description" in state:
            lines.append(f"    description: {state['description']}")
        if "loop" in state:
            lines.append(f"    sub-loop: {state['loop']}")
    return lines


@pytest.mark.parametrize("path", RUNNABLE, ids=loop_ref)
def test_s2_5_show_prints_description_labels_parameters_and_commands(
    path: Path, project: Path
) -> None:
    """§2.5 `ll-loop show`: description, category, labels, visibility, parameters,
    commands, state descriptions and sub-loops."""
    done = run_cli(project, "show", loop_ref(path))
    assert done.returncode == 0, done.stderr
    shown = done.stdout.splitlines()
    for expected in show_expectations(path):
        assert any(line.startswith(expected) for line in shown), (expected, done.stdout)


def test_s2_5_show_prints_parameter_defaults_and_requirements(project: Path) -> None:
    """§2.5: a parameter's line gives its type, `required` or its default, and its text."""
    done = run_cli(project, "show", "writers/draft-notes")
    assert "  version: string, required - the version being released" in done.stdout
    assert "  max_rounds: integer, default 2" in done.stdout.splitlines()


def test_s2_5_list_shows_the_runnable_files_only_and_hides_internal_and_example(
    project: Path,
) -> None:
    """§2.5 `ll-loop list`: libraries and templates stay hidden; `internal` and `example`
    loops only with `--all`; `--label` matches case-insensitively."""
    listed = json.loads(run_cli(project, "list", "--json", "--all").stdout)
    assert [entry["name"] for entry in listed] == sorted(loop_ref(path) for path in RUNNABLE)
    hidden = [
        ref
        for ref in map(loop_ref, RUNNABLE)
        if raw(path_of(ref)).get("visibility") in ("internal", "example")
    ]
    shown = run_cli(project, "list").stdout.splitlines()
    assert shown[-1] == f"({len(hidden)} hidden: internal or example; show them with --all)"
    assert not any(line.split()[0] in hidden for line in shown[1:-1])
    by_label = run_cli(project, "list", "--label", "NIGHTLY").stdout.splitlines()
    assert by_label == [
        "Available loops:",
        "  nightly-lint  " + raw(path_of("nightly-lint"))["description"],
    ]


COMPLETE = [path for path in RUNNABLE if not {"from", "flow"} & set(raw(path))]


@pytest.mark.parametrize("path", COMPLETE, ids=loop_ref)
def test_s9e_each_complete_file_passes_the_shipped_json_schema(path: Path) -> None:
    """§9e: the shipped schema accepts every key the corpus writes. Files that leave
    `states` to `from:` or `flow:` are left out: the schema describes files as written
    (head_schema's docstring)."""
    schema = json.loads(shipped_schema_path().read_text())
    errors = [error.message for error in Draft7Validator(schema).iter_errors(raw(path))]
    assert errors == []


def test_s7_4_show_reports_the_step_cap_of_a_head_file_as_max_steps(project: Path) -> None:
    """§7.4: HEAD files report `max_steps`; with both caps, `max_iterations` is the pass cap
    (heartbeat: 30 steps, 2 passes), so the Limits line must not call 30 max_iterations."""
    shown = run_cli(project, "show", "heartbeat").stdout.splitlines()
    assert "Caps: max_steps 30, max_iterations (passes) 2" in shown
    assert "Limits: max_steps 30, no timeout, logs_keep 100" in shown


def test_s3_3_show_lists_the_on_verdict_and_cap_routes_of_head_states(project: Path) -> None:
    """§3.3, §4.3, §7.1, §7.5: the routes a HEAD state may take besides yes/no/error are
    listed by `show` (the runs above take them: `not_found`, `timeout`, the cap exits)."""
    shown = run_cli(project, "show", "little-loops-extras").stdout
    assert "    not_found -> pact\n    tool_error -> failed\n    timeout -> failed\n" in shown
    assert "    blocked -> retire\n" in shown
    shown = run_cli(project, "show", "release-notes").stdout
    assert "    no -> failed\n    timeout -> publish\n" in shown  # HEAD says yes/no
    shown = run_cli(project, "show", "feed-watch").stdout.splitlines()
    assert "    on_retry_exhausted -> poll" in shown
    assert "    on_throttle_hard -> spin" in shown


@pytest.mark.parametrize(
    ("ref", "line"),
    [
        ("heartbeat", "Handoff: pause (at most 3 continuations)"),
        ("changelog-gate", "Handoff: pause (at most 2 continuations)"),
    ],
)
def test_s2_1_config_max_continuations_becomes_ours(ref: str, line: str, project: Path) -> None:
    """§2.1 `config`: `automation.max_continuations` and `continuation.max_continuations`
    set this project's `max_continuations` (default 5)."""
    assert line in run_cli(project, "show", ref).stdout.splitlines()


def test_s2_5_config_confidence_gate_seeds_the_threshold_context_keys(project: Path) -> None:
    """§2.5: `config.commands.confidence_gate` values replace the injected 85/65."""
    run_cli(project, "run", "feed-watch")
    log = project / ".loops" / ".running" / "feed-watch.logs" / "5-poll.log"
    assert log.read_text() == "waiting (readiness 90, outcome 70)\n"


# ---------------------------------------------------------------------------------------
# Runs: each shell-only file against its documented trace.
# ---------------------------------------------------------------------------------------

JUMPS = {
    "retry_exhausted": ("state", "next"),
    "max_steps_summary": (None, "summary_state"),
    "max_iterations_reached_summary": (None, "summary_state"),
}


class TraceWriter:
    """Renders `route` events (and the jumps without one) in the header's format."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.depth = 0
        self.last_to: dict[int, str] = {}
        self.entered: dict[int, str] = {}

    def add(self, event: dict[str, Any]) -> None:
        depth = int(event.get("depth", 0))
        kind = event["event"]
        if kind == "state_enter":
            self.entered[depth] = event["state"]
        elif kind in JUMPS:
            source, target = JUMPS[kind]
            origin = event[source] if source else self.last_to.get(depth, self.entered[depth])
            name = kind.removesuffix("_summary")
            self.step(depth, origin, f"={name}=>", event[target])
        elif kind == "route":
            self.step(depth, event["from"], arrow(event), event["to"])

    def step(self, depth: int, origin: str, arrow_text: str, target: str) -> None:
        while self.depth > depth:
            self.parts.append("]")
            self.depth -= 1
        if depth > self.depth:
            parent = self.entered[self.depth]
            if not self.parts:
                self.parts.append(parent)
            self.last_to[self.depth] = parent
            self.parts.append("[" * (depth - self.depth) + origin)
            self.depth = depth
        elif not self.parts:
            self.parts.append(origin)
        elif self.last_to.get(depth) != origin:
            self.parts += ["~", origin]
        self.parts += [arrow_text, target]
        self.last_to[depth] = target

    def text(self) -> str:
        rendered = " ".join([*self.parts, "]" * self.depth]).strip()
        return rendered.replace(" ]", "]")


def arrow(route: dict[str, Any]) -> str:
    if "verdict" not in route and "reason" not in route:
        return "->"
    reason = f"({route['reason']})" if "reason" in route else ""
    return f"-{route.get('verdict', '')}{reason}->"


def run_trace(events: list[dict[str, Any]], exit_code: int) -> str:
    writer = TraceWriter()
    for event in events:
        writer.add(event)
    ending = next(e for e in reversed(events) if e["event"] == "loop_complete" and "depth" not in e)
    return f"{writer.text()} ; {ending['terminated_by']}, exit {exit_code}"


TRACED = [path for path in RUNNABLE if header(path, "Trace") is not None]


@pytest.mark.parametrize("path", TRACED, ids=loop_ref)
def test_s3_to_s8_each_shell_only_loop_runs_to_its_documented_trace(
    path: Path, project: Path
) -> None:
    """§3-§8: the real `ll-loop run` follows the routes the file's header documents."""
    args = shlex.split(header(path, "Args") or "")
    env = cli_env(project)
    # little-loops' `mcp-call` must be missing for the documented `not_found` (§2.2).
    folders = env["PATH"].split(os.pathsep)
    env["PATH"] = os.pathsep.join(f for f in folders if not (Path(f) / "mcp-call").exists())
    done = run_cli(project, "run", loop_ref(path), *args, env=env, timeout=60)
    events_file = project / ".loops" / ".running" / f"{raw(path)['name']}.events.jsonl"
    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    assert run_trace(events, done.returncode) == header(path, "Trace"), done.stderr


def test_s4_4_the_parent_reads_the_child_capture_and_its_ending(project: Path) -> None:
    """§4.4: `${captured.<state>.<child capture>.output}` and `.terminated_by` after the
    release-notes run (the header's trace shows the routes only)."""
    run_cli(project, "run", "release-notes", "2.3.0")
    log = project / ".loops" / ".running" / "release-notes.logs" / "3-publish.log"
    assert log.read_text() == "# 2.3.0 (rounds: 3)\nmax_steps\n"


def test_s5_a_local_fragment_replaces_the_imported_one_of_the_same_name(project: Path) -> None:
    """§5: the file's own `fragments:` win over `import:`; the report line is the local one."""
    run_cli(project, "run", "nightly-lint")
    (report,) = (project / ".loops" / "runs").glob("nightly-lint-*/report.txt")
    assert report.read_text() == "gave up on lint\n"
