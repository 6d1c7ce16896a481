"""What the OpenAI Responses API refuses in a request's input (the simulator's 400).

Every ``function_call_output.call_id`` matches a ``function_call`` in the input, or in the
output of the ``previous_response_id`` (the simulator remembers the calls of the responses
it served; an id it never served is refused as the API does); an ``output`` given as a
list holds ``input_text``, ``input_image`` and ``input_file`` items, with valid data URLs;
every ``custom_tool_call``, ``computer_call``, ``shell_call``, ``local_shell_call`` and
``apply_patch_call`` in the input is answered by an output item of its own type with its
``call_id`` (and no such output answers nothing); an ``mcp_approval_response`` names an
``mcp_approval_request`` of the input.
O(size of the body).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._request_reading import ServedCalls
from ._media import data_url_refusal

__all__ = ["check_request"]


def check_request(body: Mapping[str, Any], served: ServedCalls) -> str | None:
    """The provider's refusal message for ``body`` (see the module docstring), or
    ``None`` when it would accept it."""
    items = body.get("input")
    if not isinstance(items, list):
        return None  # a plain string input carries no tool outputs
    known: set[str] = set()
    previous = body.get("previous_response_id")
    if isinstance(previous, str):
        calls = served(previous)
        if calls is None:
            return f"Previous response with id '{previous}' not found."
        known |= calls
    known |= _function_call_ids(items)
    refused = _answered_items(items)
    if refused is not None:
        return refused
    return _check_function_outputs(items, known)


def _function_call_ids(items: list[Any]) -> set[str]:
    """The ``call_id`` of each ``function_call`` in the input."""
    return {
        item["call_id"]
        for item in items
        if isinstance(item, Mapping)
        and item.get("type") == "function_call"
        and isinstance(item.get("call_id"), str)
    }


def _check_function_outputs(items: list[Any], known: set[str]) -> str | None:
    """The refusal of a ``function_call_output`` that answers no known call, or whose
    ``output`` is refused, else ``None``."""
    for item in items:
        if isinstance(item, Mapping) and item.get("type") == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in known:
                return f"No tool call found for function call output with call_id {call_id}."
            refused = _check_output(item.get("output"))
            if refused is not None:
                return refused
    return None


# the calls the client answers with an output item of its own type, and that type
_ANSWERED_BY = {
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "shell_call": "shell_call_output",
    "local_shell_call": "local_shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
}


def _answered_items(items: list[Any]) -> str | None:
    """The refusal when a built-in or custom call in the input has no output item of its
    own type with its ``call_id`` (or an output answers no such call), else ``None``.
    An ``mcp_approval_response`` must name an ``mcp_approval_request`` of the input."""
    calls: dict[str, str] = {}
    requests: set[Any] = set()
    for item in items:
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind in _ANSWERED_BY:
            calls[item.get("call_id")] = _ANSWERED_BY[kind]
        elif kind == "mcp_approval_request":
            requests.add(item.get("id"))
    answered: set[Any] = set()
    for item in items:
        refused = _check_answer(item, calls, requests, answered)
        if refused is not None:
            return refused
    for call_id, output in calls.items():
        if call_id not in answered:
            return f"No tool output found for {output.removesuffix('_output')} {call_id}."
    return None


_OUTPUTS = frozenset(_ANSWERED_BY.values())


def _check_answer(
    item: Any, calls: dict[str, str], requests: set[Any], answered: set[Any]
) -> str | None:
    """The refusal of an output item that answers no call of its type, or of an
    ``mcp_approval_response`` to no request; adds the call an output answers to
    ``answered``."""
    kind = item.get("type") if isinstance(item, Mapping) else None
    if kind in _OUTPUTS:
        call_id = item.get("call_id")
        if kind == "local_shell_call_output" and call_id is None:
            call_id = item.get("id")  # the API names the call by ``id`` here
        if calls.get(call_id) != kind:
            return f"No tool call found for {kind} with call_id {call_id}."
        answered.add(call_id)
    elif kind == "mcp_approval_response" and item.get("approval_request_id") not in requests:
        return (
            "No MCP approval request found for approval_request_id "
            f"{item.get('approval_request_id')}."
        )
    return None


def _check_output(output: Any) -> str | None:
    """The refusal of a ``function_call_output.output`` (a string, or a list of input
    content items), or ``None``."""
    if isinstance(output, str):
        return None
    if not isinstance(output, list):
        return "Invalid type for 'input[].output': expected a string or an array."
    for item in output:
        kind = item.get("type") if isinstance(item, Mapping) else None
        check = _OUTPUT_ITEM_CHECKS.get(kind)
        if check is None:
            return (
                f"Invalid value: {kind!r}. Supported values are: 'input_text', "
                "'input_image', and 'input_file'."
            )
        refused = check(item)
        if refused is not None:
            return refused
    return None


def _check_input_text(item: Mapping[str, Any]) -> str | None:
    """An ``input_text`` item has its ``text``."""
    if not isinstance(item.get("text"), str):
        return "Missing required parameter: 'input[].output[].text'."
    return None


def _check_input_image(item: Mapping[str, Any]) -> str | None:
    """An ``input_image`` item names a file or gives a valid data URL and detail."""
    if "file_id" in item:
        return None
    refused = data_url_refusal(item.get("image_url"), "input[].output[].image_url")
    if refused is not None:
        return refused
    if item.get("detail", "auto") not in ("auto", "low", "high"):
        return "Invalid value for 'input[].output[].detail'."
    return None


def _check_input_file(item: Mapping[str, Any]) -> str | None:
    """An ``input_file`` item names a file, or gives a filename and a valid data URL."""
    if "file_id" in item or "file_url" in item:
        return None
    if not isinstance(item.get("filename"), str) or not item["filename"]:
        return "Missing required parameter: 'input[].output[].filename'."
    return data_url_refusal(item.get("file_data"), "input[].output[].file_data")


# the checks of a ``function_call_output``'s list items, by their ``type``
_OUTPUT_ITEM_CHECKS: dict[Any, Callable[[Mapping[str, Any]], str | None]] = {
    "input_text": _check_input_text,
    "input_image": _check_input_image,
    "input_file": _check_input_file,
}
