"""Quirk profiles: the stream shapes of real OpenAI-compatible servers, by behaviour name.

A profile changes how a response is streamed, never what it says: every profile but the
truncation assembles to the same calls as the clean stream. Profiles combine.
"""

from __future__ import annotations

from ._scenario_types import Profile

__all__ = ["PROFILES"]


_CHAT = ("openai-chat",)
_GEMINI = ("gemini",)

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "no-index",
            _CHAT,
            (1, 2),
            "Gemini's OpenAI-compatible endpoint and proxies in front of it",
            "tool_calls entries carry no 'index'; parallel calls come in separate chunks",
            sequential=True,
        ),
        Profile(
            "index-from-1",
            _CHAT,
            (13,),
            "Anthropic's OpenAI-compatible endpoint (fallback gateways)",
            "tool call indexes start at 1 (the content-block index), so they are sparse",
        ),
        Profile(
            "all-index-0",
            _CHAT,
            (6, 12),
            "Ollama's /v1 endpoint, Groq, Responses-to-Chat translators, Qwen3 on Dynamo",
            "every parallel call uses index 0, each with its own id",
            sequential=True,
        ),
        Profile(
            "repeated-ids",
            _CHAT,
            (8,),
            "Fireworks, DeepSeek, Qwen/DashScope",
            "id, type and name repeated in every chunk of a call",
        ),
        Profile(
            "repeated-names",
            _CHAT,
            (9,),
            "MiniMax M2.7 via NVIDIA NIM; reported for GPT-5.x",
            "the function name re-sent in every chunk of a call",
        ),
        Profile(
            "fresh-id-per-fragment",
            _CHAT,
            (10,),
            "Kimi K2.6 (api.kimi.com/coding), LM Studio (Gemma 4)",
            "index 0 and a fresh id on every fragment; the name only on the first",
            sequential=True,
        ),
        Profile(
            "split-ids",
            _CHAT,
            (11,),
            "Poolside /chat/completions",
            "one id on a call's first chunk, another on the rest",
            sequential=True,
        ),
        Profile(
            "name-after-arguments",
            _CHAT,
            (15,),
            "various OpenAI-compatible providers",
            "the first delta has the id and arguments but no name; the name comes next",
            sequential=True,
        ),
        Profile(
            "empty-id-continuations",
            _CHAT,
            (28,),
            "Alibaba DashScope (qwen3-max), LM Studio",
            "continuation deltas repeat id '' and type 'function'",
        ),
        Profile(
            "null-role-type",
            _CHAT,
            (24,),
            "Mistral (API and vLLM's Mistral parser)",
            "'role': null and 'type': null in deltas",
        ),
        Profile(
            "whole-call-chunk",
            _CHAT,
            (12, 24),
            "Groq, Mistral, xAI, llama.cpp",
            "each call whole in one chunk: id, name and all its arguments",
            sequential=True,
        ),
        Profile(
            "args-in-last-chunk",
            _CHAT,
            (17,),
            "vLLM tool parsers (xlam, hunyuan, GLM-4.7, step3, --stream-interval > 1)",
            "call headers stream first; all argument text comes in the finish chunk",
            sequential=True,
        ),
        Profile(
            "same-index-in-chunk",
            _CHAT,
            (14,),
            "vLLM with speculative decoding; Bedrock's OpenAI-compatible endpoint",
            "two tool_calls entries with the same index inside one chunk",
            sequential=True,
        ),
        Profile(
            "stop-finish",
            _CHAT,
            (20,),
            "OpenAI with a named tool_choice, vLLM parity, some models with 'required'",
            "finish_reason 'stop' instead of 'tool_calls'",
        ),
        Profile(
            "usage-only-last-chunk",
            _CHAT,
            (29,),
            "OpenAI with stream_options.include_usage; vLLM, which sends it always",
            "a last chunk with empty choices carrying only usage",
        ),
        Profile(
            "content-filter-chunks",
            _CHAT,
            (21,),
            "Azure OpenAI (asynchronous content filter)",
            "chunks with empty choices or no delta, object '', filter results and offsets",
        ),
        Profile(
            "mistral-content-chunks",
            _CHAT,
            (),
            "Mistral Magistral (reasoning models) on Mistral's chat completions API",
            "delta.content is a list of chunks: 'thinking' (a list of text chunks) and 'text'",
        ),
        Profile(
            "extra-content-signatures",
            _CHAT,
            (),
            "Gemini's OpenAI-compatible endpoint (Gemini 2.5 and 3 with thinking)",
            "each call's first chunk has extra_content.google.thought_signature",
        ),
        Profile(
            "done-marker-only",
            _CHAT,
            (),
            "Snowflake Cortex, some OpenRouter routes",
            "no finish_reason: the stream ends with [DONE] alone (refused unless the "
            "openai-chat-done-marker profile is asked for)",
            truncation=True,
        ),
        Profile(
            "unterminated-arguments",
            _CHAT,
            (18,),
            "vLLM, DeepSeek-v4 deployments, routers at max_tokens",
            "finish_reason 'tool_calls' while the last call's JSON is cut",
            truncation=True,
        ),
        Profile(
            "thought-signatures",
            _GEMINI,
            (),
            "Gemini 2.5 and 3 with thinking (required back on Gemini 3)",
            "the first functionCall part of the response carries a thoughtSignature",
        ),
        Profile(
            "code-execution",
            _GEMINI,
            (),
            "Gemini with the code_execution tool",
            "executableCode and codeExecutionResult parts before the answer",
        ),
        Profile(
            "server-tool-parts",
            _GEMINI,
            (),
            "Gemini 3 with built-in tools beside functions",
            "a server-side toolCall and its toolResponse, signed, before the function calls",
        ),
    )
}
