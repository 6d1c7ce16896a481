"""Shared by the run_turn tests: a toolbox whose calls are counted, and, per wire format, the
real SDK client's streaming request built from a conversation (so that each next request
sends ``messages += turn.messages`` through the client, as users do)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import toolwire
from simulator_support import FORMATS, Clients
from toolwire.testing import Simulator

__all__ = ["FORMATS", "TEXT_ARGUMENTS", "Conversation", "counted_tools", "refused"]

# formats whose wire carries arguments as text (so they can stop being JSON mid-stream)
TEXT_ARGUMENTS = ("openai-chat", "openai-responses", "anthropic", "bedrock-converse", "cohere")

USER = "What is the weather in Lyon and in Paris?"


def counted_tools(runs: Counter[str]) -> toolwire.Toolbox:
    """``get_weather(city)`` and ``write_file(path, content)``, counting executions by key."""
    tools = toolwire.Toolbox()

    @tools.tool
    def get_weather(city: str, ctx: toolwire.ToolContext) -> str:
        """The weather in a city."""
        runs[ctx.idempotency_key] += 1
        return f"Sunny in {city}"

    @tools.tool
    def write_file(path: str, content: str, ctx: toolwire.ToolContext) -> int:
        """Write a file; returns the bytes written."""
        runs[ctx.idempotency_key] += 1
        return len(content)

    return tools


class Conversation:
    """One conversation in ``fmt`` through that provider's real SDK client: ``messages``
    as the provider takes them, ``request()`` the zero-argument callable that makes the
    next streaming request from them."""

    def __init__(self, fmt: str, clients: Clients, tools: toolwire.Toolbox) -> None:
        self.fmt = fmt
        self.clients = clients
        self.definitions = tools.definitions(fmt)
        self.messages: list[Any] = [_user(fmt, USER)]

    def request(self) -> Callable[[], Any]:
        """The callable ``run_turn`` takes: it makes the streaming request."""
        return _REQUESTS[self.fmt](self)

    def add_user(self, text: str) -> None:
        """Append a user message."""
        self.messages.append(_user(self.fmt, text))


def _user(fmt: str, text: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "user", "parts": [{"text": text}]}
    if fmt == "bedrock-converse":
        return {"role": "user", "content": [{"text": text}]}
    return {"role": "user", "content": text}


def _openai_chat(c: Conversation) -> Callable[[], Any]:
    client = c.clients.openai
    return lambda: client.chat.completions.create(
        model="m", messages=c.messages, tools=c.definitions, stream=True
    )


def _openai_responses(c: Conversation) -> Callable[[], Any]:
    client = c.clients.openai
    return lambda: client.responses.create(
        model="m", input=c.messages, tools=c.definitions, stream=True
    )


def _anthropic(c: Conversation) -> Callable[[], Any]:
    client = c.clients.anthropic
    return lambda: client.messages.stream(
        model="m", max_tokens=1024, messages=c.messages, tools=c.definitions
    )


def _gemini(c: Conversation) -> Callable[[], Any]:
    client = c.clients.gemini
    config = {"tools": c.definitions}
    return lambda: client.models.generate_content_stream(
        model="gemini-2.5-flash", contents=c.messages, config=config
    )


def _bedrock(c: Conversation) -> Callable[[], Any]:
    client = c.clients.bedrock
    return lambda: client.converse_stream(
        modelId="anthropic.claude-sonnet-4",
        messages=c.messages,
        toolConfig={"tools": c.definitions},
    )


def _ollama(c: Conversation) -> Callable[[], Any]:
    client = c.clients.ollama
    return lambda: client.chat(model="llama3.2", messages=c.messages, tools=c.definitions,
                               stream=True)  # fmt: skip


def _cohere(c: Conversation) -> Callable[[], Any]:
    client = c.clients.cohere
    return lambda: client.chat_stream(model="command-a", messages=c.messages,
                                      tools=c.definitions)  # fmt: skip


_REQUESTS: dict[str, Callable[[Conversation], Callable[[], Any]]] = {
    "openai-chat": _openai_chat,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock-converse": _bedrock,
    "ollama": _ollama,
    "cohere": _cohere,
}


def refused(sim: Simulator) -> list[str]:
    """The errors of every request the simulator refused as the provider would."""
    return [r.error or "" for r in sim.requests if r.served == "refused"]
