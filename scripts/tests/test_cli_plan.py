"""Tests for `little_loops.cli.plan`: the `--dry-run` plan, byte for byte."""

from __future__ import annotations

from little_loops.cli.plan import plan_lines
from little_loops.fsm.schema import FSMLoop

ROUTES = {
    "name": "routes",
    "initial": "measure",
    "max_iterations": 4,
    "timeout": 600,
    "states": {
        "measure": {
            "action": "echo 5",
            "evaluate": {"type": "output_numeric", "operator": "le", "target": 3},
            "route": {"success": "done", "failure": "reduce", "_": "done"},
        },
        "reduce": {
            "action": "echo reducing a very long action string that goes beyond the "
            "seventy character limit for sure",
            "next": "measure",
        },
        "done": {"terminal": True},
    },
}


def test_reference_plan() -> None:
    assert "\n".join(plan_lines(FSMLoop.from_dict(ROUTES))) == (
        "Execution plan for: routes\n"
        "\n"
        "States:\n"
        "  [measure]\n"
        "    action: echo 5\n"
        "    evaluate: output_numeric\n"
        "    route:\n"
        "      success -> done\n"
        "      failure -> reduce\n"
        "      _ -> done\n"
        "  [reduce]\n"
        "    action: echo reducing a very long action string that goes beyond the seventy c...\n"
        "    next -> measure\n"
        "  [done] [TERMINAL]\n"
        "\n"
        "Initial state: measure\n"
        "Max iterations: 4\n"
        "Timeout: 600s"
    )


def test_shorthand_routes_error_route_and_no_timeout() -> None:
    fsm = FSMLoop.from_dict(
        {
            "name": "short",
            "initial": "a",
            "states": {
                "a": {"action": "x" * 70, "on_success": "b", "on_failure": "a", "on_error": "b"},
                "b": {"route": {"ok": "b", "_error": "a"}},
            },
        }
    )
    assert plan_lines(fsm) == [
        "Execution plan for: short",
        "",
        "States:",
        "  [a]",
        f"    action: {'x' * 70}",
        "    on_success -> b",
        "    on_failure -> a",
        "    on_error -> b",
        "  [b]",
        "    route:",
        "      ok -> b",
        "      _error -> a",
        "",
        "Initial state: a",
        "Max iterations: 50",
    ]
