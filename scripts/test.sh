#!/usr/bin/env bash
# Install ciphergrid with its test extras into .venv and run the whole test suite on every device
# present (PoCL on the CPU at least; GPUs when there are any).  CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-venv.sh test
exec .venv/bin/python -m pytest -q -rs "$@"
