"""``toolwire replay``: every recording's ``--json`` result, the exit statuses of API.md §7,
the plain output of pipes, the pace, and the live view as a person sees it in a terminal
(tmux)."""

from __future__ import annotations

import io
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli_support import CONTENT, Terminal, chat_chunk, write_file_stream
from conftest import load_expected
from corpus_support import FAILING, outcome_key, stream_bytes
from toolwire import StreamAssembler, StreamError
from toolwire._cli.replay import PAYLOAD_INTERVAL, Pace, main, replay

EXPECTED = load_expected()
NAMES = sorted(EXPECTED)
ENVELOPED = [n for n in NAMES if n.endswith(".json")]
UNWRAPPED = [n for n in NAMES if not n.endswith(".json")]


# ------------------------------------------------------------------------------ helpers


def run_json(path: Path | str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, Any]:
    """``replay --json`` in this process: the exit status and the parsed document."""
    status = main([str(path), "--json", *extra])
    out = capsys.readouterr().out
    return status, json.loads(out) if out else None


def run_cli(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``python -m toolwire._cli.replay ARGS`` as a separate process, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "toolwire._cli.replay", *args],
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def check_document(name: str, status: int, doc: dict[str, Any]) -> None:
    """A ``--json`` document and exit status match expected.json (as MANIFEST.md reads it)."""
    entry = EXPECTED[name]
    if name in FAILING:
        assert status == 3
        assert doc["error"] == FAILING[name].__name__
        if entry["error"] is not None:
            assert doc["provider_error"]["code"] == entry["error"]["code"]
        assert [c["name"] for c in doc["partial"]["calls"]] == [
            c["name"] for c in entry["tool_calls"]
        ]
        assert doc["partial"]["text"] == entry["text"]
        return
    assert status == 0, doc
    assert "error" not in doc
    assert doc["text"] == entry["text"]
    assert doc["rejected"] == []
    assert doc["raw_finish_reason"] == entry["finish_reason"]
    want = entry["tool_calls"]
    assert doc["finish_reason"] == ("tool_calls" if want else "stop")
    assert len(doc["tool_calls"]) == len(want)
    for call, expected in zip(doc["tool_calls"], want, strict=True):
        assert call["name"] == expected["name"]
        assert call["arguments"] == expected["arguments"]
        if isinstance(expected.get("arguments_raw"), str):
            assert call["raw_arguments"] == expected["arguments_raw"]
        if expected.get("id"):
            assert call["id"] == expected["id"]
        assert call["id"]
    if entry.get("reasoning_chars"):
        assert len(doc["reasoning"]) == entry["reasoning_chars"]
    if entry.get("model"):
        assert doc["model"] == entry["model"]


# ------------------------------------------------------------------- the corpus, --json


@pytest.mark.corpus
@pytest.mark.parametrize("name", NAMES)
def test_json_gives_the_expected_result_of_every_recording(
    corpus_dir: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``replay FILE --json`` prints the recording's expected result, exit 0 or 3."""
    status, doc = run_json(corpus_dir / "streams" / name, capsys)
    check_document(name, status, doc)


@pytest.mark.corpus
@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(UNWRAPPED), fraction=st.floats(0, 1))
def test_replay_gives_what_the_library_gives_for_any_cut(
    corpus_dir: Path, name: str, fraction: float
) -> None:
    """For any cut of any recording, the replay's framed feeding ends as ``feed_bytes``
    of the same bytes does: the same ``Response``, or the same error (Hypothesis)."""
    data = stream_bytes(name)
    cut = data[: round(len(data) * fraction)]
    asm = StreamAssembler()
    try:
        asm.feed_bytes(cut)
        library: Any = asm.close()
    except StreamError as exc:
        library = exc
    assert outcome_key(replay(cut).outcome) == outcome_key(library)


@pytest.mark.corpus
@pytest.mark.parametrize("name", ENVELOPED)
def test_recorder_envelopes_are_unwrapped_and_nothing_else(
    corpus_dir: Path, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A llama-stack recording replays exactly as the array of its ``__data__`` chunks."""
    unwrapped = tmp_path / "chunks.json"
    unwrapped.write_bytes(stream_bytes(name))  # the recorder's envelopes taken off
    assert b"__data__" not in unwrapped.read_bytes()
    assert run_json(corpus_dir / "streams" / name, capsys) == run_json(unwrapped, capsys)


# ------------------------------------------------------------------------ exit statuses


def test_a_stream_that_ended_properly_exits_0_with_its_response(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A finished stream prints every ``Response`` field as JSON and exits 0."""
    path = tmp_path / "call.sse"
    path.write_text(write_file_stream())
    status, doc = run_json(path, capsys)
    assert status == 0
    assert set(doc) == {
        "text",
        "reasoning",
        "tool_calls",
        "rejected",
        "finish_reason",
        "raw_finish_reason",
        "usage",
        "response_id",
        "model",
        "format",
        "created",
        "parts",
        "output",
        "paused",
        "done_marker_finish",
    }
    (call,) = doc["tool_calls"]
    assert call["name"] == "write_file"
    assert call["arguments"] == {"path": "notes.txt", "content": CONTENT}
    assert doc["text"] == "Writing the notes." and doc["format"] == "openai-chat"


def test_a_cut_stream_exits_3_with_the_error_and_what_arrived(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stream without its terminal event prints the StreamError's JSON and exits 3."""
    path = tmp_path / "cut.sse"
    path.write_text(write_file_stream(finish=False))
    status, doc = run_json(path, capsys)
    assert status == 3
    assert doc["error"] == "StreamAborted"
    assert doc["message"].startswith("the stream ended without its terminal event (usage")
    assert doc["message"].endswith("closing a stream does not stop the provider's meter)")
    (call,) = doc["partial"]["calls"]
    assert call["name"] == "write_file" and call["raw_arguments"].startswith('{"path"')
    assert doc["partial"]["text"] == "Writing the notes."


def test_a_response_with_a_rejected_call_exits_0_but_is_not_executable(tmp_path: Path) -> None:
    """A finished stream whose call is not JSON exits 0 and says nothing will run."""
    path = tmp_path / "rejected.sse"
    path.write_text(write_file_stream(arguments='{"path": "a"}}'))
    done = run_cli(str(path))
    assert done.returncode == 0, done.stderr
    assert "call 0 rejected: arguments are not valid JSON" in done.stdout
    assert "verdict not executable: 1 of 1 call rejected (call 0 write_file:" in done.stdout


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cannot read"),
        (b"", "no provider payload"),
        (b"just some words\nand more words\n", "no provider payload"),
        (b'{"greeting": "hello"}\n', "not a recognisable stream"),
        (b"data: [DONE]\n\n", "no provider payload"),
        (b"\x01\x02\x03binary", "not a recognisable stream"),
        (b"\x7fELF\x02\x01\x01\x00\xff\xfe", "not a recognisable stream"),
    ],
)
def test_unusable_input_exits_2_with_one_line_on_stderr(
    tmp_path: Path, content: bytes | None, reason: str
) -> None:
    """A missing file or one with no provider payload exits 2: stdout empty, one line."""
    path = tmp_path / "input"
    if content is not None:
        path.write_bytes(content)
    for extra in ([], ["--json"], ["--plain"]):
        done = run_cli(str(path), *extra)
        assert done.returncode == 2
        assert done.stdout == ""
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("toolwire replay: ")
        assert reason in done.stderr


def test_a_dash_reads_the_recording_from_standard_input(tmp_path: Path) -> None:
    """``replay -`` reads the body from stdin (``curl ... | toolwire replay - --json``)."""
    done = run_cli("-", "--json", input=write_file_stream())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tool_calls"][0]["name"] == "write_file"


def test_a_directory_is_unusable_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A directory given as FILE exits 2 and says why."""
    assert main([str(tmp_path), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "cannot read" in captured.err


@pytest.mark.parametrize(
    "args",
    [["--speed", "-1"], ["--speed", "nan"], ["--speed", "fast"], ["--format", "openia"], []],
)
def test_unusable_arguments_exit_2(tmp_path: Path, args: list[str]) -> None:
    """A negative or non-numeric speed, an unknown format or no FILE exits 2."""
    path = tmp_path / "call.sse"
    path.write_text(write_file_stream())
    done = run_cli(*([str(path)] if args else []), *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "error:" in done.stderr


def test_an_unknown_format_name_suggests_the_close_ones(tmp_path: Path) -> None:
    """``--format openia`` names the format it probably meant."""
    done = run_cli(str(tmp_path), "--format", "openia")
    assert "did you mean 'openai'" in done.stderr


def test_a_forced_format_reads_the_stream_as_that_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--format openai-chat`` gives the detected result; a wrong format is no stream."""
    path = tmp_path / "call.sse"
    path.write_text(write_file_stream())
    assert run_json(path, capsys, "--format", "openai-chat") == run_json(path, capsys)
    status, doc = run_json(path, capsys, "--format", "anthropic")
    assert status in (2, 3)
    assert doc is None or "error" in doc


# ------------------------------------------------------------------------ plain output


def test_piped_output_is_plain_lines_one_per_event(tmp_path: Path) -> None:
    """Into a pipe: no escape codes, one line per event (newlines escaped), the result."""
    path = tmp_path / "call.sse"
    path.write_text(write_file_stream(arguments=json.dumps({"content": "two\nlines"}), step=5))
    done = run_cli(str(path))
    assert done.returncode == 0
    assert "\x1b" not in done.stdout
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        f"replay {path}",
        "format openai-chat",
        'text "Writing the notes."',
        "call 0 started write_file id=call_w",
    ]
    fragments = [json.loads(line.split(" ", 3)[3]) for line in lines if " arguments " in line]
    assert "".join(fragments) == json.dumps({"content": "two\nlines"})
    assert "finished tool_calls (provider: tool_calls)" in lines
    assert lines[-4:] == [
        'call 0 ready: write_file id=call_w arguments={"content": "two\\nlines"}',
        "finish tool_calls (provider: tool_calls)",
        "usage output 24 · (output estimated)",  # the stream reported none
        "verdict executable: 1 call finalised (write_file)",
    ]


def test_plain_verdict_says_what_arrived_and_that_none_will_run(tmp_path: Path) -> None:
    """A cut stream with two calls: exit 3, and the verdict names the error and the calls."""
    events = [
        chat_chunk({"tool_calls": [{"index": i, "id": f"c{i}", "function": {"name": "f"}}]})
        for i in range(2)
    ]
    path = tmp_path / "two.sse"
    path.write_text("".join(events))
    done = run_cli(str(path))
    assert done.returncode == 3
    verdict = done.stdout.splitlines()[-1]
    assert verdict.startswith("verdict not executable: the stream ended without its terminal")
    assert verdict.endswith("does not stop the provider's meter); 2 calls arrived, none will run")
    assert "error StreamAborted: the stream ended without its terminal event" in done.stdout


# --------------------------------------------------------------------------------- pace


def test_speed_sets_the_pace_and_zero_means_no_pauses(tmp_path: Path) -> None:
    """Twice the recorded pace takes at least half its time; ``--speed 0`` never waits."""
    path = tmp_path / "call.sse"
    path.write_text(write_file_stream(step=4))
    payloads = path.read_text().count("data: ")  # [DONE] is a payload of the recording too
    began = time.monotonic()
    assert main([str(path), "--json", "--speed", "2"]) == 0
    assert time.monotonic() - began >= (payloads - 1) * PAYLOAD_INTERVAL / 2
    long = tmp_path / "long.sse"
    long.write_text(write_file_stream(step=1))  # about 100 payloads: 4 s at the recorded pace
    began = time.monotonic()
    assert main([str(long), "--plain", "--speed", "0"]) == 0
    assert time.monotonic() - began < long.read_text().count("data: ") * PAYLOAD_INTERVAL


@settings(max_examples=100)
@given(
    interval=st.floats(0.001, 1.0),
    renders=st.lists(st.floats(0, 2.0), min_size=1, max_size=30),
)
def test_pace_deadlines_are_absolute(interval: float, renders: list[float]) -> None:
    """Payload n is never released before start + n × interval, and a slow render is
    caught up (no drift): the release time is max(due, when the caller came back)."""
    now = [100.0]
    pace = Pace(interval, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    for n, render in enumerate(renders):
        came_back = now[0]
        pace.wait()
        due = 100.0 + n * interval
        assert now[0] == pytest.approx(max(due, came_back))
        now[0] += render  # the time the view takes to draw the payload


def test_ctrl_c_stops_the_replay_with_status_130(tmp_path: Path) -> None:
    """SIGINT during a paced replay exits 130 with one line on stderr, no traceback."""
    path = tmp_path / "call.sse"
    path.write_text(write_file_stream(step=1))
    code = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from toolwire._cli.replay import main; sys.exit(main(sys.argv[1:]))"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(path), "--plain", "--speed", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    child.stdout.readline()  # it is replaying
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 130
    assert err == "toolwire replay: interrupted\n"


def test_a_reader_that_goes_away_ends_the_replay_quietly(tmp_path: Path) -> None:
    """``replay | head -1``: status 141 (as SIGPIPE would), no traceback on stderr."""
    path = tmp_path / "call.sse"
    path.write_text(write_file_stream(step=1))
    with subprocess.Popen(
        [sys.executable, "-m", "toolwire._cli.replay", str(path), "--plain", "--speed", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        child.stdout.readline()
        child.stdout.close()
        assert child.wait(timeout=60) == 141
        assert child.stderr.read() == b""


# ----------------------------------------------------------- the live view, in a terminal


def _content_shown(screen: str) -> str | None:
    """The text of the ``content`` preview on the screen, when a whole frame shows it."""
    match = re.search(r'"content": "([^"│]*)', screen)
    return match.group(1).rstrip() if match and "╰" in screen else None


def _flat(screen: str) -> str:
    return " ".join(screen.split())


def test_terminal_shows_arguments_growing_then_the_verdict(
    terminal: Terminal, tmp_path: Path
) -> None:
    """In a terminal, the call's argument preview grows between two looks, and the final
    picture shows the call, the finish and the verdict."""
    path = tmp_path / "write.sse"
    path.write_text(write_file_stream(step=2))
    command = [sys.executable, "-m", "toolwire._cli.replay", str(path), "--speed", "0.5"]
    terminal.start(command)
    first, live = terminal.wait_for(lambda s: (c := _content_shown(s)) and (c, s))
    assert "streaming" in live  # the call's panel, while its arguments arrive
    time.sleep(0.8)  # at --speed 0.5, 10 more payloads of two characters
    second, screen = terminal.wait_for(lambda s: (c := _content_shown(s)) and c != first and (c, s))
    assert CONTENT.startswith(first) and CONTENT.startswith(second)
    assert len(second) > len(first)
    assert "call 0 · write_file · call_w" in screen
    final = terminal.wait_for(lambda s: "EXIT=" in s and s)
    assert "EXIT=0" in final
    flat = _flat(final)
    assert f'"content": "{CONTENT}"' in flat
    assert "verdict executable: 1 call finalised (write_file)" in flat
    assert "finish tool_calls (provider: tool_calls)" in flat


def test_terminal_shows_why_a_cut_stream_will_not_run(terminal: Terminal, tmp_path: Path) -> None:
    """In a terminal, a cut stream ends with the error and a verdict that nothing runs."""
    path = tmp_path / "cut.sse"
    path.write_text(write_file_stream(finish=False))
    terminal.start([sys.executable, "-m", "toolwire._cli.replay", str(path), "--speed", "4"])
    flat = _flat(terminal.wait_for(lambda s: "EXIT=" in s and s))
    assert "EXIT=3" in flat
    assert "error StreamAborted: the stream ended without its terminal event" in flat
    assert "verdict not executable: the stream ended without its terminal event (usage" in flat
    assert "does not stop the provider's meter); 1 call arrived and will not run" in flat
    assert "not ended" in flat  # the call's panel says it never got its end


# ------------------------------------------------------------- text that must not act


HOSTILE = "\x1b]0;owned\x07\x1b[2J[bold]markup[/bold]\u202eevil\nnext"


def hostile_stream() -> str:
    """A finished stream whose text, tool name and call id carry terminal controls,
    rich markup, a bidirectional override and a line feed."""
    events = [chat_chunk({"role": "assistant", "content": HOSTILE})]
    call = {"index": 0, "id": f"id-{HOSTILE}", "function": {"name": f"t{HOSTILE}"}}
    events.append(chat_chunk({"tool_calls": [call]}))
    piece = {"index": 0, "function": {"arguments": json.dumps({"q": HOSTILE})}}
    events += [chat_chunk({"tool_calls": [piece]}), chat_chunk({}, "tool_calls")]
    return "".join(events)


def test_plain_output_shows_controls_instead_of_obeying_them(tmp_path: Path) -> None:
    """Into a pipe, escape sequences, bidi overrides and line feeds from the stream are
    written as escapes: no raw control reaches the log, every event stays on one line."""
    path = tmp_path / "hostile.sse"
    path.write_text(hostile_stream())
    done = run_cli(str(path))
    assert done.returncode == 0
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", done.stdout)
    started = next(line for line in done.stdout.splitlines() if " started " in line)
    assert "\\u001b]0;owned\\u0007" in started and "\\u202eevil\\nnext" in started


def test_terminal_view_shows_controls_and_markup_as_text(tmp_path: Path) -> None:
    """The rich view writes the stream's controls as escapes and its markup as text."""
    from rich.console import Console

    from toolwire._cli.replay_view import LiveView, ReplayModel

    written = io.StringIO()
    console = Console(file=written, width=200, force_terminal=False)
    model, view = ReplayModel(), LiveView(console, "hostile.sse")

    def watch(events: list[Any], asm: StreamAssembler) -> None:
        model.format = asm.format
        for event in events:
            model.apply(event)

    result = replay(hostile_stream().encode(), watch=watch)
    console.print(view._live_picture(model))
    view.finish(result.outcome, model)
    shown = written.getvalue()
    assert "\x1b" not in shown and "\u202e" not in shown and "\x07" not in shown
    assert "[bold]markup[/bold]" in shown  # markup shown, not applied
    assert "\\u001b]0;owned\\u0007" in shown
