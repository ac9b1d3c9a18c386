"""`ll-loop list` and `ll-loop show` for HEAD-dialect loops (spec/ll-head-dialect.md §2.5,
`ll-loop list` and `ll-loop show` bullets), run as real `ll-loop` processes; a project of
legacy loops lists and shows as before."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from fixtures.cli_support import SIMPLE_LOOP, run_cli, write_loop

GREET = """\
name: greet
description: |
  Say hello
  to someone.
category: demo
labels: [Fun, cli]
initial: hi
states:
  hi: {action: echo hi, next: done}
  done: {terminal: true}
"""

LINT = """\
name: lint
description: Lint the code.
category: gates
labels: [ci]
visibility: internal
initial: a
states:
  a: {action: echo lint, next: done}
  done: {terminal: true}
"""

TOUR = """\
name: tour
description: An example.
visibility: example
labels: [FUN]
initial: a
states:
  a: {terminal: true}
"""

LIBRARY = """\
fragments:
  gate:
    description: A gate.
    action: echo gate
"""


def project(tmp_path: Path) -> Path:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    write_loop(tmp_path, "greet", GREET)
    write_loop(tmp_path, "tour", TOUR)
    write_loop(tmp_path, "checks", LIBRARY)  # a fragment library: not runnable
    (tmp_path / ".loops" / "gates").mkdir()
    (tmp_path / ".loops" / "gates" / "lint.yaml").write_text(LINT)
    (tmp_path / ".loops" / "gates" / "legacy.yaml").write_text(SIMPLE_LOOP)
    (tmp_path / ".loops" / "runs" / "greet-1").mkdir(parents=True)
    (tmp_path / ".loops" / "runs" / "greet-1" / "x.yaml").write_text(GREET)
    return tmp_path


def listed(root: Path, *flags: str) -> str:
    done = run_cli(root, "list", *flags)
    assert (done.returncode, done.stderr) == (0, "")
    return done.stdout


def test_section_2_5_list_default_view_counts_hidden_loops(tmp_path: Path) -> None:
    assert listed(project(tmp_path)) == (
        "Available loops:\n"
        "  greet   Say hello to someone.\n"
        "  simple\n"
        "(2 hidden: internal or example; show them with --all)\n"
    )


def test_section_2_5_list_all_recurses_into_subdirectories(tmp_path: Path) -> None:
    assert listed(project(tmp_path), "--all") == (
        "Available loops:\n"
        "  gates/lint  Lint the code.\n"
        "  greet       Say hello to someone.\n"
        "  simple\n"
        "  tour        An example.\n"
    )
    assert listed(tmp_path, "--visibility", "all") == listed(tmp_path, "--all")


def test_section_2_5_list_filters(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert listed(root, "--visibility", "internal") == (
        "Available loops:\n  gates/lint  Lint the code.\n"
    )
    assert (
        listed(root, "--category", "demo") == "Available loops:\n  greet  Say hello to someone.\n"
    )
    assert listed(root, "--label", "fun", "--all") == (
        "Available loops:\n  greet  Say hello to someone.\n  tour   An example.\n"
    )
    assert listed(root, "--label", "nope", "--label", "CI", "--all") == (
        "Available loops:\n  gates/lint  Lint the code.\n"
    )
    assert listed(root, "--category", "none") == "No loops defined\n"


def test_section_2_5_list_json(tmp_path: Path) -> None:
    entries = json.loads(listed(project(tmp_path), "--json", "--all"))
    assert entries == [
        {
            "loop": "gates/lint",
            "name": "gates/lint",
            "path": ".loops/gates/lint.yaml",
            "category": "gates",
            "labels": ["ci"],
            "visibility": "internal",
            "description": "Lint the code.",
        },
        {
            "loop": "greet",
            "name": "greet",
            "path": ".loops/greet.yaml",
            "category": "demo",
            "labels": ["Fun", "cli"],
            "visibility": "public",
            "description": "Say hello to someone.",
        },
        {"loop": "simple", "path": ".loops/simple.yaml"},
        {
            "loop": "tour",
            "name": "tour",
            "path": ".loops/tour.yaml",
            "category": "",
            "labels": ["FUN"],
            "visibility": "example",
            "description": "An example.",
        },
    ]


def test_section_2_5_listed_names_run(tmp_path: Path) -> None:
    done = run_cli(project(tmp_path), "run", "gates/lint")
    assert done.returncode == 0, done.stderr


def test_legacy_project_lists_as_before(tmp_path: Path) -> None:
    write_loop(tmp_path, "b", SIMPLE_LOOP)
    write_loop(tmp_path, "a", SIMPLE_LOOP)
    (tmp_path / ".loops" / "sub").mkdir()
    (tmp_path / ".loops" / "sub" / "c.yaml").write_text(SIMPLE_LOOP)
    assert listed(tmp_path) == "Available loops:\n  a\n  b\n"
    assert json.loads(listed(tmp_path, "--json")) == [
        {"loop": "a", "path": ".loops/a.yaml"},
        {"loop": "b", "path": ".loops/b.yaml"},
    ]


RELEASE = """\
name: release
description: |
  Cut a release.
  Then announce it.
category: ops
labels: [release, weekly]
visibility: example
max_steps: 20
max_iterations: 3
parameters:
  version: {type: string, required: true, description: the version to cut}
  dry: {type: boolean, default: false}
  kind: {type: enum, values: [major, minor]}
input_key: version
required_inputs: [version]
commands:
  - {cmd: "ll-loop run release 1.2", comment: "cut 1.2"}
initial: build
states:
  build:
    description: Build the artefacts.
    action: "echo ${context.version}"
    on_yes: notes
    on_no: failed
  notes:
    loop: greet
    on_yes: done
    on_no: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_section_2_5_show_head_loop(tmp_path: Path) -> None:
    write_loop(tmp_path, "greet", GREET)
    write_loop(tmp_path, "release", RELEASE)
    done = run_cli(tmp_path, "show", "release")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:15] == [
        "Loop: release",
        "Description: Cut a release.",
        "  Then announce it.",
        "Category: ops",
        "Labels: release, weekly",
        "Visibility: example",
        "Caps: max_steps 20, max_iterations (passes) 3",
        "Input: context.version (ll-loop run <loop> INPUT); required: version",
        "Parameters:",
        "  version: string, required - the version to cut",
        "  dry: boolean, default false",
        "  kind: enum (major, minor), optional",
        "Commands:",
        "  ll-loop run release 1.2  # cut 1.2",
        "Initial state: build",
    ]
    states = lines[lines.index("States:") + 1 :]
    assert states[:3] == [
        "  build",
        "    description: Build the artefacts.",
        "    action:   echo ${context.version}",
    ]
    assert states[states.index("  notes") + 1] == "    sub-loop: greet"


def test_section_6_show_json_prints_the_file_as_written(tmp_path: Path) -> None:
    """§6: `show --json` prints the raw file, as little-loops does: a script written for it
    reads `states.<name>.action`; a `from:` child shows its own keys, not the merged loop."""
    write_loop(tmp_path, "greet", GREET)
    write_loop(tmp_path, "release", RELEASE)
    view = json.loads(run_cli(tmp_path, "show", "release", "--json").stdout)
    assert view == yaml.safe_load(RELEASE)
    write_loop(tmp_path, "child", "from: greet\nname: child\n")
    child = json.loads(run_cli(tmp_path, "show", "child", "--json").stdout)
    assert child == {"from": "greet", "name": "child"}


def test_legacy_show_has_no_head_part(tmp_path: Path) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    view = json.loads(run_cli(tmp_path, "show", "simple", "--json").stdout)
    assert "head" not in view
    assert sorted(view["states"][0]) == [
        "action",
        "evaluator",
        "max_visits",
        "name",
        "routes",
        "terminal",
    ]
    text = run_cli(tmp_path, "show", "simple").stdout
    assert text.splitlines()[:2] == ["Loop: simple", "Initial state: check"]


def test_section_2_5_show_names_the_fragment_of_a_state() -> None:
    from little_loops.cli.loop_outline import outline, outline_lines
    from little_loops.fsm.model.head_loop import HeadLoop

    loop = HeadLoop.from_dict(
        {
            "name": "f",
            "initial": "a",
            "states": {
                "a": {"fragment": "gate", "with": {"key": "k"}, "action": "echo", "next": "b"},
                "b": {"terminal": True},
            },
        }
    )
    lines = outline_lines(outline(loop))
    states = lines[lines.index("States:") + 1 :]
    assert states[:3] == ["  a", "    fragment: gate", "    action:   echo"]


def test_section_2_5_list_resolves_from_before_deciding_runnable(tmp_path: Path) -> None:
    lib = tmp_path / ".loops" / "lib"
    lib.mkdir(parents=True)
    (lib / "template.yaml").write_text(
        "description: A template.\ncategory: base\nstates:\n  a: {terminal: true}\n"
    )
    (tmp_path / ".loops" / "strict.yaml").write_text(
        "from: lib/template\nname: strict\ninitial: a\n"
    )
    (tmp_path / ".loops" / "broken.yaml").write_text("from: nowhere\nname: b\ninitial: a\n")
    assert listed(tmp_path) == "Available loops:\n  strict  A template.\n"
    [entry] = json.loads(listed(tmp_path, "--json"))
    assert (entry["name"], entry["category"]) == ("strict", "base")
