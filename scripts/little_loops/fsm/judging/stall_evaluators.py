"""HEAD's stall evaluators (§3.2): is the loop still getting somewhere?

Pure decisions, given what the round observed and what earlier rounds left (`memory`,
kept per run and state in the run's record, §9h). `diff_stall` compares the work tree's
`git diff --stat` with the last one, `action_stall` a hash of tracked values with the
last one, and `score_stall` / `open_question_stall` walk a history of numbers. The I/O
(git, the history file) is in `stall_io`.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["action_stall", "diff_stall", "history_numbers", "score_walk"]

Verdict = tuple[str, dict[str, Any]]


def diff_stall(stat: str, memory: dict[str, Any], max_stall: int) -> Verdict:
    """`yes` while the diff changes; `no` once it stayed the same `max_stall` rounds.

    `memory` (updated in place) keeps the last diff and the count of unchanged rounds.
    """
    if "last_stat" not in memory:
        memory.update(last_stat=stat, count=0)
        return "yes", {"stall_count": 0, "max_stall": max_stall, "snapshot": True}
    count = int(memory.get("count", 0)) + 1 if memory["last_stat"] == stat else 0
    memory.update(last_stat=stat, count=count)
    verdict = "no" if count >= max_stall else "yes"
    return verdict, {"stall_count": count, "max_stall": max_stall}


def action_stall(values: list[Any], memory: dict[str, Any], max_repeat: int) -> Verdict:
    """`no` once the tracked values hashed the same `max_repeat` times running.

    `memory` (updated in place) keeps the last hash and how many times running it came.
    """
    import hashlib  # here: only HEAD's action_stall hashes, a plain run never loads it

    digest = hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()
    repeats = int(memory.get("count", 0)) + 1 if memory.get("hash") == digest else 1
    memory.update(hash=digest, count=repeats)
    verdict = "no" if repeats >= max_repeat else "yes"
    return verdict, {"repeat_count": repeats, "max_repeat": max_repeat}


def history_numbers(text: str) -> list[float]:
    """One number per line; lines that are not numbers are skipped."""
    numbers: list[float] = []
    for line in text.splitlines():
        try:
            numbers.append(float(line.strip()))
        except ValueError:
            continue
    return numbers


def score_walk(
    scores: list[float], *, epsilon: float, max_stall: int, lower_is_better: bool
) -> Verdict:
    """Walk the history: a score better than the best by more than `epsilon` is
    progress; `no` once the rounds without progress reach `max_stall`."""
    if len(scores) < 2:
        return "yes", {"scores": len(scores), "stall_count": 0, "max_stall": max_stall}
    sign = -1.0 if lower_is_better else 1.0
    best, stall = scores[0], 0
    for score in scores[1:]:
        if sign * (score - best) > epsilon:
            best, stall = score, 0
        else:
            best = min(best, score) if lower_is_better else max(best, score)
            stall += 1
    verdict = "no" if stall >= max_stall else "yes"
    details = {"scores": len(scores), "best": best, "stall_count": stall, "max_stall": max_stall}
    return verdict, details
