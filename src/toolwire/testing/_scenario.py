"""What the simulator serves: scripted responses, recordings, and the script that orders them.

Every field is checked when an entry is made, so a typo fails at ``add_response``; the
script is safe to add to from the test's thread while the server takes entries.
"""

from __future__ import annotations

import fnmatch
import json
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import UsageError
from ._faults import parse_faults
from ._profiles import parse_profiles
from ._recordings import RecordedBody, load_recording
from ._scenario_types import (
    Fault,
    ScenarioCall,
    ScenarioResponse,
    ScenarioServerTool,
    ScenarioUsage,
)

__all__ = [
    "Script",
    "load_scenario",
    "make_call",
    "make_response",
]

_FINISHES = ("auto", "stop", "tool_calls", "length", "pause")


def _compact(value: Any) -> str:
    """Compact JSON, non-ASCII kept (what providers stream as argument text)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


# --------------------------------------------------------------------- construction


def make_call(spec: Any) -> ScenarioCall:
    """A :class:`ScenarioCall` from what users write.

    Accepted: a ``ScenarioCall``; a tuple ``(name, arguments)`` or ``(name, arguments,
    id)``; a mapping with ``name`` and ``arguments`` (or ``raw_arguments``) and an optional
    ``id``. ``arguments`` given as a ``str`` is raw argument text (served as it is, so
    invalid JSON can be served); anything else is serialised as compact JSON.
    """
    if isinstance(spec, ScenarioCall):
        return spec
    name, arguments, call_id = _call_fields(spec)
    if not isinstance(name, str):
        raise UsageError(f"a tool call's name must be a string, not {type(name).__name__}")
    if call_id is not None and not isinstance(call_id, str):
        raise UsageError(f"a tool call's id must be a string, not {type(call_id).__name__}")
    raw, parsed = _argument_text(name, arguments)
    return ScenarioCall(name=name, raw_arguments=raw, arguments=parsed, id=call_id)


def _call_fields(spec: Any) -> tuple[Any, Any, Any]:
    """The name, arguments and id (or ``None``) of a call given as a tuple or a mapping."""
    if isinstance(spec, tuple) and len(spec) in (2, 3):
        return spec[0], spec[1], spec[2] if len(spec) == 3 else None
    if isinstance(spec, Mapping):
        return _mapping_call_fields(spec)
    raise UsageError(
        "a tool call is (name, arguments), (name, arguments, id), a mapping with "
        f"'name' and 'arguments', or a ScenarioCall; got {type(spec).__name__}"
    )


def _mapping_call_fields(spec: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """The name, arguments (or raw argument text) and id of a call given as a mapping."""
    unknown = set(spec) - {"name", "arguments", "raw_arguments", "id"}
    if unknown:
        raise UsageError(f"a tool call has unknown fields {sorted(unknown)}")
    if "arguments" in spec and "raw_arguments" in spec:
        raise UsageError("a tool call takes 'arguments' or 'raw_arguments', not both")
    arguments = spec["raw_arguments"] if "raw_arguments" in spec else spec.get("arguments", {})
    if "raw_arguments" in spec and not isinstance(arguments, str):
        raise UsageError("a tool call's 'raw_arguments' must be a string")
    return spec.get("name"), arguments, spec.get("id")


def _argument_text(name: str, arguments: Any) -> tuple[str, Any]:
    """The raw argument text served and its parsed value: a string is served as it is
    (parsed ``None`` when it is not JSON), anything else as its compact JSON."""
    if isinstance(arguments, str):
        try:
            return arguments, json.loads(arguments) if arguments else {}
        except ValueError:
            return arguments, None
    try:
        raw = _compact(arguments)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"the arguments of tool call {name!r} are not JSON: {exc}") from None
    return raw, json.loads(raw)


def _usage(value: Any) -> ScenarioUsage | None:
    if value is None or isinstance(value, ScenarioUsage):
        return value
    counts = _usage_counts(value)
    for key, count in counts.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise UsageError(f"usage {key} must be a non-negative integer, not {count!r}")
    return ScenarioUsage(**counts)


def _usage_counts(value: Any) -> dict[str, Any]:
    """A usage given as ``(input_tokens, output_tokens)`` or a mapping, as a mapping of
    both keys (0 where one is not given), its values not yet checked."""
    if isinstance(value, tuple) and len(value) == 2:
        value = {"input_tokens": value[0], "output_tokens": value[1]}
    if not isinstance(value, Mapping) or set(value) - {"input_tokens", "output_tokens"}:
        raise UsageError(
            f"usage is (input_tokens, output_tokens) or a mapping with those keys, not {value!r}"
        )
    return {key: value.get(key, 0) for key in ("input_tokens", "output_tokens")}


def _optional_str(value: Any, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise UsageError(f"{what} must be a string, not {type(value).__name__}")
    return value


def make_response(
    *,
    text: Any = "",
    reasoning: str = "",
    tool_calls: Iterable[Any] = (),
    finish: str = "auto",
    usage: Any = None,
    id: str | None = None,
    model: str | None = None,
    faults: Iterable[str | Fault] = (),
    profile: str | Sequence[str] | None = None,
    output: Any = None,
    refusal: str = "",
    server_tools: Iterable[Any] = (),
) -> ScenarioResponse:
    """A checked :class:`ScenarioResponse` from the arguments of ``Simulator.add_response``.

    ``text`` that is not a string (a dict, a list...) is served as its compact JSON, the
    shape of structured output. ``output`` says the same of a structured output: a
    pydantic model instance (its JSON) or any JSON value, served as the text (not with
    ``text``). ``refusal`` is the text of a model that declined; ``server_tools`` are
    ``{"name", "input", "result"?, "id"?}`` objects of calls the provider ran itself, and
    ``finish="pause"`` a paused turn (see :class:`ScenarioResponse`; Anthropic serves both).
    """
    text = _served_text(text, output, refusal)
    if not isinstance(reasoning, str):
        raise UsageError(f"reasoning must be a string, not {type(reasoning).__name__}")
    if isinstance(tool_calls, (str, bytes)) or not isinstance(tool_calls, Iterable):
        raise UsageError("tool_calls must be a list of calls")
    if finish not in _FINISHES:
        raise UsageError(f"finish must be one of {', '.join(_FINISHES)}; got {finish!r}")
    calls = tuple(make_call(spec) for spec in tool_calls)
    if finish == "pause" and calls:
        raise UsageError("a paused turn carries no client tool calls (the provider goes on)")
    return ScenarioResponse(
        text=text,
        reasoning=reasoning,
        tool_calls=calls,
        finish=finish,  # type: ignore[arg-type]
        usage=_usage(usage),
        response_id=_optional_str(id, "id"),
        model=_optional_str(model, "model"),
        faults=parse_faults(faults),
        profiles=parse_profiles(profile),
        refusal=refusal,
        server_tools=_server_tools(server_tools),
    )


def _served_text(text: Any, output: Any, refusal: Any) -> str:
    """The text a response serves: ``text``, or ``output``'s JSON (a pydantic model's
    dump), compact JSON where it is not a string; checks ``refusal`` on the way, in the
    order the errors have always been raised."""
    if output is not None:
        if text != "":
            raise UsageError("a response takes text= or output=, not both")
        dump = getattr(output, "model_dump", None)
        text = dump(mode="json", by_alias=True) if callable(dump) else output
    if not isinstance(refusal, str):
        raise UsageError(f"refusal must be a string, not {type(refusal).__name__}")
    if isinstance(text, str):
        return text
    try:
        return _compact(text)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"text is neither a string nor JSON: {exc}") from None


def _server_tools(specs: Iterable[Any]) -> tuple[ScenarioServerTool, ...]:
    if isinstance(specs, (str, bytes, Mapping)) or not isinstance(specs, Iterable):
        raise UsageError("server_tools must be a list of {name, input, result?, id?} objects")
    tools = []
    for spec in specs:
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            raise UsageError(f"a server tool is an object with a string name, not {spec!r}")
        unknown = set(spec) - {"name", "input", "result", "id"}
        if unknown:
            raise UsageError(f"a server tool has no field {sorted(unknown)[0]!r}")
        if not isinstance(spec.get("input", {}), Mapping):
            raise UsageError(f"the input of server tool {spec['name']!r} must be an object")
        tools.append(
            ScenarioServerTool(
                name=spec["name"],
                input=dict(spec.get("input", {})),
                result=spec.get("result"),
                id=_optional_str(spec.get("id"), "server tool id"),
            )
        )
    return tuple(tools)


# ------------------------------------------------------------------------ the script

Entry = ScenarioResponse | RecordedBody


@dataclass(slots=True)
class Script:
    """The responses to serve, in order, and per model pattern; thread-safe."""

    loop: bool = False
    _ordered: list[Entry] = field(default_factory=list)
    _by_model: dict[str, list[Entry]] = field(default_factory=dict)
    _next: int = 0
    _next_by_model: dict[str, int] = field(default_factory=dict)
    _repeat: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, entry: Entry, *, model: str | None = None, repeat: bool = False) -> None:
        """Queue ``entry``: in the ordered list, or for requests whose model matches (with
        ``repeat``, that model's list starts over whenever it runs out, loop or not)."""
        with self._lock:
            if model is None:
                self._ordered.append(entry)
            else:
                self._by_model.setdefault(model, []).append(entry)
                if repeat:
                    self._repeat.add(model)

    def take(self, model: str | None) -> Entry | None:
        """The next entry for a request for ``model``; ``None`` when none is left."""
        with self._lock:
            pattern = self._pattern_for(model)
            if pattern is not None:
                entry = self._take_for(pattern)
                if entry is not None:
                    return entry
            if self._next >= len(self._ordered) and self.loop and self._ordered:
                self._next = 0
            if self._next < len(self._ordered):
                self._next += 1
                return self._ordered[self._next - 1]
            return None

    def _pattern_for(self, model: str | None) -> str | None:
        """The first pattern that matches ``model``, if any (the lock is held)."""
        if model is None:
            return None
        return next((p for p in self._by_model if fnmatch.fnmatchcase(model, p)), None)

    def _take_for(self, pattern: str) -> Entry | None:
        """The next entry of ``pattern``'s list, starting over when it repeats; ``None``
        when it ran out (the lock is held)."""
        entries = self._by_model[pattern]
        position = self._next_by_model.get(pattern, 0)
        again = self.loop or pattern in self._repeat
        if position >= len(entries) and again and entries:
            position = 0
        if position < len(entries):
            self._next_by_model[pattern] = position + 1
            return entries[position]
        return None

    @property
    def remaining(self) -> int:
        """Entries of the ordered list not yet served (``loop`` aside)."""
        with self._lock:
            return len(self._ordered) - self._next


# ---------------------------------------------------------------------- scenario files


def _read_table(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the scenario file {path}: {exc}") from None
    try:
        if path.suffix.lower() == ".toml":
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # Python 3.10: the backport, from the testing extra
                import tomli as tomllib
            data: Any = tomllib.loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"the scenario file {path} cannot be parsed: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"the scenario file {path} must hold an object (a table)")
    return data


_ENTRY_KEYS = {
    "text",
    "reasoning",
    "tool_calls",
    "finish",
    "usage",
    "id",
    "model",
    "faults",
    "profile",
    "recording",
    "output",
    "refusal",
    "server_tools",
}


def _entry(spec: Any, base: Path, where: str) -> Entry:
    if not isinstance(spec, Mapping):
        raise UsageError(f"{where} must be a table (an object)")
    unknown = set(spec) - _ENTRY_KEYS
    if unknown:
        raise UsageError(f"{where} has unknown fields {sorted(unknown)}")
    if "recording" in spec:
        others = set(spec) - {"recording", "faults"}
        if others:
            raise UsageError(f"{where}: a recording takes only 'faults', not {sorted(others)}")
        return load_recording(base / str(spec["recording"]), faults=spec.get("faults", ()))
    fields = dict(spec)
    if isinstance(fields.get("usage"), list):
        fields["usage"] = tuple(fields["usage"])
    fields["tool_calls"] = [
        tuple(call) if isinstance(call, list) else call for call in fields.get("tool_calls", [])
    ]
    try:
        return make_response(**fields)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None


@dataclass(frozen=True, slots=True)
class ScenarioFile:
    """A parsed scenario file: its seed, loop flag, ordered and per-model entries."""

    seed: int | None
    loop: bool
    responses: tuple[Entry, ...]
    models: dict[str, tuple[Entry, ...]]


def _settings(data: Mapping[str, Any]) -> tuple[int | None, bool]:
    """A scenario file's ``seed`` (an integer or none) and ``loop`` flag."""
    seed = data.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise UsageError(f"the scenario file's seed must be an integer, not {seed!r}")
    loop = data.get("loop", False)
    if not isinstance(loop, bool):
        raise UsageError("the scenario file's 'loop' must be true or false")
    return seed, loop


def load_scenario(path: str | Path) -> ScenarioFile:
    """Parse a JSON or TOML scenario file (see the module docstring for the layout)."""
    path = Path(path)
    data = _read_table(path)
    unknown = set(data) - {"seed", "loop", "responses", "models"}
    if unknown:
        raise UsageError(f"the scenario file {path} has unknown keys {sorted(unknown)}")
    seed, loop = _settings(data)
    base = path.parent
    responses = data.get("responses", [])
    if not isinstance(responses, list):
        raise UsageError("the scenario file's 'responses' must be a list")
    models = data.get("models", {})
    if not isinstance(models, dict) or not all(isinstance(v, list) for v in models.values()):
        raise UsageError("the scenario file's 'models' must map patterns to lists of responses")
    return ScenarioFile(
        seed=seed,
        loop=loop,
        responses=tuple(_entry(s, base, f"responses[{i}]") for i, s in enumerate(responses)),
        models={
            pattern: tuple(_entry(s, base, f"models[{pattern!r}][{i}]") for i, s in enumerate(v))
            for pattern, v in models.items()
        },
    )
