"""The harness itself: the fake API streams as the real one does, the script answers right.

The streaming check goes through the real Anthropic SDK, whose stream parser is the
strictest reader of these events short of Claude Code itself.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import pytest
from api_script import ApiScript, Rule, last_user_turn, prompt_text, turn_text
from fake_anthropic import (
    FakeAnthropicServer,
    RecordedRequest,
    Reply,
    error_body,
    message,
    stream_events,
    text_message,
)


def _request(body: Any) -> RecordedRequest:
    return RecordedRequest("/v1/messages", {}, body)


def _user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": list(blocks)}]}


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _post(server: FakeAnthropicServer, path: str, body: Any) -> tuple[int, str, bytes]:
    request = urllib.request.Request(
        server.base_url + path, json.dumps(body).encode(), {"content-type": "application/json"}
    )
    with urllib.request.urlopen(request) as response:
        return response.status, response.headers["content-type"], response.read()


# -- the server ---------------------------------------------------------------------


def test_sdk_reads_a_streamed_text_and_tool_call(fake_api: FakeAnthropicServer) -> None:
    text = {"type": "text", "text": "Running the tests now, they take a moment."}
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make"}}
    fake_api.responder = lambda request: Reply(message([text, call], stop_reason="tool_use"))
    client = anthropic.Anthropic(base_url=fake_api.base_url, api_key="k", max_retries=0)
    with client.messages.stream(
        model="claude-fake", max_tokens=10, messages=[{"role": "user", "content": "go"}]
    ) as stream:
        final = stream.get_final_message()
    assert final.model_dump(exclude_none=True)["content"] == [text, call]
    assert final.stop_reason == "tool_use"
    assert fake_api.requests[0].body["stream"] is True


def test_stream_events_in_the_api_order() -> None:
    events = list(stream_events(text_message("Hello, streaming world!")))
    start = {**text_message(""), "content": [], "stop_reason": None}
    assert events == [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": _text("")},
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hello, streaming"},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": " world!"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def test_stream_is_sent_as_server_sent_events(fake_api: FakeAnthropicServer) -> None:
    fake_api.responder = lambda request: Reply(text_message("Hi"))
    status, content_type, payload = _post(fake_api, "/v1/messages?beta=true", {"stream": True})
    expected = "".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n"
        for name, data in stream_events(text_message("Hi"))
    )
    assert (status, content_type, payload.decode()) == (200, "text/event-stream", expected)
    assert fake_api.requests[0].path == "/v1/messages"


def test_start_up_calls_are_answered(fake_api: FakeAnthropicServer) -> None:
    head = urllib.request.Request(fake_api.base_url + "/", method="HEAD")
    with urllib.request.urlopen(head) as response:
        assert response.status == 200
    counted = _post(fake_api, "/v1/messages/count_tokens", {"messages": []})
    assert counted == (200, "application/json", b'{"input_tokens": 4}')
    for request in (
        urllib.request.Request(fake_api.base_url + "/api/hello"),
        urllib.request.Request(fake_api.base_url + "/other", method="HEAD"),
    ):
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request)
        assert caught.value.code == 404
    recorded = [(r.method, r.path) for r in fake_api.requests]
    assert recorded == [
        ("HEAD", "/"),
        ("POST", "/v1/messages/count_tokens"),
        ("GET", "/api/hello"),
        ("HEAD", "/other"),
    ]
    assert fake_api.messages_requests() == []


# -- the script ---------------------------------------------------------------------


def test_first_matching_rule_answers_text() -> None:
    script = ApiScript([Rule("module B", text="B done."), Rule("module", text="A done.")])
    reply = script(_request(_user(_text("<reminder/>"), _text("do module B"))))
    assert reply.body == text_message("B done.")
    assert script(_request(_user(_text("do module A")))).body == text_message("A done.")


def test_bash_rule_calls_the_tool_and_closes_after_its_result() -> None:
    script = ApiScript([Rule("resume", bash="ll-loop resume demo", closing="Resumed.")])
    call = script(_request(_user(_text("please resume"))))
    block = {
        "type": "tool_use",
        "id": "toolu_e2e_1",
        "name": "Bash",
        "input": {"command": "ll-loop resume demo", "description": "Run the command"},
    }
    assert call.body == message([block], stop_reason="tool_use")
    result = {"type": "tool_result", "tool_use_id": "toolu_e2e_1", "content": "ok"}
    assert script(_request(_user(result))).body == text_message("Resumed.")
    stranger = {"type": "tool_result", "tool_use_id": "toolu_other", "content": "ok"}
    assert script(_request(_user(stranger))).body == text_message("Done.")


def test_error_rule_answers_the_error_envelope() -> None:
    script = ApiScript([Rule("go", error=(429, "rate_limit_error", "slow down"))])
    reply = script(_request(_user(_text("go"))))
    assert (reply.status, reply.body) == (429, error_body("rate_limit_error", "slow down"))


def test_tool_rule_and_fallback() -> None:
    script = ApiScript([Rule("Evaluate", tool=("evaluate", {"verdict": "success"}))], "Hm.")
    reply = script(_request({"messages": [{"role": "user", "content": "Evaluate this"}]}))
    assert reply.body["content"][0]["input"] == {"verdict": "success"}
    assert script(_request(_user(_text("anything else")))).body == text_message("Hm.")
    assert script(_request({"messages": []})).body == text_message("Hm.")


@pytest.mark.parametrize("answers", [{}, {"text": "a", "bash": "b"}])
def test_rule_needs_exactly_one_answer(answers: dict[str, str]) -> None:
    with pytest.raises(
        ValueError, match=r"^rule for 'x' needs exactly one of text, bash, tool, error$"
    ):
        Rule("x", **answers)


def test_reading_turns() -> None:
    body = {
        "messages": [
            {"role": "user", "content": [_text("first")]},
            {"role": "assistant", "content": [_text("reply")]},
            {"role": "user", "content": [_text("<reminder/>"), _text("second")]},
            {"role": "system", "content": [_text("not a user turn")]},
        ]
    }
    assert turn_text(last_user_turn(body)) == "<reminder/>\nsecond"
    assert prompt_text(_request(body)) == "second"
    assert prompt_text(_request(None)) == ""
