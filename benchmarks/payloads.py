"""The four seeded tool-call argument payloads of ``reference/partial-json.md``.

Rebuilt deterministically (fixed seeds, no files) so every benchmark run measures the same
documents split into the same deltas:

* ``small``: ``{"city":"San Francisco","units":"metric"}`` (41 B);
* ``medium``: an ``upsert_records`` call with options and 20 nested records, serialised
  with Anthropic-style ``", "`` / ``": "`` spacing (about 4.7 KB);
* ``large`` / ``huge``: ``{"path":"src/app.py","content":...}`` ``write_file`` calls whose
  generated Python source (about 40 KB / 400 KB) holds quotes, backslashes, tabs, ``\\r\\n``
  literals, non-ASCII text (escaped as ``\\uXXXX``) and emoji (escaped as surrogate pairs).

Each document is split into deltas of 1 to 16 characters at seeded random points, so splits
fall inside escapes, ``\\uXXXX`` sequences and between the halves of surrogate pairs.
Building all four takes a few milliseconds.
"""

from __future__ import annotations

import json
import random
from functools import cache

__all__ = ["Payload", "payloads", "split_deltas"]

Payload = tuple[str, str, list[str]]

_SEED = 20240611
_WORDS = [
    *("alpha", "beta", "gamma", "delta", "record", "buffer", "stream", "parser", "token"),
    *("chunk", "value", "index", "cache", "handler", "client", "server", "request"),
    *("response", "session", "window", "limit", "offset", "result"),
]
_NON_ASCII = ("café", "naïve", "façade", "→", "Grüße", "日本語", "Ελληνικά", "résumé", "±", "µs")
_EMOJI = ("🚀", "🎉", "🐍", "✨", "🔥", "📦", "😀")


def split_deltas(document: str, seed: int, low: int = 1, high: int = 16) -> list[str]:
    """Split ``document`` into consecutive pieces of ``low``..``high`` characters."""
    rng = random.Random(seed)
    deltas: list[str] = []
    pos = 0
    while pos < len(document):
        step = rng.randint(low, high)
        deltas.append(document[pos : pos + step])
        pos += step
    return deltas


def _medium_document(rng: random.Random) -> str:
    records = []
    for i in range(20):
        records.append(
            {
                "id": f"rec_{i:04d}",
                "name": f"{rng.choice(_WORDS).title()} {rng.choice(_WORDS).title()}",
                "email": f"{rng.choice(_WORDS)}{i}@example.com",
                "score": round(rng.uniform(0, 100), 2),
                "active": rng.random() < 0.7,
                "tags": rng.sample(_WORDS, 2),
                "address": {
                    "street": f"{rng.randint(1, 999)} {rng.choice(_WORDS).title()} St",
                    "city": rng.choice(("Berlin", "Paris", "Austin", "Osaka", "Lagos")),
                    "zip": f"{rng.randint(10000, 99999)}",
                },
                "notes": None if rng.random() < 0.5 else rng.choice(_WORDS),
            }
        )
    doc = {
        "table": "customers",
        "options": {
            "upsert": True,
            "conflict_keys": ["id", "email"],
            "batch_size": 100,
            "dry_run": False,
        },
        "records": records,
    }
    return json.dumps(doc)  # default separators: ", " and ": " (Anthropic style)


def _python_line(rng: random.Random, n: int) -> str:
    w = rng.choice(_WORDS)
    kind = rng.randrange(10)
    if kind == 0:
        return f'def {w}_{n}(path: str, sep: str = "\\r\\n") -> list[str]:'
    if kind == 1:
        return f"\t# {rng.choice(_NON_ASCII)} handling for {w} {rng.choice(_EMOJI)}"
    if kind == 2:
        return f'    pattern_{n} = re.compile(r"\\d+\\s*{w}\\\\n")'
    if kind == 3:
        return f"    message = f\"{w} {{value!r}} is 'invalid' → {rng.choice(_NON_ASCII)}\""
    if kind == 4:
        return f'    data = path.split("\\t")[{rng.randrange(9)}].strip("\\"\\\\")'
    if kind == 5:
        return f'    print("{rng.choice(_EMOJI)} {w} done", end="\\r\\n")'
    if kind == 6:
        return f"    return [{w}.strip() for {w} in lines if {w}]"
    if kind == 7:
        return f'class {w.title()}{n}:\n    """{w.title()} {rng.choice(_NON_ASCII)}."""'
    if kind == 8:
        return f"    total_{n} += {rng.randint(0, 10**6)} * {w}_{rng.randrange(50)}"
    return ""


def _write_file_document(rng: random.Random, target: int) -> str:
    lines: list[str] = ["import re", ""]
    size = 0
    # ~1.25 JSON characters per source character; stop when the document reaches target.
    while size < target:
        line = _python_line(rng, len(lines))
        lines.append(line)
        size += len(json.dumps(line)) - 2 + 2  # escaped text plus the "\n" escape
    content = "\n".join(lines) + "\n"
    return json.dumps({"path": "src/app.py", "content": content}, separators=(",", ":"))


@cache
def payloads() -> tuple[Payload, ...]:
    """``(name, document, deltas)`` for the four payloads, in size order (cached)."""
    rng = random.Random(_SEED)
    small = json.dumps({"city": "San Francisco", "units": "metric"}, separators=(",", ":"))
    medium = _medium_document(rng)
    large = _write_file_document(rng, 46_300)
    huge = _write_file_document(rng, 467_100)
    out: list[Payload] = []
    for i, (name, doc) in enumerate(
        (("small", small), ("medium", medium), ("large", large), ("huge", huge))
    ):
        out.append((name, doc, split_deltas(doc, _SEED + i)))
    return tuple(out)


if __name__ == "__main__":
    for name, doc, deltas in payloads():
        print(f"{name:7} {len(doc.encode()):>9,} B {len(deltas):>7,} deltas")
