"""Approval before execution, on the existing record of every store.

A call that needs approval keeps an approval record under ``approval/{idempotency key}``:
``unknown`` with the call's details while it awaits a decision, then ``completed``
(approved) or ``failed`` (denied) by ``resolve``, which accepts only an ``unknown`` record:
of racing decisions exactly one wins. The call itself runs under its own key, as any call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal

from .._errors import ApprovalError, SettingsError, UsageError
from ..stores._protocol import Record
from ..stores._requests import GetRequest, Request, ResolveRequest, identifier

__all__ = ["PendingCall"]

PREFIX = "approval/"
AWAITING = "the call is waiting for a person to approve it; it has not run"
_VERSION = 1

DecisionStatus = Literal["awaiting", "approved", "denied", "recording", "invalid"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingCall:
    """A call stored as awaiting approval: ``key`` is what ``approve`` and ``deny`` take
    (the call's idempotency key), ``name`` its tool, ``arguments`` the validated arguments
    the model gave, ``call_id`` the provider's call id."""

    key: str
    name: str
    arguments: Any
    call_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What an approval record says: ``arguments`` are an approved edit (``None``: the
    model's), ``reason`` the denial's reason (or why the record is unusable)."""

    status: DecisionStatus
    arguments: dict[str, Any] | None = None
    reason: str | None = None
    details: dict[str, Any] | None = None


def record_key(key: str) -> str:
    """The store key of the approval record of the call whose idempotency key is ``key``."""
    return PREFIX + key


def call_key(stored: str) -> str | None:
    """The idempotency key an approval record's store key belongs to (``None``: not one)."""
    return stored[len(PREFIX) :] if stored.startswith(PREFIX) else None


def details_text(name: str, call_id: str, arguments: Any, parameters: Any) -> str:
    """The JSON kept while the call awaits: what a decider (or the CLI) needs to see and
    to check an edit against."""
    return json.dumps(
        {
            "version": _VERSION,
            "name": name,
            "call_id": call_id,
            "arguments": arguments,
            "parameters": parameters,
        },
        ensure_ascii=False,
        separators=(",", ":"),
        sort_keys=True,
    )


def _details(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("version"), int) else None


def read_decision(record: Record) -> Decision:
    """The decision an approval record holds."""
    details = _details(record.result)
    if record.status == "in_progress":
        return Decision(status="recording", details=details)
    if record.status == "unknown":
        return Decision(status="awaiting", details=details)
    if record.status == "failed":
        return Decision(status="denied", reason=record.error or "no reason given", details=details)
    if details is None or details.get("decision") != "approved":
        return Decision(status="invalid", reason="the call's approval record is not readable")
    edit = details.get("approved_arguments")
    if edit is not None and not isinstance(edit, dict):
        return Decision(status="invalid", reason="the approved arguments are not an object")
    return Decision(status="approved", arguments=edit, details=details)


def view_status(record: Record) -> str:
    """How the operator's listing shows an approval record."""
    return {
        "awaiting": "awaiting_approval",
        "approved": "approved",
        "denied": "denied",
        "recording": "awaiting_approval",
        "invalid": "approved",
    }[read_decision(record).status]


def pending_call(key: str, record: Record) -> PendingCall | None:
    """The pending call an awaiting record describes (``None``: decided, or no details
    were stored because the worker that parked it died in between)."""
    decision = read_decision(record)
    details = decision.details
    if decision.status not in ("awaiting", "recording") or details is None:
        return None
    return PendingCall(
        key=key,
        name=str(details.get("name")),
        arguments=details.get("arguments"),
        call_id=str(details.get("call_id")),
    )


# Checks an edit: (tool name, the stored parameters schema, the arguments) -> the validated
# arguments, raising ArgumentsInvalid. The executor checks with its tool, the CLI with the
# schema stored with the call.
Check = Callable[[str, Any, Any], dict[str, Any]]
Flow = Generator[Request[Any], Any, Record]


def _awaiting(key: str, record: Record | None) -> Record:
    """``record`` if it awaits a decision, else the :class:`ApprovalError` to raise."""
    if record is None:
        raise ApprovalError(
            f"no call awaits approval under key {key!r} (never stored, already purged, or "
            "not a call of a tool that requires approval)",
            key=key,
        )
    status = read_decision(record).status
    if status == "recording":
        raise ApprovalError(
            f"the call {key!r} is being stored as awaiting approval right now; try again",
            key=key,
            status="recording",
        )
    if status != "awaiting":
        shown = "denied" if status == "denied" else "approved"
        raise ApprovalError(f"the call {key!r} was already {shown}", key=key, status=shown)
    return record


def _after_race(key: str, stored: str) -> Flow:
    """The refusal of a decision that lost its race to another one."""
    record = yield GetRequest(stored)
    _awaiting(key, record)  # raises: it is decided (or gone) now
    raise ApprovalError(f"the call {key!r} changed while it was decided", key=key)


def approve(key: Any, arguments: Any, check: Check) -> Flow:
    """Approve the call ``key`` (with ``arguments`` instead of the model's unless
    ``None``, checked by ``check`` first); the decided record."""
    key = _key(key)
    stored = record_key(key)
    record = _awaiting(key, (yield GetRequest(stored)))
    details = _details(record.result)
    edit: dict[str, Any] | None = None
    if arguments is not None:
        if details is None:
            raise ApprovalError(
                f"the call {key!r} was stored without its details (its worker stopped "
                "midway), so an edit cannot be checked; approve it without arguments",
                key=key,
                status="awaiting",
            )
        edit = check(str(details.get("name")), details.get("parameters"), arguments)
    decided = {
        **(details or {"version": _VERSION}),
        "decision": "approved",
        "approved_arguments": edit,
        "edited": edit is not None,
    }
    text = json.dumps(decided, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    if not (yield ResolveRequest(stored, "completed", text, None)):
        return (yield from _after_race(key, stored))
    done: Record = yield GetRequest(stored)
    return done


def deny(key: Any, reason: Any) -> Flow:
    """Deny the call ``key``: it never runs, and the model reads ``reason``."""
    key = _key(key)
    if not isinstance(reason, str) or not reason.strip():
        raise UsageError(f"deny() needs a reason for the model to read, not {reason!r}")
    stored = record_key(key)
    record = _awaiting(key, (yield GetRequest(stored)))
    if not (yield ResolveRequest(stored, "failed", record.result, reason)):
        return (yield from _after_race(key, stored))
    done: Record = yield GetRequest(stored)
    return done


def _key(key: Any) -> str:
    try:
        return identifier("key", key)
    except SettingsError:
        raise UsageError(f"an approval key is a non-empty str, not {key!r}") from None


def perform(store: Any, request: Request[Any]) -> Any:
    """Perform one request of the flows above on ``store`` (an awaitable on an async one)."""
    if isinstance(request, GetRequest):
        return store.get(request.key)
    assert isinstance(request, ResolveRequest)
    return store.resolve(
        request.key, status=request.status, result=request.result, error=request.error
    )


def run(store: Any, flow: Flow) -> Record:
    """Drive ``flow`` on a synchronous ``store``."""
    reply = None
    while True:
        try:
            request = flow.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        reply = perform(store, request)
