"""The mutation check's own pieces (scripts/tests/tools/mutate.py, docs/testing.md
"Mutation check"): which one-line mutants it makes of a module, and that each changes
exactly its own bytes. Running the tests per mutant is what the tool is for, not tested
here (it runs whole test files)."""

from __future__ import annotations

from pathlib import Path

from tools import mutate

MODULE = '''\
"""Doc 1 + 2."""

LIMIT = 50


@dataclass(frozen=True)
def f(a, b, items):
    """Docstring: 3 < 4."""
    if a >= b and a not in items:
        items.append(a + 1)
    while ready():
        done = not a is None
    return a if flag else True
'''


def _listed(tmp_path: Path) -> list[tuple[int, str, str]]:
    path = tmp_path / "module.py"
    path.write_text(MODULE)
    return [(m.line, m.old, m.new) for m in mutate.mutants_of(path)]


def test_mutants_are_operator_swaps_constants_conditions_and_dropped_calls(
    tmp_path: Path,
) -> None:
    """Docstrings, named settings (`LIMIT = 50`) and decorators give none."""
    assert _listed(tmp_path) == [
        (9, ">=", ">"),
        (9, "and", "or"),
        (9, "not in", "in"),
        (10, "items.append(a + 1)", "pass"),
        (10, "+", "-"),
        (10, "1", "2"),
        (11, "", "not "),  # a plain condition is negated; a comparison is swapped instead
        (12, "not ", ""),
        (12, "is", "is not"),
        (13, "", "not "),
        (13, "True", "False"),
    ]


def test_a_mutant_changes_its_own_bytes_only(tmp_path: Path) -> None:
    path = tmp_path / "module.py"
    path.write_text("x = 'é' if a >= b else 0\ny = a >= b\n")
    first, second = [m for m in mutate.mutants_of(path) if m.old == ">="]
    source = path.read_bytes()
    assert first.apply(source).decode() == "x = 'é' if a > b else 0\ny = a >= b\n"
    assert second.apply(source).decode() == "x = 'é' if a >= b else 0\ny = a > b\n"


def test_only_the_lines_asked_for_are_mutated(tmp_path: Path) -> None:
    path = tmp_path / "module.py"
    path.write_text(MODULE)
    assert {m.line for m in mutate.mutants_of(path, {10, 12})} == {10, 12}
