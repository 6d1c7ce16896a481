"""The provider table: one unit per wire format, listed once in a literal table, with no
registration. A toy provider defined here alone works end to end through a table the test
passes (``formats=``): read (StreamAssembler, definitions, tool results) and written (the
simulator serves it at its own path with its encoder, request check and quirk profile);
names, aliases and suggestions; detection order; and every adapter's fragment fast paths
mean exactly what its ``translate`` means."""

from __future__ import annotations

import importlib
import itertools
import json
import pkgutil
import random
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from adapter_support import GeneralPathAssembler
from corpus_support import NAMES, event_key, stream_payloads
from toolwire import Outcome, StreamAssembler, Toolbox, UnknownFormat, UsageError, tool_results
from toolwire._core.deltas import (
    CallDelta,
    Delta,
    FinishDelta,
    Fragment,
    MetaDelta,
    TextPart,
    payload_fields,
)
from toolwire._core.messages import ResultText, string_arguments, turn_parts
from toolwire._core.providers import Formats, Provider
from toolwire._core.response import PartialCall, Response
from toolwire._providers import FORMATS
from toolwire._providers._messages import turn_messages
from toolwire._tools.definitions import tool_definitions
from toolwire._tools.toolbox import Tool
from toolwire.testing import PROFILES, Profile, ScenarioResponse, Simulator, encoder_for
from toolwire.testing._endpoints import Endpoint
from toolwire.testing._formats import WIRES, WireFormat, WireFormats
from toolwire.testing._request_reading import ServedCalls
from toolwire.testing._wire_writing import (
    EncodeOptions,
    ErrorReply,
    Frame,
    Framing,
    check_profiles,
    mint,
    with_ids,
)
from toolwire.testing._wire_writing import pieces as split_text

# ----------------------------------------------------------------- a toy wire format


class ToyAdapter:
    """NDJSON lines ``{"toy": verb, ...}``: ``hello`` (id), ``say`` (text), ``call`` (opens
    call ``n``), ``args`` (a fragment), ``end`` (ends call ``n``), ``bye`` (the finish)."""

    format = "toy-wire"
    fragment_start = False

    def __init__(self) -> None:
        self.open: set[int] = set()

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[Delta]:
        """The deltas of one toy line."""
        verb = payload["toy"]
        if verb == "hello":
            return [MetaDelta(response_id=payload["id"])]
        if verb == "say":
            return [TextPart(text=payload["text"])]
        if verb == "call":
            self.open.add(payload["n"])
            return [
                CallDelta(id=payload["id"], index=payload["n"], name=payload["name"], start=True)
            ]
        if verb == "args":
            return [CallDelta(index=payload["n"], arguments=payload["text"], start=False)]
        if verb == "end":
            self.open.discard(payload["n"])
            return [CallDelta(index=payload["n"], start=False, end=True)]
        if verb == "bye":
            return [
                FinishDelta(
                    raw=payload["why"], kind="stop" if payload["why"] == "done" else "length"
                )
            ]
        return []

    def fragment(self, payload: dict[str, Any]) -> Fragment | None:
        """An ``args`` line of an open call."""
        if payload.get("toy") == "args" and payload.get("n") in self.open and payload["text"]:
            return None, payload["n"], payload["text"]
        return None


def _toy_definition(tool: Tool, strict: bool) -> dict[str, Any]:
    return {"toy_tool": tool.name, "schema": tool.parameters}


def _toy_results(results: Sequence[ResultText]) -> list[dict[str, Any]]:
    return [
        {"toy": "result", "for": r.outcome.call_id, "text": r.text, "failed": r.error}
        for r in results
    ]


def _toy_user(text: str) -> dict[str, Any]:
    return {"toy": "user", "text": text}


def _toy_turn(response: Response) -> list[dict[str, Any]]:
    calls = [
        {"id": call.id, "name": call.name, "args": string_arguments(call)}
        for _, call in turn_parts(response)
        if call is not None
    ]
    return [{"toy": "turn", "said": response.text, "calls": calls}]


# ------------------------------------------- the toy format's simulator side: writing

WHOLE_ARGS = Profile(
    "toy-whole-args",
    ("toy-wire",),
    (),
    "the toy server",
    "each call's arguments in one args line",
    sequential=True,
)


class ToyEncoder:
    """Writes toy NDJSON lines, the inverse of ``ToyAdapter``, and declares one quirk
    profile of its own."""

    format = "toy-wire"
    framing: Framing = "ndjson"
    text_arguments = True
    profiles: tuple[Profile, ...] = (WHOLE_ARGS,)

    def ids(self, response: ScenarioResponse, *, rng: random.Random) -> ScenarioResponse:
        """Mint ``t...`` call ids and a ``toy-...`` response id where none is given."""
        return with_ids(response, lambda call: mint(rng, "t", 6), lambda: mint(rng, "toy-", 8))

    def stream(
        self, response: ScenarioResponse, *, rng: random.Random, options: EncodeOptions
    ) -> list[Frame]:
        """hello, say pieces, per call: call, args pieces (one with the profile), end; bye."""
        check_profiles(self.format, options)
        lines: list[dict[str, Any]] = [{"toy": "hello", "id": response.response_id}]
        lines += [{"toy": "say", "text": p} for p in split_text(response.text, rng, 1, 6)]
        for n, call in enumerate(response.tool_calls):
            lines.append({"toy": "call", "n": n, "id": call.id, "name": call.name})
            raw = call.raw_arguments
            parts = [raw] if options.has("toy-whole-args") else split_text(raw, rng, 1, 6)
            lines += [{"toy": "args", "n": n, "text": p} for p in parts if p]
            lines.append({"toy": "end", "n": n})
        why = "length" if response.finish_kind == "length" else "done"
        return [*map(Frame, lines), Frame({"toy": "bye", "why": why}, terminal=True)]

    def body(self, response: ScenarioResponse, *, options: EncodeOptions) -> dict[str, Any]:
        """The whole turn in one object."""
        calls = [{"id": c.id, "name": c.name, "args": c.raw_arguments} for c in response.tool_calls]
        return {"toy": "whole", "id": response.response_id, "text": response.text, "calls": calls}

    def error_event(self, *, rng: random.Random, options: EncodeOptions) -> Frame:
        """A line the toy adapter ignores: the stream then ends without its bye."""
        return Frame({"toy": "oops"})

    def error_body(self, status: int, message: str) -> ErrorReply:
        """``{"toy_error": message}``."""
        return ErrorReply(status, {"toy_error": message})


def _toy_check(body: Mapping[str, Any], served: ServedCalls) -> str | None:
    """A toy result answers a call of the last toy turn before it."""
    calls: set[str] = set()
    for message in body.get("messages", []):
        if message.get("toy") == "turn":
            calls = {call["id"] for call in message["calls"]}
        elif message.get("toy") == "result" and message.get("for") not in calls:
            return f"toy result for an unknown call {message.get('for')!r}"
    return None


TOY = Provider(
    name="toy-wire",
    aliases=("toy",),
    detect=lambda payload, event: "toy" in payload,
    adapter=lambda choice: ToyAdapter(),
    definition=_toy_definition,
    tool_results=_toy_results,
    assistant_turn=_toy_turn,
    user_message=_toy_user,
)

TOY_WIRE = WireFormat(
    provider=TOY,
    encoder=ToyEncoder,
    check_request=_toy_check,
    endpoints=(Endpoint("/toy/v1/say"),),
    base_path="/toy/v1",
)

TOY_LINES: list[dict[str, Any]] = [
    {"toy": "hello", "id": "toy-1"},
    {"toy": "say", "text": "On it."},
    {"toy": "call", "n": 0, "id": "t1", "name": "move"},
    {"toy": "args", "n": 0, "text": '{"to": "Ly'},
    {"toy": "args", "n": 0, "text": 'on", "km": 4'},
    {"toy": "args", "n": 0, "text": "6}"},
    {"toy": "end", "n": 0},
    {"toy": "bye", "why": "done"},
]
TOY_BODY = b"".join(json.dumps(line).encode() + b"\n" for line in TOY_LINES)


TOY_FORMATS = Formats(TOY, *FORMATS)
"""The built-in formats and the toy, asked first: what the toy's tests pass as ``formats``."""
TOY_WIRES = WireFormats(TOY_WIRE, *WIRES)
"""The simulator's built-in formats and the toy's side: ``Simulator(formats=TOY_WIRES)``."""


def _events(
    data: bytes, cuts: Sequence[int], make: type[StreamAssembler] = StreamAssembler
) -> tuple[list[Any], Any]:
    asm = make(formats=TOY_FORMATS)
    events: list[Any] = []
    bounds = [0, *sorted(set(cuts)), len(data)]
    for a, b in itertools.pairwise(bounds):
        events.extend(event_key(e) for e in asm.feed_bytes(data[a:b]))
    return events, asm.close()


def test_a_provider_defined_in_a_test_works_end_to_end() -> None:
    """A toy provider in a table the test passes is detected, assembled, defined, answered
    and repeated like a built-in one: adding a provider is one module."""
    whole, response = _events(TOY_BODY, [])
    assert response.format == "toy-wire"
    assert response.text == "On it." and response.response_id == "toy-1"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("t1", "move", {"to": "Lyon", "km": 46})
    ]
    assert _events(TOY_BODY, list(range(1, len(TOY_BODY))))[0] == whole
    assert _events(TOY_BODY, [], GeneralPathAssembler)[0] == whole

    tools = Toolbox()

    @tools.tool
    def move(to: str, km: int) -> str:
        """Move somewhere."""
        return f"{to}:{km}"

    assert tool_definitions(tools, "toy", formats=TOY_FORMATS)[0]["toy_tool"] == "move"
    outcome = Outcome(call_id="t1", name="move", status="completed", value="Lyon:46")
    turn = turn_messages(response, [outcome], "toy-wire", formats=TOY_FORMATS)
    assert turn == [
        {
            "toy": "turn",
            "said": "On it.",
            "calls": [{"id": "t1", "name": "move", "args": '{"to": "Lyon", "km": 46}'}],
        },
        {"toy": "result", "for": "t1", "text": "Lyon:46", "failed": False},
    ]


def _assemble(reply: httpx.Response) -> Response:
    asm = StreamAssembler(formats=TOY_FORMATS)
    for chunk in reply.iter_bytes():
        asm.feed_bytes(chunk)
    return asm.close()


def test_the_simulator_serves_a_provider_defined_in_a_test() -> None:
    """In a simulator table the test passes, with its encoder, request check, endpoint and
    quirk profile, the toy provider is served at the path it declares: its bytes assemble
    (httpx -> StreamAssembler) to the scripted turns, the next request built by toolwire's
    own messages passes its check, a wrong one gets its 400, and its profile reshapes its
    stream only."""
    assert isinstance(TOY_WIRES.encoder_for("toy"), ToyEncoder)
    assert TOY_WIRES.profiles["toy-whole-args"] is WHOLE_ARGS
    with Simulator(seed=3, formats=TOY_WIRES) as sim:
        url = sim.base_url("toy") + "/say"
        assert url == f"{sim.url}/toy/v1/say"
        assert httpx.get(sim.url).json()["toolwire-simulator"]["toy-wire"] == f"{sim.url}/toy/v1"
        sim.add_response(text="On it.", tool_calls=[("move", {"to": "Lyon", "km": 46})])
        sim.add_response(
            tool_calls=[("move", {"to": "Paris", "km": 465}), ("move", {"to": "Nice"})],
            profile="toy-whole-args",
        )
        sim.add_response(text="Arrived.")
        messages: list[dict[str, Any]] = [{"toy": "user", "text": "go"}]
        with httpx.Client(timeout=10) as client:
            with client.stream("POST", url, json={"stream": True, "messages": messages}) as reply:
                assert reply.headers["content-type"] == "application/x-ndjson"
                first = _assemble(reply)
            assert first.format == "toy-wire" and first.text == "On it."
            assert [(c.name, c.arguments) for c in first.tool_calls] == [
                ("move", {"to": "Lyon", "km": 46})
            ]
            served = sim.requests[-1].response
            assert served is not None and first.response_id == served.response_id
            done = Outcome(call_id=first.tool_calls[0].id, name="move", status="completed")
            messages += turn_messages(first, [done], "toy-wire", formats=TOY_FORMATS)

            raw = client.post(url, json={"stream": True, "messages": messages}).content
            lines = [json.loads(line) for line in raw.splitlines()]
            assert [line["n"] for line in lines if line["toy"] == "args"] == [0, 1]  # the profile
            second = _events(raw, [])[1]
            assert [c.arguments for c in second.tool_calls] == [
                {"to": "Paris", "km": 465},
                {"to": "Nice"},
            ]

            wrong = [*messages, {"toy": "result", "for": "t-none", "text": "x", "failed": False}]
            refused = client.post(url, json={"stream": True, "messages": wrong})
            assert refused.status_code == 400
            assert refused.json() == {"toy_error": "toy result for an unknown call 't-none'"}

            whole = client.post(url, json={"messages": messages}).json()  # no "stream": a body
            assert (whole["toy"], whole["text"], whole["calls"]) == ("whole", "Arrived.", [])
        toy_requests = [r.served for r in sim.requests if r.format == "toy-wire"]
        assert toy_requests == ["response", "response", "refused", "response"]
        sim.add_response(text="Hi.", profile="toy-whole-args")
        ask = {"stream": True, "messages": []}
        chat = httpx.post(f"{sim.base_url('openai')}/chat/completions", json=ask)
        assert chat.status_code == 500  # OpenAI chat is routed as before, and refuses the profile
        assert (sim.requests[-1].format, sim.requests[-1].served) == ("openai-chat", "unencodable")
    with pytest.raises(UnknownFormat):
        encoder_for("toy")  # the built-in table is unchanged
    assert "toy-whole-args" not in PROFILES
    with Simulator(seed=3) as sim, pytest.raises(UnknownFormat):
        sim.base_url("toy")


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(0, len(TOY_BODY)), max_size=12))
def test_the_toy_stream_gives_the_same_events_at_any_split(cuts: list[int]) -> None:
    """Split anywhere, the toy stream gives the events it gives whole."""
    assert _events(TOY_BODY, cuts) == _events(TOY_BODY, [])


def test_the_toy_provider_gets_the_per_call_end_rule() -> None:
    """A toy call opened with start=True and never ended is not final (StreamAborted)."""
    asm = StreamAssembler(format="toy", formats=TOY_FORMATS)
    for line in TOY_LINES:
        if line["toy"] != "end":
            asm.feed(line)
    with pytest.raises(toolwire.StreamAborted):
        asm.close()


def test_the_built_in_table_does_not_know_the_toy() -> None:
    """Without the test's table the toy's name is unknown and detection does not claim its
    lines: a table passed once changes nothing for anyone else."""
    with pytest.raises(UnknownFormat):
        StreamAssembler(format="toy-wire")
    with pytest.raises(toolwire.StreamFormatError):
        StreamAssembler().feed(TOY_LINES[0])
    outcome = Outcome(call_id="t1", name="move", status="completed", value="x")
    with pytest.raises(UnknownFormat):
        tool_results([outcome], "toy")
    assert "toy-wire" not in FORMATS.names()


def test_a_name_or_alias_is_in_a_table_once() -> None:
    """A table that names a format, alias or done-marker name twice is a caller mistake
    (UsageError), for the readers' table and the simulator's alike."""
    with pytest.raises(UsageError, match="toy-wire"):
        Formats(TOY, TOY)
    clash = Provider(
        name="other",
        aliases=("openai",),
        detect=lambda payload, event: False,
        adapter=lambda choice: ToyAdapter(),
        definition=_toy_definition,
        tool_results=_toy_results,
        assistant_turn=_toy_turn,
        user_message=_toy_user,
    )
    with pytest.raises(UsageError, match="openai"):
        Formats(clash, *FORMATS)
    with pytest.raises(UsageError, match="toy"):
        WireFormats(TOY_WIRE, TOY_WIRE)


def test_detection_follows_the_order_of_the_table() -> None:
    """Detection asks the providers in the order the table lists them: a provider that
    claims every payload claims the first one only where it comes first."""
    greedy = Provider(
        name="greedy",
        detect=lambda payload, event: True,
        adapter=lambda choice: ToyAdapter(),
        definition=_toy_definition,
        tool_results=_toy_results,
        assistant_turn=_toy_turn,
        user_message=_toy_user,
    )
    chunk = {"id": "c", "model": "m", "choices": []}
    assert Formats(greedy, *FORMATS).detect(chunk).name == "greedy"
    assert Formats(*FORMATS, greedy).detect(chunk).name == "openai-chat"
    assert Formats(*FORMATS, greedy).detect({"toy": "hello"}).name == "greedy"


# ------------------------------------------------------------------ the built-ins


def test_every_provider_module_is_one_unit_of_the_table() -> None:
    """Each public subpackage of toolwire._providers defines the PROVIDER of its format, the
    literal table lists exactly those seven, in detection order, and the simulator's table
    writes each of them, in the same order."""
    package = importlib.import_module("toolwire._providers")
    modules = [m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")]
    found = {importlib.import_module(f"toolwire._providers.{m}").PROVIDER.name: m for m in modules}
    assert {name.replace("-", "_") for name in found} == set(modules)
    assert FORMATS.names() == (
        "openai-responses",
        "anthropic",
        "cohere",
        "openai-chat",
        "gemini",
        "ollama",
        "bedrock-converse",
    )
    for name in FORMATS.names():
        entry = FORMATS.provider(name)
        assert entry is importlib.import_module(f"toolwire._providers.{found[name]}").PROVIDER
        assert entry.adapter(0).format == name
        assert WIRES.wire(name).provider is entry
        assert WIRES.encoder_for(name).format == name
    assert WIRES.names() == FORMATS.names()


def test_what_only_responses_has_is_on_its_provider() -> None:
    """Custom tools and the calls the client runs are attributes of the Responses provider
    alone, so Toolbox and early abort read them from the table: an approval request waits
    for a person, a function call has no custom input, a custom call's input is its text."""
    responses = FORMATS.provider("openai-responses")
    others = [p for p in FORMATS if p is not responses]
    assert all(
        p.custom_definition is None and p.custom_input is None and not p.client_run_calls
        for p in others
    )
    assert FORMATS.client_run_kinds() == (
        "apply_patch_call",
        "computer_call",
        "local_shell_call",
        "mcp_approval_request",
        "shell_call",
    )
    approval = FORMATS.client_run_call("mcp_approval_request")
    assert approval is not None and approval.approval and approval.tool == "mcp_approval"
    shell = FORMATS.client_run_call("shell_call")
    assert shell is not None and not shell.approval and shell.tool == "shell"
    assert FORMATS.client_run_call("function_call") is None
    assert responses.custom_input is not None
    meta = {"type": "custom_tool_call", "kind": "custom_tool_call"}
    custom = PartialCall(
        id="c", name="sh", raw_arguments=r'"echo \"hi\"\nl', index=0, ended=False, metadata=meta
    )
    assert responses.custom_input(custom) == 'echo "hi"\nl'
    plain = PartialCall(
        id="f", name="f", raw_arguments='{"a": 1}', index=1, ended=True, metadata={}
    )
    assert responses.custom_input(plain) is None


def test_reading_imports_no_encoder() -> None:
    """``import toolwire`` imports no provider for a side effect; reading a stream loads the
    table with the seven formats and no encoder, request check or writing primitive (they
    are the simulator's, in ``toolwire.testing``)."""
    code = (
        "import json, sys, toolwire; "
        "before = sorted(m for m in sys.modules if m.startswith('toolwire')); "
        "toolwire.StreamAssembler(format='anthropic'); "
        "print(json.dumps([before, sorted(m for m in sys.modules if m.startswith('toolwire'))]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, after = json.loads(out.stdout)
    assert [m for m in before if m.startswith("toolwire._providers")] == []
    assert {f"toolwire._providers.{n.replace('-', '_')}" for n in FORMATS.names()} <= set(after)
    simulator_side = (".encoder", ".request_checks", "._wire_writing", "._scenario_types")
    assert [m for m in after if m.endswith(simulator_side) or ".testing" in m] == []


def test_openai_is_an_alias_of_openai_chat() -> None:
    """``"openai"`` names openai-chat everywhere; the canonical name is what is reported."""
    asm = StreamAssembler(format="openai")
    assert asm.format == "openai-chat"
    asm.feed(
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    )
    assert asm.close().format == "openai-chat"
    outcome = Outcome(call_id="c1", name="f", status="completed", result_json="1")
    assert tool_results([outcome], "openai") == tool_results([outcome], "openai-chat")
    tools = Toolbox()

    @tools.tool
    def f() -> int:
        """One."""
        return 1

    assert tools.definitions("openai") == tools.definitions("openai-chat")


@pytest.mark.parametrize(
    ("name", "suggested"),
    [
        ("openai-chatt", "openai-chat"),
        ("anthropik", "anthropic"),
        ("bedrock", "bedrock-converse"),
        ("Gemini", "gemini"),
    ],
)
def test_unknown_formats_suggest_the_closest_names(name: str, suggested: str) -> None:
    """UnknownFormat names the closest known formats, wherever a format is named."""
    outcome = Outcome(call_id="c1", name="f", status="completed", result_json="1")
    for attempt in (
        lambda: StreamAssembler(format=name),
        lambda: tool_results([outcome], name),
        lambda: Toolbox().definitions(name),
    ):
        with pytest.raises(UnknownFormat, match=f"did you mean '{suggested}'"):
            attempt()


def test_fallback_detection_comes_after_every_provider_said_no() -> None:
    """A bare error payload is OpenAI-compatible only because no format claims it first;
    an SSE event name starting with response. picks Responses when the payload says nothing."""
    detect = FORMATS.detect
    assert detect({"error": {"message": "m"}}).name == "openai-chat"
    assert detect({"error": {"message": "m"}, "candidates": []}).name == "gemini"
    assert detect({"sequence_number": 1}, "response.created").name == "openai-responses"
    with pytest.raises(toolwire.StreamFormatError):
        detect({"sequence_number": 1})


# --------------------------------------------- the fast paths mean what translate means


def _provider_of(items: list[tuple[str | None, Any]]) -> Provider:
    event, payload = next((e, p) for e, p in items if p != "[DONE]")
    return FORMATS.detect(payload, event)


def _same_fragment(hit: Fragment, deltas: list[Delta], start: bool | None) -> bool:
    """``deltas`` (from translate) are exactly the one fragment ``hit`` stands for."""
    ref, index, text = hit
    if len(deltas) != 1 or not isinstance(deltas[0], CallDelta):
        return False
    d = deltas[0]
    return (
        (d.ref or d.id) == ref
        and d.index == index
        and d.arguments == text
        and d.start is start
        and d.name is None
        and d.final_arguments is None
        and not d.end
        and not d.metadata
    )


def _lockstep(
    entry: Provider, items: list[tuple[str | None, Any]], objects: list[Any] | None = None
) -> int:
    """Run a fast and a slow adapter side by side; return how many fragments hit."""
    fast, slow = entry.adapter(0), entry.adapter(0)
    start = getattr(fast, "fragment_start", None)
    hits = 0
    for position, (event, payload) in enumerate(items):
        if payload == "[DONE]":
            continue
        hit = None
        if objects is not None:
            fields = payload_fields(objects[position])
            if fields is not None:
                hit = getattr(fast, "fragment", lambda p: None)(fields)
        elif event != "error":
            hit = getattr(fast, "fragment", lambda p: None)(payload)
        want = slow.translate(payload, event)
        if hit is None:
            assert fast.translate(payload, event) == want
        else:
            hits += 1
            assert _same_fragment(hit, want, start), (payload, hit, want)
    return hits


def test_every_fragment_hit_is_what_translate_gives_on_the_corpus(corpus_dir: Path) -> None:
    """For every payload of every recording, a fast-path hit equals translate's one delta,
    and the fast paths do fire (they carry the big calls)."""
    hits = {
        name: _lockstep(_provider_of(stream_payloads(name)), stream_payloads(name))
        for name in NAMES
    }
    assert sum(hits.values()) > 100
    firing = {_provider_of(stream_payloads(n)).name for n, h in hits.items() if h}
    assert firing >= {"openai-chat", "anthropic", "openai-responses", "bedrock-converse", "cohere"}


def _sdk_objects(name: str, items: list[tuple[str | None, Any]]) -> list[Any] | None:
    entry = _provider_of(items)
    if entry.name == "openai-chat":
        from openai._models import construct_type
        from openai.types.chat import ChatCompletionChunk

        kind: Any = ChatCompletionChunk
    elif entry.name == "openai-responses":
        from openai._models import construct_type
        from openai.types.responses import ResponseStreamEvent

        kind = ResponseStreamEvent
    elif entry.name == "anthropic":
        from anthropic._models import construct_type
        from anthropic.types import RawMessageStreamEvent

        kind = RawMessageStreamEvent
    else:
        return None
    return [None if p == "[DONE]" else construct_type(type_=kind, value=p) for _, p in items]


def test_every_sdk_object_fragment_hit_is_what_translate_gives(corpus_dir: Path) -> None:
    """For the SDKs' event objects built from every openai and anthropic recording, a hit
    of the one fast path reading the object's fields equals translate's one delta."""
    total = 0
    for name in NAMES:
        items = stream_payloads(name)
        objects = _sdk_objects(name, items)
        if objects is not None:
            total += _lockstep(_provider_of(items), items, objects)
    assert total > 100


_NULLISH = st.sampled_from([None, "", "x", 0, {}])


_chat_chunks = given(
    extra=st.dictionaries(
        st.sampled_from(
            ["content", "role", "refusal", "reasoning_content", "reasoning", "function_call"]
        ),
        _NULLISH,
    ),
    entry_extra=st.dictionaries(st.sampled_from(["id", "type"]), _NULLISH),
    function_extra=st.dictionaries(st.sampled_from(["name"]), _NULLISH),
    top=st.dictionaries(
        st.sampled_from(["usage", "x_groq", "error", "system_fingerprint"]), _NULLISH
    ),
    finish=st.sampled_from([None, "stop"]),
    identity=st.dictionaries(
        st.sampled_from(["id", "model", "created"]), st.sampled_from([None, "", "c", 0, 7])
    ),
    primed=st.booleans(),
)


def _chat_chunk(
    extra: dict[str, Any],
    entry_extra: dict[str, Any],
    function_extra: dict[str, Any],
    top: dict[str, Any],
    finish: str | None,
    identity: dict[str, Any],
) -> dict[str, Any]:
    entry = {"index": 0, "function": {"arguments": "abc", **function_extra}, **entry_extra}
    delta = {"tool_calls": [entry], **extra}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {**identity, "choices": [choice], **top}


def _chat_adapter(primed: bool) -> Any:
    adapter = FORMATS.provider("openai-chat").adapter(0)
    if primed:
        adapter.translate({"id": "c", "model": "m", "choices": []})
    return adapter


@settings(max_examples=300, deadline=None)
@_chat_chunks
def test_chat_fragment_hits_only_where_translate_gives_one_fragment(
    extra: dict[str, Any],
    entry_extra: dict[str, Any],
    function_extra: dict[str, Any],
    top: dict[str, Any],
    finish: str | None,
    identity: dict[str, Any],
    primed: bool,
) -> None:
    """Chat chunks with any mix of null, empty or filled members around one fragment, with
    or without the response's identity, before or after it was first given: the fast path
    hits only when translate gives exactly that fragment (content null included; minimal
    chunks, which never give an identity, included)."""
    adapter = _chat_adapter(primed)
    payload = _chat_chunk(extra, entry_extra, function_extra, top, finish, identity)
    hit = adapter.fragment(payload)
    if hit is None:
        return
    assert _same_fragment(hit, adapter.translate(payload), None)


@settings(max_examples=300, deadline=None)
@_chat_chunks
def test_chat_fragment_reads_sdk_chunks_as_their_dump(
    extra: dict[str, Any],
    entry_extra: dict[str, Any],
    function_extra: dict[str, Any],
    top: dict[str, Any],
    finish: str | None,
    identity: dict[str, Any],
    primed: bool,
) -> None:
    """The same chunks as the openai SDK's ChatCompletionChunk objects (unknown members
    kept as pydantic extras): the one fast path, reading the objects' fields, hits only
    when translate gives exactly that fragment for the object's dump."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk

    adapter = _chat_adapter(primed)
    payload = _chat_chunk(extra, entry_extra, function_extra, top, finish, identity)
    obj: Any = construct_type(type_=ChatCompletionChunk, value=payload)
    fields = payload_fields(obj)
    assert fields is not None
    hit = adapter.fragment(fields)
    if hit is None:
        return
    dumped = obj.model_dump(mode="json", exclude_unset=True, by_alias=True, warnings=False)
    assert _same_fragment(hit, adapter.translate(dumped), None)
