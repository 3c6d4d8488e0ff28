#!/usr/bin/env bash
# Create .venv (if missing) and install ciphergrid into it: `scripts/setup-venv.sh [EXTRAS]`
# (e.g. "test").  Shared by demo.sh and test.sh.
#
# The PoCL inside the pyopencl wheel (LLVM 14) cannot compile for CPUs its LLVM does not know
# (AMD Zen 5: "unknown target CPU 'generic'"); ciphergrid then does not offer that device.  When
# no OpenCL CPU device works, the system's PoCL is installed where this script may (root, apt),
# else a warning says how.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
extras=${1:-}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# (setuptools' "Editable installation" warning block is silenced: it tells a new user nothing)
PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install -q -e ".${extras:+[$extras]}"
has_cpu_device() {
  .venv/bin/python -c 'import sys; from ciphergrid.devices import all_devices
sys.exit(0 if any(x.runtime == "opencl" and x.kind == "cpu" for x in all_devices()) else 1)'
}
if ! has_cpu_device; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    # apt's and debconf's output goes to the log, which the failure message names
    log="$PWD/.venv/apt-pocl.log"
    echo "setup: no OpenCL CPU device works here (the pyopencl wheel's PoCL cannot compile for" \
         "this CPU, or there is none): installing the system PoCL with apt (pocl-opencl-icd) ..." >&2
    if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
          -o Dpkg::Use-Pty=0 pocl-opencl-icd) >"$log" 2>&1; then
      has_cpu_device || echo "setup: warning: the system PoCL is installed but offers no working" \
                             "OpenCL CPU device; OpenCL CPU tests will have no device" >&2
    else
      echo "setup: apt-get failed (its output: $log); OpenCL CPU tests will have no device" >&2
    fi
  else
    echo "setup: warning: no working OpenCL CPU device; install your system's PoCL" \
         "(Debian/Ubuntu: apt-get install pocl-opencl-icd)" >&2
  fi
fi
