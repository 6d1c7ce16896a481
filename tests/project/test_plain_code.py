"""The library's source holds no generated code, private CPython APIs or reference-count
tricks (DESIGN.md: plain code over clever code)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

TRICKS = {
    "exec": re.compile(r"\bexec\("),
    "eval": re.compile(r"\beval\("),
    "c_make_encoder": re.compile(r"c_make_encoder"),
    "getrefcount": re.compile(r"getrefcount"),
}


@pytest.mark.parametrize("name", sorted(TRICKS))
def test_source_uses_no_trick(name: str) -> None:
    """No file under src/ runs generated code, the json C encoder or reference counts."""
    found = [
        f"{path.relative_to(SRC)}:{number}"
        for path in sorted(SRC.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if TRICKS[name].search(line)
    ]
    assert not found, f"{name} in {', '.join(found)}"
