"""Structured output (API.md §9): typed, monotonic, incremental previews of the text channel,
a validated ``Response.output``, and typed errors for output that is cut, not JSON, invalid or
refused."""

from __future__ import annotations

import copy
import datetime
import itertools
import json
from typing import Annotated, Any, Literal

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel, Field, field_validator

import toolwire
from output_support import (
    annotation,
    chat_payloads,
    dumps,
    model_specs,
    pieces_at,
    snapshot,
    typed_as,
    typed_prefix,
    values,
)
from preview_support import is_prefix
from toolwire import (
    MISSING,
    OutputPreview,
    OutputSyntaxError,
    OutputValidationError,
    StreamAssembler,
)
from toolwire._output.structured import OutputParser, compile_output

_settings = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def cases(draw: st.DrawFn) -> tuple[Any, tuple[Any, ...], str, list[str]]:
    """A generated model, a JSON text of one of its instances, and split points."""
    spec = draw(model_specs())
    model = annotation(spec)
    text = dumps(draw(values(spec)), draw(st.integers(0, 3)))
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=12))
    return model, spec, text, pieces_at(text, cuts)


def previews(target: Any, pieces: list[str]) -> tuple[list[Any], Any]:
    """The preview after each piece (copied: a preview is live, later input extends it)
    and the output."""
    parser = OutputParser(compile_output(target))
    seen = []
    for piece in pieces:
        parser.feed(piece)
        seen.append(copy.deepcopy(parser.preview()))
    return seen, parser.finish()


class Author(BaseModel):
    name: str
    email: str


class Record(BaseModel):
    id: int
    title: str
    author: Author
    tags: list[str]
    when: datetime.date
    status: Literal["draft", "final"]
    text: str


class Catalog(BaseModel):
    records: list[Record]
    note: str | None = None


CATALOG = {
    "records": [
        {
            "id": 1,
            "title": 'Café "one"',
            "author": {"name": "Ann", "email": "ann@example.com"},
            "tags": ["a", "b"],
            "when": "2024-05-01",
            "status": "final",
            "text": "line\nwith \\ escapes 🚀 and more",
        },
        {
            "id": 2,
            "title": "two",
            "author": {"name": "Bo", "email": "bo@example.com"},
            "tags": [],
            "when": "2024-06-02",
            "status": "draft",
            "text": "short",
        },
    ],
    "note": "done",
}


# ------------------------------------------------------------------------ properties


@_settings
@given(cases())
def test_every_preview_is_a_prefix_of_the_next_and_of_the_output(case: Any) -> None:
    """Each typed preview is a typed prefix of every later one and of the final output, which
    equals ``model_validate_json`` of the whole text."""
    model, _spec, text, pieces = case
    seen, output = previews(model, pieces)
    expected = model.model_validate_json(text)
    assert output == expected
    frozen = [snapshot(p) for p in seen]
    for a, b in itertools.pairwise(seen):
        assert typed_prefix(a, b)
    for p in seen:
        assert typed_prefix(p, output)
    assert [snapshot(p) for p in seen] == frozen  # held previews never changed


@_settings
@given(cases())
def test_shown_fields_are_typed_and_scalars_appear_only_complete(case: Any) -> None:
    """Every shown field has its declared Python type; numbers, booleans, ``null`` and
    literals are only ever shown with their final value."""
    model, spec, _text, pieces = case
    seen, _output = previews(model, pieces)
    for p in seen:
        if p is not MISSING:
            assert typed_as(p, spec)


@pytest.mark.slow
@_settings
@given(cases())
def test_previews_depend_only_on_the_text_read(case: Any) -> None:
    """Fed whole, character by character or at the chosen splits, the preview after the same
    text is the same."""
    model, _spec, text, pieces = case
    split_seen, output = previews(model, pieces)
    char_parser = OutputParser(compile_output(model))
    by_length = {}
    for i, ch in enumerate(text, 1):
        char_parser.feed(ch)
        by_length[i] = snapshot(char_parser.preview())
    at = 0
    for piece, preview in zip(pieces, split_seen, strict=True):
        at += len(piece)
        assert snapshot(preview) == by_length[at]
    whole, whole_output = previews(model, [text])
    assert snapshot(whole[-1]) == by_length[len(text)]
    assert whole_output == output == char_parser.finish()


@_settings
@given(cases(), st.integers(1, 40))
def test_the_assembler_gives_the_same_output_however_the_text_is_split(
    case: Any, size: int
) -> None:
    """Through the assembler, chunks of any size give the same text, the same last preview
    and the same ``Response.output``."""
    model, _spec, text, pieces = case
    outcomes = []
    for split in (pieces, [text], list(text), pieces_at(text, list(range(size, len(text), size)))):
        asm = StreamAssembler(output=model)
        last = MISSING
        for payload in chat_payloads(split):
            for ev in asm.feed(payload):
                if type(ev) is OutputPreview:
                    last = snapshot(ev.preview)
        response = asm.close()
        outcomes.append((response.text, last, response.output))
    assert all(o == outcomes[0] for o in outcomes)
    assert outcomes[0][2] == model.model_validate_json(text)


def test_validation_work_does_not_depend_on_the_number_of_deltas() -> None:
    """A field validator runs as often whether the text comes whole or character by
    character: completed subtrees are validated once, never re-validated per delta."""
    calls: list[int] = []

    def count(v: int) -> int:
        calls.append(v)
        return v

    class Row(BaseModel):
        n: Annotated[int, AfterValidator(count)]
        s: str

    class Table(BaseModel):
        rows: list[Row]

    text = json.dumps({"rows": [{"n": i, "s": "x" * 50} for i in range(30)]})
    previews(Table, [text])
    whole = len(calls)
    calls.clear()
    previews(Table, list(text))
    assert len(calls) == whole


# ------------------------------------------------------------------ what is shown


def test_a_catalog_preview_grows_field_by_field() -> None:
    """Strings grow, nested models appear as partial instances, dates and literals only
    once complete, validated."""
    text = json.dumps(CATALOG)
    seen, output = previews(Catalog, list(text))
    assert output == Catalog.model_validate(CATALOG)
    # the date appears as a date, never as a partial string
    dates = {
        type(r.when)
        for p in seen
        if p is not MISSING and p.records
        for r in p.records
        if "when" in r.model_fields_set
    }
    assert dates == {datetime.date}
    texts = [
        p.records[0].text
        for p in seen
        if p is not MISSING and p.records and "text" in p.records[0].model_fields_set
    ]
    assert texts[0] == "" and texts[-1] == CATALOG["records"][0]["text"]
    assert len(set(texts)) > 10  # it grew step by step
    statuses = {r.status for p in seen if p is not MISSING and p.records for r in p.records}
    assert statuses <= {None, "draft", "final"}


def test_fields_not_yet_shown_are_none_and_not_in_fields_set() -> None:
    """A field that has not arrived is ``None`` (never its default) and absent from
    ``model_fields_set``."""
    parser = OutputParser(compile_output(Catalog))
    parser.feed('{"records": [{"id": 7, "title": "T')
    preview = parser.preview()
    assert preview.model_fields_set == {"records"} and preview.note is None
    record = preview.records[0]
    assert record.model_fields_set == {"id", "title"}
    assert (record.id, record.title, record.author) == (7, "T", None)


def test_a_union_follows_the_one_branch_that_fits_the_kind() -> None:
    """``str | None`` shows a growing string; a union of two models, where the kind tells
    nothing, only its complete value, validated by the union."""

    class U(BaseModel):
        a: str | None
        b: Author | Record

    parser = OutputParser(compile_output(U))
    parser.feed('{"a": "gro')
    assert parser.preview().a == "gro"
    parser.feed('wing", "b": {"name": "Ann", "email": "a@')
    assert "b" not in parser.preview().model_fields_set
    parser.feed('x"}}')
    assert parser.preview().b == Author(name="Ann", email="a@x")
    assert parser.finish() == U(a="growing", b=Author(name="Ann", email="a@x"))


def test_a_field_with_its_own_validator_appears_with_its_model() -> None:
    """A field whose model validates it appears only once its model completed, validated."""

    class Shout(BaseModel):
        word: str

        @field_validator("word")
        @classmethod
        def upper(cls, v: str) -> str:
            return v.upper()

    class Wrap(BaseModel):
        inner: Shout

    parser = OutputParser(compile_output(Wrap))
    parser.feed('{"inner": {"word": "hel')
    assert parser.preview().inner.model_fields_set == set()
    parser.feed('lo"}')
    assert parser.preview().inner.word == "HELLO"
    parser.feed("}")
    assert parser.finish().inner.word == "HELLO"


def test_types_and_lists_as_targets() -> None:
    """``list[Model]`` previews as a list of instances; plain types work too."""
    parser = OutputParser(compile_output(list[Author]))
    parser.feed('[{"name": "Ann", "email": "a@x"}, {"name": "B')
    preview = parser.preview()
    assert preview[0] == Author(name="Ann", email="a@x")
    assert preview[1].name == "B"
    parser.feed('o", "email": "b@x"}]')
    assert parser.finish() == [Author(name="Ann", email="a@x"), Author(name="Bo", email="b@x")]
    number = OutputParser(compile_output(int))
    number.feed("42")
    assert number.preview() is MISSING
    assert number.finish() == 42


def test_a_held_preview_is_live_and_only_grows() -> None:
    """A preview a caller keeps is the live one: later input only extends it (a copy keeps
    it as it was), and each state is a prefix of the next."""
    parser = OutputParser(compile_output(Author))
    parser.feed('{"name": "A')
    kept = parser.preview()
    frozen = copy.deepcopy(kept)
    states = [frozen.name]
    for ch in "nnabelle":
        parser.feed(ch)
        assert parser.preview() is kept
        states.append(kept.name)
    assert frozen.name == "A" and kept.name == "Annabelle"
    assert all(b.startswith(a) for a, b in itertools.pairwise(states))


# ----------------------------------------------------------------------- schemas

SCHEMA = {
    "type": "object",
    "properties": {
        "rows": {"type": "array", "items": {"$ref": "#/$defs/row"}, "minItems": 1},
        "kind": {"anyOf": [{"type": "object"}, {"type": "integer"}]},
    },
    "required": ["rows"],
    "additionalProperties": False,
    "$defs": {
        "row": {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0}, "s": {"type": "string"}},
            "required": ["n"],
        }
    },
}


def test_a_schema_target_previews_json_checked_part_by_part() -> None:
    """A JSON Schema target shows plain JSON; completed parts are checked by their own
    sub-schema (through ``$ref``), ambiguous ones (``anyOf``) only once complete."""
    parser = OutputParser(compile_output(SCHEMA))
    parser.feed('{"rows": [{"n": 1, "s": "ab')
    assert parser.preview() == {"rows": [{"n": 1, "s": "ab"}]}
    parser.feed('c"}], "kind": {"w": "wi')
    assert "kind" not in parser.preview()
    parser.feed('de"}}')
    assert parser.finish() == {"rows": [{"n": 1, "s": "abc"}], "kind": {"w": "wide"}}


def test_a_schema_violation_fails_at_the_completed_part() -> None:
    """A completed part that breaks its sub-schema raises with the path and the message."""
    parser = OutputParser(compile_output(SCHEMA))
    with pytest.raises(OutputValidationError) as info:
        parser.feed('{"rows": [{"n": -1, ')
    assert info.value.path == ("rows", 0, "n")
    assert "at least 0" in str(info.value)
    closed = OutputParser(compile_output(SCHEMA))
    with pytest.raises(OutputValidationError) as info:
        closed.feed('{"rows": [{"n": 1}], "extra": 1}')
    assert info.value.errors


# -------------------------------------------------------------------- the assembler


def _assemble(target: Any, pieces: list[str], finish: str | None = "stop", **kw: Any) -> Any:
    asm = StreamAssembler(output=target, **kw)
    events = []
    for payload in chat_payloads(pieces, finish):
        events += asm.feed(payload)
    return asm, events


def test_response_output_is_the_validated_value() -> None:
    """``Response.output`` equals ``model_validate_json`` of the text; the text stays text."""
    text = json.dumps(CATALOG)
    asm, events = _assemble(Catalog, [text[i : i + 7] for i in range(0, len(text), 7)])
    response = asm.close()
    assert response.output == Catalog.model_validate_json(text)
    assert response.text == text
    previews_ = [e for e in events if type(e) is OutputPreview]
    assert previews_[-1].complete and not previews_[0].complete
    assert asm.output_preview == response.output


def test_output_that_is_not_json_fails_at_the_first_bad_character() -> None:
    """Prose (or a code fence) before the JSON is an ``OutputSyntaxError`` with the offset;
    without ``early_abort`` the stream still reads to its end and ``close()`` raises."""
    asm, events = _assemble(Catalog, ['{"records": [', "]} and more"])
    assert any(type(e) is toolwire.TextDelta for e in events)
    with pytest.raises(OutputSyntaxError) as info:
        asm.close()
    assert info.value.offset == len('{"records": []} ')
    assert info.value.partial is not None and info.value.partial.text.endswith("more")
    asm, _ = _assemble(Catalog, ["```json\n{}"])
    with pytest.raises(OutputSyntaxError) as info:
        asm.close()
    assert info.value.offset == 0


def test_early_abort_raises_from_feed_at_once() -> None:
    """With ``early_abort=True`` the first bad character raises from ``feed``; later feeds
    and ``close()`` raise the same error."""
    asm = StreamAssembler(output=Catalog, early_abort=True)
    payloads = chat_payloads(['{"records": 5', "}"])
    asm.feed(payloads[0])
    with pytest.raises(OutputValidationError) as first:
        asm.feed(payloads[1])
        asm.feed(payloads[2])
    with pytest.raises(OutputValidationError) as again:
        asm.feed(payloads[-1])
    assert again.value is first.value
    with pytest.raises(OutputValidationError):
        asm.close()


@pytest.mark.parametrize(
    ("finish", "error"),
    [
        ("stop", toolwire.TokenLimitExceeded),
        ("length", toolwire.TokenLimitExceeded),
        (None, toolwire.StreamAborted),
    ],
)
def test_unterminated_output_is_truncation_under_any_finish(finish: Any, error: Any) -> None:
    """Output cut short is a token-limit error (or an abort without the terminal event),
    never a half value."""
    text = json.dumps(CATALOG)
    asm, _ = _assemble(Catalog, [text[: len(text) // 2]], finish)
    with pytest.raises(error) as info:
        asm.close()
    assert not isinstance(info.value, toolwire.OutputError)
    number, _ = _assemble(int, ["12"], finish)
    if finish == "stop":
        assert number.close().output == 12  # a top-level number ends with the stream
    else:
        with pytest.raises(error):
            number.close()


def test_invalid_output_carries_the_validation_message_and_no_value() -> None:
    """JSON that violates the model is an ``OutputValidationError`` with pydantic's errors."""
    asm, _ = _assemble(Author, ['{"name": "Ann"}'])
    with pytest.raises(OutputValidationError) as info:
        asm.close()
    assert info.value.errors[0]["type"] == "missing"
    assert "email" in str(info.value)
    assert isinstance(info.value, toolwire.StreamError) and isinstance(info.value, ValueError)


def test_empty_output_is_an_error_but_a_tool_turn_has_none() -> None:
    """No text at all is an error; a response that calls tools instead has ``output=None``."""
    asm, _ = _assemble(Author, [])
    with pytest.raises(OutputSyntaxError):
        asm.close()
    head = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    call = {"index": 0, "id": "call_1", "function": {"name": "lookup", "arguments": "{}"}}
    asm = StreamAssembler(output=Author)
    asm.feed({**head, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    asm.feed({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    response = asm.close()
    assert response.output is None and response.tool_calls[0].name == "lookup"


def test_output_definition_errors() -> None:
    """``output=`` must be a model, a type or a schema; ``output_tool=`` needs ``output=``."""
    with pytest.raises(toolwire.UsageError, match="output= takes a pydantic model"):
        StreamAssembler(output="Catalog")
    with pytest.raises(toolwire.UsageError, match="output schema"):
        StreamAssembler(output={"type": "nope"})
    with pytest.raises(toolwire.UsageError, match="output_tool= needs output="):
        StreamAssembler(output_tool="answer")


# --------------------------------------------------------------- forced tool output


def _anthropic_tool_stream(arguments: list[str], stop: str = "tool_use") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "usage": {}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "answer", "input": {}},
        },
    ]
    out += [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": a},
        }
        for a in arguments
    ]
    out += [
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    return out


def test_a_forced_tool_call_is_the_output_and_not_a_call() -> None:
    """``output_tool=`` turns that call's arguments into ``Response.output`` with typed
    previews; it is not returned as a call to execute."""
    text = json.dumps({"name": "Ann", "email": "ann@example.com"})
    asm = StreamAssembler(output=Author, output_tool="answer")
    events = []
    previews_ = []
    for payload in _anthropic_tool_stream([text[i : i + 5] for i in range(0, len(text), 5)]):
        for ev in asm.feed(payload):
            events.append(ev)
            if type(ev) is OutputPreview:
                previews_.append(snapshot(ev.preview))
    kinds = {type(e).__name__ for e in events}
    assert "ToolCallStarted" not in kinds and "ToolCallArguments" not in kinds
    assert previews_[0] == ("Author", ())
    assert previews_[-1] == snapshot(Author(name="Ann", email="ann@example.com"))
    response = asm.close()
    assert response.output == Author(name="Ann", email="ann@example.com")
    assert response.tool_calls == [] and response.finish_reason == "stop"
    assert all(p.kind != "call" for p in response.parts)


def test_a_cut_or_missing_forced_tool_call_is_an_error() -> None:
    """A forced tool whose arguments were cut raises; so does a stream that never called it."""
    asm = StreamAssembler(output=Author, output_tool="answer")
    for payload in _anthropic_tool_stream(['{"name": "A'], stop="max_tokens"):
        asm.feed(payload)
    with pytest.raises(toolwire.TokenLimitExceeded):
        asm.close()
    asm = StreamAssembler(output=Author, output_tool="other")
    for payload in _anthropic_tool_stream(["{}"]):
        asm.feed(payload)
    with pytest.raises(OutputSyntaxError):
        asm.close()


def test_a_refusal_stop_reason_is_output_refused() -> None:
    """Anthropic's ``stop_reason: "refusal"`` ends with ``OutputRefused``, a
    ``ContentFiltered``, never output."""
    stream = _anthropic_tool_stream([], stop="refusal")
    asm = StreamAssembler(output=Author)
    for payload in stream:
        asm.feed(payload)
    with pytest.raises(toolwire.OutputRefused) as info:
        asm.close()
    assert isinstance(info.value, toolwire.ContentFiltered)


def test_refusal_text_is_kept_apart_and_raised() -> None:
    """Refusal text (the adapters' ``RefusalPart``) is never text nor output: ``close()``
    raises ``OutputRefused`` carrying it."""
    from toolwire._core.deltas import RefusalPart

    asm = StreamAssembler(output=Author, format="openai-chat")
    real = asm._adapter
    assert real is not None

    class WithRefusal:
        format = "openai-chat"

        def translate(self, payload: dict[str, Any], event: str | None = None) -> list[Any]:
            refusal = payload.get("choices", [{}])[0].get("delta", {}).get("refusal")
            return [RefusalPart(text=refusal)] if refusal else real.translate(payload)

    asm._adapter = WithRefusal()  # type: ignore[assignment]
    asm._fast = None
    head = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    asm.feed({**head, "choices": [{"index": 0, "delta": {"refusal": "I can't "}}]})
    asm.feed({**head, "choices": [{"index": 0, "delta": {"refusal": "help."}}]})
    asm.feed({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    with pytest.raises(toolwire.OutputRefused) as info:
        asm.close()
    assert info.value.refusal == "I can't help."
    assert info.value.partial is not None and info.value.partial.text == ""


# ------------------------------------------------------------ typed tool arguments


def test_typed_tool_arguments_grow_as_a_model_instance() -> None:
    """With ``tools=``, a typed tool's ``ToolCallArguments.typed_preview`` is an instance of
    a model named like the tool's whose ``content`` grows."""
    tools = toolwire.Toolbox()

    @tools.tool
    def write_file(path: str, content: str, mode: int = 0o644) -> None:
        """Write a file."""

    head = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    args = json.dumps({"path": "a.py", "content": "print('hi')\n" * 3})
    asm = StreamAssembler(tools=tools)
    first = {"index": 0, "id": "call_1", "function": {"name": "write_file", "arguments": ""}}
    asm.feed({**head, "choices": [{"index": 0, "delta": {"tool_calls": [first]}}]})
    contents = []
    for i in range(0, len(args), 6):
        frag = {"index": 0, "function": {"arguments": args[i : i + 6]}}
        for ev in asm.feed({**head, "choices": [{"index": 0, "delta": {"tool_calls": [frag]}}]}):
            if type(ev) is toolwire.ToolCallArguments:
                typed = ev.typed_preview
                if "content" in typed.model_fields_set:
                    contents.append(typed.content)
                    assert typed.path == "a.py"
    assert contents[-1] == "print('hi')\n" * 3
    assert all(b.startswith(a) for a, b in itertools.pairwise(contents))
    plain = StreamAssembler()
    plain.feed({**head, "choices": [{"index": 0, "delta": {"tool_calls": [first]}}]})
    frag = {"index": 0, "function": {"arguments": "{}"}}
    (ev,) = plain.feed({**head, "choices": [{"index": 0, "delta": {"tool_calls": [frag]}}]})
    assert ev.typed_preview is None


def test_raw_schema_tools_preview_json() -> None:
    """A raw-schema tool's typed preview is the JSON value, checked part by part."""
    tools = toolwire.Toolbox()
    tools.add(
        "lookup",
        {"type": "object", "properties": {"q": {"type": "string"}}},
        lambda q: q,
        description="Look up.",
    )
    head = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    asm = StreamAssembler(tools=tools)
    call = {"index": 0, "id": "call_1", "function": {"name": "lookup", "arguments": '{"q": "ab'}}
    events = asm.feed({**head, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    (args,) = [e for e in events if type(e) is toolwire.ToolCallArguments]
    assert args.typed_preview == {"q": "ab"}


def test_field_constraints_are_checked_when_a_field_completes() -> None:
    """A ``Field`` constraint fails as soon as its field is complete (early abort)."""

    class Bounded(BaseModel):
        n: int = Field(gt=0)
        rest: str

    asm = StreamAssembler(output=Bounded, early_abort=True)
    payloads = chat_payloads(['{"n": 0', ', "rest": "x"}'])
    asm.feed(payloads[0])
    asm.feed(payloads[1])
    with pytest.raises(OutputValidationError) as info:
        asm.feed(payloads[2])
    assert info.value.path == ("n",)


def test_pydantic_is_only_imported_for_typed_targets() -> None:
    """Importing the assembler still pulls no pydantic (a schema output needs none either)."""
    import subprocess
    import sys

    code = "import sys, toolwire; toolwire.StreamAssembler(); print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert pydantic.VERSION  # the tests themselves use it


@_settings
@given(cases())
def test_a_schema_target_grows_monotonically_to_the_json_value(case: Any) -> None:
    """The same documents read with the model's JSON Schema as the target: every preview is
    a §1 prefix of the next and of the output, which is ``json.loads`` of the text."""
    model, _spec, text, pieces = case
    schema = pydantic.TypeAdapter(model).json_schema()
    seen, output = previews(schema, pieces)
    assert output == json.loads(text)
    for a, b in itertools.pairwise([*seen, output]):
        assert a is MISSING or is_prefix(a, b)


# ------------------------------------------------------------------------------ depth

# The partial-JSON parser's nesting limit; pydantic's JSON reader stops at 201 containers
# and its Python-mode validation at 255 nested models.
PARSER_DEPTH = 1000


class Chain(BaseModel):
    """A recursive model: one container per level."""

    child: Chain | None = None


class Branches(BaseModel):
    """A recursive model through a list: two containers per level."""

    kids: list[Branches] = []


class Checked(BaseModel):
    """A recursive model whose recursive field has its own validator (validated whole)."""

    child: Checked | None = None

    @field_validator("child")
    @classmethod
    def _keep(cls, value: Any) -> Any:
        return value


def _chain(depth: int) -> str:
    """A ``Chain`` document of ``depth`` nested objects."""
    return '{"child": ' * (depth - 1) + "{}" + "}" * (depth - 1)


def _branches(depth: int) -> str:
    """A ``Branches`` document of ``depth`` nested containers (objects and lists)."""
    levels = (depth + 1) // 2
    return '{"kids": [' * (levels - 1) + "{}" + "]}" * (levels - 1)


def _levels(value: Any, field: str) -> int:
    """How many models are nested in ``value`` along ``field`` (iteratively)."""
    count = 1
    while True:
        value = getattr(value, field)
        if isinstance(value, list):
            value = value[0] if value else None
        if value is None:
            return count
        count += 1


def test_a_recursive_output_validates_at_every_depth_the_parser_reads() -> None:
    """A valid recursive document validates at any depth up to the parser's limit, also
    where pydantic's JSON reader refuses it (equal to ``model_validate_json`` where it reads)."""
    for depth, (model, make, levels, field) in itertools.product(
        [1, 199, 200, 201, 202, 250, 256, 999, PARSER_DEPTH],
        [
            (Chain, _chain, lambda d: d, "child"),
            (Branches, _branches, lambda d: (d + 1) // 2, "kids"),
        ],
    ):
        text = make(depth)
        asm, _ = _assemble(model, [text])
        output = asm.close().output
        assert isinstance(output, model) and _levels(output, field) == levels(depth)
        if depth <= 201:
            assert output == model.model_validate_json(text)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([202, 999, PARSER_DEPTH]), st.lists(st.integers(0, 10_000), max_size=30))
def test_a_deep_output_validates_however_the_text_is_split(depth: int, cuts: list[int]) -> None:
    """Deep documents give the same validated output at Hypothesis-chosen splits."""
    text = _chain(depth)
    asm, events = _assemble(Chain, pieces_at(text, cuts))
    output = asm.close().output
    assert _levels(output, "child") == depth
    assert [e for e in events if type(e) is OutputPreview][-1].complete


def test_a_deep_output_validates_fed_character_by_character() -> None:
    """A document deeper than pydantic reads validates fed one character at a time."""
    text = _branches(300)
    asm, _ = _assemble(Branches, list(text))
    assert _levels(asm.close().output, "kids") == 150


def test_the_parsers_limit_is_the_only_depth_limit() -> None:
    """Text output and a forced tool's arguments validate at the parser's limit; one
    container more is the parser's error (an ``OutputSyntaxError`` at that container),
    never a validation error."""
    for model, make in ((Chain, _chain), (Branches, _branches)):
        asm, _ = _assemble(model, [make(PARSER_DEPTH)])
        assert isinstance(asm.close().output, model)
        text = make(PARSER_DEPTH + 1)
        asm, _ = _assemble(model, [text])
        with pytest.raises(OutputSyntaxError, match="max_depth=1000") as info:
            asm.close()
        assert info.value.offset == text.index("{}")  # the innermost object is one too many
    for depth in (PARSER_DEPTH, PARSER_DEPTH + 1):
        text = _chain(depth)
        asm = StreamAssembler(output=Chain, output_tool="answer")
        for payload in _anthropic_tool_stream([text[:4000], text[4000:]]):
            asm.feed(payload)
        if depth == PARSER_DEPTH:
            assert _levels(asm.close().output, "child") == PARSER_DEPTH
        else:
            with pytest.raises(OutputSyntaxError, match="max_depth=1000"):
                asm.close()


def test_a_deep_part_pydantic_validates_whole_is_a_typed_error() -> None:
    """A deep part that only pydantic can validate whole (a field with its own validator)
    validates as deep as pydantic goes and beyond gives an ``OutputValidationError`` that
    says why, never a ``RecursionError``."""
    asm, _ = _assemble(Checked, [_chain(250)])
    assert _levels(asm.close().output, "child") == 250
    asm, _ = _assemble(Checked, [_chain(999)])
    with pytest.raises(OutputValidationError, match="deeper than pydantic validates it whole"):
        asm.close()


@_settings
@given(cases())
def test_validation_part_by_part_equals_pydantics_json_validation(case: Any) -> None:
    """What deep documents get (each container validated from its validated members)
    equals ``model_validate_json`` on the documents pydantic reads."""
    from toolwire._output.shapes import pydantic_shape, validate_by_parts

    model, _spec, text, _pieces = case
    assert validate_by_parts(pydantic_shape(model)[0], json.loads(text)) == (
        model.model_validate_json(text)
    )
