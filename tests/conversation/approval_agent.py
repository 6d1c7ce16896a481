"""One process of the approval tests: run a turn (``turn``), or decide a call (``approve
KEY [ARGUMENTS]``, ``deny KEY REASON``), on a conversation kept in a store, then exit.

``python approval_agent.py KIND TARGET NAMESPACE EFFECTS ACTION ...``: KIND is sqlite,
postgres or redis; TARGET the file, DSN or URL; NAMESPACE the table or key prefix; every
tool body appends a line to the file EFFECTS. Prints a JSON line; exit 3 on ArgumentsInvalid.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import toolwire

USER = [{"role": "user", "content": "Send Ann 5 and tell me my balance."}]


def tools(effects: str) -> toolwire.Toolbox:
    """The toolbox every process of the conversation registers."""
    box = toolwire.Toolbox()

    def effect(line: str) -> None:
        with open(effects, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    @box.tool(requires_approval=True)
    def transfer(amount: int, to: str) -> str:
        """Move money."""
        effect(f"transfer {amount} {to}")
        return f"sent {amount} to {to}"

    @box.tool
    def balance() -> int:
        """Read the balance."""
        effect("balance")
        return 100

    return box


def open_store(kind: str, target: str, namespace: str) -> Any:
    if kind == "sqlite":
        return toolwire.SQLiteStore(target)
    if kind == "postgres":
        from toolwire.stores.postgres import PostgresStore

        return PostgresStore(target, table=namespace)
    from toolwire.stores.redis import RedisStore

    return RedisStore(target, prefix=f"{namespace}:")


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [choice]}  # fmt: skip


def first_answer(messages: list[dict[str, Any]]) -> list[Any]:
    """The model's first answer: a transfer and a balance read."""
    calls = [("transfer", '{"amount": 5, "to": "ann"}'), ("balance", "{}")]
    out = [
        chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                               "function": {"name": name, "arguments": args}}]})
        for i, (name, args) in enumerate(calls)
    ]  # fmt: skip
    return [*out, chunk({}, "tool_calls")]


def main(argv: list[str]) -> int:
    kind, target, namespace, effects, action, *rest = argv
    store = open_store(kind, target, namespace)
    try:
        conv = toolwire.Conversation("chat-approval", store=store, tools=tools(effects),
                                     messages=USER)  # fmt: skip
        if action == "turn":
            turn = conv.run_turn(first_answer)
            report: dict[str, Any] = {
                "done": turn.done,
                "statuses": [o.status for o in turn.outcomes],
            }
        elif action == "approve":
            arguments = json.loads(rest[1]) if len(rest) > 1 else None
            try:
                conv.approve(rest[0], arguments=arguments)
            except toolwire.ArgumentsInvalid as exc:
                print(json.dumps({"invalid": str(exc)}))
                return 3
            report = {}
        else:
            conv.deny(rest[0], rest[1])
            report = {}
        report["pending"] = [
            {"key": p.key, "name": p.name, "arguments": p.arguments, "call_id": p.call_id}
            for p in conv.pending
        ]
        print(json.dumps(report))
        return 0
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
