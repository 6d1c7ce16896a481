"""``python -m benchmarks [SUITE ...] --runs N``: each suite run N times, each in a fresh
process, and its tables printed once with every figure as its min–max over the runs.

The runs print the same lines but for their figures, so the merge is textual: a line's
figures (a number with its unit: ``10.4 µs``, ``4.1×``, ``19%``, ``1,224.1×``) become ranges
position by position; a word that differs between runs (``met`` / ``missed``) is shown as
both. A header states the machine: cores, Python, and the load average before and after
each run, since absolute times and some ratios move with the load.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Sequence

# a figure: a number (thousands separators, decimals) and an optional unit right after it
_FIGURE = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:\s?(ns|µs|us|ms|s|×|%|KB|MB|MiB|B)\b|(×|%))?"
)
_TIME_UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def _tokens(line: str) -> list[str | tuple[float, str, str]]:
    """The line as text pieces and figures ``(value in base units, unit, original)``."""
    out: list[str | tuple[float, str, str]] = []
    end = 0
    for match in _FIGURE.finditer(line):
        out.append(line[end : match.start()])
        unit = match[3] or match[4] or ""
        value = float(match[1].replace(",", "") + (match[2] or ""))
        out.append((value * _TIME_UNITS.get(unit, 1.0), unit, match[0]))
        end = match.end()
    out.append(line[end:])
    return out


def _number(text: str) -> str:
    """A figure's number part, without its unit."""
    match = _FIGURE.match(text)
    assert match is not None
    return match[1] + (match[2] or "")


def _merge_figures(figures: list[tuple[float, str, str]]) -> str:
    low = min(figures, key=lambda f: f[0])
    high = max(figures, key=lambda f: f[0])
    if low[2] == high[2]:
        return low[2]
    if low[1] == high[1]:
        sep = " " if low[2][len(_number(low[2])) :].startswith(" ") else ""
        unit = f"{sep}{low[1]}" if low[1] else ""
        return f"{_number(low[2])}–{_number(high[2])}{unit}"
    return f"{low[2]}–{high[2]}"


def merge_lines(versions: Sequence[str]) -> str:
    """One line from the same line of every run: figures as ranges, differing words kept."""
    if len(set(versions)) == 1:
        return versions[0]
    tokenised = [_tokens(v) for v in versions]
    shapes = {tuple(isinstance(t, str) for t in toks) for toks in tokenised}
    if len(shapes) != 1:
        return " // ".join(dict.fromkeys(versions))  # not the same line shape: show each
    out: list[str] = []
    for column in zip(*tokenised, strict=True):
        if isinstance(column[0], str):
            texts = [str(t) for t in column]
            out.append(texts[0] if len(set(texts)) == 1 else _merge_words(texts))
        else:
            out.append(_merge_figures([t for t in column if not isinstance(t, str)]))
    return "".join(out)


def _merge_words(texts: list[str]) -> str:
    """Text pieces that differ between runs: word by word, the distinct words joined by
    ``/`` (``met/missed``)."""
    split = [re.split(r"(\s+|\|)", text) for text in texts]
    if len({len(words) for words in split}) != 1:
        return "/".join(dict.fromkeys(texts))
    return "".join("/".join(dict.fromkeys(words)) for words in zip(*split, strict=True))


def merge_outputs(outputs: Sequence[str]) -> str:
    """The runs' outputs merged line by line (a run with extra lines: those lines as they
    are, from the longest run)."""
    split = [o.splitlines() for o in outputs]
    longest = max(split, key=len)
    merged = []
    for i, line in enumerate(longest):
        versions = [lines[i] for lines in split if i < len(lines)]
        merged.append(merge_lines(versions) if len(versions) == len(split) else line)
    return "\n".join(merged) + "\n"


def run_suites(suites: Sequence[str], options: Sequence[str], runs: int) -> int:
    """Run each suite ``runs`` times (fresh processes, one after the other) and print its
    tables once, merged; the load average is printed before and after each run."""
    print(
        f"{runs} runs per suite; {os.cpu_count()} cores; CPython {platform.python_version()}; "
        f"load average (1 / 5 / 15 min) {_load()} at the start"
    )
    status = 0
    for suite in suites:
        outputs = []
        loads = []
        for run in range(1, runs + 1):
            before = _load()
            start = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "benchmarks", suite, *options],
                capture_output=True,
                text=True,
                check=False,
            )
            loads.append(f"run {run}: {before} → {_load()} ({time.monotonic() - start:.0f} s)")
            print(f"{suite}: {loads[-1]}", file=sys.stderr, flush=True)
            if done.returncode != 0:
                sys.stderr.write(done.stdout + done.stderr)
                status = done.returncode
                break
            outputs.append(done.stdout)
        if not outputs:
            continue
        print()
        print(f"## {suite}: min–max over {len(outputs)} runs")
        print()
        print("Load average (1 / 5 / 15 min) before → after each run: " + "; ".join(loads))
        print()
        sys.stdout.write(merge_outputs(outputs))
        sys.stdout.flush()
    return status
