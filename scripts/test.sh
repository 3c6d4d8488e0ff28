#!/usr/bin/env bash
# Install ciphergrid with its test extras into .venv and run the whole test suite on every device
# present (PoCL on the CPU at least; GPUs when there are any).  CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"
exec .venv/bin/python -m pytest -q -rs "$@"
