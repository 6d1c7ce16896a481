"""``toolwire.testing``: a deterministic provider simulator for testing agents.

:class:`Simulator` is an HTTP server on 127.0.0.1 speaking seven providers' real protocols,
so their SDK clients talk to it unchanged; it serves scripted or recorded responses,
injects faults and checks requests the way each provider does. The server stack comes
with the ``toolwire[testing]`` extra and is imported only when a simulator starts.

Quirk profiles (``add_response(..., profile=NAME)``; ``docs/providers.md`` says which
servers show each): ``no-index``, ``index-from-1``, ``all-index-0``, ``repeated-ids``,
``repeated-names``, ``fresh-id-per-fragment``, ``split-ids``, ``name-after-arguments``,
``empty-id-continuations``, ``null-role-type``, ``whole-call-chunk``,
``args-in-last-chunk``, ``same-index-in-chunk``, ``stop-finish``,
``usage-only-last-chunk``, ``content-filter-chunks``, ``unterminated-arguments``,
``mistral-content-chunks``, ``extra-content-signatures``, ``done-marker-only``; for
Gemini: ``thought-signatures``, ``code-execution``, ``server-tool-parts``.
"""

from __future__ import annotations

from ._faults import FAULT_KINDS, parse_fault, parse_faults
from ._formats import FORMATS, encoder_for
from ._profiles import PROFILES
from ._recordings import RecordedBody, load_recording
from ._scenario import load_scenario
from ._scenario_types import Fault, Profile, ScenarioCall, ScenarioResponse, ScenarioUsage
from ._server import ConnectionRecord, RecordedRequest
from ._simulator import Simulator
from ._wire_writing import EncodeOptions, Encoder, ErrorReply, Frame, serialise

__all__ = [
    "FAULT_KINDS",
    "FORMATS",
    "PROFILES",
    "ConnectionRecord",
    "EncodeOptions",
    "Encoder",
    "ErrorReply",
    "Fault",
    "Frame",
    "Profile",
    "RecordedBody",
    "RecordedRequest",
    "ScenarioCall",
    "ScenarioResponse",
    "ScenarioUsage",
    "Simulator",
    "encoder_for",
    "load_recording",
    "load_scenario",
    "parse_fault",
    "parse_faults",
    "serialise",
]
