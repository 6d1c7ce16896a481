"""``Outcome``: what happened to one tool call, the executor's answer per call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .content import decode_result
from .json_safe import DICT_VERSION, check_version, jsonable, read

OutcomeStatus = Literal[
    "completed",
    "replayed",
    "failed",
    "rejected",
    "skipped",
    "timed_out",
    "unknown",
    "in_progress",
    "conflict",
    "awaiting_approval",
    "denied",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """The result of one tool call.

    ``status``:

    - ``"completed"``: the tool ran now and returned ``value``;
    - ``"replayed"``: a stored result was returned, the tool did not run;
    - ``"failed"``: the tool raised (now, or when it first ran: see ``replayed``);
      ``error`` says what, as the executor's ``error_text`` wrote it for the model;
    - ``"rejected"``: unknown tool or invalid arguments; ``error`` is written for the model;
    - ``"skipped"``: not run because another call of the same response was rejected;
    - ``"timed_out"``: the tool did not finish within its timeout; its effect is in doubt,
      so the store keeps the call as ``unknown`` (a thread still running keeps it claimed
      until it ends, and then holds its late result);
    - ``"unknown"``: the tool may have run (crash, cancellation, lost lease, a return value
      that JSON cannot carry); never re-run automatically;
    - ``"in_progress"``: another worker holds the call right now;
    - ``"conflict"``: the same call identity was seen before with different arguments;
    - ``"awaiting_approval"``: the tool requires approval and none was decided yet; nothing
      ran (``executor.approve`` / ``executor.deny`` decide, by ``idempotency_key``);
    - ``"denied"``: a person denied the call; nothing ran; ``error`` is their reason.

    ``value`` is the tool's return value (for ``replayed``, decoded from the stored JSON);
    ``result_json`` is the stored JSON text of it, byte-identical between the first run
    and every replay; ``idempotency_key`` is the key the tool received in its context
    (``None`` for calls that never got one: rejected or skipped).

    ``replayed`` is ``True`` when the outcome was read from the store instead of coming
    from running the tool now: every ``"replayed"`` outcome, and a ``"failed"`` or
    ``"unknown"`` one that repeats what an earlier run recorded (a stored failure is
    replayed until the store's retention passes, even after the bug behind it was fixed).
    """

    call_id: str
    name: str
    status: OutcomeStatus
    value: Any = None
    error: str | None = None
    idempotency_key: str | None = None
    result_json: str | None = None
    replayed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """This outcome as a JSON-safe, versioned dict (``Outcome.from_dict`` reads it
        back; ``value`` comes back as the JSON value of ``result_json`` when there is one,
        as a replay from the store gives it)."""
        return outcome_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outcome:
        """The outcome :meth:`to_dict` wrote; ``UsageError`` for anything else."""
        return read(outcome_from_dict, data, "Outcome")


def outcome_to_dict(outcome: Outcome) -> dict[str, Any]:
    """The JSON-safe dict of an :class:`Outcome` (see :meth:`Outcome.to_dict`)."""
    out: dict[str, Any] = {
        "version": DICT_VERSION,
        "call_id": outcome.call_id,
        "name": outcome.name,
        "status": outcome.status,
        "error": outcome.error,
        "idempotency_key": outcome.idempotency_key,
        "result_json": outcome.result_json,
        "replayed": outcome.replayed,
    }
    if outcome.result_json is None:
        out["value"] = jsonable(outcome.value)
    return out


def outcome_from_dict(data: Any) -> Outcome:
    """The :class:`Outcome` :func:`outcome_to_dict` wrote."""
    data = check_version(data, "Outcome")
    result_json = data.get("result_json")
    value = decode_result(result_json) if result_json is not None else data.get("value")
    return Outcome(
        call_id=data["call_id"],
        name=data["name"],
        status=data["status"],
        value=value,
        error=data.get("error"),
        idempotency_key=data.get("idempotency_key"),
        result_json=result_json,
        replayed=bool(data.get("replayed", False)),
    )
