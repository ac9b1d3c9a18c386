"""`ll-loop compile <paradigm.yaml>`: write the FSM a paradigm file stands for.

The output is derived from the input's suffix (`x.yaml` -> `x.fsm.yaml`, `x.yml` ->
`x.fsm.yml`, anything else gets `.fsm.yaml` appended), is never the input itself, and is
only written when the compiled loop passes validation. A replaced
`little_loops.fsm.compilers.compile_paradigm` (the reference's seam) is honoured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from little_loops.cli.exit_codes import FAILED, OK
from little_loops.cli.output import Logger, write_error_line
from little_loops.cli.resolve import resolve_loop_path
from little_loops.fsm import compilers
from little_loops.fsm.errors import LoopError, LoopFileError, LoopSyntaxError, LoopValidationError
from little_loops.fsm.loading import paradigms
from little_loops.fsm.loading.pipeline import built_loop_findings, load_loop, load_loop_mapping
from little_loops.fsm.loading.yaml_text import dump_yaml
from little_loops.fsm.model.findings import ValidationSeverity
from little_loops.fsm.schema import FSMLoop


def default_output_path(input_path: Path) -> Path:
    """`para/goal.yaml` -> `para/goal.fsm.yaml`; the suffix decides, never a blind replace."""
    name = input_path.name
    for suffix in (".yaml", ".yml"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return input_path.with_name(name[: -len(suffix)] + ".fsm" + suffix)
    return input_path.with_name(name + ".fsm.yaml")


def compiled_mapping(fsm: FSMLoop) -> dict[str, Any]:
    """Every set field, in the reference's order: name, paradigm, initial, states, limit."""
    data = fsm.to_dict()
    head: dict[str, Any] = {"name": data.pop("name")}
    if "paradigm" in data:
        head["paradigm"] = data.pop("paradigm")
    head["initial"] = data.pop("initial")
    head["states"] = data.pop("states")
    head["max_iterations"] = data.pop("max_iterations", fsm.max_iterations)
    return {**head, **data}


def compile_command(input_arg: str, output_arg: str | None) -> int:
    """Compile `input_arg` and write it; errors are one line each, exit 1."""
    logger = Logger()
    input_path = _input_path(input_arg)
    if input_path is None:
        logger.error(f"Input file not found: {input_arg}")
        return FAILED
    output_path = Path(output_arg) if output_arg else default_output_path(input_path)
    if output_path.exists() and output_path.resolve() == input_path.resolve():
        logger.error(f"Refusing to overwrite the input file: {input_arg} (choose another -o)")
        return FAILED
    try:
        fsm = _compile(input_path)
    except LoopError as exc:
        prefix = "YAML parse error" if isinstance(exc, LoopSyntaxError) else "Compilation error"
        for line in exc.user_lines():
            logger.error(f"{prefix}: {line}")
        return FAILED
    try:
        output_path.write_text(dump_yaml(compiled_mapping(fsm)), encoding="utf-8")
    except OSError as exc:
        logger.error(f"Cannot write {output_path}: {exc.strerror or exc}")
        return FAILED
    logger.success(f"Compiled to: {output_path}")
    if fsm.paradigm in (None, "fsm") and compilers.compile_paradigm is paradigms.compile_paradigm:
        # On stderr: the reference printed only the line above on stdout.
        write_error_line(
            f"note: {input_path} is not a paradigm file: nothing to compile, it was copied "
            "as it loads (ll-loop runs it as it is)"
        )
    return OK


def _input_path(input_arg: str) -> Path | None:
    """The file to compile: a path, or a loop name as every other command takes it
    (`compile goal-demo` for `.loops/goal-demo.yaml`)."""
    path = Path(input_arg)
    if path.exists():
        return path
    try:
        return resolve_loop_path(input_arg)
    except LoopError:
        return None


def _compile(input_path: Path) -> FSMLoop:
    """The checked loop `input_path` stands for.

    When `little_loops.fsm.compilers.compile_paradigm` has been replaced (a test written
    for the reference patches it), the replacement compiles the file's mapping, whatever
    its paradigm, as the reference's `compile` did; its result is checked as usual.
    """
    replacement = compilers.compile_paradigm
    if replacement is paradigms.compile_paradigm:
        return load_loop(input_path)
    spec = load_loop_mapping(input_path)
    try:
        fsm = replacement(spec)
    except ValueError as exc:  # the reference's compile errors
        raise LoopFileError(str(input_path), str(exc)) from None
    findings = built_loop_findings(fsm)
    errors = [item for item in findings if item.severity is ValidationSeverity.ERROR]
    if errors:
        raise LoopValidationError(str(input_path), errors)
    return fsm
