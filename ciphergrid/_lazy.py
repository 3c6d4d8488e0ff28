"""numpy on first use.

The command line's OpenSSL path over files and pipes needs no array, and importing numpy is a
large part of a command's start-up (docs/benchmarks.md 0c, 'Start-up').  The modules on that
path take ``np = numpy_for(__name__)`` instead of ``import numpy as np``: numpy itself when it
is imported already, else a stand-in that imports it at its first use and then puts it in the
module's place (so later uses are direct).  Values built from numpy at import time would
defeat it: those modules build them on first use.
"""

from __future__ import annotations

import sys


class _LazyNumpy:
    __slots__ = ("_owner",)

    def __init__(self, owner: str):
        self._owner = owner

    def __getattr__(self, name: str):
        import numpy

        mod = sys.modules.get(self._owner)
        if mod is not None and getattr(mod, "np", None) is self:
            mod.np = numpy
        return getattr(numpy, name)

    def __repr__(self) -> str:
        return f"<numpy, imported at first use by {self._owner}>"


def numpy_for(owner: str):
    """``np`` for the module named ``owner``."""
    return sys.modules.get("numpy") or _LazyNumpy(owner)
