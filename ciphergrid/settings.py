"""Where ciphergrid keeps its per-machine files (the one place that decides it).

``CIPHERGRID_CACHE_DIR``, else ``$XDG_CACHE_HOME/ciphergrid``, else ``~/.cache/ciphergrid``: the
compiled OpenSSL loop helper, the OpenCL device probe, the pipeline tuning cache.
"""

from __future__ import annotations

import os
import tempfile


def cache_dir() -> str:
    """The cache folder (created, mode 0700); a fresh temporary folder if it cannot be made."""
    base = os.environ.get("CIPHERGRID_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "ciphergrid")
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        return base
    except OSError:
        return tempfile.mkdtemp(prefix="ciphergrid-")
