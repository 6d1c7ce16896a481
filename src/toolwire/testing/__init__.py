"""``toolwire.testing``: a deterministic provider simulator for testing agents (API.md §6).

:class:`Simulator` is an HTTP server on 127.0.0.1 that speaks seven providers' real
protocols (paths, headers, framing, usage, error bodies), so the providers' own SDK clients
talk to it unchanged, and injects faults on demand: cut streams, stalled sockets, error
events, token-limit finishes, malformed chunks, HTTP errors. Responses are scripted
(:meth:`Simulator.add_response`, a JSON or TOML scenario file) or recorded bodies served
byte-exact (:meth:`Simulator.add_recording`). Every request is recorded and checked the way
the provider checks it. ``toolwire serve`` runs the same server from a shell, and the
pytest plugin provides the ``toolwire_simulator`` fixture.

.. code-block:: python

    from toolwire.testing import Simulator
    with Simulator(seed=7) as sim:
        sim.add_response(text="On it.", tool_calls=[("get_weather", {"city": "Lyon"})])
        sim.add_response(tool_calls=[("write_file", {"path": "a.py"})], faults=["cut:0.5"])
        client = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="test")

The server stack (uvicorn) comes with the ``toolwire[testing]`` extra and is imported only
when a simulator starts; scenarios and encoders need nothing.

What the simulator knows of each provider (its encoder, its request checks, its endpoints
and quirk profiles) lives in that provider's package (``toolwire._providers``), beside its
adapter; this package serves every registered provider that declares an encoder, so a
provider added there is served here without a change.

Quirk profiles
--------------

``add_response(..., profile=NAME)`` streams the response the way these OpenAI-compatible
servers do (numbers from ``reference/provider-quirks.md`` §4). Every profile assembles to
the same calls as the clean stream, except the truncation, which must be refused.

==========================  ======  ==============================================================
profile                     quirk   seen at
==========================  ======  ==============================================================
``no-index``                1, 2    Gemini's OpenAI-compatible endpoint and proxies in front of it
``index-from-1``            13      Anthropic's OpenAI-compatible endpoint (fallback gateways)
``all-index-0``             6, 12   Ollama's /v1, Groq, Responses-to-Chat translators, Qwen3/Dynamo
``repeated-ids``            8       Fireworks, DeepSeek, Qwen/DashScope
``repeated-names``          9       MiniMax M2.7 via NVIDIA NIM; reported for GPT-5.x
``fresh-id-per-fragment``   10      Kimi K2.6 (api.kimi.com/coding), LM Studio (Gemma 4)
``split-ids``               11      Poolside /chat/completions
``name-after-arguments``    15      various OpenAI-compatible providers
``empty-id-continuations``  28      Alibaba DashScope (qwen3-max), LM Studio
``null-role-type``          24      Mistral (API, and vLLM's Mistral parser)
``whole-call-chunk``        12, 24  Groq, Mistral, xAI, llama.cpp
``args-in-last-chunk``      17      vLLM tool parsers (xlam, hunyuan, GLM-4.7, step3, ...)
``same-index-in-chunk``     14      vLLM with speculative decoding; Bedrock's OpenAI endpoint
``stop-finish``             20      OpenAI with a named tool_choice; vLLM parity
``usage-only-last-chunk``   29      OpenAI with include_usage; vLLM
``content-filter-chunks``   21      Azure OpenAI (asynchronous content filter)
``unterminated-arguments``  18      vLLM, DeepSeek-v4 deployments, routers (a truncation)
==========================  ======  ==============================================================

The native formats' own quirks are their default shapes: Gemini's ``STOP`` after calls
(quirk 3) and whole calls (4), Ollama's ``done_reason: stop`` after calls (5) and its
object arguments without ids (7), Anthropic's empty first ``input_json_delta`` (16).
"""

from __future__ import annotations

from ._faults import FAULT_KINDS, parse_fault, parse_faults
from ._formats import FORMATS, encoder_for
from ._profiles import PROFILES
from ._recordings import Recording, load_recording
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
    "RecordedRequest",
    "Recording",
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
