"""``RetryPolicy``: when ``run_turn`` makes its request again, and how long it waits first.

Only failures before the first byte of the body are retried. Sans-IO: the policy decides,
the turn drivers sleep. O(1) per decision.
"""

from __future__ import annotations

import email.utils
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import StreamError, UsageError

# The helpers serve run_turn; the public name is RetryPolicy.
__all__ = ["RetryPolicy"]

DEFAULT_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""HTTP statuses retried by default: timeouts, conflicts, rate limits, server errors and
Anthropic's ``overloaded`` (529), the set the ``openai`` and ``anthropic`` SDKs retry."""

# Exceptions that say the connection was never made, by class name (the SDKs are optional
# dependencies, so their classes cannot be imported here).
_CONNECTION_ERRORS = frozenset(
    {"APIConnectionError", "ConnectError", "ConnectTimeout", "EndpointConnectionError"}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How ``run_turn`` retries a request that failed before its first byte.

    - ``attempts``: requests made at most, the first included (``1``: never retry);
    - ``backoff``: seconds waited after the first failure, doubled after each one;
    - ``max_backoff``: the most any single wait lasts (unless ``Retry-After`` says more);
    - ``jitter``: the fraction of each wait taken off at random (0 to 1);
    - ``statuses``: HTTP statuses worth retrying (:data:`DEFAULT_STATUSES`);
    - ``connection_errors``: whether a connection that could not be made is retried;
    - ``max_retry_after``: the longest ``Retry-After`` honoured; a provider that asks for
      more gets its error raised at once.

    Bad settings raise :class:`UsageError`.
    """

    attempts: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    jitter: float = 0.1
    statuses: frozenset[int] = DEFAULT_STATUSES
    connection_errors: bool = True
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise UsageError(f"attempts must be an int of at least 1, not {self.attempts!r}")
        if self.attempts < 1:
            raise UsageError(f"attempts must be at least 1, not {self.attempts}")
        for name in ("backoff", "max_backoff", "max_retry_after"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UsageError(f"{name} must be a number of seconds, not {value!r}")
            if not (0 <= value < math.inf):
                raise UsageError(f"{name} must be a finite number of seconds >= 0, not {value}")
        if isinstance(self.jitter, bool) or not isinstance(self.jitter, (int, float)):
            raise UsageError(f"jitter must be a fraction between 0 and 1, not {self.jitter!r}")
        if not 0 <= self.jitter <= 1:
            raise UsageError(f"jitter must be between 0 and 1, not {self.jitter}")
        statuses = self.statuses
        if isinstance(statuses, (str, bytes)) or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in statuses
        ):
            raise UsageError(f"statuses must be a set of HTTP status codes, not {statuses!r}")
        object.__setattr__(self, "statuses", frozenset(statuses))

    def retryable(self, exc: BaseException) -> bool:
        """Whether ``exc``, raised before the first byte of the body, is worth a retry."""
        if not isinstance(exc, Exception) or isinstance(exc, (StreamError, UsageError)):
            return False  # a caller's cancellation, a begun stream, a bug: never
        status = http_status(exc)
        if status is not None:
            return status in self.statuses
        if not self.connection_errors:
            return False
        return isinstance(exc, ConnectionError) or any(
            cls.__name__ in _CONNECTION_ERRORS for cls in type(exc).__mro__
        )

    def delay(
        self,
        attempt: int,
        exc: BaseException,
        *,
        now: float,
        rand: Callable[[], float] = random.random,
    ) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` after attempt ``attempt`` (from
        1) failed with ``exc``; ``None`` when it is not retried: attempts used up, an error
        not worth retrying, or a ``Retry-After`` beyond ``max_retry_after``. ``now`` is the
        wall clock (``time.time()``), read only for a ``Retry-After`` given as a date."""
        if attempt >= self.attempts or not self.retryable(exc):
            return None
        wait = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))
        wait -= wait * self.jitter * rand()
        asked = retry_after(exc, now=now)
        if asked is not None:
            if asked > self.max_retry_after:
                return None
            wait = max(wait, asked)
        return wait


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an SDK's exception reports: ``status_code`` (openai, anthropic,
    cohere), the httpx response's (``httpx.HTTPStatusError``), ``code`` (google-genai)
    or botocore's ``ResponseMetadata``; ``None`` for anything else."""
    google = type(exc).__module__.startswith("google.")  # genai's APIError keeps it in code
    for value in (
        getattr(exc, "status_code", None),
        getattr(getattr(exc, "response", None), "status_code", None),
        getattr(exc, "code", None) if google else None,
        _botocore_status(exc),
    ):
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    return None


def _botocore_status(exc: BaseException) -> Any:
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        metadata = response.get("ResponseMetadata")
        if isinstance(metadata, Mapping):
            return metadata.get("HTTPStatusCode")
    return None


def _headers(exc: BaseException) -> Any:
    """The response headers an exception carries (an SDK's ``.response.headers``, an httpx
    response's own, botocore's ``HTTPHeaders``), or ``None``."""
    response = getattr(exc, "response", exc)
    if isinstance(response, Mapping):
        metadata = response.get("ResponseMetadata")
        return metadata.get("HTTPHeaders") if isinstance(metadata, Mapping) else None
    return getattr(response, "headers", None)


def retry_after(exc: BaseException, *, now: float) -> float | None:
    """Seconds the provider asked to wait (``retry-after-ms``, then ``Retry-After`` in
    seconds or as an HTTP date relative to ``now``), or ``None`` when it did not say."""
    headers = _headers(exc)
    if headers is None:
        return None
    try:
        millis = headers.get("retry-after-ms")
        seconds = headers.get("retry-after")
    except Exception:  # headers of an unknown kind: no advice
        return None
    for text, scale in ((millis, 1000.0), (seconds, 1.0)):
        if not isinstance(text, str):
            continue
        try:
            value = float(text) / scale
        except ValueError:
            value = _http_date(text, now) if scale == 1.0 else math.nan
        if math.isfinite(value) and value >= 0:
            return value
    return None


def _http_date(text: str, now: float) -> float:
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return math.nan
    return max(0.0, when.timestamp() - now)
