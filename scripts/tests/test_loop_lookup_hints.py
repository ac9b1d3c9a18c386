"""Where a loop is when `ll-loop` cannot find it, and `compile` by loop name (issue 23,
item 25: earlier findings 8 and 33).

Loops are looked up in `./.loops/` only, as the reference did (paths inside a loop are
relative to where it runs): from a subfolder the loop is pointed at, not run.
"""

from __future__ import annotations

from pathlib import Path

from fixtures.cli_support import SIMPLE_LOOP, normalize, run_cli, write_loop

GOAL = 'paradigm: goal\ngoal: "Tests pass"\ntools: ["true", "echo fix"]\n'


def test_from_a_subfolder_the_loop_is_pointed_at(tmp_path: Path) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    sub = tmp_path / "src" / "deep"
    sub.mkdir(parents=True)
    done = run_cli(sub, "run", "simple")
    assert (done.returncode, normalize(done.stderr).splitlines()) == (
        1,
        [
            "[T] Loop not found: simple",
            "  looked in: simple, .loops/simple.fsm.yaml, .loops/simple.yaml, .loops/simple.yml",
            f"  found ../../.loops/simple.yaml: run ll-loop from {tmp_path} (it looks in "
            "./.loops/ only)",
        ],
    )


def test_compile_takes_a_loop_name(tmp_path: Path) -> None:
    write_loop(tmp_path, "goal", GOAL)
    done = run_cli(tmp_path, "compile", "goal")
    assert (done.returncode, normalize(done.stdout), done.stderr) == (
        0,
        "[T] Compiled to: .loops/goal.fsm.yaml\n",
        "",
    )
    assert "initial: evaluate" in (tmp_path / ".loops/goal.fsm.yaml").read_text()


def test_compile_of_a_plain_loop_file_says_it_only_copies(tmp_path: Path) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    done = run_cli(tmp_path, "compile", "simple", "-o", "out.yaml")
    assert (done.returncode, normalize(done.stdout), done.stderr) == (
        0,
        "[T] Compiled to: out.yaml\n",
        "note: .loops/simple.yaml is not a paradigm file: nothing to compile, it was copied "
        "as it loads (ll-loop runs it as it is)\n",
    )
