"""The official JSON-Schema-Test-Suite, required cases of draft 2020-12 and draft 7: every
case gets the suite's answer from ``compile_schema`` (``is_valid`` and ``errors`` agree, and
every invalid value gets at least one located message), and a schema toolwire refuses raises
``ToolDefinitionError`` and is listed in ``REFUSED`` below.

The suite is read from ``../shared/jsonschema-suite`` (or ``$TOOLWIRE_JSONSCHEMA_SUITE``) at
test time, the way the recorded corpus is: skipped where absent, a failure under
``CI=true``. Its ``remotes/`` folder is served to the engine by a retriever for
``http://localhost:1234/``, as the suite's README asks; nothing touches the network.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, require
from toolwire import ToolDefinitionError
from toolwire._tools.jsonschema import compile_schema, format_path

pytestmark = pytest.mark.slow

SUITE = Path(
    os.environ.get("TOOLWIRE_JSONSCHEMA_SUITE", REPO.parent / "shared" / "jsonschema-suite")
)
REMOTE = "http://localhost:1234/"
DRAFTS = {
    "draft2020-12": "https://json-schema.org/draft/2020-12/schema",
    "draft7": "http://json-schema.org/draft-07/schema#",
}

# Cases whose schema toolwire refuses with ToolDefinitionError, by "draft/file: group":
# none. A case listed here must raise; any other refusal fails the test.
REFUSED: frozenset[str] = frozenset()


def _cases() -> list[Any]:
    """One pytest param per suite case, or one that skips when the suite is absent."""
    if not (SUITE / "tests").is_dir():
        return [pytest.param(None, id="suite-absent")]
    params = []
    for draft in DRAFTS:
        for path in sorted((SUITE / "tests" / draft).glob("*.json")):
            groups = json.loads(path.read_text("utf-8"))
            for g, group in enumerate(groups):
                for t, test in enumerate(group["tests"]):
                    case = (draft, path.name, group, test)
                    params.append(pytest.param(case, id=f"{draft}/{path.stem}/{g}/{t}"))
    return params


def _retriever(uri: str) -> Any:
    """Serve ``remotes/`` under ``http://localhost:1234/``; refuse everything else."""
    if not uri.startswith(REMOTE):
        raise LookupError(f"no such remote in the test suite: {uri}")
    path = SUITE / "remotes" / uri[len(REMOTE) :].split("#", 1)[0]
    return json.loads(path.read_text("utf-8"))


def _with_draft(schema: Any, draft: str) -> Any:
    # The suite's folder names the draft; a schema that does not say so itself means it.
    if isinstance(schema, dict) and "$schema" not in schema:
        return {"$schema": DRAFTS[draft], **schema}
    return schema


@pytest.mark.parametrize("case", _cases())
def test_required_suite_case(case: Any) -> None:
    """The case's value is judged as the suite says, or its schema is a listed refusal."""
    require(case is not None, f"the JSON-Schema-Test-Suite is not at {SUITE}")
    draft, filename, group, test = case
    label = f"{draft}/{filename}: {group['description']}"
    try:
        validator = compile_schema(_with_draft(group["schema"], draft), retriever=_retriever)
    except ToolDefinitionError:
        assert label in REFUSED, f"refused but not listed: {label}"
        return
    assert label not in REFUSED, f"listed as refused but compiles: {label}"
    assert validator.is_valid(test["data"]) is test["valid"], test["description"]
    errors = validator.errors(test["data"])
    assert (errors == []) is test["valid"], [str(e) for e in errors]
    for error in errors:
        assert error.message and str(error) == f"at {format_path(error.path)}: {error.message}"
