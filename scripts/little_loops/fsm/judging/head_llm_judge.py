"""The LLM judge of a HEAD file (§3.2 "LLM judge, HEAD default schema").

HEAD asks for `yes`/`no`/`blocked`/`partial`/`cannot_judge` with a verbatim quote as
evidence, and distrusts an answer without one: with its default schema, a verdict
outside the enum is `error` and a verdict (other than `cannot_judge`) without evidence
is `no`. A custom `schema:` is read as the legacy judge reads it, without those rules.
The request itself is the legacy judge's (`llm_judge.ask_model`: last 4000 characters,
forced `evaluate` tool).
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.judging.llm_judge import DEFAULT_LLM_PROMPT, Verdict, ask_model, read_verdict

__all__ = [
    "HEAD_EVIDENCE_INSTRUCTION",
    "HEAD_LLM_SCHEMA",
    "HEAD_VERDICTS",
    "ask_head_model",
    "head_prompt",
    "read_head_verdict",
]

HEAD_VERDICTS = ("yes", "no", "blocked", "partial", "cannot_judge")

HEAD_LLM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {
            "type": "string",
            "enum": list(HEAD_VERDICTS),
            "description": (
                "- yes: The action achieved its goal\n"
                "- no: The action did not achieve its goal\n"
                "- blocked: Cannot proceed without external help\n"
                "- partial: Made progress but not complete\n"
                "- cannot_judge: The output does not show whether the goal was met"
            ),
        },
        "confidence": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "Confidence in this verdict (0-1)",
        },
        "reason": {"type": "string", "description": "Brief explanation"},
        "evidence": {
            "type": "string",
            "description": "A verbatim quote from the output that supports the verdict",
        },
    },
    "required": ["verdict", "confidence", "reason", "evidence"],
}

HEAD_EVIDENCE_INSTRUCTION = (
    "For a yes, no or partial verdict, put in `evidence` a verbatim quote from the output "
    "that supports it. If the output does not let you tell, answer cannot_judge instead "
    "of guessing."
)

# Verdicts that need no evidence.
_WITHOUT_EVIDENCE = frozenset({"error", "cannot_judge"})


def head_prompt(prompt: str | None) -> str:
    """The evaluate prompt (or the default one) followed by HEAD's evidence instruction."""
    return f"{prompt or DEFAULT_LLM_PROMPT}\n\n{HEAD_EVIDENCE_INSTRUCTION}"


def read_head_verdict(
    tool_input: dict[str, Any], min_confidence: float, uncertain_suffix: bool
) -> Verdict:
    """The model's answer under HEAD's default schema: enum checked, evidence required."""
    verdict = str(tool_input.get("verdict", ""))
    if verdict not in HEAD_VERDICTS:
        message = f"LLM verdict {verdict!r} is not one of {', '.join(HEAD_VERDICTS)}"
        return "error", {"error": message, "raw": tool_input}
    checked, details = read_verdict(tool_input, min_confidence, False)
    if checked == "error":
        return checked, details  # a confidence that is not a number
    evidence = tool_input.get("evidence")
    details["evidence"] = evidence
    if verdict not in _WITHOUT_EVIDENCE and not str(evidence or "").strip():
        verdict = "no"
        details["evidence_coerced"] = True
    if uncertain_suffix and not details["confident"]:
        verdict = f"{verdict}_uncertain"
    return verdict, details


def ask_head_model(
    sdk: Any,
    output: str,
    *,
    prompt: str | None,
    schema: dict[str, Any] | None,
    min_confidence: float,
    uncertain_suffix: bool,
    model: str,
    max_tokens: int,
    timeout: int,
    spent: list[dict[str, Any]] | None = None,
) -> Verdict:
    """Judge `output` as a HEAD file does (`schema` None: HEAD's default and its rules)."""
    custom = bool(schema)
    return ask_model(
        sdk,
        output,
        prompt=prompt if custom else head_prompt(prompt),
        schema=schema if custom else HEAD_LLM_SCHEMA,
        min_confidence=min_confidence,
        uncertain_suffix=uncertain_suffix,
        model=model,
        max_tokens=max_tokens,
        timeout=timeout,
        spent=spent,
        reader=None if custom else read_head_verdict,
    )
