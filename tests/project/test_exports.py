"""The public surface: one sorted ``__all__`` that is complete, and a cheap import."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import toolwire


def test_all_is_sorted_and_unique() -> None:
    """``toolwire.__all__`` is sorted and lists each name once."""
    assert toolwire.__all__ == sorted(set(toolwire.__all__))


def test_every_exported_name_resolves() -> None:
    """Every name in ``__all__`` can be imported from ``toolwire``."""
    for name in toolwire.__all__:
        assert getattr(toolwire, name) is not None, name


def test_exported_objects_say_they_are_toolwire_s() -> None:
    """Every exported class or function is defined inside the toolwire package."""
    for name in toolwire.__all__:
        value = getattr(toolwire, name)
        module = getattr(value, "__module__", None)
        if module is None:  # a constant such as MISSING
            continue
        assert module == "toolwire" or module.startswith("toolwire."), (name, module)


def test_every_module_all_is_exported_where_it_defines_public_names() -> None:
    """Names in the ``__all__`` of a module that defines exported objects are all exported,
    from ``toolwire`` or from ``toolwire.accounting``."""
    public = {name: getattr(toolwire, name) for name in toolwire.__all__}
    public |= {name: getattr(toolwire.accounting, name) for name in toolwire.accounting.__all__}
    exported = set(public)
    modules = {
        value.__module__ for value in public.values() if isinstance(value, type) or callable(value)
    }
    for module_name in sorted(modules):
        for name in getattr(sys.modules[module_name], "__all__", []):
            assert name in exported, f"{module_name}.{name} is public but not exported"


def test_every_toolwire_error_is_exported_and_drawn_in_the_tree() -> None:
    """Each ToolwireError subclass is exported and named in the errors module's tree."""
    import toolwire._errors as errors_module

    def subclasses(cls: type) -> set[type]:
        found = set(cls.__subclasses__())
        for sub in list(found):
            found |= subclasses(sub)
        return found

    for name in toolwire.__all__:  # load every module, so every subclass is defined
        getattr(toolwire, name)
    tree = errors_module.__doc__ or ""
    for cls in subclasses(toolwire.ToolwireError) | {toolwire.RetryableError}:
        if cls.__module__.startswith("toolwire") and not cls.__name__.startswith("_"):
            assert cls.__name__ in toolwire.__all__, cls
            assert cls.__name__ in tree, f"{cls.__name__} is missing from the error tree"
            assert cls.__module__ == "toolwire", f"{cls.__name__} says {cls.__module__}"
            assert cls.__name__ in errors_module.__all__, f"{cls.__name__} is not in _errors"
            builtins = [b for b in cls.__bases__ if b.__module__ == "builtins"]
            assert len(builtins) <= 1, f"{cls.__name__} has two built-in bases"


def test_caller_mistakes_outages_and_peer_faults_are_separate_families() -> None:
    """A usage error is neither a store outage nor a stream fault, and vice versa."""
    assert not issubclass(toolwire.UsageError, (toolwire.StoreError, toolwire.StreamError))
    assert issubclass(toolwire.SettingsError, toolwire.UsageError)
    assert not issubclass(toolwire.SettingsError, toolwire.StoreError)
    for name in ("ToolDefinitionError", "UnknownFormat", "SettingsError"):
        assert issubclass(getattr(toolwire, name), toolwire.UsageError), name
    assert repr(toolwire.StreamAborted("cut")) == "StreamAborted('cut')"
    assert f"{toolwire.StreamAborted.__module__}.{toolwire.StreamAborted.__qualname__}" == (
        "toolwire.StreamAborted"
    )


def test_a_bad_store_argument_is_a_usage_error_not_an_outage() -> None:
    """A typo in a store call raises SettingsError, which is not a StoreError."""
    store = toolwire.MemoryStore()
    try:
        store.get("")
    except toolwire.SettingsError as exc:
        assert not isinstance(exc, toolwire.StoreError)
    else:
        raise AssertionError("expected SettingsError")


# The exceptions toolwire exports: a new one, or one merged away, is a decision to make here.
EXCEPTIONS = [
    "ApprovalError",
    "ArgumentsInvalid",
    "ContentFiltered",
    "ConversationMismatch",
    "EffectInDoubt",
    "IdempotencyKeyError",
    "JSONDepthError",
    "JSONDuplicateKeyError",
    "JSONSizeError",
    "JSONSyntaxError",
    "MCPToolError",
    "OutputError",
    "OutputRefused",
    "OutputSyntaxError",
    "OutputValidationError",
    "ProviderError",
    "RetryableError",
    "SettingsError",
    "StoreError",
    "StreamAborted",
    "StreamError",
    "StreamFormatError",
    "StreamLimitExceeded",
    "StreamTimeout",
    "TokenLimitExceeded",
    "ToolDefinitionError",
    "ToolwireError",
    "UnknownFormat",
    "UsageError",
]


def test_the_approval_names_are_exported() -> None:
    """``PendingCall`` (what ``pending`` lists) and ``ApprovalError`` (a decision on a key
    no call awaits, a usage error and a LookupError) are public."""
    assert toolwire.PendingCall.__name__ == "PendingCall" and "PendingCall" in toolwire.__all__
    assert issubclass(toolwire.ApprovalError, (toolwire.UsageError, LookupError))


def test_the_exported_exceptions_are_exactly_these() -> None:
    """``toolwire`` exports these exception classes and no other."""
    exported = sorted(
        name
        for name in toolwire.__all__
        if isinstance(getattr(toolwire, name), type)
        and issubclass(getattr(toolwire, name), BaseException)
    )
    assert exported == EXCEPTIONS


@pytest.mark.parametrize(
    "old",
    [
        "DriverSettingsError",
        "ExecutorSettingsError",
        "PriceTableError",
        "StoreSettingsError",
        "DriverUsageError",
        "InvalidOutcome",
        "OutputDefinitionError",
        "ToolboxInputError",
    ],
)
def test_merged_and_aliased_names_are_gone(old: str) -> None:
    """The old settings errors and the exceptions merged into ``UsageError`` are no
    longer names of ``toolwire``, nor of its errors module."""
    import toolwire._errors as errors

    with pytest.raises(AttributeError):
        getattr(toolwire, old)
    assert old not in toolwire.__all__ and not hasattr(errors, old)


def test_one_except_clause_catches_every_bad_setting() -> None:
    """An executor, a stream, a store and a price table refuse bad settings with one class."""
    refusals: list[Any] = [
        lambda: toolwire.Executor(toolwire.Toolbox(), scope="s", timeout=-1),
        lambda: toolwire.stream([], idle_timeout=-1),
        lambda: toolwire.MemoryStore().get(""),
        lambda: toolwire.accounting.Prices({"m": {"input": -1, "output": 1}}),
    ]
    for refuse in refusals:
        with pytest.raises(toolwire.SettingsError):
            refuse()


ACCOUNTING = ["Cost", "ModelPrice", "Prices", "UsageLedger", "estimate_tokens"]


def test_accounting_names_live_in_toolwire_accounting_only() -> None:
    """Prices, ModelPrice, UsageLedger, Cost and estimate_tokens are public in
    ``toolwire.accounting`` and gone from ``toolwire``, whose error says where they are."""
    from toolwire.accounting.pricing import Prices

    assert toolwire.accounting.__all__ == ACCOUNTING
    assert toolwire.accounting.Prices is Prices
    for name in ACCOUNTING:
        assert getattr(toolwire.accounting, name) is not None
        assert name not in toolwire.__all__
        with pytest.raises(AttributeError, match=f"toolwire.accounting.{name}"):
            getattr(toolwire, name)
    assert "accounting" in dir(toolwire)


def test_unknown_attribute_raises_attribute_error() -> None:
    """Asking ``toolwire`` for a name it does not have raises ``AttributeError``."""
    try:
        toolwire.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_is_cheap_and_pulls_no_optional_dependency() -> None:
    """``import toolwire`` (and ``toolwire.accounting``) loads no optional dependency (rich
    included), nor the simulator's server."""
    code = (
        "import sys, toolwire, toolwire.accounting; "
        "optional = ('pydantic', 'redis', 'psycopg', 'rfc8785', 'anyio', 'jsonschema_rs', "
        "'uvicorn', 'h11', 'toolwire.testing', 'rich', 'opentelemetry', 'tiktoken'); "
        "print(sorted(m for m in optional if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_all_matches_the_lazy_export_table() -> None:
    """The literal ``__all__`` (what type checkers read) names exactly the lazy exports."""
    assert toolwire.__all__ == sorted(toolwire._EXPORTS)


def test_durable_conversation_names_are_exported() -> None:
    """The durable-conversation names are public, and a mismatch is a caller mistake."""
    for name in (
        "AsyncConversation",
        "Conversation",
        "ConversationMismatch",
        "Recording",
        "arecord",
        "record",
        "token_limit_messages",
    ):
        assert name in toolwire.__all__, name
    assert issubclass(toolwire.ConversationMismatch, toolwire.UsageError)
    assert callable(toolwire.Response.to_dict) and callable(toolwire.Turn.from_dict)


def test_rich_result_types_are_exported() -> None:
    """``toolwire.Image`` and ``toolwire.File`` are public dataclasses taking bytes."""
    assert {"File", "Image"} <= set(toolwire.__all__)
    image = toolwire.Image(b"\x89PNG", "image/png")
    document = toolwire.File(b"%PDF", "application/pdf", filename="a.pdf")
    assert (image.data, image.media_type) == (b"\x89PNG", "image/png")
    assert document.filename == "a.pdf"
    with pytest.raises(TypeError):
        toolwire.Image("not bytes", "image/png")  # type: ignore[arg-type]


def test_one_name_one_class_recording() -> None:
    """``toolwire.testing`` calls its recorded body ``RecordedBody`` and has no
    ``Recording``: no public module exports a second ``Recording``."""
    import toolwire.testing as testing

    assert "Recording" not in testing.__all__ and "RecordedBody" in testing.__all__
    assert testing.RecordedBody is not toolwire.Recording
    with pytest.raises(AttributeError):
        testing.Recording  # noqa: B018
    with pytest.raises(AttributeError):
        testing.NoSuchName  # noqa: B018
