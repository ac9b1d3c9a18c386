"""What `status` shows of a `parallel:` fan-out under way (issue 25 item 3): one row per
item, from the run's saved record (`head.parallel`): its verdict when it finished, the
state its child is at when it started, else queued.
"""

from __future__ import annotations

from typing import Any

__all__ = ["branch_rows", "branch_status_lines"]

ITEM_WIDTH = 30


def branch_rows(head: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per item (`item_index`, `item`, `status`, `state`); none: no fan-out."""
    fanout = (head or {}).get("parallel") or {}
    results: dict[str, Any] = fanout.get("results") or {}
    places: dict[str, Any] = fanout.get("places") or {}
    rows = []
    for index, item in enumerate(fanout.get("items") or []):
        key, state, status = str(index), None, "queued"
        if key in results:
            status = str(results[key].get("verdict"))
        elif places.get(key):
            own = [record for record in places[key] if record]
            state = own[0].get("current_state") if own else None
            status = "started"
        rows.append({"item_index": index, "item": item, "status": status, "state": state})
    return rows


def branch_status_lines(head: dict[str, Any] | None) -> list[str]:
    """`Branches of go: 3 items (1 finished)`, then `[go 2/3] b: at two` per item."""
    rows = branch_rows(head)
    if not rows:
        return []
    name = (head or {})["parallel"].get("state", "?")
    finished = sum(1 for row in rows if row["status"] not in ("queued", "started"))
    lines = [f"Branches of {name}: {len(rows)} items ({finished} finished)"]
    for row in rows:
        item = " ".join(str(row["item"]).split())
        if len(item) > ITEM_WIDTH:
            item = item[: ITEM_WIDTH - 3] + "..."
        said = f"at {row['state']}" if row["status"] == "started" else row["status"]
        lines.append(f"  [{name} {row['item_index'] + 1}/{len(rows)}] {item}: {said}")
    return lines
