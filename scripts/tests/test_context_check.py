"""`run --context` with a key the loop never uses is said on stderr (issue 23, item 5)."""

from __future__ import annotations

from pathlib import Path

from fixtures.cli_support import run_cli, write_loop

GREET = """\
name: greet
initial: a
context:
  greeting: hi
states:
  a:
    action: echo ${context.greeting} ${context.name}
    next: done
  done: {terminal: true}
"""


def test_a_key_the_loop_never_uses_is_named_with_the_keys_it_has(tmp_path: Path) -> None:
    write_loop(tmp_path, "greet", GREET)
    done = run_cli(tmp_path, "run", "greet", "--context", "greting=yo", "--context", "name=bob")
    assert (done.returncode, done.stderr) == (
        0,
        "warning: --context greting: greet never uses this key (its context keys: greeting, "
        "name)\n",
    )
    assert "hi bob" in (tmp_path / ".loops/.running/greet.logs/1-a.log").read_text()


def test_keys_the_loop_reads_or_declares_pass_quietly(tmp_path: Path) -> None:
    write_loop(tmp_path, "greet", GREET)
    done = run_cli(tmp_path, "run", "greet", "--context", "greeting=yo", "--context", "name=x")
    assert (done.returncode, done.stderr) == (0, "")


def test_a_head_parameter_counts_as_used(tmp_path: Path) -> None:
    loop = (
        "name: p\ndescription: d\ninitial: a\nparameters:\n  depth: {type: integer, default: 1}\n"
        "states:\n  a: {action: 'true', next: done}\n  done: {terminal: true}\n"
    )
    write_loop(tmp_path, "p", loop)
    done = run_cli(tmp_path, "run", "p", "--context", "depth=3")
    assert (done.returncode, done.stderr) == (0, "")
