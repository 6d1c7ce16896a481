"""``toolwire store``: list, show, resolve and purge on a real SQLite file and on the real
PostgreSQL and Redis servers of ``tests/servers.py``; exit statuses; ``--json``; a call
settled by hand is what the executor replays."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli_support import write_file_stream
from servers import free_port, postgres_dsn, redis_url
from toolwire import Executor, Response, SQLiteStore, Toolbox
from toolwire._cli.json_documents import plain
from toolwire._cli.replay import replay
from toolwire._cli.store import main, result_text
from toolwire._cli.store_view import COLUMNS, duration, rich_table
from toolwire.stores import AdminStore

__all__ = ["postgres_dsn", "redis_url"]  # fixtures used here

LONG = 600.0
SHORT = 0.2


@dataclass
class Target:
    """A store for the command (``args``) and the same store opened by the test."""

    name: str
    args: list[str]
    store: AdminStore


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    """Each backend, isolated: a new SQLite file, PostgreSQL table or Redis prefix."""
    tag = uuid.uuid4().hex[:12]
    store: Any
    if request.param == "sqlite":
        path = tmp_path / "calls.db"
        store, args = SQLiteStore(path), ["--db", str(path)]
    elif request.param == "postgres":
        from toolwire.stores.postgres import PostgresStore

        dsn = request.getfixturevalue("postgres_dsn")
        store, args = (
            PostgresStore(dsn, table=f"cli_{tag}"),
            ["--dsn", dsn, "--table", f"cli_{tag}"],
        )
    else:
        from toolwire.stores.redis import RedisStore

        url = request.getfixturevalue("redis_url")
        store, args = (
            RedisStore(url, prefix=f"cli-{tag}:"),
            ["--url", url, "--prefix", f"cli-{tag}:"],
        )
    try:
        yield Target(request.param, args, store)
    finally:
        store.close()


def cli(
    target: Target | None, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """``toolwire store ARGS`` (with the target's store options) in this process."""
    status = main([*args, *(target.args if target is not None else [])])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def claim(store: AdminStore, key: str, *, lease: float = LONG, retention: float = 3600.0) -> None:
    """Claim ``key`` as worker ``w1``."""
    store.claim(
        key,
        args_hash="a" * 64,
        idempotency_key=f"idem-{key}",
        owner="w1",
        lease=lease,
        retention=retention,
        reclaim=False,
    )


def completed(store: AdminStore, key: str, result: str = '{"ok":true}', **kw: float) -> None:
    """A ``completed`` record for ``key``."""
    claim(store, key, **kw)
    store.finish(key, owner="w1", fence=1, status="completed", result=result, error=None)


def unknown(store: AdminStore, key: str) -> None:
    """An ``unknown`` record for ``key``: its lease ran out and another claim came."""
    claim(store, key, lease=SHORT)
    time.sleep(SHORT * 1.5)
    store.claim(
        key,
        args_hash="a" * 64,
        idempotency_key=f"idem-{key}",
        owner="w2",
        lease=LONG,
        retention=3600.0,
        reclaim=False,
    )
    record = store.get(key)
    assert record is not None and record.status == "unknown"


def three_records(store: AdminStore) -> list[str]:
    """Keys of a completed, an in-progress and an unknown record, created in that order."""
    keys = [f"{i}-{uuid.uuid4().hex}" for i in range(3)]
    completed(store, keys[0])
    time.sleep(0.02)
    claim(store, keys[1])
    time.sleep(0.02)
    unknown(store, keys[2])
    return keys


# ------------------------------------------------------------------------------- list


def test_list_orders_filters_and_limits(target: Target, capsys: pytest.CaptureFixture[str]) -> None:
    """``list`` is newest first (``--oldest`` reverses), filters by status, stops at a limit."""
    keys = three_records(target.store)

    def listed(*args: str) -> list[str]:
        status, out, _ = cli(target, capsys, "list", "--json", *args)
        assert status == 0
        return [r["key"] for r in json.loads(out)]

    assert listed() == keys[::-1]
    assert listed("--oldest") == keys
    assert listed("--status", "unknown") == [keys[2]]
    assert listed("--status", "in_progress") == [keys[1]]
    assert listed("--status", "failed") == []
    assert listed("--limit", "1") == [keys[2]]
    assert listed("--limit", "2", "--oldest") == keys[:2]


def test_list_prints_a_table_of_every_record(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plain table has the columns, and a line per record with its key, status,
    fence and owner."""
    keys = three_records(target.store)
    status, out, err = cli(target, capsys, "list")
    assert status == 0 and err == ""
    header, *rows = out.splitlines()
    assert header.split("  ")[0] == "KEY" and all(c in header for c in COLUMNS)
    assert [row.split()[0] for row in rows] == keys[::-1]
    cells = {row.split()[0]: row.split() for row in rows}
    assert cells[keys[0]][1:2] == ["completed"] and "w1" in cells[keys[0]]
    assert cells[keys[1]][1] == "in_progress"
    assert cells[keys[2]][1] == "unknown" and "-" in cells[keys[2]]  # no owner any more
    assert f"idem-{keys[0]}" in cells[keys[0]]


def test_json_records_carry_every_field(target: Target, capsys: pytest.CaptureFixture[str]) -> None:
    """``--json`` gives each record with every field exactly as the store holds it."""
    keys = three_records(target.store)
    _, out, _ = cli(target, capsys, "list", "--json", "--oldest")
    assert json.loads(out) == [plain(target.store.get(k)) for k in keys]


# ------------------------------------------------------------------------------- show


def test_show_prints_every_field_of_one_record(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """``show KEY`` prints the key parts, status, owner, fence, times and the result."""
    key = f"show-{uuid.uuid4().hex}"
    completed(target.store, key, result='{"b":[1,2],"a":"é"}')
    status, out, _ = cli(target, capsys, "show", key)
    assert status == 0
    fields = dict(
        (line[:17].rstrip(": "), line[17:]) for line in out.splitlines() if line[:1] != " "
    )
    assert fields["key"] == key and fields["status"] == "completed"
    assert fields["idempotency key"] == f"idem-{key}" and fields["args hash"] == "a" * 64
    assert fields["owner"] == "w1" and fields["fence"] == "1"
    assert fields["created"].endswith("ago)") and fields["expires"].startswith("20")
    assert fields["result"] == "{" and '  "a": "é"' in out  # indented JSON beneath
    _, out, _ = cli(target, capsys, "show", key, "--json")
    assert json.loads(out) == plain(target.store.get(key))


def test_show_of_an_absent_key_exits_1(target: Target, capsys: pytest.CaptureFixture[str]) -> None:
    """An absent key: exit 1, nothing on stdout, one line on stderr."""
    status, out, err = cli(target, capsys, "show", "no-such-key")
    assert (status, out) == (1, "")
    assert err == "toolwire store: no record for key, idempotency key or call id no-such-key\n"


# ---------------------------------------------------------------- finding a call


def _paying_tools() -> Toolbox:
    tools = Toolbox()

    @tools.tool
    def pay(amount: int) -> str:
        """Pays."""
        return f"paid {amount}"

    @tools.tool
    def refund(amount: int) -> str:
        """Refunds."""
        return f"refunded {amount}"

    return tools


def _one_call(name: str, call_id: str) -> Response:
    from store_backends import one_call_response

    return one_call_response(name, {"amount": 3}, call_id)


def test_list_filters_on_tool_call_id_scope_status_and_since(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--tool``, ``--call-id``, ``--scope``, ``--status`` and ``--since`` each narrow the
    listing to the calls the executor ran with those fields."""
    tools = _paying_tools()
    Executor(tools, store=target.store, scope="s1").run(_one_call("pay", "call_1"))
    Executor(tools, store=target.store, scope="s2").run(_one_call("refund", "call_2"))
    Executor(tools, store=target.store, scope="s2").run(_one_call("pay", "call_3"))

    def listed(*options: str) -> list[str]:
        status, out, _ = cli(target, capsys, "list", "--json", "--oldest", *options)
        assert status == 0
        return [r["call_id"] for r in json.loads(out)]

    assert listed("--tool", "pay") == ["call_1", "call_3"]
    assert listed("--call-id", "call_2") == ["call_2"]
    assert listed("--scope", "s2") == ["call_2", "call_3"]
    assert listed("--scope", "s2", "--tool", "pay", "--status", "completed") == ["call_3"]
    assert listed("--since", "1h") == ["call_1", "call_2", "call_3"]
    assert listed("--since", "2999-01-01T00:00:00") == []
    _status, out, _ = cli(target, capsys, "list", "--tool", "refund")
    header, line = out.splitlines()
    assert header.split()[:4] == ["KEY", "STATUS", "TOOL", "CALL"]
    assert line.split()[1:4] == ["completed", "refund", "call_2"]


def test_show_takes_a_call_id_or_the_outcomes_key(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """``show`` finds a record by the provider's call id and by ``Outcome.idempotency_key``
    (the key the log names) as well as by its store key."""
    [outcome] = Executor(_paying_tools(), store=target.store, scope="s1").run(
        _one_call("pay", "call_9"), turn="turn-4"
    )
    [record] = target.store.records(call_id="call_9")
    for text in ("call_9", outcome.idempotency_key, record.key):
        status, out, _ = cli(target, capsys, "show", "--json", text)
        assert status == 0
        shown = json.loads(out)
        assert (shown["key"], shown["tool_name"], shown["scope"], shown["turn"]) == (
            record.key,
            "pay",
            "s1",
            "turn-4",
        )
    status, out, _ = cli(target, capsys, "show", "call_9")
    assert "tool:            pay" in out and "call id:         call_9" in out


def test_show_of_a_call_id_that_names_several_records_lists_them(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """One call id in two scopes: exit 1, naming both keys to pick from."""
    for scope in ("s1", "s2"):
        Executor(_paying_tools(), store=target.store, scope=scope).run(_one_call("pay", "dup"))
    status, out, err = cli(target, capsys, "show", "dup")
    assert (status, out) == (1, "")
    assert "call id dup names 2 records" in err
    for record in target.store.records(call_id="dup"):
        assert record.key in err


def test_the_log_names_the_key_store_show_finds(
    target: Target, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The executor's log line for a failed call names ``Outcome.idempotency_key``, and
    ``store show`` with that key shows the call's record."""
    tools = Toolbox()

    @tools.tool
    def pay(amount: int) -> str:
        """Fails."""
        raise RuntimeError("card declined")

    with caplog.at_level("ERROR", logger="toolwire.executor"):
        [outcome] = Executor(tools, store=target.store, scope="s1").run(_one_call("pay", "c7"))
    assert outcome.status == "failed" and outcome.idempotency_key is not None
    [line] = [r.getMessage() for r in caplog.records if r.name == "toolwire.executor"]
    logged = line.split("(key ", 1)[1].split(")", 1)[0]
    assert logged == outcome.idempotency_key
    status, out, _ = cli(target, capsys, "show", "--json", logged)
    assert status == 0 and json.loads(out)["status"] == "failed"


# ---------------------------------------------------------------------------- resolve


def _stuck_tools() -> Toolbox:
    tools = Toolbox()

    @tools.tool(timeout=0.15)
    async def write_file(path: str, content: str) -> str:
        """Writes slower than its timeout allows: cancelled there, its outcome is in doubt
        (a thread tool would stay claimed until it ends)."""
        await asyncio.sleep(0.4)
        return "written"

    return tools


def _response() -> Response:
    outcome = replay(write_file_stream().encode()).outcome
    assert isinstance(outcome, Response)
    return outcome


def test_resolve_completed_is_what_the_executor_replays(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """A timed-out call is ``unknown``; resolved by hand as completed, the executor
    replays the operator's value and runs nothing."""
    response = _response()
    executor = Executor(_stuck_tools(), store=target.store, scope=f"s-{uuid.uuid4().hex}")
    (first,) = executor.run(response)
    assert first.status == "timed_out"
    key = target.store.records(status="unknown")[0].key
    status, out, _ = cli(target, capsys, "resolve", key, "--completed", '{"bytes": 78, "ok": true}')
    assert status == 0
    assert out.startswith(f"resolved {key} as completed\n")
    (again,) = executor.run(response)
    assert again.status == "replayed"
    assert again.value == {"bytes": 78, "ok": True}
    assert again.result_json == '{"bytes":78,"ok":true}'


def test_resolve_failed_is_what_the_executor_reports(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """Resolved as failed, the call reports the operator's message and never runs again."""
    response = _response()
    executor = Executor(_stuck_tools(), store=target.store, scope=f"s-{uuid.uuid4().hex}")
    executor.run(response)
    key = target.store.records(status="unknown")[0].key
    status, out, _ = cli(target, capsys, "resolve", key, "--failed", "disk full", "--json")
    assert status == 0
    document = json.loads(out)
    assert document["resolved"] is True
    assert document["record"]["status"] == "failed" and document["record"]["error"] == "disk full"
    (again,) = executor.run(response)
    assert again.status == "failed" and again.error == "disk full"


def test_resolve_refuses_records_that_are_not_unknown(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """A completed, in-progress or absent record is refused (exit 1) and left as it was."""
    done, running = f"d-{uuid.uuid4().hex}", f"r-{uuid.uuid4().hex}"
    completed(target.store, done)
    claim(target.store, running)
    for key, now in ((done, "completed"), (running, "in_progress")):
        before = target.store.get(key)
        status, out, err = cli(target, capsys, "resolve", key, "--completed", "1")
        assert (status, out) == (1, "")
        assert err.startswith(f"toolwire store: refused: record {key} is {now}, not unknown")
        assert target.store.get(key) == before
    status, _, err = cli(target, capsys, "resolve", "absent", "--failed", "x")
    assert status == 1 and "no record for key absent" in err


def test_resolve_refuses_a_value_that_is_not_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--completed`` takes JSON only (a bare word, NaN, a cut object): exit 2, untouched."""
    path = tmp_path / "calls.db"
    store = SQLiteStore(path)
    key = f"u-{uuid.uuid4().hex}"
    unknown(store, key)
    before = store.get(key)
    for value in ("done", "NaN", "-Infinity", '{"a": 1', ""):
        args = ("resolve", key, f"--completed={value}", "--db", str(path))
        status, out, err = cli(None, capsys, *args)
        assert (status, out) == (2, "")
        assert err.startswith("toolwire store: --completed VALUE must be JSON")
    assert store.get(key) == before
    store.close()


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200)
@given(value=_JSON, indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans())
def test_a_resolved_value_is_stored_in_the_executors_own_form(
    value: Any, indent: int | None, ascii_only: bool
) -> None:
    """However VALUE is written, it is stored as the executor stores a tool's return value
    (``Tool.result_json``), and reads back as the same JSON value (Hypothesis)."""
    tools = Toolbox()

    @tools.tool
    def echo() -> None:
        """A tool, for its result serialiser."""

    tool = tools.get("echo")
    assert tool is not None
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    stored = result_text(text)
    assert stored == tool.result_json(value)
    assert json.loads(stored) == value


# ------------------------------------------------------------------------------ purge


# --------------------------------------------------------------------- approvals


def _gated_tools(runs: list[Any]) -> Toolbox:
    tools = Toolbox()

    @tools.tool(requires_approval=True)
    def transfer(amount: int, to: str) -> str:
        """Move money."""
        runs.append((amount, to))
        return f"sent {amount}"

    return tools


def _awaiting(target: Target, runs: list[Any]) -> tuple[Executor, Response, str]:
    """An executor on the target whose response has one call awaiting approval."""
    from executor_support import response

    executor = Executor(_gated_tools(runs), store=target.store, scope=f"s-{uuid.uuid4().hex}")
    r = response(("c1", "transfer", {"amount": 5, "to": "ann"}))
    (first,) = executor.run(r)
    assert first.status == "awaiting_approval" and first.idempotency_key is not None
    return executor, r, first.idempotency_key


def test_list_shows_the_calls_awaiting_approval(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """``list --status awaiting_approval`` lists the waiting call (and no other record);
    ``--status unknown`` does not; the details hold the tool, call id and arguments."""
    completed(target.store, f"done-{uuid.uuid4().hex}")
    _executor, _r, key = _awaiting(target, [])
    status, out, _ = cli(target, capsys, "list", "--json", "--status", "awaiting_approval")
    assert status == 0
    [listed] = json.loads(out)
    assert listed["key"] == f"approval/{key}" and listed["status"] == "awaiting_approval"
    details = json.loads(listed["result"])
    assert (details["name"], details["call_id"]) == ("transfer", "c1")
    assert details["arguments"] == {"amount": 5, "to": "ann"}
    _, out, _ = cli(target, capsys, "list", "--json", "--status", "unknown")
    assert json.loads(out) == []
    _, out, _ = cli(target, capsys, "list")
    assert "awaiting_approval" in out


def test_approve_with_edited_arguments_is_what_the_executor_runs(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """``approve KEY --arguments JSON``: a bad edit exits 2 and changes nothing; a good
    one is recorded, the next run runs it once; approving again exits 1."""
    runs: list[Any] = []
    executor, r, key = _awaiting(target, runs)
    status, _, err = cli(
        target, capsys, "approve", key, "--arguments", '{"amount": "x", "to": "a"}'
    )
    assert status == 2 and "amount" in err
    status, _, err = cli(target, capsys, "approve", key, "--arguments", "[1]")
    assert status == 2 and "JSON object" in err
    assert executor.run(r)[0].status == "awaiting_approval"
    status, out, _ = cli(target, capsys, "approve", key, "--arguments", '{"amount": 3, "to": "bo"}')
    assert status == 0 and out.startswith(f"approved {key}\n") and "approved" in out
    (ran,) = executor.run(r)
    assert (ran.status, ran.value, runs) == ("completed", "sent 3", [(3, "bo")])
    status, _, err = cli(target, capsys, "approve", key)
    assert status == 1 and "already approved" in err
    _, out, _ = cli(target, capsys, "list", "--json", "--status", "approved")
    assert [row["key"] for row in json.loads(out)] == [f"approval/{key}"]


def test_deny_is_what_the_model_reads(target: Target, capsys: pytest.CaptureFixture[str]) -> None:
    """``deny KEY --reason TEXT`` (the listed key works too): the call never runs and is
    answered denied with the reason; resolve refuses an approval record."""
    runs: list[Any] = []
    executor, r, key = _awaiting(target, runs)
    status, _, err = cli(target, capsys, "resolve", f"approval/{key}", "--failed", "x")
    assert status == 1 and "approve" in err
    status, out, _ = cli(
        target, capsys, "deny", f"approval/{key}", "--reason", "over budget", "--json"
    )
    assert status == 0 and json.loads(out)["record"]["status"] == "denied"
    (denied,) = executor.run(r)
    assert (denied.status, denied.error, runs) == ("denied", "over budget", [])


def test_approve_or_deny_of_an_unknown_key_exits_1(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """No call awaits approval under the key: exit 1, saying so; deny needs --reason."""
    status, _, err = cli(target, capsys, "approve", "nope")
    assert status == 1 and "no call awaits approval" in err
    status, _, err = cli(target, capsys, "deny", "nope", "--reason", "r")
    assert status == 1 and "no call awaits approval" in err
    with pytest.raises(SystemExit):
        cli(target, capsys, "deny", "nope")


def test_purge_deletes_expired_records_and_says_how_many(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    """``purge`` deletes the records past their expiry, prints the count, keeps the rest."""
    old = [f"old{i}-{uuid.uuid4().hex}" for i in range(2)]
    for key in old:
        completed(target.store, key, lease=SHORT, retention=SHORT)
    kept = f"kept-{uuid.uuid4().hex}"
    completed(target.store, kept)
    time.sleep(SHORT * 2.5)
    status, out, _ = cli(target, capsys, "purge")
    assert (status, out) == (0, "purged 2 expired records\n")
    assert [target.store.get(k) for k in old] == [None, None]
    assert target.store.get(kept) is not None
    status, out, _ = cli(target, capsys, "purge", "--json")
    assert (status, json.loads(out)) == (0, {"purged": 0})


# ---------------------------------------------------------------- unusable arguments, outages


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["list", "--db", "a.db", "--url", "redis://x"],
        ["list", "--limit", "0", "--db", "a.db"],
        ["list", "--status", "done", "--db", "a.db"],
        ["resolve", "k", "--db", "a.db"],
        ["resolve", "k", "--completed", "1", "--failed", "x", "--db", "a.db"],
        ["erase", "--db", "a.db"],
        [],
    ],
)
def test_arguments_argparse_refuses_exit_2(args: list[str]) -> None:
    """No store or two, a bad limit or status, no verdict or two, an unknown action: 2."""
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--db", "{db}", "--table", "t"], "--table is for PostgreSQL (--dsn), not --db"),
        (["--db", "{db}", "--prefix", "p:"], "--prefix is for Redis (--url), not --db"),
        (["--dsn", "postgresql://x", "--prefix", "p:"], "--prefix is for Redis (--url)"),
        (["--url", "redis://x", "--table", "t"], "--table is for PostgreSQL (--dsn)"),
        (["--db", "{missing}"], "no SQLite store at"),
        (["--dsn", "postgresql://x", "--table", "no table!"], "table"),
    ],
)
def test_unusable_store_options_exit_2_and_create_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    """Options of another backend, a missing SQLite file or a bad table name: exit 2,
    one line on stderr, and no file is created."""
    db = tmp_path / "calls.db"
    SQLiteStore(db).close()
    missing = tmp_path / "typo.db"
    filled = [a.format(db=db, missing=missing) for a in args]
    status, out, err = cli(None, capsys, "list", *filled)
    assert (status, out) == (2, "")
    assert err.startswith("toolwire store: ") and err.count("\n") == 1
    assert message in err
    assert not missing.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--url", "redis://127.0.0.1:{port}/0"],
        ["--dsn", "postgresql://toolwire@127.0.0.1:{port}/toolwire"],
    ],
)
def test_a_store_that_cannot_be_reached_exits_4(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    """Nothing listening: exit 4 within the timeout, one line on stderr."""
    port = str(free_port())
    began = time.monotonic()
    status, out, err = cli(
        None, capsys, "list", *(a.format(port=port) for a in args), "--timeout", "1"
    )
    assert (status, out) == (4, "")
    assert err.startswith("toolwire store: the store failed: ") and err.count("\n") == 1
    assert time.monotonic() - began < 15


def test_the_module_runs_as_the_store_command(tmp_path: Path) -> None:
    """``python -m toolwire._cli.store`` is ``toolwire store``: output, statuses, stderr."""
    path = tmp_path / "calls.db"
    store = SQLiteStore(path)
    completed(store, "k1")
    store.close()
    base = [sys.executable, "-m", "toolwire._cli.store"]
    done = subprocess.run([*base, "list", "--db", str(path)], capture_output=True, text=True)
    assert done.returncode == 0 and "\x1b" not in done.stdout
    assert done.stdout.splitlines()[1].split()[:2] == ["k1", "completed"]
    done = subprocess.run([*base, "show", "k2", "--db", str(path)], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "toolwire store: no record for key, idempotency key or call id k2\n"


# rich made unimportable, as in a venv without the `cli` extra
_WITHOUT_RICH = """
import sys


class NoRich:
    def find_spec(self, name, path=None, target=None):
        if name == "rich" or name.startswith("rich."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoRich())
from toolwire._cli.main import main

status = main(sys.argv[1:])
assert not any(m == "rich" or m.startswith("rich.") for m in sys.modules), "rich was imported"
sys.exit(status)
"""


@pytest.mark.parametrize("json_output", [True, False], ids=["json", "plain"])
def test_list_and_show_run_without_rich(tmp_path: Path, json_output: bool) -> None:
    """Without rich, ``store list`` and ``store show`` print JSON or plain text, exit 0."""
    path = tmp_path / "calls.db"
    store = SQLiteStore(path)
    completed(store, "k1")
    store.close()
    options = ["--db", str(path), *(["--json"] if json_output else [])]
    base = [sys.executable, "-c", _WITHOUT_RICH, "store"]
    listed = subprocess.run([*base, "list", *options], capture_output=True, text=True)
    shown = subprocess.run([*base, "show", "k1", *options], capture_output=True, text=True)
    assert (listed.returncode, listed.stderr) == (0, "")
    assert (shown.returncode, shown.stderr) == (0, "")
    if json_output:
        [record] = json.loads(listed.stdout)
        assert (record["key"], record["status"]) == ("k1", "completed")
        assert json.loads(shown.stdout)["key"] == "k1"
    else:
        assert listed.stdout.splitlines()[0].split()[:2] == ["KEY", "STATUS"]
        assert listed.stdout.splitlines()[1].split()[:2] == ["k1", "completed"]
        assert shown.stdout.splitlines()[:2] == [
            "key:             k1",
            "status:          completed",
        ]


# ----------------------------------------------------------------------------- views


def test_terminal_table_shows_keys_whole_and_statuses(tmp_path: Path) -> None:
    """On a terminal (rich), the table titles its count and shows each key unbroken."""
    from rich.console import Console

    store = SQLiteStore(tmp_path / "calls.db")
    keys = three_records(store)
    console = Console(record=True, width=220, force_terminal=True)
    console.print(rich_table(store.records(newest_first=True), time.time()))
    text = console.export_text()
    assert text.splitlines()[0].strip() == "3 records"
    for key, status in zip(keys, ("completed", "in_progress", "unknown"), strict=True):
        line = next(line for line in text.splitlines() if key in line)
        assert status in line
    store.close()


@given(seconds=st.floats(-1e6, 1e9, allow_nan=False))
def test_durations_read_in_their_two_largest_units(seconds: float) -> None:
    """A duration is one of 42s, 3m 10s, 2h 05m, 3d 04h, and its first unit is right."""
    text = duration(seconds)
    s = max(0, int(seconds))
    if s < 60:
        assert text == f"{s}s"
    elif s < 3600:
        assert text.startswith(f"{s // 60}m ") and text.endswith("s")
    elif s < 86400:
        assert text.startswith(f"{s // 3600}h ") and text.endswith("m")
    else:
        assert text.startswith(f"{s // 86400}d ") and text.endswith("h")


def test_store_text_is_shown_not_obeyed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A stored error with terminal controls, markup and line feeds is shown escaped in
    the plain and the terminal views, and the key stays on its table line."""
    from rich.console import Console

    from toolwire._cli.store_view import rich_details

    path = tmp_path / "calls.db"
    store = SQLiteStore(path)
    key = "k[red]1"
    claim(store, key)
    message = "\x1b]0;owned\x07boom\n[bold]second line\u202e"
    store.finish(key, owner="w1", fence=1, status="failed", result=None, error=message)
    status, out, _ = cli(None, capsys, "show", key, "--db", str(path))
    assert status == 0
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\u001b]0;owned\\u0007boom" in out and "[bold]second line\\u202e" in out
    _, out, _ = cli(None, capsys, "list", "--db", str(path))
    assert out.splitlines()[1].split()[:2] == [key, "failed"]
    console = Console(record=True, width=200, force_terminal=False)
    console.print(rich_details(store.get(key), time.time()))  # type: ignore[arg-type]
    console.print(rich_table(store.records(), time.time()))
    shown = console.export_text()
    assert "\x1b" not in shown and "k[red]1" in shown and "[bold]second line" in shown
    store.close()
