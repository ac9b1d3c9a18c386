"""No module of `little_loops` reaches for another module's private names (issue 22 item 3).

A name that starts with one underscore is its module's own business: a module that needs
it from elsewhere gets it public (or the name moves). Every module of the package is read
with `ast` and the test asserts that none imports a private name from another module of
the package (`from little_loops.x import _name`, anywhere in the file), nor reaches one
through a module it imported (`from little_loops.cli import output; output._name`,
`import little_loops.cli.output as out; out._name`). Dunder names (`__version__`) are
public. The checker also runs on a small package with each kind of violation planted, so
it is known to catch them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import little_loops

PACKAGE_DIR = Path(little_loops.__file__).parent


def is_private(name: str) -> bool:
    """`_name` is private; `__name__`-style dunders and `_` alone are not."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(root: Path, package: str = "little_loops") -> list[str]:
    """Every private name a module of the package at `root` takes from another one:
    `<file>:<line>: <module>.<name>`, sorted."""
    modules = _module_names(root, package)
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(root.parent).as_posix()
        found += [f"{where}:{line}: {name}" for line, name in _reaches(tree, package, modules)]
    return found


def _module_names(root: Path, package: str) -> set[str]:
    names = set()
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.add(".".join([package, *parts]))
    return names


def _reaches(tree: ast.Module, package: str, modules: set[str]) -> list[tuple[int, str]]:
    """(line, `module.name`) of each private name `tree` imports or reaches."""
    found: list[tuple[int, str]] = []
    bound: dict[str, str] = {}  # local name -> the package module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _in_package(node.module, package):
            assert node.module is not None
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                if target in modules:
                    bound[alias.asname or alias.name] = target
                elif is_private(alias.name):
                    found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _in_package(alias.name, package) and alias.asname is not None:
                    bound[alias.asname] = alias.name
    return found + _attribute_reaches(tree, bound)


def _in_package(module: str | None, package: str) -> bool:
    return module is not None and (module == package or module.startswith(package + "."))


def _attribute_reaches(tree: ast.Module, bound: dict[str, str]) -> list[tuple[int, str]]:
    """`alias._name` where `alias` is a package module bound by an import."""
    return [
        (node.lineno, f"{bound[node.value.id]}.{node.attr}")
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in bound
        and is_private(node.attr)
    ]


def test_no_module_imports_a_private_name_of_another() -> None:
    assert private_imports(PACKAGE_DIR) == []


# -- the checker, on planted violations ---------------------------------------------------


def _package(root: Path, files: dict[str, str]) -> Path:
    package = root / "little_loops"
    for relative, body in {"__init__.py": "", **files}.items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    return package


CLEAN = {
    "cli/__init__.py": "",
    "cli/display.py": "def last_line(): ...\ndef _own(): ...\n_own()\n",
    "cli/history.py": "from little_loops import __version__\n"
    "from little_loops.cli.display import last_line\n"
    "from little_loops.cli import display\n"
    "display.last_line()\n",
}


def test_a_clean_package_passes(tmp_path: Path) -> None:
    assert private_imports(_package(tmp_path, CLEAN)) == []


def test_a_planted_private_import_is_caught(tmp_path: Path) -> None:
    """The rule of issue 22 item 3: `cli/history_lines.py` took `display._last_line`."""
    planted = {
        **CLEAN,
        "cli/history.py": "def lines():\n"
        "    from little_loops.cli.display import _last_line\n"
        "    return _last_line\n",
    }
    assert private_imports(_package(tmp_path, planted)) == [
        "little_loops/cli/history.py:2: little_loops.cli.display._last_line"
    ]


def test_a_private_name_reached_through_an_imported_module_is_caught(tmp_path: Path) -> None:
    planted = {
        **CLEAN,
        "cli/history.py": "from little_loops.cli import display\n"
        "import little_loops.cli.display as shown\n"
        "display._own()\n"
        "shown._own()\n",
    }
    assert private_imports(_package(tmp_path, planted)) == [
        "little_loops/cli/history.py:3: little_loops.cli.display._own",
        "little_loops/cli/history.py:4: little_loops.cli.display._own",
    ]
