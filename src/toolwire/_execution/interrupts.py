"""Holding Ctrl-C back while the synchronous executor writes to its store.

While installed (on the main thread), SIGINT raises only in a wait or at
:meth:`DeferredInterrupts.deliver`, so it never cuts a store operation in two.
"""

from __future__ import annotations

import importlib
import signal
import threading
from types import FrameType, TracebackType
from typing import Any

__all__ = ["DeferredInterrupts"]

_SIGINT = int(signal.SIGINT)
try:
    # The C functions behind ``signal``: its wrappers convert every handler and number to
    # enums, which costs more than everything else a run does.
    _signals: Any = importlib.import_module("_signal")
except ImportError:  # pragma: no cover - an interpreter without the CPython module
    _signals = signal


class DeferredInterrupts:
    """A context manager that holds SIGINT back until :meth:`deliver` or a wait."""

    SLICE = 0.05
    """Longest wait, in seconds, between two looks at a held signal (while installed)."""

    def __init__(self) -> None:
        self.slice = float("inf")  # SLICE once installed
        self.waiting = False
        self.pending: tuple[int, FrameType | None] | None = None
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> DeferredInterrupts:
        if threading.current_thread() is not threading.main_thread():
            return self
        try:
            previous = _signals.getsignal(_SIGINT)
            if callable(previous):
                _signals.signal(_SIGINT, self._hold)
                self._previous = previous
                self._installed = True
                self.slice = self.SLICE
        except ValueError:  # not the main interpreter: signals never reach this thread
            pass
        return self

    def _hold(self, signum: int, frame: FrameType | None) -> None:
        if self.waiting:
            self._previous(signum, frame)  # may raise out of the wait: safe there
        else:
            self.pending = (signum, frame)

    def deliver(self) -> None:
        """Run a held-back handler now (it usually raises ``KeyboardInterrupt``)."""
        if self.pending is not None:
            signum, frame = self.pending
            self.pending = None
            self._previous(signum, frame)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Restore the previous handler; deliver a signal held until the very end."""
        if not self._installed:
            return
        self._installed = False
        _signals.signal(_SIGINT, self._previous)
        if exc_type is None:
            self.deliver()
