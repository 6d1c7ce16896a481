"""How ``astream()`` reads an async source until an absolute instant, and closes it shielded.

A read returns by its instant unless the source ignores cancellation; the caller's own
cancellation always propagates; the close never outlives its grace period.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import types
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from .flow import END, LATE, Item
from .sources import Readable

__all__ = ["AsyncReader", "close_async", "run_shielded"]

clock = time.monotonic


class AsyncReader:
    """Reads an async source in the caller's task, each read bounded by its instant."""

    def __init__(self, source: Readable) -> None:
        target = source.items
        self._iterator: AsyncIterator[Any] = aiter(
            target.aiter_bytes() if source.as_bytes else target
        )
        self._derived = self._iterator if self._iterator is not target else None

    async def read(self, until: float | None) -> Any:
        """The next :class:`Item`, ``END``, or ``LATE`` once ``until`` passed; the source's
        exceptions propagate."""
        iterator = self._iterator
        if until is None:
            try:
                return Item(await iterator.__anext__(), clock())
            except StopAsyncIteration:
                return END
        import anyio

        with anyio.move_on_after(until - clock()):
            try:
                return Item(await iterator.__anext__(), clock())
            except StopAsyncIteration:
                return END
        return LATE

    async def close(self, source: Any) -> BaseException | None:
        """Close the async generator we made over the source, then ``source``; the first
        error, never raised."""
        error = None
        derived = self._derived
        if isinstance(derived, types.AsyncGeneratorType):
            error = await close_async(derived)  # aiter_bytes(), an SDK's __aiter__
        if source is not None:
            error = error or await close_async(source)
        return error


async def close_async(obj: Any) -> BaseException | None:
    """``await obj.aclose()``, or ``obj.close()`` (awaited if it returns an awaitable);
    an object with neither is left alone. Returns what it raised."""
    close = getattr(obj, "aclose", None)
    if not callable(close):
        close = getattr(obj, "close", None)
    if not callable(close):
        return None
    try:
        result = close()
        if inspect.isawaitable(result):
            await result
    except Exception as exc:  # never masks the error that made us close
        return exc
    return None


async def run_shielded(step: Callable[[], Awaitable[None]], grace: float) -> None:
    """Run ``step()`` to its end, for ``grace`` seconds at most, whatever cancellation
    the caller receives meanwhile; such a cancellation is re-raised once it is over."""
    import anyio

    task = asyncio.ensure_future(step())
    task.add_done_callback(_retrieve)
    loop = asyncio.get_running_loop()
    until = loop.time() + grace
    cancelled = False
    with anyio.CancelScope(shield=True):
        while not task.done():
            left = until - loop.time()
            if left <= 0:
                task.cancel()  # a close that hangs is abandoned, not waited for forever
                break
            try:
                await asyncio.wait({task}, timeout=left)
            except asyncio.CancelledError:
                cancelled = True  # a plain task.cancel(): finish closing first
    if cancelled:
        raise asyncio.CancelledError


def _retrieve(task: asyncio.Future[None]) -> None:
    # an abandoned close may fail later: retrieve it so asyncio does not log it as lost
    if not task.cancelled():
        task.exception()
