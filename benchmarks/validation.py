"""Per-validation cost of a raw JSON Schema tool: main's hand-written validator (before)
against jsonschema-rs behind ``compile_schema`` (after), measured in one run.

Workloads: three realistic tool schemas with a valid call each, the kind models send —
``get_weather`` (two scalars and an enum), ``write_file`` (a path and a 4.7 KB string) and
``create_order`` (an array of ten line items through ``$ref``, nested objects, bounds,
patterns) — plus that order with one mistake (the error path: collecting and wording the
violations). Each figure is the best of several passes of many validations, after
``gc.collect()``; it covers ``errors(value)``, what ``Tool.validate`` calls (the scan for
values JSON cannot carry included). "engine alone" is jsonschema-rs's own ``is_valid``: the
rest of "after" is toolwire's Python scan of the value.

"Before" is ``src/toolwire/_jsonschema.py`` as of commit ``bb21439`` (main when the engine
changed), read with ``git show`` and loaded as a module; without git history that column
says ``n/a``. ``python -m benchmarks validation`` prints a Markdown table with the ratio.
"""

from __future__ import annotations

import gc
import importlib.util
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

from toolwire._tools.jsonschema import compile_schema

BEFORE_COMMIT = "bb21439"
REPO = Path(__file__).resolve().parents[1]

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "unit": {"enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}
WRITE_FILE = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
    "additionalProperties": False,
}
ORDER = {
    "type": "object",
    "properties": {
        "customer": {"$ref": "#/$defs/Customer"},
        "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "minItems": 1},
        "notes": {"type": ["string", "null"], "maxLength": 500},
        "express": {"type": "boolean"},
    },
    "required": ["customer", "items"],
    "additionalProperties": False,
    "$defs": {
        "Customer": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "pattern": "^C[0-9]{6}$"},
                "email": {"type": "string", "format": "email"},
                "address": {
                    "type": "object",
                    "properties": {
                        "street": {"type": "string"},
                        "city": {"type": "string"},
                        "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                    },
                    "required": ["street", "city"],
                },
            },
            "required": ["id"],
        },
        "Item": {
            "type": "object",
            "properties": {
                "sku": {"type": "string", "minLength": 3},
                "qty": {"type": "integer", "minimum": 1, "maximum": 1000},
                "price": {"type": "number", "exclusiveMinimum": 0},
                "options": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            },
            "required": ["sku", "qty"],
            "additionalProperties": False,
        },
    },
}
GOOD_ORDER = {
    "customer": {
        "id": "C123456",
        "email": "ann@example.com",
        "address": {"street": "1 Main St", "city": "Lyon", "zip": "69001"},
    },
    "items": [
        {"sku": f"SKU-{i}", "qty": i + 1, "price": 9.5 + i, "options": ["gift", f"size-{i}"]}
        for i in range(10)
    ],
    "notes": None,
    "express": True,
}
BAD_ORDER = {**GOOD_ORDER, "items": [*GOOD_ORDER["items"][:9], {"sku": "S", "qty": "2"}]}

WORKLOADS: list[tuple[str, dict[str, Any], Any]] = [
    ("get_weather", WEATHER, {"city": "Lyon", "unit": "celsius"}),
    ("write_file 4.7 KB", WRITE_FILE, {"path": "a.py", "content": "x = 1\n" * 800}),
    ("create_order, 10 items", ORDER, GOOD_ORDER),
    ("create_order, 1 mistake", ORDER, BAD_ORDER),
]


def _before() -> types.ModuleType | None:
    """main's hand-written validator, loaded from git history (``None`` without it)."""
    try:
        source = subprocess.run(
            ["git", "show", f"{BEFORE_COMMIT}:src/toolwire/_jsonschema.py"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    spec = importlib.util.spec_from_loader("toolwire._jsonschema_before", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "toolwire"
    sys.modules[spec.name] = module
    exec(compile(source, f"{BEFORE_COMMIT}:_jsonschema.py", "exec"), module.__dict__)
    return module


def _per_call(fn: Any, value: Any, quick: bool) -> float:
    """Best per-call time in seconds of ``fn(value)`` over several passes."""
    fn(value)
    n = 1
    while True:  # calibrate to about 20 ms per pass
        start = time.perf_counter()
        for _ in range(n):
            fn(value)
        if time.perf_counter() - start > 0.02:
            break
        n *= 2
    best = float("inf")
    for _ in range(3 if quick else 7):
        gc.collect()
        start = time.perf_counter()
        for _ in range(n):
            fn(value)
        best = min(best, (time.perf_counter() - start) / n)
    return best


def main() -> None:
    """Print the before/after table."""
    quick = "--quick" in sys.argv
    before = _before()
    print("\n### Per-validation cost of a raw-schema tool (errors(value))\n")
    print(
        "| workload | before (main's validator) | after (jsonschema-rs) | speed-up | engine alone |"
    )
    print("|---|---:|---:|---:|---:|")
    for label, schema, value in WORKLOADS:
        after = compile_schema(schema)
        after_s = _per_call(after.errors, value, quick)
        engine_s = _per_call(after._engine.is_valid, value, quick)
        if before is not None:
            old = before.compile_schema(schema)
            assert bool(old.errors(value)) == bool(after.errors(value)), label
            before_s = _per_call(old.errors, value, quick)
            cells = f"{before_s * 1e6:.1f} µs | {after_s * 1e6:.1f} µs | {before_s / after_s:.1f}×"
        else:
            cells = f"n/a | {after_s * 1e6:.1f} µs | n/a"
        cells += f" | {engine_s * 1e6:.1f} µs"
        print(f"| {label} | {cells} |")


if __name__ == "__main__":
    main()
