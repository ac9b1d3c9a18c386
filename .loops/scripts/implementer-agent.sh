#!/bin/sh
# A stand-in for an implementer agent session (a real loop runs claude here).
# Usage: implementer-agent.sh <plan> <phase> [<continuation prompt>]
# Each session does one phase of a three-phase plan, notes it in progress.md and
# reports in .return-meta.json. Phase 2 runs out of context the first time: it saves
# what it did, reports phase 1 as the last one completed, and hands off.
plan=$1 phase=$2 prompt=$3 total=3
if [ "$phase" -eq 2 ] && [ -z "$prompt" ]; then
  echo "phase 2 of $plan: started" >> progress.md
  echo '{"status": "partial", "partial_progress": {"phases_completed": 1, "phases_total": 3}}' \
    > .return-meta.json
  echo "CONTEXT_HANDOFF: finish phase 2 of $plan (the tests are still to write)"
  exit 0
fi
echo "phase $phase of $plan: done" >> progress.md
status=partial
if [ "$phase" -ge "$total" ]; then status=implemented; fi
printf '{"status": "%s", "partial_progress": {"phases_completed": %s, "phases_total": %s}}\n' \
  "$status" "$phase" "$total" > .return-meta.json
echo "phase $phase done"
