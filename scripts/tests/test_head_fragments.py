"""Fragments (spec/ll-head-dialect.md §5) and the static checks of sub-loop states (§4.1,
§4.2, §9c): expansion, messages, bindings, unresolvable names, call-graph cycles."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from little_loops.fsm.errors import LoopFileError, LoopValidationError
from little_loops.fsm.loading.loop_refs import resolve_loop_ref
from little_loops.fsm.loading.pipeline import load_loop
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.head_parts import ParameterSpec

CHECKS_LIBRARY = """\
fragments:
  counted_gate:
    description: Shell gate that fails after N attempts recorded in a file.
    parameters:
      key:   {type: string, required: true}
      limit: {type: integer, default: 3}
    action_type: shell
    action: |
      f="${context.run_dir}${param.key}.count"; echo 1
    evaluate: {type: output_numeric, operator: le, target: "${param.limit}"}
  other:
    action: "true"
"""
NIGHTLY = """\
name: nightly-lint
description: Lint, auto-fix, give up after three attempts.
initial: lint
import: [lib/checks.yaml]
states:
  lint: {action: "ruff check .", on_yes: done, on_no: attempt}
  attempt:
    fragment: counted_gate
    with: {key: lint}
    on_yes: fix
    on_no: gave_up
  fix: {action: "ruff check --fix .", next: lint}
  done: {terminal: true}
  gave_up: {terminal: true, failure: true}
"""


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def errors_of(path: Path) -> list[str]:
    with pytest.raises(LoopValidationError) as caught:
        load_loop(path)
    return [str(error) for error in caught.value.errors]


def test_section_5_fragment_expands_into_the_state(tmp_path: Path) -> None:
    write(tmp_path, "lib/checks.yaml", CHECKS_LIBRARY)
    fsm = load_loop(write(tmp_path, "nightly.yaml", NIGHTLY))

    state = fsm.states["attempt"]
    assert isinstance(state, HeadStateConfig)
    assert state.fragment == "counted_gate"
    assert state.fragment_bindings == {"key": "lint"}
    assert state.fragment_parameters == {
        "key": ParameterSpec(type="string", required=True),
        "limit": ParameterSpec(type="integer", default=3),
    }
    assert state.action_type == "shell" and state.on_success == "fix"
    assert state.evaluate is not None and state.evaluate.target == "${param.limit}"
    assert state.with_ is None


def test_section_5_maps_merge_at_every_depth_and_local_fragments_win(tmp_path: Path) -> None:
    write(tmp_path, "lib/checks.yaml", CHECKS_LIBRARY)
    text = NIGHTLY.replace(
        "    with: {key: lint}\n", "    with: {key: lint}\n    evaluate: {target: 10}\n"
    ).replace("states:\n", "fragments:\n  other: {action: local}\nstates:\n", 1)
    text = text.replace(
        '  fix: {action: "ruff check --fix .", next: lint}', "  fix: {fragment: other, next: lint}"
    )
    fsm = load_loop(write(tmp_path, "nightly.yaml", text))

    evaluate = fsm.states["attempt"].evaluate
    assert evaluate is not None
    assert (evaluate.type, evaluate.operator, evaluate.target) == ("output_numeric", "le", 10)
    assert fsm.states["fix"].action == "local"


def test_section_5_unknown_fragment(tmp_path: Path) -> None:
    write(tmp_path, "lib/checks.yaml", CHECKS_LIBRARY)
    path = write(tmp_path, "n.yaml", NIGHTLY.replace("fragment: counted_gate", "fragment: gate"))

    assert errors_of(path) == [
        "[ERROR] State 'attempt': fragment 'gate' not found. "
        "Available fragments: counted_gate, other"
    ]


def test_section_5_unknown_fragment_without_any(tmp_path: Path) -> None:
    path = write(tmp_path, "n.yaml", NIGHTLY.replace("import: [lib/checks.yaml]\n", ""))

    assert errors_of(path) == [
        "[ERROR] State 'attempt': fragment 'counted_gate' not found. Available fragments: (none)"
    ]


def test_section_5_missing_library(tmp_path: Path) -> None:
    path = write(tmp_path, "n.yaml", NIGHTLY)

    with pytest.raises(LoopFileError) as caught:
        load_loop(path)
    assert caught.value.user_lines() == [
        f"{path}: Fragment library not found: lib/checks.yaml "
        f"(checked {tmp_path / 'lib/checks.yaml'})"
    ]


def test_section_5_non_mapping_library_contributes_nothing(tmp_path: Path) -> None:
    write(tmp_path, "lib/checks.yaml", "- just a list\n")
    path = write(tmp_path, "n.yaml", NIGHTLY)

    assert errors_of(path) == [
        "[ERROR] State 'attempt': fragment 'counted_gate' not found. Available fragments: (none)"
    ]


@pytest.mark.parametrize(
    ("binding", "expected"),
    [
        (
            "{key: lint, size: 3}",
            "[ERROR] states.attempt.with.size: unknown parameter 'size' (declared: key, limit)",
        ),
        ("{limit: 2}", "[ERROR] states.attempt.with: missing required parameter 'key'"),
        (
            "{key: lint, limit: 'two'}",
            "[ERROR] states.attempt.with.limit: must be an integer, got 'two'",
        ),
        (
            "{key: lint, limit: true}",
            "[ERROR] states.attempt.with.limit: must be an integer, got true",
        ),
    ],
)
def test_section_5_bindings(tmp_path: Path, binding: str, expected: str) -> None:
    write(tmp_path, "lib/checks.yaml", CHECKS_LIBRARY)
    path = write(tmp_path, "n.yaml", NIGHTLY.replace("with: {key: lint}", f"with: {binding}"))

    assert errors_of(path) == [expected]


def test_section_5_templates_and_provided_keys_are_not_checked(tmp_path: Path) -> None:
    library = CHECKS_LIBRARY.replace(
        "key:   {type", "run_dir: {type: path, required: true}\n      key:   {type"
    )
    write(tmp_path, "lib/checks.yaml", library)
    text = NIGHTLY.replace("with: {key: lint}", "with: {key: lint, limit: '${context.n}'}")

    load_loop(
        write(tmp_path, "n.yaml", text.replace("initial: lint", "initial: lint\ncontext: {n: 2}"))
    )


def test_section_5_fragment_with_loop_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="little_loops.fsm.validation")
    write(tmp_path, "lib/checks.yaml", "fragments:\n  other: {description: d}\n")
    write(tmp_path, "child.yaml", "name: child\ninitial: s\nstates:\n  s: {terminal: true}\n")
    text = NIGHTLY.replace("fragment: counted_gate", "fragment: other\n    loop: child")
    load_loop(write(tmp_path, "n.yaml", text.replace("with: {key: lint}", "with: {}")))

    assert [record.getMessage() for record in caplog.records] == [
        f"[WARNING] {tmp_path / 'n.yaml'}: states.attempt.loop: with: binds the fragment's "
        "parameters; the sub-loop "
        "gets no bindings"
    ]


# --- §4.1, §4.2, §9c sub-loops --------------------------------------------------------

PARENT = """\
name: release-notes
description: Draft release notes through a child loop.
initial: draft
states:
  draft:
    loop: writers/draft-notes
    with: {version: "${context.version}", max_rounds: 3}
    on_yes: done
    on_no: done
  done: {terminal: true}
"""
CHILD = """\
name: draft-notes
description: Write the notes for one version.
initial: write
parameters:
  version:    {type: string, required: true}
  max_rounds: {type: integer, default: 2}
states:
  write: {action: "echo", on_yes: ok, on_no: ok}
  ok: {terminal: true}
"""


def test_section_4_1_resolve_loop_ref_order(tmp_path: Path) -> None:
    loops = tmp_path / ".loops"
    write(tmp_path, ".loops/writers/a.yaml", "x")
    write(tmp_path, ".loops/writers/a.fsm.yaml", "x")
    write(tmp_path, "base/b.yaml", "x")
    write(tmp_path, "base/c", "x")

    assert resolve_loop_ref("writers/a", tmp_path / "base", loops) == loops / "writers/a.fsm.yaml"
    assert resolve_loop_ref("b", tmp_path / "base", loops) == tmp_path / "base/b.yaml"
    assert resolve_loop_ref("c", tmp_path / "base", loops) == tmp_path / "base/c"
    assert resolve_loop_ref("d", tmp_path / "base", loops) is None


def test_section_4_2_valid_bindings(tmp_path: Path) -> None:
    write(tmp_path, "writers/draft-notes.yaml", CHILD)
    fsm = load_loop(write(tmp_path, "release-notes.yaml", PARENT))

    assert fsm.states["draft"].with_ == {"version": "${context.version}", "max_rounds": 3}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("binding", "expected"),
    [
        (
            '{version: "1", colour: red}',
            "[ERROR] states.draft.with.colour: unknown parameter 'colour' "
            "(declared: version, max_rounds)",
        ),
        ("{max_rounds: 3}", "[ERROR] states.draft.with: missing required parameter 'version'"),
        (
            '{version: "1", max_rounds: 1.5}',
            "[ERROR] states.draft.with.max_rounds: must be an integer, got 1.5",
        ),
    ],
)
def test_section_4_2_bad_bindings(tmp_path: Path, binding: str, expected: str) -> None:
    write(tmp_path, "writers/draft-notes.yaml", CHILD)
    text = PARENT.replace(
        'with: {version: "${context.version}", max_rounds: 3}', f"with: {binding}"
    )

    assert errors_of(write(tmp_path, "release-notes.yaml", text)) == [expected]


def test_section_4_1_unresolvable_static_name(tmp_path: Path) -> None:
    assert errors_of(write(tmp_path, "release-notes.yaml", PARENT)) == [
        "[ERROR] states.draft.loop: sub-loop 'writers/draft-notes' not found next to this file "
        "or in .loops/"
    ]


def test_section_4_1_dynamic_names_are_not_resolved(tmp_path: Path) -> None:
    text = PARENT.replace("loop: writers/draft-notes", 'loop: "${context.child}"')

    load_loop(write(tmp_path, "p.yaml", text))


def test_section_9c_direct_and_indirect_cycles(tmp_path: Path) -> None:
    def loop(name: str, child: str) -> str:
        return (
            f"name: {name}\ndescription: d\ninitial: fan\nstates:\n"
            f"  fan: {{loop: {child}, on_yes: done}}\n  done: {{terminal: true}}\n"
        )

    write(tmp_path, "triage.yaml", loop("triage", "nightly"))
    nightly = write(tmp_path, "nightly.yaml", loop("nightly", "triage"))
    selfish = write(tmp_path, "self.yaml", loop("self", "self"))

    assert errors_of(nightly) == [
        "[ERROR] states.fan.loop: sub-loop cycle: nightly -> triage -> nightly"
    ]
    assert errors_of(selfish) == ["[ERROR] states.fan.loop: sub-loop cycle: self -> self"]


# --- §5 last bullet: ll-loop fragments <library> ---------------------------------------


def test_section_5_fragments_command_lists_names_and_first_description_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from fixtures.cli_support import cli_in_process

    monkeypatch.chdir(tmp_path)
    library = CHECKS_LIBRARY.replace(
        "description: Shell gate", "description: |\n      Shell gate"
    ).replace("attempts recorded in a file.", "attempts\n      recorded in a file.")
    write(tmp_path, ".loops/lib/checks.yaml", library)

    assert cli_in_process(capsys, "fragments", "lib/checks") == (
        0,
        ".loops/lib/checks.yaml: 2 fragments\n"
        "  counted_gate  Shell gate that fails after N attempts\n"
        "  other\n",
        "",
    )
    assert cli_in_process(capsys, "fragments", "nope.yaml") == (
        1,
        "",
        "[T] Fragment library not found: nope.yaml\n"
        "  looked in: nope.yaml, .loops/nope.yaml, .loops/nope.yaml.yaml, .loops/nope.yaml.yml\n",
    )
    write(tmp_path, "empty.yaml", "- a\n")
    assert cli_in_process(capsys, "fragments", "empty.yaml") == (
        0,
        "empty.yaml: no fragments\n",
        "",
    )


def test_section_2_4_fragment_parameter_specs_are_checked(tmp_path: Path) -> None:
    text = NIGHTLY.replace(
        "states:\n",
        "fragments:\n  loose:\n    description: 3\n    parameters: {p: {type: enum}}\nstates:\n",
        1,
    ).replace("import: [lib/checks.yaml]\n", "")
    text = text.replace("fragment: counted_gate\n    with: {key: lint}", "action: 'true'")

    assert errors_of(write(tmp_path, "n.yaml", text)) == [
        "[ERROR] fragments.loose.description: must be a string, got 3",
        "[ERROR] fragments.loose.parameters.p.type: an enum parameter needs values",
    ]


def test_section_5_a_child_inherits_fragments_and_imports_resolve_next_to_it(
    tmp_path: Path,
) -> None:
    """§5 with §6: `import:` inherited from a parent elsewhere is read next to the child."""
    write(tmp_path, "child/lib/checks.yaml", CHECKS_LIBRARY)
    write(tmp_path, "templates/base.yaml", NIGHTLY)
    path = write(tmp_path, "child/nightly.yaml", "from: ../templates/base\nmax_steps: 4\n")

    fsm = load_loop(path)
    assert fsm.states["attempt"].fragment == "counted_gate"  # type: ignore[attr-defined]
    assert fsm.max_iterations == 4


def test_section_5_a_fragment_inside_a_fragment_is_not_expanded(tmp_path: Path) -> None:
    library = "fragments:\n  outer: {fragment: inner, action: outer}\n  inner: {action: inner}\n"
    write(tmp_path, "lib/checks.yaml", library)
    text = NIGHTLY.replace("fragment: counted_gate\n    with: {key: lint}", "fragment: outer")

    fsm = load_loop(write(tmp_path, "n.yaml", text))
    state = fsm.states["attempt"]
    assert (state.action, state.fragment) == ("outer", "outer")  # type: ignore[attr-defined]
