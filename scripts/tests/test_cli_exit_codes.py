"""Tests for `little_loops.cli.exit_codes`: outcome -> exit code, and the help table."""

from __future__ import annotations

import pytest

from little_loops.cli.exit_codes import EXIT_CODE_TABLE, exit_code_for


@pytest.mark.parametrize(
    ("terminated_by", "code"),
    [
        ("terminal", 0),
        ("signal_stop", 0),
        ("error", 1),
        ("timeout", 1),
        ("handoff", 3),
        ("max_iterations", 4),
        ("stalled", 5),
        ("signal", 130),
        ("usage_limited", 7),
        ("budget_exhausted", 8),
        ("something new", 1),
    ],
)
def test_exit_code_for(terminated_by: str, code: int) -> None:
    assert exit_code_for(terminated_by) == code


def test_table_lists_every_code() -> None:
    codes = [line.split()[0] for line in EXIT_CODE_TABLE.splitlines()[1:]]
    assert codes == ["0", "1", "2", "3", "4", "5", "6", "7", "8", "130", "141"]
