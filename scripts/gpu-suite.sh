#!/usr/bin/env bash
# One call on an H100/H200 machine (through the device tool, or any NVIDIA box): install the carried
# wheels, run the GPU test suite through NVIDIA OpenCL and CUDA, run the benchmarks, print a short
# table last.  Logs and JSON go to $OUT (or ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD/.whl/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
STAGE=${1:-all}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,driver_version --format=csv 2>&1 | tee "$OUT/gpu.txt"
python3 -m ciphergrid devices 2>&1 | tee "$OUT/devices.txt"
status=0
summary=()
if [ "$STAGE" = smoke ] || [ "$STAGE" = all ]; then
  for d in $(python3 -c 'import ciphergrid; print(" ".join(x.spec for x in ciphergrid.devices() if x.kind=="gpu"))'); do
    python3 scripts/smoke.py "$d" 2>&1 | tee -a "$OUT/smoke.txt"; rc=${PIPESTATUS[0]}
    summary+=("smoke $d rc=$rc"); [ $rc = 0 ] || status=1
  done
fi
if [ "$STAGE" = tests ] || [ "$STAGE" = all ]; then
  python3 -m ciphergrid selftest 2>&1 | tee "$OUT/selftest.txt" | tail -3; rc=${PIPESTATUS[0]}
  summary+=("selftest rc=$rc"); [ $rc = 0 ] || status=1
  python3 -m pytest -q -rs -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest.txt" | tail -15; rc=${PIPESTATUS[0]}
  summary+=("pytest: $(tail -1 "$OUT/pytest.txt")"); [ $rc = 0 ] || status=1
fi
if [ "$STAGE" = bench ] || [ "$STAGE" = all ]; then
  python3 -m ciphergrid bench ${BENCH_ARGS:-} --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt" | tail -40; rc=${PIPESTATUS[0]}
  summary+=("bench rc=$rc"); [ $rc = 0 ] || status=1
fi
echo; echo "== summary =="; grep -h "GB/s" "$OUT/smoke.txt" 2>/dev/null | tail -12
printf '%s\n' "${summary[@]}"
exit $status
