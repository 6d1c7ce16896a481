"""Scenario -> OpenAI Chat Completions chunks (``/v1/chat/completions``), quirk profiles included.

The inverse of the adapter; every seeded choice is drawn from the ``rng`` in a fixed order.
Linear in the response.
"""

from __future__ import annotations

import random
from typing import Any

from .._quirks import PROFILES
from .._scenario_types import ScenarioResponse
from .._wire_writing import EncodeOptions, ErrorReply, Frame, IdStyle, ProviderEncoder, mint, pieces
from .._wire_writing import truncate_arguments as _truncate
from ._openai_shapes import CALL_IDS, function_call, openai_error

__all__ = ["OpenAIChatEncoder"]

_HEX = "0123456789abcdef"


def _usage(response: ScenarioResponse) -> dict[str, Any]:
    usage = response.reported_usage()
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


_FILTER_RESULTS = {
    kind: {"filtered": False, "severity": "safe"}
    for kind in ("hate", "self_harm", "sexual", "violence")
}


class OpenAIChatEncoder(ProviderEncoder):
    """Writes OpenAI Chat Completions streams and bodies (``format = "openai-chat"``)."""

    format = "openai-chat"
    profiles = tuple(p for p in PROFILES.values() if "openai-chat" in p.formats)
    call_ids = CALL_IDS
    response_ids = IdStyle("chatcmpl-", 29)

    # ---------------------------------------------------------------- streaming

    def _frames(  # noqa: C901  the chunk sequence of one response, one branch per wire option
        self, response: ScenarioResponse, rng: random.Random, options: EncodeOptions
    ) -> list[Frame]:
        """The chunks of ``response`` (see the module docstring)."""
        if options.has("unterminated-arguments"):
            response = _truncate(response, rng)
        model = response.model or options.model
        created = 1_700_000_000 + rng.randint(0, 10_000_000)
        fingerprint = mint(rng, "fp_", 10, _HEX)
        usage_on = options.include_usage or options.has("usage-only-last-chunk")
        null_role = options.has("null-role-type")

        def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
            choice: dict[str, Any] = {"index": 0}
            if delta is not None:
                choice["delta"] = delta
            choice["logprobs"] = None
            choice["finish_reason"] = finish
            out: dict[str, Any] = {
                "id": response.response_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": fingerprint,
                "choices": [choice],
            }
            if usage_on:
                out["usage"] = None
            return out

        started = False

        def delta(**fields: Any) -> dict[str, Any]:
            nonlocal started
            out: dict[str, Any] = {}
            if not started:
                out["role"] = "assistant"
            elif null_role:
                out["role"] = None
            out.update(fields)
            started = True
            return out

        frames: list[Frame] = []
        azure = options.has("content-filter-chunks")
        if azure:
            frames.append(Frame(self._prompt_filter_chunk()))
        chunks = options.has("mistral-content-chunks")
        for piece in pieces(response.reasoning, rng, 1, 8):
            if chunks:
                thinking = {"type": "thinking", "thinking": [{"type": "text", "text": piece}]}
                frames.append(Frame(chunk(delta(content=[thinking]))))
            else:
                frames.append(Frame(chunk(delta(content=None, reasoning_content=piece))))
        if response.refusal:
            # a structured output the model declined: the refusal channel, no content
            frames.append(Frame(chunk(delta(content=None, refusal=""))))
            for piece in pieces(response.refusal, rng, 1, 8):
                frames.append(Frame(chunk(delta(refusal=piece))))
        if response.text or not (response.tool_calls or response.refusal):
            if not started:
                frames.append(Frame(chunk(delta(content="", refusal=None))))
            for piece in pieces(response.text, rng, 1, 8):
                content: Any = [{"type": "text", "text": piece}] if chunks else piece
                frames.append(Frame(chunk(delta(content=content))))
        if azure and frames:
            position = rng.randint(1, len(frames))
            frames.insert(position, Frame(self._filter_chunk(rng)))

        entries, deferred = self._call_entries(response, rng, options)
        for group in entries:
            if not started:
                frames.append(Frame(chunk(delta(content=None, tool_calls=group))))
            else:
                frames.append(Frame(chunk(delta(tool_calls=group))))

        kind = response.finish_kind
        if kind == "length":
            reason = "length"
        elif response.tool_calls and kind == "tool_calls" and not options.has("stop-finish"):
            reason = "tool_calls"
        else:
            reason = "stop"
        finish_delta: dict[str, Any] = {"tool_calls": deferred} if deferred else {}
        if options.has("done-marker-only"):
            if deferred:
                frames.append(Frame(chunk(finish_delta)))
        else:
            frames.append(Frame(chunk(finish_delta, reason), terminal=True))
        if azure:
            frames.append(Frame(self._filter_chunk(rng)))
        if usage_on:
            last: dict[str, Any] = {
                "id": response.response_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": fingerprint,
                "choices": [],
                "usage": _usage(response),
            }
            frames.append(Frame(last, terminal=True))
        frames.append(Frame("[DONE]", terminal=True))
        return frames

    def _call_entries(
        self, response: ScenarioResponse, rng: random.Random, options: EncodeOptions
    ) -> tuple[list[list[dict[str, Any]]], list[dict[str, Any]]]:
        """The ``tool_calls`` lists of the call chunks, in order, and the entries deferred
        to the finish chunk (``args-in-last-chunk``)."""
        has = options.has
        per_call: list[list[dict[str, Any]]] = []
        deferred: list[dict[str, Any]] = []
        for i, call in enumerate(response.tool_calls):
            if has("index-from-1"):
                index = i + 1
            elif has("all-index-0") or has("fresh-id-per-fragment"):
                index = 0
            else:
                index = i
            fragments = pieces(call.raw_arguments, rng, 1, 8)
            header: dict[str, Any] = {"index": index, "id": call.id, "type": "function"}
            if has("extra-content-signatures"):
                signature = mint(rng, "sig-", 24)
                header["extra_content"] = {"google": {"thought_signature": signature}}
            if has("whole-call-chunk"):
                header["function"] = {"name": call.name, "arguments": call.raw_arguments}
                entries = [header]
            elif has("name-after-arguments"):
                header["function"] = {"arguments": fragments[0] if fragments else ""}
                named = {"index": index, "function": {"name": call.name, "arguments": ""}}
                entries = [header, named]
                entries += [self._fragment(index, f, call, rng, options) for f in fragments[1:]]
            else:
                header["function"] = {"name": call.name, "arguments": ""}
                entries = [header]
                if has("args-in-last-chunk"):
                    deferred.append({"index": index, "function": {"arguments": call.raw_arguments}})
                else:
                    alt = CALL_IDS.mint(rng)
                    entries += [
                        self._fragment(index, f, call, rng, options, alt) for f in fragments
                    ]
            if has("no-index"):
                for entry in entries:
                    entry.pop("index", None)
                for entry in deferred:
                    entry.pop("index", None)
            per_call.append(entries)

        sequential = any(p.sequential for p in options.profiles)
        order = self._schedule(per_call, rng, sequential=sequential)
        groups: list[list[dict[str, Any]]] = []
        pairs = has("same-index-in-chunk")
        position = 0
        while position < len(order):
            call_index, entry = order[position]
            group = [entry]
            position += 1
            if (
                pairs
                and position < len(order)
                and order[position][0] == call_index
                and "id" not in entry
                and rng.random() < 0.6
            ):
                group.append(order[position][1])
                position += 1
            groups.append(group)
        return groups, deferred

    @staticmethod
    def _fragment(
        index: int,
        text: str,
        call: Any,
        rng: random.Random,
        options: EncodeOptions,
        alt_id: str = "",
    ) -> dict[str, Any]:
        has = options.has
        entry: dict[str, Any] = {"index": index}
        function: dict[str, Any] = {"arguments": text}
        if has("repeated-ids"):
            entry.update(id=call.id, type="function")
            function = {"name": call.name, "arguments": text}
        elif has("fresh-id-per-fragment"):
            entry["id"] = mint(rng, "call_", 24)
        elif has("split-ids"):
            entry["id"] = alt_id
        elif has("empty-id-continuations"):
            entry.update(id="", type="function")
        if has("repeated-names") and "name" not in function:
            function = {"name": call.name, "arguments": text}
        if has("null-role-type") and "type" not in entry:
            entry["type"] = None
        entry["function"] = function
        return entry

    @staticmethod
    def _schedule(
        per_call: list[list[dict[str, Any]]], rng: random.Random, *, sequential: bool
    ) -> list[tuple[int, dict[str, Any]]]:
        """Entries in streaming order: call by call, or interleaved at seeded points (a
        call's entries keep their order; call k + 1 starts only after call k started)."""
        if sequential or len(per_call) < 2:
            return [(i, e) for i, entries in enumerate(per_call) for e in entries]
        queues = [list(entries) for entries in per_call]
        started = 0
        out: list[tuple[int, dict[str, Any]]] = []
        while True:
            open_calls = [i for i in range(started) if queues[i]]
            if started < len(queues) and (not open_calls or rng.random() < 0.3):
                choice = started
                started += 1
            elif open_calls:
                choice = rng.choice(open_calls)
            else:
                break
            out.append((choice, queues[choice].pop(0)))
        return out

    @staticmethod
    def _prompt_filter_chunk() -> dict[str, Any]:
        return {
            "choices": [],
            "created": 0,
            "id": "",
            "model": "",
            "object": "",
            "prompt_filter_results": [
                {"prompt_index": 0, "content_filter_results": dict(_FILTER_RESULTS)}
            ],
        }

    @staticmethod
    def _filter_chunk(rng: random.Random) -> dict[str, Any]:
        start = rng.randint(0, 200)
        return {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": None,
                    "content_filter_offsets": {
                        "check_offset": start,
                        "start_offset": start,
                        "end_offset": start + rng.randint(1, 200),
                    },
                    "content_filter_results": dict(_FILTER_RESULTS),
                }
            ],
            "created": 0,
            "id": "",
            "model": "",
            "object": "",
        }

    # ------------------------------------------------------------- non-streaming

    def _body(self, response: ScenarioResponse, options: EncodeOptions) -> dict[str, Any]:
        """A ``chat.completion`` object (usage always included, as OpenAI does)."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": (
                response.text
                if response.text or not (response.tool_calls or response.refusal)
                else None
            ),
            "refusal": response.refusal or None,
        }
        if response.reasoning:
            message["reasoning_content"] = response.reasoning
        if response.tool_calls:
            message["tool_calls"] = [function_call(call) for call in response.tool_calls]
        kind = response.finish_kind
        reason = "length" if kind == "length" else "tool_calls" if kind == "tool_calls" else "stop"
        if options.has("stop-finish") and reason == "tool_calls":
            reason = "stop"
        return {
            "id": response.response_id,
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": response.model or options.model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": reason}
            ],
            "usage": _usage(response),
            "system_fingerprint": "fp_simulated",
        }

    def error_event(self, *, rng: random.Random, options: EncodeOptions) -> Frame:
        """What OpenAI sends when a stream fails mid-way: a bare ``{"error": ...}`` chunk."""
        return Frame(
            {
                "error": {
                    "message": "The server had an error while processing your request.",
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            }
        )

    def error_body(self, status: int, message: str) -> ErrorReply:
        """OpenAI's HTTP error reply."""
        return openai_error(status, message)
