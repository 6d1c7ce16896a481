"""Holding Ctrl-C back while the synchronous executor writes to its store.

Strategy. ``Executor.run`` drives its calls on the calling thread, store writes included.
A ``KeyboardInterrupt`` is raised by Python's SIGINT handler at whatever bytecode the main
thread is executing; landing between a store's commit and the return of its result, it
would leave a claim that nobody knows it holds (an orphan, read ``unknown`` later although
the tool never ran). :class:`DeferredInterrupts` installs, for the duration of one run on
the main thread, a SIGINT handler that *holds* the signal: the previous handler (Python's
``default_int_handler``, or the application's own) is called later, at a point the driver
chooses, where an exception is safe:

- while the driver waits for tools (``waiting`` is true), at once: the exception leaves
  the wait, where nothing is half done;
- otherwise at the driver's next :meth:`deliver` (before a claim, before a tool starts);
- or when the run ends, if it ended before any such point.

A signal wakes a waiting main thread only if the kernel delivered it to that thread
(``_thread.interrupt_main()`` and a signal taken by another thread only set Python's flag),
so while the handler is installed the driver waits in slices of at most :attr:`slice`
seconds and delivers a held signal between them.

The handler is installed only on the main thread of the main interpreter (the only place
Python runs signal handlers) and only when the current handler is a Python callable;
``SIG_IGN`` and ``SIG_DFL`` are left alone (nothing Python-level happens there). The
previous handler is restored on exit. Guarantee: while installed, SIGINT raises nowhere
but in a wait or at :meth:`deliver`. Not guaranteed: other asynchronous exceptions
(``PyThreadState_SetAsyncExc``). Cost: two ``signal.signal`` calls per run.
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
    # enums, which costs more (about 25 µs a run) than everything else a run does.
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
