"""A script of rules that decides what the fake Messages API answers.

Each rule looks for a piece of text in the last user turn of a request and answers with
text, with a call of the `Bash` tool, or with a call of any other tool (the `evaluate` tool
of `llm_structured`, or a malformed one). A turn that carries a tool result is the model
being told what its tool call did: it gets the closing text of the rule that made the
call. The first matching rule wins, so put the more specific rules first.

    script = ApiScript([
        Rule("Continue with module B", text="Module B finished."),
        Rule("Please work on", text="Half way. CONTEXT_HANDOFF: Continue with module B"),
    ])
    server.responder = script
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fake_anthropic import RecordedRequest, Reply, error_body, message, text_message

BASH_TOOL = "Bash"
DEFAULT_CLOSING_TEXT = "Done."
DEFAULT_FALLBACK_TEXT = "Nothing in the script matched this request."


@dataclass(frozen=True)
class Rule:
    """When `match` is in the last user turn: answer `text`, run `bash`, call `tool`, or fail.

    Exactly one of `text`, `bash`, `tool` and `error` is given. `tool` is `(name, input)`;
    `error` is `(HTTP status, error type, message)`, answered as the API's error envelope.
    `closing` is the text sent once the result of the tool call comes back.
    """

    match: str
    text: str | None = None
    bash: str | None = None
    tool: tuple[str, dict[str, Any]] | None = None
    error: tuple[int, str, str] | None = None
    closing: str = DEFAULT_CLOSING_TEXT

    def __post_init__(self) -> None:
        answers = (self.text, self.bash, self.tool, self.error)
        if sum(answer is not None for answer in answers) != 1:
            raise ValueError(
                f"rule for {self.match!r} needs exactly one of text, bash, tool, error"
            )

    def tool_call(self) -> tuple[str, dict[str, Any]] | None:
        """The (tool name, input) this rule calls, or None for a text rule."""
        if self.bash is not None:
            return BASH_TOOL, {"command": self.bash, "description": "Run the command"}
        return self.tool


@dataclass
class ApiScript:
    """A responder for `FakeAnthropicServer`: answers each request from `rules`."""

    rules: list[Rule]
    fallback: str = DEFAULT_FALLBACK_TEXT
    # Which rule made which tool call, so the tool's result gets that rule's closing text.
    _calls: dict[str, Rule] = field(default_factory=dict)

    def __call__(self, request: RecordedRequest) -> Reply:
        turn = last_user_turn(request.body)
        results = [block for block in turn if block.get("type") == "tool_result"]
        if results:
            rule = self._calls.get(str(results[0].get("tool_use_id")))
            return Reply(text_message(rule.closing if rule else DEFAULT_CLOSING_TEXT))
        said = turn_text(turn)
        for rule in self.rules:
            if rule.match in said:
                return self._answer(rule)
        return Reply(text_message(self.fallback))

    def _answer(self, rule: Rule) -> Reply:
        if rule.error is not None:
            status, error_type, text = rule.error
            return Reply(error_body(error_type, text), status=status)
        call = rule.tool_call()
        if call is None:
            assert rule.text is not None
            return Reply(text_message(rule.text))
        tool_id = f"toolu_e2e_{len(self._calls) + 1}"
        self._calls[tool_id] = rule
        name, tool_input = call
        block = {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
        return Reply(message([block], stop_reason="tool_use"))


def last_user_turn(body: Any) -> list[dict[str, Any]]:
    """The content blocks of the last `user` message (a string becomes one text block)."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    for entry in reversed(messages):
        if entry.get("role") == "user":
            content = entry.get("content", [])
            if isinstance(content, str):
                return [{"type": "text", "text": content}]
            return list(content)
    return []


def turn_text(turn: list[dict[str, Any]]) -> str:
    """The text blocks of a turn joined by newlines (tool results and images left out)."""
    return "\n".join(block["text"] for block in turn if block.get("type") == "text")


def user_text(request: RecordedRequest) -> str:
    """The text of the last user turn of a recorded request."""
    return turn_text(last_user_turn(request.body))


def prompt_text(request: RecordedRequest) -> str:
    """The last text block of the last user turn: what the user (or `-p`) said.

    Claude Code puts its own reminders and the slash command's name and arguments in
    blocks before it; for a slash command this block is the expanded command file.
    """
    texts = [block["text"] for block in last_user_turn(request.body) if block.get("type") == "text"]
    return texts[-1] if texts else ""
