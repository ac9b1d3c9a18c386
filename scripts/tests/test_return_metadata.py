"""return_metadata: an agent's report (file or output) turned into a verdict and details."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from little_loops.fsm.judging.return_metadata import (
    METADATA_FILE_LIMIT,
    OUTPUT_SEARCH_WINDOW,
    judge_return_metadata,
    verdict_for_metadata,
)

ALLOWED = "implemented, completed, partial, blocked, failed"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def write_meta(document: Any, name: str = ".return-meta.json") -> str:
    Path(name).write_text(json.dumps(document))
    return name


@pytest.mark.parametrize(
    ("status", "review", "verdict"),
    [
        ("implemented", False, "success"),
        ("completed", False, "success"),
        ("partial", False, "partial"),
        ("partial", True, "blocked"),
        ("blocked", False, "blocked"),
        ("blocked", True, "blocked"),
        ("failed", False, "failure"),
        ("implemented", True, "success"),  # the review flag only gates partial work
    ],
)
def test_status_and_review_flag_map_to_verdicts(status: str, review: bool, verdict: str) -> None:
    path = write_meta({"status": status, "requires_user_review": review})
    assert judge_return_metadata("", path)[0] == verdict


def test_partial_details_expose_progress_and_the_phase_to_resume() -> None:
    document = {
        "status": "partial",
        "summary": "phases 1-2 done",
        "partial_progress": {
            "stage": "phase_incomplete",
            "phases_completed": 2,
            "phases_total": 4,
            "handoff_path": "specs/1_x/handoffs/phase-3.md",
        },
    }
    path = write_meta(document)
    assert judge_return_metadata("ignored output", path) == (
        "partial",
        {
            "status": "partial",
            "requires_user_review": False,
            "partial_progress": document["partial_progress"],
            "resume_phase": 3,
            "metadata": document,
            "metadata_source": ".return-meta.json",
        },
    )


def test_without_progress_the_resume_phase_is_one() -> None:
    assert verdict_for_metadata({"status": "implemented"}) == (
        "success",
        {
            "status": "implemented",
            "requires_user_review": False,
            "partial_progress": {},
            "resume_phase": 1,
            "metadata": {"status": "implemented"},
        },
    )


def test_an_absolute_path_in_another_directory(tmp_path: Path) -> None:
    target = tmp_path / "reports" / "meta.json"
    target.parent.mkdir()
    target.write_text('{"status": "failed", "error": "tests do not compile"}')
    verdict, details = judge_return_metadata("", str(target))
    assert (verdict, details["metadata"]["error"]) == ("failure", "tests do not compile")
    assert details["metadata_source"] == str(target)


# --- the report in the output ---------------------------------------------------------


def test_report_in_a_fenced_block_of_the_output() -> None:
    output = (
        "Working on phase 3...\n"
        "```json\n"
        '{"status": "partial", "partial_progress": {"phases_completed": 1}}\n'
        "```\n"
    )
    verdict, details = judge_return_metadata(output)
    assert (verdict, details["resume_phase"], details["metadata_source"]) == (
        "partial",
        2,
        "output",
    )


def test_the_last_report_wins_and_a_later_log_object_does_not_hide_it() -> None:
    output = (
        '{"status": "partial"}\n'
        'Then: {"status": "completed"}\n'
        '{"level": "info", "msg": "session closed"}\n'
    )
    assert judge_return_metadata(output)[0] == "success"


def test_an_empty_path_means_the_output() -> None:
    assert judge_return_metadata('{"status": "blocked"}', "")[0] == "blocked"


def test_only_the_tail_of_a_huge_output_is_searched() -> None:
    report = '{"status": "completed"}'
    filler = "x" * OUTPUT_SEARCH_WINDOW
    assert judge_return_metadata(filler + report)[0] == "success"
    assert judge_return_metadata(report + filler)[1]["error"].startswith("No JSON object found")


# --- problems are error verdicts ------------------------------------------------------


def error_of(output: str, path: str | None = None) -> str:
    verdict, details = judge_return_metadata(output, path)
    assert verdict == "error"
    assert set(details) == {"error", "metadata_source"}
    message: str = details["error"]
    return message


def test_no_json_in_the_output() -> None:
    assert error_of("All done!") == (
        'No JSON object found in the output (expected return metadata: {"status": "partial", ...})'
    )


def test_output_objects_without_status() -> None:
    assert error_of('{"level": "info"}') == (
        f"Return metadata has no 'status' key (expected one of: {ALLOWED})"
    )


def test_missing_file() -> None:
    assert error_of("", "missing.json") == "Return metadata file not found: missing.json"


def test_directory_instead_of_a_file() -> None:
    Path("meta").mkdir()
    assert error_of("", "meta") == "Cannot read return metadata file meta: Is a directory"


def test_file_too_large() -> None:
    Path("big.json").write_text(" " * (METADATA_FILE_LIMIT + 1))
    assert error_of("", "big.json") == "Return metadata file big.json is larger than 1 MiB"


def test_file_not_utf8() -> None:
    Path("bad.json").write_bytes(b'{"status": "\xff"}')
    assert error_of("", "bad.json") == (
        "Return metadata file bad.json is not UTF-8 (bad byte at offset 12)"
    )


def test_file_not_json() -> None:
    Path("bad.json").write_text("status: partial")
    assert error_of("", "bad.json") == (
        "Return metadata file bad.json is not valid JSON: Expecting value: line 1 column 1 (char 0)"
    )


@pytest.mark.parametrize(
    ("document", "kind"),
    [
        ([{"status": "partial"}], "an array"),
        ("partial", "a string"),
        (3, "a number"),
        (True, "a boolean"),
        (None, "null"),
    ],
)
def test_file_without_an_object(document: Any, kind: str) -> None:
    write_meta(document)
    assert error_of("", ".return-meta.json") == (
        f"Return metadata file .return-meta.json must hold a JSON object, got {kind}"
    )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({}, f"Return metadata has no 'status' key (expected one of: {ALLOWED})"),
        (
            {"status": "done"},
            f"Unknown return metadata status 'done' (expected one of: {ALLOWED})",
        ),
        (
            {"status": None},
            f"Unknown return metadata status null (expected one of: {ALLOWED})",
        ),
        (
            {"status": ["partial"]},
            f"Unknown return metadata status an array (expected one of: {ALLOWED})",
        ),
        (
            {"status": "x" * 50},
            f"Unknown return metadata status '{'x' * 37}...' (expected one of: {ALLOWED})",
        ),
        (
            {"status": "partial", "requires_user_review": "yes"},
            "requires_user_review must be true or false, got 'yes'",
        ),
        (
            {"status": "partial", "partial_progress": [2, 4]},
            "partial_progress must be an object, got an array",
        ),
        (
            {"status": "partial", "partial_progress": {"phases_completed": "2"}},
            "partial_progress.phases_completed must be a whole number >= 0, got '2'",
        ),
        (
            {"status": "partial", "partial_progress": {"phases_completed": -1}},
            "partial_progress.phases_completed must be a whole number >= 0, got -1",
        ),
        (
            {"status": "partial", "partial_progress": {"phases_total": True}},
            "partial_progress.phases_total must be a whole number >= 0, got true",
        ),
        (
            {"status": "partial", "partial_progress": {"phases_total": 2.5}},
            "partial_progress.phases_total must be a whole number >= 0, got 2.5",
        ),
        (
            {"status": "partial", "partial_progress": {"phases_total": False}},
            "partial_progress.phases_total must be a whole number >= 0, got false",
        ),
        (
            {"status": {"code": 1}},
            f"Unknown return metadata status an object (expected one of: {ALLOWED})",
        ),
    ],
)
def test_bad_reports(document: dict[str, Any], message: str) -> None:
    assert error_of("", write_meta(document)) == message


def test_error_details_name_the_source() -> None:
    assert judge_return_metadata('{"status": "odd"}') == (
        "error",
        {
            "error": f"Unknown return metadata status 'odd' (expected one of: {ALLOWED})",
            "metadata_source": "output",
        },
    )
