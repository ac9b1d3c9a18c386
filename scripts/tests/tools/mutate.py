"""A mutation check: do the tests notice when the code they test is changed a little?

Each *mutant* is one small change to one line of a module: a comparison turned around
(`>=` to `>`, `==` to `!=`, `in` to `not in`), `and` to `or`, `+` to `-`, a `not`
dropped, `True` to `False`, a number one higher, a call statement replaced by `pass`.
For each mutant the given tests run against a copy of the package holding that one
change (on `PYTHONPATH`, so the `ll-loop` processes the tests start run it too); a test
that fails, errors or times out *catches* it, a run that passes *misses* it. The score is
caught / all. The working tree is never touched.

    # the modules (and only the lines) changed since main, with the tests changed too
    python scripts/tests/tools/mutate.py --base main
    # one module, every line, with the tests named
    python scripts/tests/tools/mutate.py scripts/little_loops/fsm/engine/guards.py \\
        --tests scripts/tests/test_guards.py scripts/tests/test_run_guards.py

A missed mutant is either a behaviour no test checks (write the test) or a change that
changes nothing a user could see (an equivalent mutant: say so where the score is kept).
See docs/testing.md, "Mutation check". Not part of CI or of the default pytest run: it
runs the tests once per mutant.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "scripts" / "little_loops"
TESTS = ROOT / "scripts" / "tests"

# Operators swapped for their nearest neighbour (the mistakes a person makes).
COMPARE_SWAPS: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.In: ("in", "not in"),
    ast.NotIn: ("not in", "in"),
    ast.Is: ("is", "is not"),
    ast.IsNot: ("is not", "is"),
}
BINARY_SWAPS: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "*"),
    ast.Mod: ("%", "//"),
}
# A condition that is a plain value or call gets `not ` in front.
PLAIN_TESTS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)
BOOL_SWAPS: dict[type[ast.boolop], tuple[str, str]] = {
    ast.And: ("and", "or"),
    ast.Or: ("or", "and"),
}


@dataclass(frozen=True)
class Mutant:
    """Replace bytes `start:end` of line `line` (1-based) of `path` with `new`."""

    path: Path
    line: int
    start: int
    end: int
    old: str
    new: str

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def apply(self, source: bytes) -> bytes:
        lines = source.splitlines(keepends=True)
        text = lines[self.line - 1]
        lines[self.line - 1] = text[: self.start] + self.new.encode() + text[self.end :]
        return b"".join(lines)


# --- finding mutants --------------------------------------------------------------------


def mutants_of(path: Path, lines: set[int] | None = None) -> list[Mutant]:
    """The one-line mutants of the module at `path` (only on `lines` when given)."""
    source = path.read_bytes()
    rows = source.splitlines(keepends=True)
    tree = ast.parse(source)
    found: list[Mutant] = []
    skipped = _docstring_lines(tree) | _setting_lines(tree)
    for node in ast.walk(tree):
        for mutant in _node_mutants(path, rows, node):
            if mutant.line in skipped or (lines is not None and mutant.line not in lines):
                continue
            found.append(mutant)
    return sorted(set(found), key=lambda m: (m.line, m.start, m.new))


def _node_mutants(path: Path, rows: list[bytes], node: ast.AST) -> Iterator[Mutant]:
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        for index, op in enumerate(node.ops):
            old, new = COMPARE_SWAPS[type(op)]
            yield from _between(path, rows, operands[index], operands[index + 1], old, new)
    elif isinstance(node, ast.BoolOp):
        old, new = BOOL_SWAPS[type(node.op)]
        for left, right in zip(node.values, node.values[1:], strict=False):
            yield from _between(path, rows, left, right, old, new)
    elif isinstance(node, ast.BinOp) and type(node.op) in BINARY_SWAPS:
        old, new = BINARY_SWAPS[type(node.op)]
        yield from _between(path, rows, node.left, node.right, old, new)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield from _span(path, rows, node, node.operand, "not", "")
    elif isinstance(node, ast.Constant):
        yield from _constant(path, rows, node)
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        yield from _whole(path, rows, node, "pass")
    if isinstance(node, ast.If | ast.While | ast.IfExp) and isinstance(node.test, PLAIN_TESTS):
        test = node.test
        yield Mutant(path, test.lineno, test.col_offset, test.col_offset, "", "not ")


def _between(
    path: Path, rows: list[bytes], left: ast.AST, right: ast.AST, old: str, new: str
) -> Iterator[Mutant]:
    """`old` (an operator) written between `left` and `right`, when on one line."""
    if left.end_lineno != right.lineno:  # type: ignore[attr-defined]
        return
    line = right.lineno  # type: ignore[attr-defined]
    text = rows[line - 1]
    gap = text[left.end_col_offset : right.col_offset].decode()  # type: ignore[attr-defined]
    match = re.search(rf"(?<![\w=<>!]){re.escape(old)}(?![\w=<>])", gap)
    if match is None or (old == "in" and re.search(r"\bnot\s+in\b", gap)):
        return
    start = left.end_col_offset + len(gap[: match.start()].encode())  # type: ignore[attr-defined]
    end = start + len(match.group().encode())
    yield Mutant(path, line, start, end, old, new)


def _span(
    path: Path, rows: list[bytes], node: ast.AST, operand: ast.AST, old: str, new: str
) -> Iterator[Mutant]:
    """`not x` -> `x`: the text from the node's start to its operand's."""
    if node.lineno != operand.lineno:  # type: ignore[attr-defined]
        return
    start, end = node.col_offset, operand.col_offset  # type: ignore[attr-defined]
    old_text = rows[node.lineno - 1][start:end].decode()  # type: ignore[attr-defined]
    if old_text.strip() == old:
        yield Mutant(path, node.lineno, start, end, old_text, new)  # type: ignore[attr-defined]


def _constant(path: Path, rows: list[bytes], node: ast.Constant) -> Iterator[Mutant]:
    if node.lineno != node.end_lineno:
        return
    if isinstance(node.value, bool):
        new = "False" if node.value else "True"
    elif isinstance(node.value, int):
        new = str(node.value + 1)
    elif isinstance(node.value, float):
        new = repr(node.value * 2 if node.value else 1.0)
    else:
        return  # strings: messages, checked by whole-message assertions or not at all
    old = rows[node.lineno - 1][node.col_offset : node.end_col_offset].decode()
    yield Mutant(path, node.lineno, node.col_offset, node.end_col_offset, old, new)  # type: ignore[arg-type]


def _whole(path: Path, rows: list[bytes], node: ast.stmt, new: str) -> Iterator[Mutant]:
    """A one-line call statement replaced by `new`."""
    if node.lineno != node.end_lineno:
        return
    old = rows[node.lineno - 1][node.col_offset : node.end_col_offset].decode()
    yield Mutant(path, node.lineno, node.col_offset, node.end_col_offset, old, new)  # type: ignore[arg-type]


def _setting_lines(tree: ast.Module) -> set[int]:
    """Lines a number there would only restate: a module's named settings (`LIMIT = 50`)
    and decorators (`@dataclass(frozen=True)`)."""
    lines: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    for node in ast.walk(tree):
        for decorator in getattr(node, "decorator_list", []):
            lines.update(range(decorator.lineno, (decorator.end_lineno or decorator.lineno) + 1))
    return lines


def _docstring_lines(tree: ast.Module) -> set[int]:
    """Lines of docstrings (their constants are text, not behaviour)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                lines.update(range(value.lineno, (value.end_lineno or value.lineno) + 1))
    return lines


# --- what a change touched ---------------------------------------------------------------


def changed_modules(base: str) -> dict[Path, set[int]]:
    """The package's modules changed since `base` (committed or not), with the lines
    added or changed in each."""
    diff = _git("diff", "-U0", base, "--", "scripts/little_loops")
    changed: dict[Path, set[int]] = {}
    current: Path | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].removeprefix("b/")
            current = ROOT / name if name.endswith(".py") else None
        elif line.startswith("@@") and current is not None:
            hunk = re.search(r"\+(\d+)(?:,(\d+))?", line)
            assert hunk is not None
            first, count = int(hunk.group(1)), int(hunk.group(2) or 1)
            changed.setdefault(current, set()).update(range(first, first + count))
    return {path: lines for path, lines in changed.items() if lines and path.exists()}


def changed_tests(base: str) -> list[Path]:
    names = _git("diff", "--name-only", base, "--", "scripts/tests").splitlines()
    untracked = _git("ls-files", "--others", "--exclude-standard", "scripts/tests").splitlines()
    paths = [ROOT / name for name in [*names, *untracked]]
    return sorted({p for p in paths if p.name.startswith("test_") and p.exists()})


def tests_naming(modules: list[Path]) -> list[Path]:
    """Test files that import one of `modules` by its dotted name."""
    dotted = [".".join(m.relative_to(ROOT / "scripts").with_suffix("").parts) for m in modules]
    found = []
    for test in sorted(TESTS.rglob("test_*.py")):
        text = test.read_text(encoding="utf-8")
        if any(re.search(rf"\b{re.escape(name)}\b", text) for name in dotted):
            found.append(test)
    return found


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


# --- running the tests against each mutant -------------------------------------------------


class Sandbox:
    """A copy of the package in a temporary folder, first on `PYTHONPATH`."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ll-mutate-"))
        shutil.copytree(PACKAGE, self.root / "little_loops", ignore=_no_caches)

    def place(self, path: Path, source: bytes) -> None:
        (self.root / path.relative_to(PACKAGE.parent)).write_bytes(source)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.root), str(ROOT / "scripts")])
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _no_caches(_folder: str, names: list[str]) -> list[str]:
    return [name for name in names if name == "__pycache__"]


def run_tests(sandbox: Sandbox, tests: list[Path], timeout: float) -> str:
    """`passed`, `failed` or `timeout` for `tests` against what the sandbox holds."""
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider"]
    command += ["-m", "not e2e", *map(str, tests)]
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=sandbox.env(), capture_output=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return "timeout"
    return "passed" if done.returncode == 0 else "failed"


def check(mutant: Mutant, tests: list[Path], timeout: float) -> tuple[Mutant, str]:
    sandbox = Sandbox()
    try:
        sandbox.place(mutant.path, mutant.apply(mutant.path.read_bytes()))
        return mutant, run_tests(sandbox, tests, timeout)
    finally:
        sandbox.remove()


# --- the command ----------------------------------------------------------------------------


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", type=Path, help="modules to mutate (all lines)")
    parser.add_argument("--base", help="mutate the lines changed since this git revision")
    parser.add_argument("--tests", nargs="+", type=Path, help="test files to run")
    parser.add_argument("--jobs", type=int, default=1, help="mutants checked at once")
    parser.add_argument("--timeout", type=float, help="seconds per mutant (default 5x the tests)")
    parser.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    return parser.parse_args(argv)


def targets(args: argparse.Namespace) -> tuple[dict[Path, set[int] | None], list[Path]]:
    modules: dict[Path, set[int] | None] = {m.resolve(): None for m in args.modules}
    if args.base:
        modules.update(changed_modules(args.base))
    tests = [t.resolve() for t in args.tests or []]
    if not tests:
        tests = changed_tests(args.base) if args.base else []
        tests += [t for t in tests_naming(list(modules)) if t not in tests]
    return modules, tests


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    modules, tests = targets(args)
    mutants = [m for path, lines in modules.items() for m in mutants_of(path, lines)]
    if args.list or not mutants:
        for mutant in mutants:
            print(f"{mutant.where()}  {mutant.old!r} -> {mutant.new!r}")
        print(f"{len(mutants)} mutants in {len(modules)} modules")
        return 0
    if not tests:
        print("no tests to run: name them with --tests", file=sys.stderr)
        return 2
    return _run(mutants, tests, args)


def _run(mutants: list[Mutant], tests: list[Path], args: argparse.Namespace) -> int:
    print(f"{len(mutants)} mutants; tests: {' '.join(str(t.relative_to(ROOT)) for t in tests)}")
    baseline = Sandbox()
    started = time.monotonic()
    try:
        outcome = run_tests(baseline, tests, timeout=3600)
    finally:
        baseline.remove()
    if outcome != "passed":
        print("the tests fail without any mutant: fix them first", file=sys.stderr)
        return 2
    timeout = args.timeout or max(30.0, 5 * (time.monotonic() - started))
    missed = []
    with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        jobs = [pool.submit(check, mutant, tests, timeout) for mutant in mutants]
        for job in jobs:
            mutant, result = job.result()
            verdict = "MISSED" if result == "passed" else f"caught ({result})"
            print(f"{verdict:17} {mutant.where()}  {mutant.old!r} -> {mutant.new!r}", flush=True)
            if result == "passed":
                missed.append(mutant)
    caught = len(mutants) - len(missed)
    print(f"score: {caught}/{len(mutants)} caught ({100 * caught / len(mutants):.0f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
