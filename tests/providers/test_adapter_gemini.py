"""The Gemini / Vertex adapter: whole and streamed calls, finish reasons, errors, corpus."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import toolwire
from adapter_support import (
    accumulate,
    assemble_every_way,
    assert_matches_expected,
    assert_only_format_errors,
    check_deltas,
    corpus_files,
    mutated_streams,
    read_payloads,
    translate_all,
    without_parts,
)
from conftest import load_expected
from simulator_support import request_body
from toolwire import PartialJSONParser, StreamFormatError, Toolbox
from toolwire._core.deltas import (
    CallDelta,
    Delta,
    ErrorDelta,
    FinishDelta,
    MetaDelta,
    ReasoningPart,
    TextPart,
    UsageDelta,
)
from toolwire._providers.gemini import GeminiAdapter, parse_json_path
from toolwire.testing import Simulator


def chunk(*parts: dict[str, Any], finish: str | None = None, **top: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], **top}


def call(**function_call: Any) -> dict[str, Any]:
    return {"functionCall": function_call}


def arg(path: str, more: bool = False, **value: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"jsonPath": path, **value}
    if more:
        entry["willContinue"] = True
    return entry


def partial(*entries: dict[str, Any], more: bool = True, **top: Any) -> dict[str, Any]:
    function_call: dict[str, Any] = {"partialArgs": list(entries)}
    if more:
        function_call["willContinue"] = True
    return chunk(call(**function_call), **top)


def run(payloads: list[Any], choice: int = 0) -> list[Delta]:
    """The adapter's deltas for ``payloads``, part boundaries left out."""
    return without_parts(run_with_parts(payloads, choice))


def run_with_parts(payloads: list[Any], choice: int = 0) -> list[Delta]:
    """Every delta the adapter makes of ``payloads``, checked."""
    deltas = translate_all(GeminiAdapter(choice=choice), payloads)
    check_deltas(deltas)
    return deltas


def calls_of(deltas: list[Delta]) -> list[CallDelta]:
    return [d for d in deltas if isinstance(d, CallDelta)]


def arguments(deltas: list[Delta]) -> str:
    return "".join(c.arguments for c in calls_of(deltas))


STREAMED = [
    chunk(call(name="plan", willContinue=True), responseId="r1", modelVersion="gemini-x"),
    partial(arg("$.title", True, stringValue="Tri"), responseId="r1", modelVersion="gemini-x"),
    partial(arg("$.title", True, stringValue="p")),
    partial(arg("$.title", stringValue="")),
    chunk(call(willContinue=True)),
    partial(arg("$.days[0].city", stringValue="Oslo"), arg("$.days[0].nights", numberValue=2)),
    partial(arg("$.days[1].city", stringValue="Rome"), arg("$.days[1].train", boolValue=True)),
    partial(arg("$.note", nullValue=None)),
    chunk(call()),
    chunk({"text": ""}, finish="STOP", usageMetadata={"promptTokenCount": 5}),
]

WHOLE = [
    chunk({"text": "thinking…", "thought": True}, responseId="r2", modelVersion="gemini-y"),
    chunk({"text": "Sure. "}),
    chunk(
        {"functionCall": {"name": "a", "args": {"x": 1}}, "thoughtSignature": "c2ln"},
        {"functionCall": {"name": "b", "args": {"y": "ü"}, "id": "call-b"}},
        finish="STOP",
        usageMetadata={"promptTokenCount": 9, "candidatesTokenCount": 4, "totalTokenCount": 20},
    ),
]


# ------------------------------------------------------------------------ whole calls


def test_whole_function_call_is_one_started_and_ended_piece() -> None:
    """A functionCall part is a whole call: compact JSON args, start and end together."""
    deltas = run([chunk(call(name="weather", args={"city": "Zürich", "days": [1, 2]}))])
    assert deltas == [
        CallDelta(
            index=0,
            name="weather",
            arguments='{"city":"Zürich","days":[1,2]}',
            start=True,
            end=True,
        )
    ]


def test_parallel_calls_in_one_chunk_keep_order_ids_and_signature() -> None:
    """Several functionCall parts give one call each, in order, with id and signature kept."""
    calls = calls_of(run(WHOLE))
    assert [(c.index, c.id, c.name, c.arguments) for c in calls] == [
        (0, None, "a", '{"x":1}'),
        (1, "call-b", "b", '{"y":"ü"}'),
    ]
    assert calls[0].metadata == {"thought_signature": "c2ln"} and calls[1].metadata is None


@pytest.mark.parametrize("function_call", [{"name": "f"}, {"name": "f", "args": {}}])
def test_call_without_arguments_has_an_empty_object(function_call: dict[str, Any]) -> None:
    """A call with no ``args`` (or ``{}``) has the argument text ``{}``."""
    assert arguments(run([chunk(call(**function_call))])) == "{}"


def test_text_and_thought_parts_are_text_and_reasoning() -> None:
    """text parts are text, ``thought: true`` parts reasoning, empty texts nothing."""
    deltas = run([*WHOLE[:2], chunk({"text": ""}, {"inlineData": {"mimeType": "x"}})])
    assert [d for d in deltas if isinstance(d, (TextPart, ReasoningPart))] == [
        ReasoningPart(text="thinking…"),
        TextPart(text="Sure. "),
    ]


def test_meta_is_reported_when_it_changes() -> None:
    """responseId and modelVersion give a MetaDelta once, not on every chunk."""
    deltas = run(STREAMED)
    assert [d for d in deltas if isinstance(d, MetaDelta)] == [
        MetaDelta(response_id="r1", model="gemini-x")
    ]


def test_usage_metadata_maps_every_count() -> None:
    """usageMetadata counts map to input, output, total, reasoning and cache-read tokens."""
    usage = {
        "promptTokenCount": 10,
        "candidatesTokenCount": 3,
        "totalTokenCount": 20,
        "thoughtsTokenCount": 7,
        "cachedContentTokenCount": 4,
    }
    deltas = run([{"usageMetadata": usage}, {"usageMetadata": {"trafficType": "ON_DEMAND"}}])
    assert deltas == [
        UsageDelta(
            input_tokens=10,
            output_tokens=3,
            total_tokens=20,
            reasoning_tokens=7,
            cache_read_tokens=4,
            raw=usage,
        )
    ]


def test_tool_use_prompt_tokens_are_input() -> None:
    """toolUsePromptTokenCount (the built-in tools' prompt) is added to the input tokens."""
    usage = {
        "promptTokenCount": 120,
        "toolUsePromptTokenCount": 80,
        "candidatesTokenCount": 30,
        "thoughtsTokenCount": 10,
        "totalTokenCount": 240,
    }
    (delta,) = run([{"usageMetadata": usage}])
    assert isinstance(delta, UsageDelta)
    assert (delta.input_tokens, delta.output_tokens, delta.total_tokens) == (200, 30, 240)


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SPII", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("OTHER", "other"),
        ("FINISH_REASON_UNSPECIFIED", "other"),
    ],
)
def test_finish_reason_is_read_once_after_the_parts(reason: str, kind: str) -> None:
    """finishReason gives one FinishDelta, after the chunk's parts; restatements are ignored."""
    deltas = run([chunk({"text": "x"}, finish=reason), chunk(finish=reason)])
    assert deltas == [TextPart(text="x"), FinishDelta(raw=reason, kind=kind)]


def test_blocked_prompt_finishes_as_content_filter() -> None:
    """promptFeedback.blockReason without candidates finishes as content_filter."""
    deltas = run([{"promptFeedback": {"blockReason": "SAFETY"}}])
    assert deltas == [FinishDelta(raw="SAFETY", kind="content_filter")]


def test_only_the_chosen_candidate_is_translated() -> None:
    """With several candidates only ``choice`` is read; a missing index counts by position."""
    payload = {
        "candidates": [
            {"content": {"parts": [{"text": "zero"}]}},
            {"index": 1, "content": {"parts": [{"text": "one"}]}, "finishReason": "STOP"},
        ]
    }
    assert run([payload]) == [TextPart(text="zero")]
    assert run([payload], choice=1) == [TextPart(text="one"), FinishDelta(raw="STOP", kind="stop")]


def test_error_object_becomes_an_error_delta() -> None:
    """An ``error`` object in the stream becomes ErrorDelta with status and message."""
    error = {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}
    assert run([{"error": error}]) == [
        ErrorDelta(message="RESOURCE_EXHAUSTED: Resource exhausted", error=error)
    ]


# --------------------------------------------------------------------- streamed calls


def test_streamed_arguments_become_a_json_text_stream() -> None:
    """Vertex partialArgs become JSON text fragments that join to the compact object."""
    deltas = run(STREAMED)
    calls = calls_of(deltas)
    assert calls[0] == CallDelta(index=0, name="plan", start=True, end=False)
    assert all(c.start is False for c in calls[1:]) and calls[-1].end
    assert [c.arguments for c in calls[1:4]] == ['{"title":"Tri', "p", '"']
    text = arguments(deltas)
    assert text == (
        '{"title":"Trip","days":[{"city":"Oslo","nights":2},'
        '{"city":"Rome","train":true}],"note":null}'
    )
    assert json.loads(text)["days"][1]["city"] == "Rome"


def test_keep_alive_parts_add_nothing() -> None:
    """A bare ``{willContinue: true}`` part keeps the call open without a delta."""
    adapter = GeminiAdapter()
    adapter.translate(STREAMED[0])
    assert adapter.translate(chunk(call(willContinue=True))) == []


def test_last_partial_args_without_will_continue_ends_the_call() -> None:
    """Without a closing ``{}``, the part that drops willContinue ends the call."""
    deltas = run(
        [chunk(call(name="f", willContinue=True)), partial(arg("$.n", numberValue=1), more=False)]
    )
    assert calls_of(deltas)[-1] == CallDelta(index=0, arguments='{"n":1}', start=False, end=True)


def test_streamed_call_without_arguments_is_an_empty_object() -> None:
    """A streamed call closed before any partialArgs has the argument text ``{}``."""
    deltas = run([chunk(call(name="f", willContinue=True)), chunk(call())])
    assert arguments(deltas) == "{}"


def streamed_turn(start_args: dict[str, Any], *parts: dict[str, Any]) -> list[dict[str, Any]]:
    """A streamed call opened with ``args``, then ``parts``, its end and the finish."""
    return [
        chunk(call(name="wipe_disk", willContinue=True, args=start_args), responseId="r9"),
        *parts,
        chunk(call()),
        chunk({"text": ""}, finish="STOP"),
    ]


def genai_chunks(payloads: list[dict[str, Any]]) -> list[Any]:
    """google-genai's ``GenerateContentResponse`` objects for ``payloads``."""
    from google.genai import types

    return [types.GenerateContentResponse.model_validate(p) for p in payloads]


def test_args_on_the_part_that_opens_a_streamed_call_are_never_dropped() -> None:
    """Start ``args`` are the call when no partialArgs follow, and stand with partialArgs
    that give the same object."""
    wipe = {"device": "/dev/sdz-scratch"}
    for parts in ([], [partial(arg("$.device", stringValue="/dev/sdz-scratch"))]):
        payloads = streamed_turn(wipe, *parts)
        response, _ = assemble_every_way(payloads, genai_chunks(payloads))
        assert [c.arguments for c in response.tool_calls] == [wipe], parts


def test_partial_args_that_contradict_the_start_args_reject_the_call() -> None:
    """partialArgs that say something else than the start ``args`` reject the call."""
    payloads = streamed_turn(
        {"device": "/dev/sdz-scratch"}, partial(arg("$.device", stringValue="/dev/sda"))
    )
    response, _ = assemble_every_way(payloads, genai_chunks(payloads))
    assert response.tool_calls == []
    assert response.rejected[0].raw_arguments == '{"device":"/dev/sda"}'
    assert "contradict" in response.rejected[0].reason


def test_open_streamed_call_is_left_unterminated_at_finish() -> None:
    """A call still open when the stream finishes keeps its incomplete text: never closed."""
    deltas = run(
        [
            chunk(call(name="f", willContinue=True)),
            partial(arg("$.body", True, stringValue="half")),
            chunk(finish="MAX_TOKENS"),
        ]
    )
    assert arguments(deltas) == '{"body":"half'
    assert not any(c.end for c in calls_of(deltas))


def test_split_surrogate_pair_is_never_emitted_half() -> None:
    """A pair split across two string pieces is held back until both halves arrived."""
    deltas = run(
        [
            chunk(call(name="f", willContinue=True)),
            partial(arg("$.s", True, stringValue="a\ud83d")),
            partial(arg("$.s", stringValue="\ude00b")),
            chunk(call()),
        ]
    )
    pieces = [c.arguments for c in calls_of(deltas)]
    assert pieces[1] == '{"s":"a'
    assert json.loads("".join(pieces)) == {"s": "a😀b"}


def test_lone_surrogates_are_escaped_in_argument_text() -> None:
    """A lone surrogate is written as a \\u escape, so argument text is always UTF-8."""
    whole = arguments(run([chunk(call(name="f", args={"s": "a\ud83d"}))]))
    streamed = arguments(
        run(
            [
                chunk(call(name="f", willContinue=True)),
                partial(arg("$.s", True, stringValue="a\ud83d")),
                partial(arg("$.s", stringValue="")),
                chunk(call()),
            ]
        )
    )
    assert whole == streamed == '{"s":"a\\ud83d"}'
    assert json.loads(whole.encode("utf-8")) == {"s": "a\ud83d"}


def test_quoted_path_segments_are_read() -> None:
    """Bracket-quoted member names (with dots, quotes, spaces) and indexes are parsed."""
    assert parse_json_path("$['a.b'][2][\"c d\"].e") == ("a.b", 2, "c d", "e")
    assert parse_json_path("$['it\\'s']") == ("it's",)
    assert parse_json_path("$.a[*]") is None
    assert parse_json_path("a.b") is None


json_scalars = (
    st.text(max_size=12)
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.booleans()
    | st.none()
)
json_keys = st.text(alphabet="ab._ '[]\\\"é", min_size=1, max_size=4)
json_objects = st.recursive(
    st.dictionaries(json_keys, json_scalars, min_size=1, max_size=3),
    lambda inner: st.dictionaries(
        json_keys,
        json_scalars | inner | st.lists(json_scalars | inner, min_size=1, max_size=3),
        min_size=1,
        max_size=3,
    ),
    max_leaves=12,
)


def _render(path: tuple[Any, ...]) -> str:
    out = "$"
    for segment in path:
        if isinstance(segment, int):
            out += f"[{segment}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", segment):
            out += f".{segment}"
        else:
            out += "['" + segment.replace("\\", "\\\\").replace("'", "\\'") + "']"
    return out


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, (*path, key))]
    if isinstance(value, list):
        return [leaf for i, item in enumerate(value) for leaf in _leaves(item, (*path, i))]
    return [(path, value)]


@given(json_objects, st.data())
def test_any_object_streamed_in_document_order_equals_its_whole_form(
    obj: dict[str, Any], data: st.DataObject
) -> None:
    """An object streamed leaf by leaf parses incrementally to its exact whole-call text."""
    chunks: list[dict[str, Any]] = [chunk(call(name="f", willContinue=True))]
    for path, value in _leaves(obj):
        where = _render(path)
        if isinstance(value, str):
            cuts = sorted(data.draw(st.lists(st.integers(0, len(value)), max_size=3)))
            pieces = [value[a:b] for a, b in zip([0, *cuts], [*cuts, len(value)], strict=True)]
            chunks += [partial(arg(where, True, stringValue=p)) for p in pieces]
            chunks.append(partial(arg(where, stringValue="")))
        elif isinstance(value, bool):
            chunks.append(partial(arg(where, boolValue=value)))
        elif value is None:
            chunks.append(partial(arg(where, nullValue=None)))
        else:
            chunks.append(partial(arg(where, numberValue=value)))
    chunks.append(chunk(call()))
    pieces = [c.arguments for c in calls_of(run(chunks))]
    parser = PartialJSONParser()  # what the assembler runs on every fragment
    for piece in pieces[:-1]:
        parser.feed(piece)
        assert not parser.complete
    parser.feed(pieces[-1])
    assert parser.complete and parser.close() == obj
    streamed = "".join(pieces)
    assert json.loads(streamed) == obj
    assert streamed == arguments(run([chunk(call(name="f", args=obj))]))


# ------------------------------------------------------------------------ structure

OPEN = chunk(call(name="f", willContinue=True))

BROKEN: list[tuple[str, list[Any]]] = [
    ("not an object", [[1]]),
    ("candidates not an array", [{"candidates": {"0": {}}}]),
    ("candidate not an object", [{"candidates": ["x"]}]),
    ("parts not an array", [{"candidates": [{"content": {"parts": "x"}}]}]),
    ("part not an object", [chunk("text")]),
    ("functionCall without a name", [chunk(call(args={}))]),
    ("closing part with nothing open", [chunk(call())]),
    ("args not an object", [chunk(call(name="f", args="{}"))]),
    ("args not serialisable", [chunk(call(name="f", args={"x": float("nan")}))]),
    ("new call while one is open", [OPEN, chunk(call(name="g"))]),
    ("args inside a streamed call", [OPEN, chunk(call(args={"a": 1}, willContinue=True))]),
    ("partialArgs not an array", [OPEN, chunk(call(partialArgs={}, willContinue=True))]),
    ("entry without a path", [OPEN, partial({"stringValue": "x"})]),
    ("path outside the arguments", [OPEN, partial(arg("$", stringValue="x"))]),
    ("unreadable path", [OPEN, partial(arg("$.a[?(@.b)]", numberValue=1))]),
    ("entry without a value", [OPEN, partial(arg("$.a"))]),
    ("NaN number", [OPEN, partial(arg("$.a", numberValue=float("nan")))]),
    ("boolean as a number", [OPEN, partial(arg("$.a", numberValue=True))]),
    ("string as a boolean", [OPEN, partial(arg("$.a", boolValue="yes"))]),
    ("string value not a string", [OPEN, partial(arg("$.a", stringValue=3))]),
    (
        "string continued by a number",
        [OPEN, partial(arg("$.a", True, stringValue="x")), partial(arg("$.a", numberValue=1))],
    ),
    (
        "field written twice",
        [OPEN, partial(arg("$.a", numberValue=1)), partial(arg("$.a", numberValue=2))],
    ),
    (
        "closed container reopened",
        [
            OPEN,
            partial(arg("$.a.x", numberValue=1)),
            partial(arg("$.b", numberValue=2)),
            partial(arg("$.a.y", numberValue=3)),
        ],
    ),
    ("array index skipped", [OPEN, partial(arg("$.a[1]", numberValue=1))]),
    (
        "index into an object",
        [OPEN, partial(arg("$.a.b", numberValue=1), arg("$.a[0]", numberValue=1))],
    ),
    (
        "member of an array",
        [OPEN, partial(arg("$.a[0]", numberValue=1), arg("$.a.b", numberValue=1))],
    ),
    ("usage count negative", [{"usageMetadata": {"promptTokenCount": -1}}]),
    ("finishReason not a string", [chunk(finish=1)]),
    ("error not an object", [{"error": 5}]),
]


@pytest.mark.parametrize(("case", "stream"), BROKEN, ids=[case for case, _ in BROKEN])
def test_broken_payloads_raise_a_typed_format_error(case: str, stream: list[Any]) -> None:
    """A chunk that breaks the format raises StreamFormatError carrying that chunk."""
    adapter = GeminiAdapter()
    for payload in stream[:-1]:
        adapter.translate(payload)
    with pytest.raises(StreamFormatError) as info:
        adapter.translate(stream[-1])
    assert info.value.payload is stream[-1]


@given(mutated_streams(STREAMED))
def test_mutated_streamed_chunks_raise_only_format_errors(stream: list[Any]) -> None:
    """Mutated Vertex chunks give StreamFormatError or well-typed deltas, nothing else."""
    assert_only_format_errors(GeminiAdapter, stream)


@given(mutated_streams(WHOLE))
def test_mutated_whole_chunks_raise_only_format_errors(stream: list[Any]) -> None:
    """Mutated Gemini API chunks give StreamFormatError or well-typed deltas, nothing else."""
    assert_only_format_errors(GeminiAdapter, stream)


# ------------------------------------------------------------------------ corpus


@pytest.mark.corpus
@pytest.mark.parametrize("name", corpus_files("gemini"))
def test_corpus_stream_translates_to_its_expected_result(corpus_dir: Path, name: str) -> None:
    """Each recorded Gemini / Vertex stream yields its expected calls, text and finish."""
    deltas = run(list(read_payloads(corpus_dir / "streams" / name)))
    assert_matches_expected(accumulate(deltas), load_expected()[name])


# ------------------------------------------------------------ definitions through the SDK


class _Node(BaseModel):
    """A tree node (recursive)."""

    name: str
    children: list[_Node] = []


def _gemini_tools() -> Toolbox:
    tools = Toolbox()

    @tools.tool
    def tree(root: _Node) -> str:
        """Walk a tree."""
        return root.name

    @tools.tool
    def ping(times: int = 1) -> str:
        """Ping."""
        return "pong" * times

    return tools


def test_google_genai_sends_the_definitions_and_the_simulator_accepts_them() -> None:
    """tools.definitions("gemini") goes as tools= through google-genai's client, the
    recursive tool as parametersJsonSchema, and the call it gets back assembles."""
    from google import genai
    from google.genai import types

    tools = _gemini_tools()
    tree = {"root": {"name": "a", "children": [{"name": "b"}]}}
    with Simulator() as sim:
        sim.add_response(tool_calls=[("tree", tree)])
        client = genai.Client(
            api_key="test",
            http_options=types.HttpOptions(
                base_url=sim.base_url("gemini"),
                retry_options=types.HttpRetryOptions(attempts=1),
            ),
        )
        config = types.GenerateContentConfig(tools=tools.definitions("gemini"))
        source = client.models.generate_content_stream(
            model="gemini-2.5-flash", contents="Walk it.", config=config
        )
        with toolwire.stream(source, total_timeout=30) as handle:
            for _ in handle:
                pass
        client.close()
        (request,) = sim.requests
    assert request.served == "response"
    (sent,) = request.body["tools"]
    declared = {d["name"]: d for d in sent["functionDeclarations"]}
    assert "parameters" not in declared["tree"]
    schema = declared["tree"]["parameters_json_schema"]
    assert schema["$defs"]["_Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/_Node"}
    assert declared["ping"]["parameters"]["properties"] == {"times": {"type": "INTEGER"}}
    assert [c.arguments for c in handle.response.tool_calls] == [tree]


def test_the_simulator_refuses_bare_function_declarations_as_tools() -> None:
    """A tools list of bare declarations (not Tool objects) is Gemini's 400, as is a
    declaration with both parameters and parametersJsonSchema."""
    path, body = request_body("gemini")
    declaration = {"name": "f", "description": "", "parameters": {"type": "OBJECT"}}
    both = {**declaration, "parametersJsonSchema": {"type": "object"}}
    with Simulator() as sim, httpx.Client(base_url=sim.url, timeout=10) as client:
        bare = client.post(path, json={**body, "tools": [declaration]})
        mixed = client.post(path, json={**body, "tools": [{"functionDeclarations": [both]}]})
        sim.add_response("ok")
        fine = client.post(path, json={**body, "tools": [{"functionDeclarations": [declaration]}]})
    assert bare.status_code == 400 and 'Unknown name \\"name\\"' in bare.text
    assert mixed.status_code == 400 and "mutually exclusive" in mixed.text
    assert fine.status_code == 200
