"""`max_iterations: 1e9` says how to write it (issue 23, item 25: earlier finding 29).

YAML reads `1e9` as text (YAML 1.1 floats need a dot) and `1.0e9` as a float; neither is
an integer setting, and `must be an integer >= 1, got '1e9'` left the user guessing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from little_loops.fsm.errors import LoopValidationError
from little_loops.fsm.loading.pipeline import load_loop

LOOP = "name: big\ninitial: a\nmax_iterations: {value}\nstates:\n  a: {{terminal: true}}\n"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1e9", "must be an integer >= 1, got '1e9' (write 1000000000)"),
        ("1.0e9", "must be an integer >= 1, got '1.0e9' (write 1000000000)"),
        ("1000.0", "must be an integer >= 1, got 1000.0 (write 1000)"),
        ("'2E3'", "must be an integer >= 1, got '2E3' (write 2000)"),
        ("2.5", "must be an integer >= 1, got 2.5"),
        ("lots", "must be an integer >= 1, got 'lots'"),
        ("1e400", "must be an integer >= 1, got '1e400'"),
    ],
)
def test_a_whole_number_in_another_form_says_how_to_write_it(
    tmp_path: Path, value: str, message: str
) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(LOOP.format(value=value), encoding="utf-8")
    with pytest.raises(LoopValidationError) as caught:
        load_loop(path)
    assert caught.value.user_lines() == [f"{path}: max_iterations: {message}"]
