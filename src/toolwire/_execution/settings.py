"""The executors' settings: their defaults, and the checks that refuse a setting which
cannot hold the at-most-once promise (:class:`~toolwire.SettingsError`, saying what to set).

Checked once, at construction; each check is named after the setting it guards.
"""

from __future__ import annotations

import math
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .._core.response import ToolCall
from .._errors import SettingsError
from .decisions import describe

__all__ = [
    "DEFAULT_CANCEL_GRACE",
    "DEFAULT_LEASE",
    "DEFAULT_MAX_THREADS",
    "DEFAULT_RETENTION",
    "DEFAULT_TIMEOUT",
    "ERROR_TEXT_LIMIT",
    "TRANSIENT_ERRORS",
    "ErrorText",
    "Settings",
    "check_retention",
    "default_error_text",
]

DEFAULT_TIMEOUT = 60.0
"""Seconds a tool may run unless it declares its own ``timeout``."""
DEFAULT_LEASE = 30.0
"""Seconds a claim lives without a heartbeat (a crashed worker's call waits this long)."""
DEFAULT_RETENTION = 86400.0
"""Seconds a record is kept: replays and at-most-once hold for 24 hours."""
DEFAULT_CANCEL_GRACE = 1.0
"""Seconds a cancelled tool is given to end before it is left to run on its own."""
DEFAULT_MAX_THREADS = 32
"""Sync tools of one run running at once (``ThreadPoolExecutor``'s ceiling)."""
ERROR_TEXT_LIMIT = 500
"""Characters of an exception the model reads by default."""
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (ConnectionError, TimeoutError, socket.gaierror)
"""Exceptions that release the claim by default, as ``RetryableError`` does: the
downstream could not be reached or did not answer (``ConnectionError`` and its
subclasses ``ConnectionRefusedError``, ``ConnectionResetError``, ``ConnectionAbortedError``,
``BrokenPipeError``; ``TimeoutError``, which ``socket.timeout`` and ``asyncio.TimeoutError``
are; ``socket.gaierror``, a failed name lookup)."""

ErrorText = Callable[[BaseException, ToolCall], str]


def default_error_text(exc: BaseException, call: ToolCall) -> str:
    """What the model reads of a tool's exception by default: ``Type: message``, at most
    ``ERROR_TEXT_LIMIT`` characters (the rest is cut and marked ``…``)."""
    text = describe(exc)
    if len(text) > ERROR_TEXT_LIMIT:
        text = text[: ERROR_TEXT_LIMIT - 1] + "…"
    return text


_SCOPE_REQUIRED = (
    "scope= is required: it names the key space of the calls, usually the tenant and the "
    "conversation (scope=f'{tenant}/{conversation_id}'). Calls in different scopes never "
    "share a record, so one tenant's call is never replayed to another; the provider's "
    "response and call ids only tell calls apart within a scope. An application that owns "
    "its store alone may pass any constant, e.g. scope='my-app'."
)
_TIMEOUT_REQUIRED = (
    "timeout=None is refused: a tool without a timeout can run past the store's "
    "retention, after which its call may run a second time. Set timeout= to the "
    f"longest a tool may take, in seconds (the default is {DEFAULT_TIMEOUT:g}); "
    "a tool may declare its own with @tools.tool(timeout=...)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """One executor's checked settings (see :class:`~toolwire.Executor` for each)."""

    scope: str
    timeout: float
    max_concurrency: int | None
    max_threads: int
    lease: float
    heartbeat_interval: float
    retention: float
    cancel_grace: float
    retry_on: tuple[type[Exception], ...]
    error_text: ErrorText
    run_on_rejection: bool
    max_binary_bytes: int

    @classmethod
    def checked(
        cls,
        *,
        scope: object,
        timeout: object,
        max_concurrency: object,
        max_threads: object,
        lease: object,
        heartbeat_interval: object,
        retention: object,
        cancel_grace: object,
        retry_on: object,
        error_text: ErrorText | None,
        run_on_rejection: bool,
        max_binary_bytes: object,
    ) -> Settings:
        """The settings, each checked (in this order); ``SettingsError`` on the first bad one."""
        checked_scope = _scope(scope)
        checked_timeout = _seconds("timeout", _required_timeout(timeout))
        concurrency = _concurrency(max_concurrency)
        threads = _count("max_threads", max_threads, least=1)
        checked_lease = _seconds("lease", lease)
        interval = _heartbeat_interval(heartbeat_interval, checked_lease)
        grace = _seconds("cancel_grace", cancel_grace)
        kept = _seconds("retention", retention)
        hook = _error_text(error_text)
        settings = cls(
            scope=checked_scope,
            timeout=checked_timeout,
            max_concurrency=concurrency,
            max_threads=threads,
            lease=checked_lease,
            heartbeat_interval=interval,
            retention=kept,
            cancel_grace=grace,
            retry_on=_exception_types(retry_on),
            error_text=hook,
            run_on_rejection=run_on_rejection,
            max_binary_bytes=_count("max_binary_bytes", max_binary_bytes, least=0),
        )
        check_retention(settings, None, settings.timeout)
        return settings


def check_retention(settings: Settings, name: str | None, timeout: float) -> None:
    """Refuse a retention the record of a call of tool ``name`` could outlive (``None``:
    the tools without a timeout of their own)."""
    needed = timeout + settings.cancel_grace + settings.lease
    if settings.retention <= needed:
        which = "the tools" if name is None else f"tool {name!r}"
        raise SettingsError(
            f"retention={settings.retention:g} s cannot hold the at-most-once promise for "
            f"{which}: a record must outlive the tool's timeout ({timeout:g} s), "
            f"the cancellation grace ({settings.cancel_grace:g} s) and the lease "
            f"({settings.lease:g} s), or a second run could execute the call while the first "
            f"may still be running. Set retention above {needed:g} s (the default is "
            f"{DEFAULT_RETENTION:g} s) or shorten the timeout."
        )


def _positive(value: object) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(value)
        and value > 0
    )


def _scope(scope: object) -> str:
    if scope is None:
        raise SettingsError(_SCOPE_REQUIRED)
    if not isinstance(scope, str):
        raise SettingsError(f"scope must be a str, not {type(scope).__name__}")
    return scope


def _required_timeout(timeout: object) -> object:
    if timeout is None:
        raise SettingsError(_TIMEOUT_REQUIRED)
    return timeout


def _seconds(name: str, value: object) -> float:
    if not _positive(value):
        raise SettingsError(f"{name} must be a positive number of seconds, not {value!r}")
    return float(value)  # type: ignore[arg-type]


def _count(name: str, value: object, *, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise SettingsError(f"{name} must be an int of at least {least}, not {value!r}")
    return value


def _concurrency(value: object) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise SettingsError(
            f"max_concurrency must be None (no limit) or an int of at least 1, not {value!r}"
        )
    return value


def _heartbeat_interval(value: object, lease: float) -> float:
    interval = lease / 3 if value is None else value
    if not _positive(interval) or interval >= lease:  # type: ignore[operator]
        raise SettingsError("heartbeat_interval must be positive and shorter than the lease")
    return float(interval)  # type: ignore[arg-type]


def _error_text(error_text: ErrorText | None) -> ErrorText:
    if error_text is None:
        return default_error_text
    if not callable(error_text):
        raise SettingsError(f"error_text must be a callable (exc, call) -> str, not {error_text!r}")
    return error_text


def _exception_types(retry_on: object) -> tuple[type[Exception], ...]:
    if isinstance(retry_on, type) or not isinstance(retry_on, Iterable):
        raise SettingsError(f"retry_on must be a tuple of exception types, not {retry_on!r}")
    types = tuple(retry_on)
    for kind in types:
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            raise SettingsError(
                f"retry_on takes Exception subclasses, not {kind!r} (a cancellation, "
                "KeyboardInterrupt or SystemExit is never a retryable failure)"
            )
    return types
