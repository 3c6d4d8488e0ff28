"""SIGINT, SIGTERM and SIGHUP as an exception in the main thread, so that every cleanup runs.

The command line installs :func:`install`; the signal then raises :class:`Interrupted` wherever the
main thread is (a wait, a read), except inside :func:`deferred` blocks: there it is held until the
block ends, so that a write and the count of the bytes it wrote are never torn apart.  A second
signal while one is held raises at once; one arriving while the first is being handled (the
cleanup) is ignored.  After :func:`hold` (a rank of an MPI job) a signal is held until the code
asks for it (:func:`check`), or raised where it lands inside :func:`interruptible` blocks.
"""

from __future__ import annotations

import _signal as signal   # (signal's own functions and numbers, without its enums' import)
import contextlib
import sys

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A signal, raised in the main thread; ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_state = {"raised": False, "pending": None, "deferring": 0, "ending": False, "holding": False,
          "interruptible": False}


def _handler(signum, frame):
    if _state["raised"]:  # cleaning up after the first: let the cleanup finish
        return
    if _state["holding"] and not _state["interruptible"]:
        if _state["pending"] is None:
            _state["pending"] = signum  # raised by check()
        return
    if _state["deferring"] and _state["pending"] is None:
        _state["pending"] = signum  # raised when the deferred block ends
        return
    _state["raised"] = True
    raise Interrupted(signum)


def install() -> None:
    _state.update(raised=False, pending=None, deferring=0, ending=False, holding=False,
                  interruptible=False)
    for sig in SIGNALS:
        try:
            signal.signal(sig, _handler)
        except (ValueError, OSError):  # not the main thread, or not settable
            pass


def restore() -> None:
    for sig in SIGNALS:
        try:
            if _state["ending"]:
                signal.signal(sig, signal.SIG_IGN)
            else:
                signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
        except (ValueError, OSError):
            pass


def hold() -> None:
    """From now on a signal is held, not raised where it lands: :func:`check` raises it where the
    code looks for it (a rank of an MPI job, between two messages or two ranges, so that none is
    cut in two)."""
    _state["holding"] = True


def check() -> None:
    """Raise the signal held (once)."""
    sig = _state["pending"]
    if _state["holding"] and sig is not None and not _state["raised"]:
        _state["pending"] = None
        _state["raised"] = True
        raise Interrupted(sig)


@contextlib.contextmanager
def interruptible():
    """While holding: a block where a signal is raised where it lands (a wait on a pipe that may
    stay silent for ever)."""
    check()
    _state["interruptible"] = True
    try:
        yield
    finally:
        _state["interruptible"] = False


def ending() -> None:
    """The process ends after its cleanup, with an exit code already decided: from now on these
    signals are ignored (restore() leaves them so), so that one arriving late (a signal sent to
    every rank of an MPI job) cannot change how it ends."""
    _state["ending"] = True
    restore()


@contextlib.contextmanager
def deferred():
    """Hold a signal until the block ends (then raise it).  Signals reach the main thread only:
    elsewhere this does nothing."""
    threading = sys.modules.get("threading")   # (not imported: no thread but the main one)
    if threading is not None and threading.current_thread() is not threading.main_thread():
        yield
        return
    _state["deferring"] += 1
    try:
        yield
    finally:
        _state["deferring"] -= 1
        sig = _state["pending"]
        if sig is not None and not _state["deferring"] and not _state["raised"]:
            _state["pending"] = None
            _state["raised"] = True
            raise Interrupted(sig)
