"""Tool results as the model reads them: a ``str`` as plain text, other values as JSON text,
``Image`` / ``File`` results as each format's content blocks; the store keeps them in an
unambiguous JSON form that replays to the same objects and the same messages."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from executor_support import response
from toolwire import File, Image, Outcome, tool_results
from toolwire._core.content import decode_result, fallback_text
from toolwire._providers import FORMATS as BUILT_IN

FORMATS = sorted(set(BUILT_IN.names()) - {"openai"})
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
PDF = b"%PDF-1.4\n" + bytes(range(200, 256))


def _text_of(fmt: str, messages: list[dict[str, Any]]) -> Any:
    """What the one tool result of ``messages`` carries as its text, in ``fmt``'s shape."""
    if fmt in ("openai-chat", "cohere", "ollama"):
        return messages[0]["content"]
    if fmt == "openai-responses":
        return messages[0]["output"]
    if fmt == "anthropic":
        return messages[0]["content"][0]["content"]
    if fmt == "bedrock-converse":
        return messages[0]["content"][0]["toolResult"]["content"][0]["text"]
    assert fmt == "gemini"
    return messages[0]["parts"][0]["functionResponse"]["response"]


def _run(tools: toolwire.Toolbox, store: Any = None, **settings: Any) -> list[Outcome]:
    executor = toolwire.Executor(tools, scope="rich", store=store, **settings)
    return executor.run(response(("call_1", "tool", {})))


def _toolbox(value: Any) -> toolwire.Toolbox:
    tools = toolwire.Toolbox()

    @tools.tool
    def tool() -> Any:
        """Return the value."""
        return value

    return tools


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_str_result_is_sent_as_plain_text_first_run_and_replay(fmt: str) -> None:
    """A tool returning ``"Sunny in Lyon"`` (or a file's lines) reaches the model as that
    text, not as its JSON; the replay from the store sends the same message."""
    text = 'Sunny in "Lyon"\nline two'
    store = toolwire.MemoryStore()
    first = _run(_toolbox(text), store)
    again = _run(_toolbox("never returned"), store)
    assert [o.status for o in first + again] == ["completed", "replayed"]
    want = {"result": text} if fmt == "gemini" else text
    assert _text_of(fmt, tool_results(first, fmt)) == want
    assert tool_results(again, fmt) == tool_results(first, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_stored_str_and_a_stored_json_value_stay_apart(fmt: str) -> None:
    """A stored ``"42"`` (a str) and a stored ``42`` (a number) are told apart: where the
    format carries values (Gemini) they stay a string and a number, elsewhere both read
    ``42``; a stored dict is still sent as its JSON text, verbatim."""
    as_str = Outcome(call_id="c", name="t", status="replayed", result_json='"42"')
    as_int = Outcome(call_id="c", name="t", status="replayed", result_json="42")
    as_dict = Outcome(call_id="c", name="t", status="replayed", result_json='{"b":1, "a":2}')
    if fmt == "gemini":
        assert _text_of(fmt, tool_results([as_str], fmt)) == {"result": "42"}
        assert _text_of(fmt, tool_results([as_int], fmt)) == {"result": 42}
        assert _text_of(fmt, tool_results([as_dict], fmt)) == {"b": 1, "a": 2}
    else:
        assert _text_of(fmt, tool_results([as_str], fmt)) == "42"
        assert _text_of(fmt, tool_results([as_int], fmt)) == "42"
        assert _text_of(fmt, tool_results([as_dict], fmt)) == '{"b":1, "a":2}'


def test_a_str_value_without_result_json_is_plain_text_too() -> None:
    """An outcome built by hand with a ``str`` value and no ``result_json`` sends the text."""
    outcome = Outcome(call_id="c", name="t", status="completed", value="a\nb")
    assert tool_results([outcome], "openai-chat")[0]["content"] == "a\nb"


MIXED = ["Here is the chart.", Image(PNG, "image/png"), File(PDF, "application/pdf", "q3.pdf")]


def test_an_image_result_is_stored_as_marked_json_and_replays_as_the_same_objects() -> None:
    """The store keeps an ``Image`` as ``{"$toolwire": "image", "media_type", "data"}`` and a
    mixed list as an array of those and strings; the replay's value equals what the tool
    returned, and ``Outcome.to_dict`` / ``from_dict`` round-trip it."""
    store = toolwire.MemoryStore()
    (single,) = _run(_toolbox(Image(PNG, "image/png")), store)
    assert json.loads(single.result_json or "") == {
        "$toolwire": "image",
        "media_type": "image/png",
        "data": base64.b64encode(PNG).decode(),
    }
    (replayed,) = _run(_toolbox(None), store)
    assert replayed.status == "replayed" and replayed.value == Image(PNG, "image/png")
    (mixed,) = _run(_toolbox(MIXED), toolwire.MemoryStore())
    assert decode_result(mixed.result_json or "") == MIXED
    assert Outcome.from_dict(mixed.to_dict()).value == MIXED


@settings(max_examples=40, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(["$toolwire", "data", "value", "x"]), inner, max_size=3
            )
        ),
        max_leaves=8,
    )
)
def test_a_plain_value_that_looks_rich_replays_as_itself(value: Any) -> None:
    """Any JSON value, even one with ``"$toolwire"`` keys, is stored so that the replay
    gives that value back and sends the model the same message as the first run."""
    store = toolwire.MemoryStore()
    first = _run(_toolbox(value), store)
    again = _run(_toolbox(None), store)
    assert again[0].status == "replayed" and again[0].value == value
    for fmt in ("openai-chat", "gemini"):
        assert tool_results(again, fmt) == tool_results(first, fmt)
    if not isinstance(value, str):
        sent = tool_results(first, "openai-chat")[0]["content"]
        assert json.loads(sent) == value


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _mixed_outcome() -> Outcome:
    (outcome,) = _run(_toolbox(MIXED), toolwire.MemoryStore())
    return outcome


def test_anthropic_writes_text_image_and_document_blocks() -> None:
    """Anthropic: the ``tool_result`` content is a text block, a base64 image block and a
    base64 PDF document block titled with the file name."""
    (message,) = tool_results([_mixed_outcome()], "anthropic")
    assert message["content"][0]["content"] == [
        {"type": "text", "text": "Here is the chart."},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": _b64(PNG)},
        },
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": _b64(PDF)},
            "title": "q3.pdf",
        },
    ]


def test_responses_writes_input_text_image_and_file_items() -> None:
    """Responses: ``function_call_output.output`` is a list of ``input_text``,
    ``input_image`` and ``input_file`` items with ``data:`` URLs."""
    (item,) = tool_results([_mixed_outcome()], "openai-responses")
    assert item["output"] == [
        {"type": "input_text", "text": "Here is the chart."},
        {
            "type": "input_image",
            "image_url": f"data:image/png;base64,{_b64(PNG)}",
            "detail": "auto",
        },
        {
            "type": "input_file",
            "filename": "q3.pdf",
            "file_data": f"data:application/pdf;base64,{_b64(PDF)}",
        },
    ]


def test_gemini_writes_inline_data_parts_inside_the_function_response() -> None:
    """Gemini: the ``functionResponse`` carries the text as ``{"result"}`` and each image and
    file as an ``inlineData`` part of its own ``parts``."""
    (message,) = tool_results([_mixed_outcome()], "gemini")
    function_response = message["parts"][0]["functionResponse"]
    assert function_response["response"] == {"result": fallback_text(tuple(MIXED))}
    assert function_response["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": _b64(PNG), "displayName": "part-2"}},
        {"inlineData": {"mimeType": "application/pdf", "data": _b64(PDF), "displayName": "q3.pdf"}},
    ]


def test_bedrock_writes_image_and_document_blocks_with_raw_bytes() -> None:
    """Bedrock: ``toolResult.content`` holds a text block, an ``image`` and a ``document``
    block whose ``source.bytes`` are the bytes (boto3 base64-encodes them)."""
    (message,) = tool_results([_mixed_outcome()], "bedrock-converse")
    assert message["content"][0]["toolResult"]["content"] == [
        {"text": "Here is the chart."},
        {"image": {"format": "png", "source": {"bytes": PNG}}},
        {"document": {"format": "pdf", "name": "q3", "source": {"bytes": PDF}}},
    ]


@pytest.mark.parametrize("fmt", ["openai-chat", "ollama", "cohere"])
def test_formats_without_media_in_tool_results_get_a_text_note(fmt: str) -> None:
    """OpenAI chat, Ollama and Cohere carry no images in tool results: the text, then a
    note per image or file naming its type and size."""
    (message,) = tool_results([_mixed_outcome()], fmt)
    assert message["content"] == (
        f"Here is the chart.\n[image/png, {len(PNG)} bytes]\n"
        f"[file q3.pdf, application/pdf, {len(PDF)} bytes]"
    )


def test_a_result_over_max_binary_bytes_is_a_recorded_failure() -> None:
    """Images and files over the executor's ``max_binary_bytes`` make a ``failed`` outcome
    with an error that says so; the store records the failure, and its replay is the same."""
    store = toolwire.MemoryStore()
    tools = _toolbox([Image(PNG, "image/png"), File(PDF, "application/pdf")])
    (first,) = _run(tools, store, max_binary_bytes=len(PNG) + len(PDF) - 1)
    assert first.status == "failed"
    assert "max_binary_bytes" in (first.error or "") and str(len(PNG) + len(PDF)) in (
        first.error or ""
    )
    (again,) = _run(tools, store, max_binary_bytes=len(PNG) + len(PDF) - 1)
    assert again.status == "failed" and again.replayed and again.error == first.error
    (fits,) = _run(tools, toolwire.MemoryStore(), max_binary_bytes=len(PNG) + len(PDF))
    assert fits.status == "completed"


def test_max_binary_bytes_must_be_a_non_negative_int() -> None:
    """A negative or non-int ``max_binary_bytes`` is a settings error."""
    for bad in (-1, 1.5, True):
        with pytest.raises(toolwire.SettingsError, match="max_binary_bytes"):
            toolwire.Executor(toolwire.Toolbox(), scope="s", max_binary_bytes=bad)
