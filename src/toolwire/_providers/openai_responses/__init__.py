"""The OpenAI Responses API (and compatible servers): the ``"openai-responses"`` provider.

Calls are correlated by ``item_id`` and ended by ``output_item.done``; ``sequence_number``
must increase. O(size of the event) per event.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..._core import deltas as d
from ..._core.content import Image, Part, data_url
from ..._core.messages import Call, ResultText, string_arguments, turn_parts, wire_name
from ..._core.providers import ClientRunCall, Provider
from ..._core.response import PartialCall, Response
from ..._errors import StreamFormatError
from .._definitions import parameters_for
from .._format_parts import text_user_message
from .._openai_shapes import error_message, openai_usage

if TYPE_CHECKING:
    from ..._core.providers import ToolSpec


_CALL_ITEMS = ("function_call", "custom_tool_call")

# the built-in tool calls the client runs and answers with an output item of their own:
# the call's name, and the item key whose value is its arguments
# (https://platform.openai.com/docs/api-reference/responses/object)
CLIENT_RUN_CALLS: dict[str, tuple[str, str]] = {
    "computer_call": ("computer", "action"),
    "shell_call": ("shell", "action"),
    "local_shell_call": ("local_shell", "action"),
    "apply_patch_call": ("apply_patch", "operation"),
    # an MCP server's call waiting for the client's approval: its id is the call id, its
    # arguments ``{"server_label", "name", "arguments"}`` (the MCP call's, as text)
    "mcp_approval_request": ("mcp_approval", ""),
}
MCP_APPROVAL_KEYS = ("server_label", "name", "arguments")

# xAI reports the tools it ran on its own servers as ``custom_tool_call`` items (with a
# ``status``), under an open set of names: X search, ``view_x_video``, ``view_image``,
# ``browse_page``, MCP tools named ``{server_label}.{tool_name}``...
# (https://docs.x.ai/developers/tools/tool-usage-details). By xAI's documentation only a
# ``function_call`` item is the client's to run; every other call item was run by xAI
# (https://docs.x.ai/docs/guides/tools/overview#identifying-the-client-side-tool-call).
# What marks xAI's item on the wire is its call id: ``xs_call_<digits>`` in recorded grok
# streams (``xs_call-`` seen too; xAI's pages do not document the prefix), where OpenAI's
# ids start ``call_``. Neither the name (a client custom tool may have any) nor the
# ``status`` (OpenAI's custom tool calls carry one too when returned by its API) tells the
# two apart.
XAI_SERVER_CALL_IDS = ("xs_call_", "xs_call-")


def server_run(item: dict[str, Any]) -> bool:
    """Whether a call item is one the provider already ran (an xAI server-side tool: a
    ``custom_tool_call`` whose ``call_id`` starts ``xs_call``): it is echoed as an item,
    never handed out as a call."""
    if item.get("type") != "custom_tool_call":
        return False
    call_id = item.get("call_id")
    return isinstance(call_id, str) and call_id.startswith(XAI_SERVER_CALL_IDS)


# the events whose ``delta`` is text of one kind: the answer, a refusal (the model declined,
# structured outputs: refusal text, never text or output), the reasoning or its summary
_TEXT_PARTS: dict[str, type[d.TextPart | d.RefusalPart | d.ReasoningPart]] = {
    "response.output_text.delta": d.TextPart,
    "response.refusal.delta": d.RefusalPart,
    "response.reasoning_summary_text.delta": d.ReasoningPart,
    "response.reasoning_text.delta": d.ReasoningPart,
}


def _bad(payload: Any, what: str) -> StreamFormatError:
    return StreamFormatError(f"openai-responses payload: {what}", payload=payload)


def _opt_str(payload: Any, obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if type(value) is not str:
        raise _bad(payload, f"{key!r} is not a string")
    return value or None


def _obj(payload: Any, obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    if type(value) is not dict:
        raise _bad(payload, f"{key!r} is not an object")
    return value


def responses_usage(usage: dict[str, Any]) -> d.UsageDelta:
    """Read a Responses ``usage`` object (input/output/total tokens and their details)."""
    return openai_usage(usage, input_key="input_tokens", output_key="output_tokens")


def _escaped(text: str) -> str:
    """``text`` as the inside of a JSON string literal (no quotes)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def custom_input(raw: str) -> str:
    """A custom tool call's input text from its assembled arguments (the JSON string
    literal its deltas build, ``"echo \\"hi\\"``): the whole text when the literal is
    complete, else the text as far as it arrived (an escape cut in half is left out).
    Arguments that are not a string literal are returned as they are."""
    if not raw.startswith('"'):
        return raw
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = None
    if isinstance(value, str):
        return value
    # an unterminated literal: close it, dropping at most a cut escape (``\\u12``)
    for cut in range(min(len(raw) - 1, 6) + 1):
        try:
            value = json.loads(raw[: len(raw) - cut] + '"')
        except json.JSONDecodeError:
            continue
        if isinstance(value, str):
            # half a surrogate pair (``\\ud83d`` without its low half) is a cut escape too
            return value[:-1] if value and "\ud800" <= value[-1] <= "\udbff" else value
    return raw


class OpenAIResponsesAdapter:
    """Translate Responses API streaming events into deltas."""

    format = "openai-responses"

    __slots__ = ("_seq", "_server")

    fragment_start = False  # an argument delta continues a started item

    def __init__(self) -> None:
        self._seq = -1
        self._server: set[str] = set()  # item ids of calls the provider ran itself

    def fragment(self, payload: dict[str, Any]) -> d.Fragment | None:
        """Fast path: ``(item_id, output_index, text)`` when ``payload`` (or the ``openai``
        SDK's ``ResponseFunctionCallArgumentsDeltaEvent``, read through
        :func:`~toolwire._core.deltas.payload_fields`) is one non-empty
        ``response.function_call_arguments.delta``, else ``None``; it checks and records
        the ``sequence_number`` exactly as :meth:`translate` does."""
        if payload.get("type") != "response.function_call_arguments.delta":
            return None
        text = payload.get("delta")
        ref = payload.get("item_id")
        index = payload.get("output_index")
        if type(text) is not str or not text:
            return None
        if (ref is not None and type(ref) is not str) or (
            index is not None and type(index) is not int
        ):
            return None
        seq = payload.get("sequence_number")
        if seq is not None:
            if type(seq) is not int or seq <= self._seq:
                return None
            self._seq = seq
        return ref or None, index, text

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[d.Delta]:
        """Turn one event into deltas (``[]`` for event types that carry nothing here)."""
        kind = payload.get("type", event)
        if type(kind) is not str:
            raise _bad(payload, "'type' is not a string")
        seq = payload.get("sequence_number")
        if seq is not None:
            if type(seq) is not int:
                raise _bad(payload, "'sequence_number' is not an integer")
            if seq <= self._seq:
                raise _bad(payload, f"sequence_number {seq} after {self._seq}")
            self._seq = seq

        if kind == "response.function_call_arguments.delta":
            delta = payload.get("delta")
            if type(delta) is not str:
                raise _bad(payload, "'delta' is not a string")
            return [self._continue(payload, delta)]
        part = _TEXT_PARTS.get(kind)
        if part is not None:
            delta = payload.get("delta")
            if type(delta) is not str:
                raise _bad(payload, "'delta' is not a string")
            return [part(text=delta)] if delta else []
        if kind.startswith("response.custom_tool_call_input."):
            return self._custom_input(payload, kind)
        if kind == "response.function_call_arguments.done":
            args = payload.get("arguments")
            if type(args) is not str:
                raise _bad(payload, "'arguments' is not a string")
            ref = _opt_str(payload, payload, "item_id")
            return [
                d.CallDelta(ref=ref, index=self._index(payload), final_arguments=args, start=False)
            ]
        if kind == "response.output_item.added":
            return self._item(payload, done=False)
        if kind == "response.output_item.done":
            return self._item(payload, done=True)
        if kind in ("response.created", "response.in_progress"):
            response = _obj(payload, payload, "response")
            return [self._meta(payload, response)]
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return self._terminal(payload, kind)
        if kind == "error":
            error = payload.get("error", payload)
            return [d.ErrorDelta(message=error_message(error), error=error)]
        return []

    def _custom_input(self, payload: dict[str, Any], kind: str) -> list[d.Delta]:
        """A custom tool call's input delta (JSON-escaped into its string literal) or its
        restatement; nothing for a call the provider ran (its done item has the input)."""
        if self._server and payload.get("item_id") in self._server:
            return []
        if kind == "response.custom_tool_call_input.delta":
            delta = payload.get("delta")
            if type(delta) is not str:
                raise _bad(payload, "'delta' is not a string")
            return [self._continue(payload, _escaped(delta))]
        if kind != "response.custom_tool_call_input.done":
            return []
        text = payload.get("input")
        if type(text) is not str:
            raise _bad(payload, "'input' is not a string")
        ref = _opt_str(payload, payload, "item_id")
        final = json.dumps(text, ensure_ascii=False)
        return [
            d.CallDelta(ref=ref, index=self._index(payload), final_arguments=final, start=False)
        ]

    @staticmethod
    def _index(payload: dict[str, Any]) -> int | None:
        index = payload.get("output_index")
        if index is not None and type(index) is not int:
            raise _bad(payload, "'output_index' is not an integer")
        return index

    def _continue(self, payload: dict[str, Any], fragment: str) -> d.CallDelta:
        ref = _opt_str(payload, payload, "item_id")
        return d.CallDelta(ref=ref, index=self._index(payload), arguments=fragment, start=False)

    def _meta(self, payload: Any, response: dict[str, Any]) -> d.MetaDelta:
        created = response.get("created_at")
        return d.MetaDelta(
            response_id=_opt_str(payload, response, "id"),
            model=_opt_str(payload, response, "model"),
            created=str(created) if type(created) in (int, float) else None,
        )

    def _item(self, payload: dict[str, Any], *, done: bool) -> list[d.Delta]:
        item = _obj(payload, payload, "item")
        item_type = item.get("type")
        if item_type in CLIENT_RUN_CALLS:
            return [self._client_run(payload, item, item_type, done)]
        if item_type not in _CALL_ITEMS:
            return self._output_item(payload, item, item_type, done)
        if server_run(item):
            item_id = item.get("id")
            if isinstance(item_id, str):
                self._server.add(item_id)
            return [d.PartDelta(kind="item", data=item)] if done else []
        item_id = _opt_str(payload, item, "id")
        call_id = _opt_str(payload, item, "call_id")
        name = _opt_str(payload, item, "name")
        index = self._index(payload)
        custom = item_type == "custom_tool_call"
        args = item.get("input" if custom else "arguments")
        if args is not None and type(args) is not str:
            raise _bad(payload, "the item's arguments are not a string")
        metadata: dict[str, Any] = {}
        if item_id:
            metadata["item_id"] = item_id
        if custom:
            metadata["type"] = metadata["kind"] = "custom_tool_call"
        fragment, final = "", None
        if not done:
            # the item as added: its (usually empty) arguments are the first fragment
            fragment = '"' + _escaped(args or "") if custom else (args or "")
        elif args is not None:
            # the item as done restates the whole arguments
            final = json.dumps(args, ensure_ascii=False) if custom else args
        return [
            d.CallDelta(
                id=call_id,
                ref=item_id,
                index=index,
                name=name,
                arguments=fragment,
                final_arguments=final,
                start=not done,
                end=done,
                metadata=metadata,
            )
        ]

    def _client_run(
        self, payload: dict[str, Any], item: dict[str, Any], item_type: str, done: bool
    ) -> d.CallDelta:
        """A built-in call the client runs (computer, shell, local shell, apply_patch): a
        call of that kind whose arguments are the item's action (or operation), stated
        whole by the done item, which is what the next request echoes."""
        item_id = _opt_str(payload, item, "id")
        name, key = CLIENT_RUN_CALLS[item_type]
        metadata: dict[str, Any] = {"kind": item_type}
        if item_id:
            metadata["item_id"] = item_id
        final = None
        call_id = _opt_str(payload, item, "call_id")
        if item_type == "mcp_approval_request":
            call_id = item_id  # what the mcp_approval_response names
            value: Any = {k: item[k] for k in MCP_APPROVAL_KEYS if k in item}
            if done:
                metadata["item"] = item
                final = json.dumps(value, ensure_ascii=False)
        elif done:
            metadata["item"] = item
            value = item.get(key)
            if value is None and item_type == "computer_call" and "actions" in item:
                value = {"actions": item["actions"]}  # the batched form of computer use
            if value is not None and type(value) is not dict:
                raise _bad(payload, f"the {item_type}'s {key!r} is not an object")
            final = json.dumps(value or {}, ensure_ascii=False)
        return d.CallDelta(
            id=call_id,
            ref=item_id,
            index=self._index(payload),
            name=name,
            final_arguments=final,
            start=not done,
            end=done,
            metadata=metadata,
        )

    @staticmethod
    def _output_item(
        payload: dict[str, Any], item: dict[str, Any], item_type: Any, done: bool
    ) -> list[d.Delta]:
        """The part an output item that is not a call opens or completes."""
        if item_type == "message":
            if done:
                # the whole item (its ``phase``, each part's annotations) is what is echoed
                return [d.PartDelta(kind="text", data={"item": item})]
            item_id = _opt_str(payload, item, "id")
            data: dict[str, Any] = {"id": item_id} if item_id else {}
            phase = item.get("phase")
            if isinstance(phase, str):
                data["phase"] = phase
            return [d.PartDelta(kind="text", start=True, data=data)]
        if item_type == "reasoning":
            if not done:
                item_id = _opt_str(payload, item, "id")
                data = {"id": item_id} if item_id else {}
                return [d.PartDelta(kind="reasoning", start=True, data=data)]
            return [d.PartDelta(kind="reasoning", data={"item": item})]
        if done and isinstance(item_type, str):
            return [d.PartDelta(kind="item", data=item)]
        return []

    def _terminal(self, payload: dict[str, Any], kind: str) -> list[d.Delta]:
        response = _obj(payload, payload, "response")
        out: list[d.Delta] = [self._meta(payload, response)]
        usage = response.get("usage")
        if usage is not None:
            if type(usage) is not dict:
                raise _bad(payload, "'usage' is not an object")
            out.append(responses_usage(usage))
        status = response.get("status")
        raw = status if type(status) is str else kind.rpartition(".")[2]
        finish: d.FinishKind = "stop"
        if kind == "response.incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if type(details) is dict else None
            # max_output_tokens, or an unknown reason: the output is not complete
            finish = "content_filter" if reason == "content_filter" else "length"
            raw = reason if type(reason) is str else raw
        elif kind == "response.failed":
            error = response.get("error")
            out.append(d.ErrorDelta(message=error_message(error), error=error))
            finish = "error"
        out.append(d.FinishDelta(raw=raw, kind=finish))
        return out


# ------------------------------------------------------------------- the provider


def adapter(choice: int) -> OpenAIResponsesAdapter:
    """A fresh adapter for one stream (``choice`` is ignored: a response has one output)."""
    return OpenAIResponsesAdapter()


def detect(payload: dict[str, Any], event: str | None) -> bool:
    """Whether a first payload is a Responses event (``response.*``, or a flat error)."""
    kind = payload.get("type")
    if kind == "error":
        return type(payload.get("error")) is not dict  # Anthropic nests its error object
    return isinstance(kind, str) and kind.startswith("response.")


def _detect_event(payload: dict[str, Any], event: str | None) -> bool:
    return isinstance(event, str) and event.startswith("response.")


def definition(tool: ToolSpec, strict: bool) -> dict[str, Any]:
    """``{"type": "function", "name", "description", "parameters", "strict"}`` (``strict``
    always present, as the Responses API expects)."""
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": parameters_for(tool, strict),
        "strict": strict,
    }


def tool_results(results: Sequence[ResultText]) -> list[dict[str, Any]]:
    """One input item per result, by the kind of call it answers: ``{"type":
    "function_call_output", "call_id", "output"}`` for a function call, ``{"type":
    "custom_tool_call_output", "call_id", "output"}`` for a custom tool call; a rich
    result's ``output`` is a list of ``input_text``, ``input_image`` and ``input_file``
    items (their data as ``data:`` URLs)."""
    items = []
    for r in results:
        if r.kind == "mcp_approval_request":
            items.extend(_approval_answer(r))
            continue
        answer = _CLIENT_RUN_ANSWERS.get(r.kind)
        if answer is not None:
            items.append(answer(r))
            continue
        items.append(
            {
                "type": _OUTPUT_ITEMS.get(r.kind, "function_call_output"),
                "call_id": r.outcome.call_id,
                "output": r.text if r.parts is None else _rich_output(r.parts),
            }
        )
    return items


# the input item that answers each kind of call
_OUTPUT_ITEMS = {"function": "function_call_output", "custom_tool_call": "custom_tool_call_output"}


def _computer_output(r: ResultText) -> dict[str, Any]:
    """``computer_call_output``: the result's first image (an ``Image``, or a ``data:``
    / ``https:`` URL string) as the screenshot; a result without one sends none."""
    screenshot: dict[str, Any] = {"type": "computer_screenshot"}
    image = next((p for p in r.parts or () if isinstance(p, Image)), None)
    if image is not None:
        screenshot["image_url"] = data_url(image)
    elif not r.error and r.text.startswith(("data:image/", "https://")):
        screenshot["image_url"] = r.text
    return {"type": "computer_call_output", "call_id": r.outcome.call_id, "output": screenshot}


def _shell_output(r: ResultText) -> dict[str, Any]:
    """``shell_call_output``: a result that is a list of ``{"stdout", "stderr",
    "outcome"}`` chunks as it is, else one chunk: the text as stdout (exit code 0), or
    as stderr for an error (exit code 1; a timeout's outcome is ``{"type": "timeout"}``)."""
    value = r.outcome.value
    if (
        not r.error
        and isinstance(value, list)
        and value
        and all(isinstance(c, dict) and "outcome" in c for c in value)
    ):
        output: list[dict[str, Any]] = value
    else:
        outcome: dict[str, Any] = {"type": "exit", "exit_code": 1 if r.error else 0}
        if r.outcome.status == "timed_out":
            outcome = {"type": "timeout"}
        out, err = ("", r.text) if r.error else (r.text, "")
        output = [{"stdout": out, "stderr": err, "outcome": outcome}]
    return {"type": "shell_call_output", "call_id": r.outcome.call_id, "output": output}


def _local_shell_output(r: ResultText) -> dict[str, Any]:
    """``local_shell_call_output``: ``id`` is the call's ``call_id``, ``output`` the text."""
    return {"type": "local_shell_call_output", "id": r.outcome.call_id, "output": r.text}


def _apply_patch_output(r: ResultText) -> dict[str, Any]:
    """``apply_patch_call_output``: ``status`` ``completed`` or ``failed``, the text as
    ``output``."""
    status = "failed" if r.error else "completed"
    item = {"type": "apply_patch_call_output", "call_id": r.outcome.call_id, "status": status}
    if r.text:
        item["output"] = r.text
    return item


def _approval_answer(r: ResultText) -> list[dict[str, Any]]:
    """``mcp_approval_response``: ``approve`` true once approved (the handler ran), false
    with the ``reason`` when denied or failed; nothing while the decision is pending."""
    status = r.outcome.status
    if status in ("awaiting_approval", "in_progress"):
        return []
    item: dict[str, Any] = {
        "type": "mcp_approval_response",
        "approval_request_id": r.outcome.call_id,
        "approve": not r.error,
    }
    if r.error:
        item["reason"] = r.outcome.error if status == "denied" and r.outcome.error else r.text
    return [item]


_CLIENT_RUN_ANSWERS = {
    "computer_call": _computer_output,
    "shell_call": _shell_output,
    "local_shell_call": _local_shell_output,
    "apply_patch_call": _apply_patch_output,
}


def _rich_output(parts: tuple[Part, ...]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, str):
            items.append({"type": "input_text", "text": part})
        elif isinstance(part, Image):
            items.append({"type": "input_image", "image_url": data_url(part), "detail": "auto"})
        else:
            filename = part.filename or "file"
            items.append({"type": "input_file", "filename": filename, "file_data": data_url(part)})
    return items


def assistant_turn(response: Response) -> list[dict[str, Any]]:
    """The response's output items, in order, as input items for the next request.

    - a call: ``{"type": "function_call", "id": item id, "call_id", "name",
      "arguments"}`` (a custom tool call: ``{"type": "custom_tool_call", "id", "call_id",
      "name", "input"}``); a rejected call's arguments are the raw text that arrived;
    - a reasoning item: the item exactly as ``output_item.done`` gave it (with its
      ``encrypted_content`` when the request asked for it), else ``{"type": "reasoning",
      "id", "summary"}`` from what streamed; reasoning without an item id (compatible
      servers' plain reasoning text) is not sent back;
    - a message: the item exactly as ``output_item.done`` gave it (its ``phase``, every
      content part with its ``annotations``); a message that never got its done event:
      ``{"type": "message", "role": "assistant", "id", "status": "completed", "content":
      [{"type": "output_text", "text", "annotations": []}]}`` (with the ``phase`` the
      added item had), or ``{"role": "assistant", "content": text}`` when the server gave
      no item id;
    - any other output item (built-in tool calls) exactly as it came.
    """
    items: list[dict[str, Any]] = []
    for part, call in turn_parts(response):
        if call is not None:
            items.append(_call_item(call))
        elif part.kind == "text":
            item_id = part.data.get("id")
            item = part.data.get("item")
            if isinstance(item, dict) and item.get("id") == item_id and _says(item, part.text):
                items.append(dict(item))
            elif item_id:
                content = [{"type": "output_text", "text": part.text, "annotations": []}]
                message = {
                    "type": "message",
                    "role": "assistant",
                    "id": item_id,
                    "status": "completed",
                    "content": content,
                }
                phase = item.get("phase") if isinstance(item, dict) else None
                if phase or part.data.get("phase"):
                    message["phase"] = phase or part.data["phase"]
                items.append(message)
            elif part.text:
                items.append({"role": "assistant", "content": part.text})
        elif part.kind == "reasoning":
            item = part.data.get("item")
            if isinstance(item, dict):
                items.append(dict(item))
            elif part.data.get("id"):
                summary = [{"type": "summary_text", "text": part.text}] if part.text else []
                items.append({"type": "reasoning", "id": part.data["id"], "summary": summary})
        elif part.kind == "item":
            items.append(dict(part.data))
    return items


def _says(item: dict[str, Any], text: str) -> bool:
    """Whether a done message item's ``output_text`` parts hold the text that streamed
    (a server that restates nothing in its done item is rebuilt from the stream)."""
    content = item.get("content")
    if not isinstance(content, list):
        return False
    said = "".join(
        c["text"]
        for c in content
        if isinstance(c, dict) and c.get("type") == "output_text" and isinstance(c.get("text"), str)
    )
    return said == text


def _call_item(call: Call) -> dict[str, Any]:
    item: dict[str, Any]
    kind = call.metadata.get("kind")
    if kind in CLIENT_RUN_CALLS:
        done = call.metadata.get("item")
        if isinstance(done, dict):
            return dict(done)  # the built-in call exactly as its done item gave it
        key = CLIENT_RUN_CALLS[kind][1]
        arguments = getattr(call, "arguments", None) or {}
        if kind == "mcp_approval_request":
            return {"type": kind, "id": call.id, **arguments}
        item = {"type": kind, "call_id": call.id, "status": "completed"}
        item[key] = arguments
        if call.metadata.get("item_id"):
            item["id"] = call.metadata["item_id"]
        return item
    if call.metadata.get("type") == "custom_tool_call":
        text: Any = getattr(call, "arguments", None)
        item = {"type": "custom_tool_call", "call_id": call.id, "name": wire_name(call.name)}
        item["input"] = text if isinstance(text, str) else custom_input(call.raw_arguments)
    else:
        item = {
            "type": "function_call",
            "call_id": call.id,
            "name": wire_name(call.name),
            "arguments": string_arguments(call),
        }
    item_id = call.metadata.get("item_id")
    if item_id:
        item["id"] = item_id
    return item


def custom_call_input(call: PartialCall) -> str | None:
    """A custom tool call's input text as far as it arrived (see :func:`custom_input`), or
    ``None`` when ``call`` is not a custom tool call."""
    if call.metadata.get("type") != "custom_tool_call":
        return None
    return custom_input(call.raw_arguments)


def custom_definition(tool: ToolSpec) -> dict[str, Any]:
    """A custom tool's definition: ``{"type": "custom", "name", "description", "format"}``
    (its parameters are ``{"type": "custom", "format": ...}``, see ``Toolbox.custom``)."""
    return {
        "type": "custom",
        "name": tool.name,
        "description": tool.description,
        "format": dict(tool.parameters["format"]),
    }


user_message = text_user_message

PROVIDER = Provider(
    name="openai-responses",
    detect=detect,
    adapter=adapter,
    definition=definition,
    tool_results=tool_results,
    assistant_turn=assistant_turn,
    user_message=user_message,
    detect_fallback=_detect_event,
    custom_definition=custom_definition,
    custom_input=custom_call_input,
    client_run_calls={
        kind: ClientRunCall(tool, approval=kind == "mcp_approval_request")
        for kind, (tool, _) in CLIENT_RUN_CALLS.items()
    },
)
