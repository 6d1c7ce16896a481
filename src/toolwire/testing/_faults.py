"""Faults the simulator injects, by name (``cut:0.5``, ``stall-first:1``, ``http:429``...),
deterministic under the seed and combinable; ``docs/testing.md`` lists every spec string.

Event faults rewrite an encoder's frames; byte faults become a :class:`BytePlan` the server
follows while writing. O(length of the spec) to parse, O(number of frames) to apply.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._errors import UsageError
from ._scenario_types import Fault
from ._wire_writing import Frame

if TYPE_CHECKING:
    from ._wire_writing import EncodeOptions, Encoder

__all__ = [
    "EVENT_FAULTS",
    "FAULT_KINDS",
    "BytePlan",
    "Fault",
    "apply_event_faults",
    "byte_plan",
    "parse_fault",
    "parse_faults",
]

# kind -> the type of its value (None: the fault takes no value)
FAULT_KINDS: dict[str, type | None] = {
    "cut": float,
    "cut-bytes": int,
    "no-terminal": None,
    "stall-first": float,
    "stall": float,
    "drip": float,
    "duplicate-chunk": int,
    "error-event": None,
    "http": int,
    "length": None,
    "malformed-chunk": int,
}
# kinds whose value may be left out (then the position is seeded)
OPTIONAL_VALUE = frozenset({"duplicate-chunk", "malformed-chunk"})
EVENT_FAULTS = frozenset(
    {"length", "no-terminal", "error-event", "duplicate-chunk", "malformed-chunk"}
)


def parse_fault(spec: str | Fault) -> Fault:
    """Parse one spec string (``"cut:0.5"``); :class:`~toolwire.UsageError` names the problem."""
    if isinstance(spec, Fault):
        return spec
    if not isinstance(spec, str):
        raise UsageError(f"a fault is a spec string such as 'cut:0.5', not {type(spec).__name__}")
    kind, colon, raw = spec.strip().partition(":")
    if kind not in FAULT_KINDS:
        known = ", ".join(sorted(FAULT_KINDS))
        raise UsageError(f"unknown fault {spec!r}; known: {known}")
    wanted = FAULT_KINDS[kind]
    if wanted is None:
        if colon:
            raise UsageError(f"the fault {kind!r} takes no value (got {spec!r})")
        return Fault(kind)
    if not colon and kind in OPTIONAL_VALUE:
        return Fault(kind)
    if not colon or not raw:
        raise UsageError(f"the fault {kind!r} needs a value, as in '{kind}:{_example(kind)}'")
    value = _read_value(spec, wanted, raw)
    _check_range(kind, value, raw)
    return Fault(kind, value)


def _read_value(spec: str, wanted: type, raw: str) -> float | int:
    """A fault's value read as its kind's number type, finite."""
    try:
        value: float | int = wanted(raw)
    except ValueError:
        raise UsageError(f"the value of {spec!r} is not a {wanted.__name__}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"the value of {spec!r} must be finite")
    return value


def _check_range(kind: str, value: float, raw: str) -> None:
    """A fault's value lies in its kind's range (``raw`` is the value as written)."""
    if kind == "cut" and not 0 <= value <= 1:
        raise UsageError(f"cut takes a fraction between 0 and 1, not {raw}")
    if kind in ("cut-bytes", "stall-first", "stall", *OPTIONAL_VALUE) and value < 0:
        raise UsageError(f"{kind} takes a non-negative value, not {raw}")
    if kind == "drip" and value <= 0:
        raise UsageError(f"drip takes a positive number of bytes per second, not {raw}")
    if kind == "http" and not 400 <= value <= 599:
        raise UsageError(f"http takes an error status between 400 and 599, not {raw}")


def _example(kind: str) -> str:
    return {"cut": "0.5", "cut-bytes": "100", "http": "429", "drip": "200"}.get(kind, "2")


def parse_faults(specs: Iterable[str | Fault]) -> tuple[Fault, ...]:
    """Parse every spec; a single string is refused (it would be read letter by letter)."""
    if isinstance(specs, str):
        raise UsageError(f"faults is a list of spec strings; wrap {specs!r} in a list")
    return tuple(parse_fault(spec) for spec in specs)


def has(faults: Iterable[Fault], kind: str) -> bool:
    """Whether a fault of ``kind`` is among ``faults``."""
    return any(f.kind == kind for f in faults)


def http_status(faults: Iterable[Fault]) -> int | None:
    """The status of the first ``http`` fault, if any."""
    for fault in faults:
        if fault.kind == "http":
            return int(fault.value or 500)
    return None


# ------------------------------------------------------------------- event faults


def apply_event_faults(
    frames: list[Frame],
    faults: Iterable[Fault],
    *,
    encoder: Encoder,
    rng: random.Random,
    options: EncodeOptions,
    notes: list[str] | None = None,
) -> list[Frame]:
    """``frames`` rewritten by the event faults among ``faults`` (``length`` excepted: it
    changes the response before encoding); what was done is appended to ``notes``."""
    notes = [] if notes is None else notes
    faults = tuple(faults)
    out = list(frames)
    if has(faults, "no-terminal"):
        out = [frame for frame in out if not frame.terminal]
    if has(faults, "error-event"):
        out = _end_with_error(out, encoder, rng, options, notes)
    duplicate = _value(faults, "duplicate-chunk")
    if duplicate is not None:
        _duplicate_event(out, duplicate, rng, notes)
    malformed = _value(faults, "malformed-chunk")
    if malformed is not None:
        _malform_event(out, malformed, rng, notes)
    return out


def _end_with_error(
    out: list[Frame],
    encoder: Encoder,
    rng: random.Random,
    options: EncodeOptions,
    notes: list[str],
) -> list[Frame]:
    """``out`` cut at a seeded event, after at least one (the provider accepted the
    request) and before the end, and ended by the provider's error event."""
    content = [i for i, frame in enumerate(out) if not frame.terminal]
    position = rng.randint(1, len(content)) if content else 0
    cut_at = content[position - 1] + 1 if position else 0
    notes.append(f"error-event: the stream stops with the error after event {cut_at - 1}")
    return [*out[:cut_at], encoder.error_event(rng=rng, options=options)]


def _duplicate_event(out: list[Frame], wanted: int, rng: random.Random, notes: list[str]) -> None:
    """Sends event ``wanted`` (a seeded one for -1) twice, the ``[DONE]`` marker aside."""
    candidates = [i for i, frame in enumerate(out) if frame.payload != "[DONE]"]
    i = _pick(wanted, candidates, rng)
    if i is not None:
        out.insert(i + 1, out[i])
        notes.append(f"duplicate-chunk: event {i} ({_name(out[i])}) sent twice")


def _malform_event(out: list[Frame], wanted: int, rng: random.Random, notes: list[str]) -> None:
    """Cuts the JSON of event ``wanted`` (a seeded one for -1) to half its text."""
    candidates = [i for i, frame in enumerate(out) if isinstance(frame.payload, dict)]
    i = _pick(wanted, candidates, rng)
    if i is not None:
        frame = out[i]
        text = frame.json()
        # a strict prefix of a JSON object's text is never valid JSON
        out[i] = Frame(payload=text[: max(1, len(text) // 2)], event=frame.event)
        notes.append(f"malformed-chunk: event {i} ({_name(frame)}) cut to half its JSON")


def _value(faults: tuple[Fault, ...], kind: str) -> int | None:
    """-1 for a seeded position, N for event N, ``None`` when the fault is absent."""
    for fault in faults:
        if fault.kind == kind:
            return -1 if fault.value is None else int(fault.value)
    return None


def _pick(wanted: int, candidates: list[int], rng: random.Random) -> int | None:
    if wanted >= 0:
        return wanted if wanted in candidates else None
    return rng.choice(candidates) if candidates else None


def _name(frame: Frame) -> str:
    """A short description of an event, for the request's notes."""
    if frame.event:
        return frame.event
    if isinstance(frame.payload, dict):
        kind = frame.payload.get("type")
        if isinstance(kind, str):
            return kind
        choices = frame.payload.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            delta = choices[0].get("delta") or {}
            if choices[0].get("finish_reason"):
                return "finish chunk"
            return "chunk with " + (", ".join(sorted(delta)) or "an empty delta")
        return "chunk with " + ", ".join(sorted(frame.payload))
    return str(frame.payload)[:20]


# --------------------------------------------------------------------- byte faults


@dataclass(slots=True)
class BytePlan:
    """How the server writes one body: pauses, rate and where to cut.

    ``stalls`` maps a write index to the seconds to wait before that write; ``cut_at`` is
    the body offset after which the connection is closed without finishing the body;
    ``drip`` the rate in bytes per second (``None``: as fast as the client reads).
    """

    stall_first: float = 0.0
    stalls: dict[int, float] = field(default_factory=dict)
    drip: float | None = None
    cut_at: int | None = None


def byte_plan(faults: Iterable[Fault], sizes: list[int], rng: random.Random) -> BytePlan:
    """The :class:`BytePlan` for a body written in pieces of ``sizes`` bytes."""
    plan = BytePlan()
    for fault in faults:
        plan_fault = _BYTE_FAULTS.get(fault.kind)
        if plan_fault is not None:
            plan_fault(plan, fault, sizes, rng)
    return plan


def _plan_stall_first(plan: BytePlan, fault: Fault, sizes: list[int], rng: random.Random) -> None:
    plan.stall_first += float(fault.value or 0)


def _plan_stall(plan: BytePlan, fault: Fault, sizes: list[int], rng: random.Random) -> None:
    # a boundary inside the body: after the first write and before the last
    index = rng.randint(1, len(sizes) - 1) if len(sizes) >= 2 else 0
    plan.stalls[index] = plan.stalls.get(index, 0.0) + float(fault.value or 0)


def _plan_drip(plan: BytePlan, fault: Fault, sizes: list[int], rng: random.Random) -> None:
    plan.drip = float(fault.value or 1)


def _plan_cut(plan: BytePlan, fault: Fault, sizes: list[int], rng: random.Random) -> None:
    _cut_at(plan, math.floor(float(fault.value or 0) * sum(sizes)))


def _plan_cut_bytes(plan: BytePlan, fault: Fault, sizes: list[int], rng: random.Random) -> None:
    _cut_at(plan, min(int(fault.value or 0), sum(sizes)))


def _cut_at(plan: BytePlan, offset: int) -> None:
    """The body is cut at the earliest offset any cut fault asks for."""
    plan.cut_at = offset if plan.cut_at is None else min(plan.cut_at, offset)


# how each byte fault changes the plan; other faults do not
_BYTE_FAULTS: dict[str, Callable[[BytePlan, Fault, list[int], random.Random], None]] = {
    "stall-first": _plan_stall_first,
    "stall": _plan_stall,
    "drip": _plan_drip,
    "cut": _plan_cut,
    "cut-bytes": _plan_cut_bytes,
}
