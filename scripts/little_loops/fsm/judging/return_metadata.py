"""Return metadata: an agent's own report of how far it got, turned into a verdict.

Implementer agents finish a run by writing a small JSON object (to a file such as
`.return-meta.json`, or as the last JSON object they print):

    {"status": "partial", "requires_user_review": false,
     "partial_progress": {"phases_completed": 2, "phases_total": 4,
                          "handoff_path": "specs/1_x/handoffs/phase-3.md"}}

`judge_return_metadata` reads that object and maps `status` to a verdict. The details
keep the whole object (`metadata`), its `partial_progress` and `resume_phase`
(`phases_completed + 1`), so the next action can say `${result.details.resume_phase}`.
Every problem (missing file, bad JSON, unknown status, wrong types) is the `error`
verdict with a message saying what was expected, never an exception. The evaluator has
no side effects: it does not delete the file (the action should, before the agent runs,
so a stale report is never read twice).

This module returns plain `(verdict, details)` pairs, like `judging/llm_judge`, so that
`evaluators` can dispatch to it without an import cycle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from little_loops.fsm.judging.json_scan import json_objects

__all__ = [
    "METADATA_FILE_LIMIT",
    "OUTPUT_SEARCH_WINDOW",
    "STATUS_VERDICTS",
    "judge_return_metadata",
    "verdict_for_metadata",
]

# status -> verdict. `partial` becomes `blocked` when the agent asks for a person.
STATUS_VERDICTS: dict[str, str] = {
    "implemented": "success",
    "completed": "success",
    "partial": "partial",
    "blocked": "blocked",
    "failed": "failure",
}
# A report is a few hundred bytes; anything near this limit is not a report.
METADATA_FILE_LIMIT = 1024 * 1024
# The report comes at the end of an output; only this tail is searched (`json_scan` keeps
# the work linear in it).
OUTPUT_SEARCH_WINDOW = 256 * 1024

Judgement = tuple[str, dict[str, Any]]


def judge_return_metadata(output: str, path: str | None = None) -> Judgement:
    """The verdict and details for the report in the file `path`, or in `output`.

    `path` is already interpolated; a relative path is relative to the working directory
    (the project, where actions run).
    """
    source = path if path else "output"
    if path:
        metadata, problem = _read_metadata_file(Path(path))
    else:
        metadata, problem = _metadata_from_output(output)
    if problem is not None:
        return "error", {"error": problem, "metadata_source": source}
    assert metadata is not None
    verdict, details = verdict_for_metadata(metadata)
    details["metadata_source"] = source
    return verdict, details


def verdict_for_metadata(metadata: dict[str, Any]) -> Judgement:
    """Map one parsed report to a verdict; details carry the report and where to resume."""
    status = metadata.get("status")
    allowed = ", ".join(STATUS_VERDICTS)
    if "status" not in metadata:
        return _error(f"Return metadata has no 'status' key (expected one of: {allowed})")
    if not isinstance(status, str) or status not in STATUS_VERDICTS:
        shown = _describe(status)
        return _error(f"Unknown return metadata status {shown} (expected one of: {allowed})")
    review = metadata.get("requires_user_review", False)
    if not isinstance(review, bool):
        return _error(f"requires_user_review must be true or false, got {_describe(review)}")
    progress, problem = _partial_progress(metadata)
    if problem is not None:
        return _error(problem)
    verdict = STATUS_VERDICTS[status]
    if status == "partial" and review:
        verdict = "blocked"  # a person must look before anyone continues
    completed = progress.get("phases_completed", 0)
    return verdict, {
        "status": status,
        "requires_user_review": review,
        "partial_progress": progress,
        "resume_phase": completed + 1,
        "metadata": metadata,
    }


def _partial_progress(metadata: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    progress = metadata.get("partial_progress")
    if progress is None:
        return {}, None
    if not isinstance(progress, dict):
        return {}, f"partial_progress must be an object, got {_describe(progress)}"
    for key in ("phases_completed", "phases_total"):
        value = progress.get(key)
        if value is not None and not _is_count(value):
            return {}, f"partial_progress.{key} must be a whole number >= 0, got {_describe(value)}"
    return progress, None


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# --- where the report comes from -----------------------------------------------------


def _read_metadata_file(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    try:
        with path.open("rb") as handle:
            raw = handle.read(METADATA_FILE_LIMIT + 1)
    except FileNotFoundError:
        return None, f"Return metadata file not found: {path}"
    except OSError as exc:
        return None, f"Cannot read return metadata file {path}: {exc.strerror or exc}"
    if len(raw) > METADATA_FILE_LIMIT:
        return None, f"Return metadata file {path} is larger than 1 MiB"
    try:
        document = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return None, f"Return metadata file {path} is not UTF-8 (bad byte at offset {exc.start})"
    except (ValueError, RecursionError) as exc:
        return None, f"Return metadata file {path} is not valid JSON: {exc}"
    if not isinstance(document, dict):
        kind = _json_kind(document)
        return None, f"Return metadata file {path} must hold a JSON object, got {kind}"
    return document, None


def _metadata_from_output(output: str) -> tuple[dict[str, Any] | None, str | None]:
    objects = json_objects(output[-OUTPUT_SEARCH_WINDOW:])
    if not objects:
        example = '{"status": "partial", ...}'
        return None, f"No JSON object found in the output (expected return metadata: {example})"
    # A log line printed after the report must not hide it: prefer objects with a status.
    with_status = [document for document in objects if "status" in document]
    return (with_status or objects)[-1], None


# --- messages ------------------------------------------------------------------------


def _error(message: str) -> Judgement:
    return "error", {"error": message}


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:37] + "...")
    if isinstance(value, int | float):
        return repr(value)
    return _json_kind(value)


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"
