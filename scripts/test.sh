#!/usr/bin/env bash
# Install ciphergrid with its test extras into .venv and run the whole test suite on every device
# present (PoCL on the CPU at least; GPUs when there are any).  CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-venv.sh test
# Two test processes by default (pytest-xdist; a whole file per process at a time): on CPUs the
# suite's time is mostly PoCL compiling kernels, one core per compile (CI's two cores, empty
# kernel cache: 18.9 min in one process, 9.4 min in two).  CIPHERGRID_TEST_WORKERS=1: one process.
workers=${CIPHERGRID_TEST_WORKERS:-2}
par=()
if [ "$workers" -gt 1 ]; then par=(-n "$workers" --dist loadfile); fi
exec .venv/bin/python -m pytest -q -rs ${par[@]+"${par[@]}"} "$@"
