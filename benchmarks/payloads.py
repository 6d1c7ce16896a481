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

__all__ = [
    "Payload",
    "ascii_string_document",
    "big_array_document",
    "big_object_document",
    "big_string_document",
    "deep_numbers",
    "escaped_string_document",
    "payloads",
    "split_deltas",
]

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


# ----------------------------------------------------- shapes for the parser's cost checks
#
# Each builder is deterministic (fixed seed) and returns one document text; the benchmark
# splits it with split_deltas. Sizes are in characters (all ASCII, so also in bytes).


def deep_numbers(depth: int, size: int) -> str:
    """``depth`` opening brackets, then comma-separated numbers up to ``size`` characters in
    all, ending with a comma: a prefix whose arrays are all still open."""
    rng = random.Random(_SEED)
    parts = ["[" * depth]
    total = depth
    while total < size:
        number = f"{rng.randrange(1000)},"
        parts.append(number)
        total += len(number)
    return "".join(parts)


def big_array_document(size: int) -> str:
    """A closed array of about ``size`` characters: numbers, short strings, literals and
    small records, the shape of a long list argument."""
    rng = random.Random(_SEED + 10)
    items: list[object] = []
    total = 2
    while total < size:
        kind = rng.randrange(4)
        item: object
        if kind == 0:
            item = rng.randrange(10**6)
        elif kind == 1:
            item = rng.choice(_WORDS)
        elif kind == 2:
            item = rng.random() < 0.5
        else:
            item = {"id": rng.randrange(10**4), "name": rng.choice(_WORDS), "tags": [1, 2]}
        items.append(item)
        total += len(json.dumps(item)) + 2
    return json.dumps(items)


def big_object_document(size: int) -> str:
    """A closed object of about ``size`` characters with distinct keys and mixed values."""
    rng = random.Random(_SEED + 11)
    members: dict[str, object] = {}
    total = 2
    i = 0
    while total < size:
        value: object = rng.choice((rng.randrange(10**6), rng.choice(_WORDS), None, [i]))
        key = f"{rng.choice(_WORDS)}_{i}"
        members[key] = value
        total += len(json.dumps({key: value}))
        i += 1
    return json.dumps(members)


def big_string_document(size: int) -> str:
    """``{"path": ..., "content": ...}`` whose content is ``size`` plain ASCII characters
    (words and spaces, no escapes)."""
    rng = random.Random(_SEED + 12)
    words: list[str] = []
    total = 0
    while total < size:
        word = rng.choice(_WORDS)
        words.append(word)
        total += len(word) + 1
    content = " ".join(words)[:size]
    return json.dumps({"path": "notes.txt", "content": content}, separators=(",", ":"))


def escaped_string_document(size: int) -> str:
    """Like :func:`big_string_document`, but the content's JSON text (about ``size``
    characters) is nearly all escapes: ``\\n``, ``\\"``, ``\\\\``, ``\\t``, ``\\uXXXX``
    for non-ASCII and surrogate pairs for emoji."""
    rng = random.Random(_SEED + 13)
    alphabet = ["\n", '"', "\\", "\t", "é", "→", "日", "🚀", "😀", "a"]
    chars: list[str] = []
    total = 0
    while total < size:
        ch = rng.choice(alphabet)
        chars.append(ch)
        total += len(json.dumps(ch)) - 2
    return json.dumps({"path": "notes.txt", "content": "".join(chars)}, separators=(",", ":"))


def ascii_string_document(size: int) -> str:
    """A :func:`big_string_document` exactly as long as ``escaped_string_document(size)``,
    the plain-text reference for the escape cost."""
    target = len(escaped_string_document(size))
    doc = big_string_document(size)
    while len(doc) < target:
        doc = big_string_document(size + target - len(doc))
    return doc[: target - 2] + '"}'


if __name__ == "__main__":
    for name, doc, deltas in payloads():
        print(f"{name:7} {len(doc.encode()):>9,} B {len(deltas):>7,} deltas")
