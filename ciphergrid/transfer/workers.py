"""Worker threads: the prepare and finish steps of the chunks (host copies, page-locking, file
reads and writes) run on these while the calling thread enqueues device work."""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future


class Workers:
    """A few daemon threads running submitted calls in FIFO order (one thread: strictly in order).

    Daemon threads, so that a thread blocked reading a pipe cannot keep an interrupted CLI alive.
    """

    def __init__(self, n: int, name: str):
        self.q: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._loop, name=f"cg-{name}-{i}", daemon=True)
                        for i in range(max(1, n))]
        for t in self.threads:
            t.start()

    def submit(self, fn, *args) -> Future:
        f: Future = Future()
        self.q.put((f, fn, args))
        return f

    def _loop(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            f, fn, args = item
            if not f.set_running_or_notify_cancel():
                continue
            try:
                f.set_result(fn(*args))
            except BaseException as e:  # noqa: BLE001 - handed to the driver
                f.set_exception(e)
            del item, f, fn, args  # an idle thread must not keep the last chunk's arrays alive

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        for _ in self.threads:
            self.q.put(None)
        if wait:
            for t in self.threads:
                t.join(timeout)
