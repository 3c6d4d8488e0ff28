#!/usr/bin/env bash
# One call on an H100/H200 machine (through the device tool, or any NVIDIA box): install the carried
# wheels, run the known-answer self-test and the GPU test suite through NVIDIA OpenCL and CUDA, the
# kernel ablation, the AES benchmark and the pipeline benchmark, and print a short table last.
# Every stage is time-boxed (STAGE_TIMEOUT_<name>) so a slow stage cannot eat the others' time;
# logs and JSON go to $OUT (or ./gpu-out).   Usage: scripts/gpu-suite.sh [stage ...]
#   stages: selftest tests ablation bench pipeline   (default: all of them, in this order)
#           api (not in the default list): ciphergrid bench api, the public API against the kernel
#             (GPU-resident 1 GiB, 4 KiB per call, one long AEAD message; API_ARGS, e.g. --mode ctr)
#           smoke (not in the default list): scripts/dev/smoke.py on every GPU, a quick check + figures
#           files (not in the default list): ciphergrid bench files (FILES_SIZES, FILES_ARGS)
#           ramdisk (not in the default list): scripts/dev/ramdisk_probe.py on $RAMDISK (default /dev/shm)
#           aead (not in the default list): ciphergrid bench aead on $CUDA, both directions, the API
#             rows paired with the copy strawman ("x copy"; AEAD_SHAPES, default 65536x16Ki;
#             AEAD_REPEATS, default 40: the API rows take half as many pairs, 20)
#           scheduler (not in the default list): ciphergrid bench scheduler host -> host, every GPU
#             alone, then all of them, then all of them and OpenSSL (SCHED_ARGS, e.g. --cipher ...)
#           gpus (not in the default list): ciphergrid bench gpus, GPU-resident data on every GPU
#             at once, the peer links, one array over every GPU (GPUS_ARGS)
#           study-PART (not in the default list): one part of ciphergrid bench study (practices,
#             ciphers, energy) into $OUT/study, the report rebuilt from the parts there
#             (docs/study.md; each part within 8 minutes on an H200: one part per device call)
#           goals (not in the default list): scripts/dev/goals.py, every open GPU goal of the issues
#             in one table (goal, figure, bound, met / missed / unmeasured; <= 9 minutes); its first
#             stage, kernel, the AES-128-CTR kernels of the default and each CTR step side by side
#             (GOALS_ARGS="--stages kernel" runs that one alone)
#   TESTS="tests/x.py ..." replaces the test files of the tests stage
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
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
stages=("$@"); [ ${#stages[@]} -gt 0 ] || stages=(selftest tests ablation bench pipeline)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,driver_version --format=csv 2>&1 | tee "$OUT/gpu.txt"
python3 -m ciphergrid devices 2>&1 | tee "$OUT/devices.txt"
GPUS=$(python3 -c 'import ciphergrid; print(",".join(x.spec for x in ciphergrid.devices() if x.kind=="gpu"))')
CUDA=$(python3 -c 'import ciphergrid; print(next((x.spec for x in ciphergrid.devices() if x.runtime=="cuda"), ""))')
status=0
summary=()
run() {  # run NAME TIMEOUT CMD...: time-boxed, logged to $OUT/NAME.txt
  local name=$1 limit=$2; shift 2
  echo "== $name: $*"
  timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1; local rc=$?
  tail -n "${TAIL:-25}" "$OUT/$name.txt"
  summary+=("$(printf '%-10s rc=%-3s %s' "$name" "$rc" "$(grep -E 'passed|failed|error' "$OUT/$name.txt" | tail -1 | cut -c1-110)")")
  [ $rc = 0 ] || status=1
}
for s in "${stages[@]}"; do
  case $s in
    goals) echo "== goals: scripts/dev/goals.py"
           timeout "${STAGE_TIMEOUT_goals:-540}" python3 scripts/dev/goals.py --out "$OUT" ${GOALS_ARGS:-} 2>&1 \
             | tee "$OUT/goals.txt"; [ "${PIPESTATUS[0]}" = 0 ] || status=1 ;;
    api) run api "${STAGE_TIMEOUT_api:-400}" python3 -m ciphergrid bench api --device "$CUDA" \
             --json "$OUT/api.json" ${API_ARGS:-} ;;
    smoke) for d in ${GPUS//,/ }; do run "smoke-${d//:/-}" "${STAGE_TIMEOUT_smoke:-300}" python3 scripts/dev/smoke.py "$d"; done ;;
    selftest) for d in ${GPUS//,/ }; do run "selftest-${d//:/-}" "${STAGE_TIMEOUT_selftest:-150}" python3 -m ciphergrid selftest --device "$d" --quiet; done ;;
    tests) CIPHERGRID_TEST_DEVICES="$GPUS,native" run tests "${STAGE_TIMEOUT_tests:-420}" \
             python3 -m pytest -q -rs -p no:cacheprovider ${TESTS:-tests/test_kat.py tests/test_differential.py \
             tests/test_streaming.py tests/test_constant_time.py tests/test_implementations.py \
             tests/test_pipeline.py tests/test_errors.py tests/test_api_out.py tests/test_gpu_resident.py \
             tests/test_toy_cipher.py tests/test_route.py tests/test_api.py \
             tests/test_aead_resident.py tests/test_sealed_resident.py tests/test_call_cost.py} ;;
    ramdisk) run ramdisk "${STAGE_TIMEOUT_ramdisk:-150}" python3 scripts/dev/ramdisk_probe.py "${RAMDISK:-/dev/shm}" \
             --device "$CUDA" --size "${RAMDISK_SIZE:-8Gi}" --cli ${RAMDISK_ARGS:-} ;;
    ablation) run ablation "${STAGE_TIMEOUT_ablation:-260}" python3 -m ciphergrid bench ablation \
             $(for d in ${GPUS//,/ }; do echo --device "$d"; done) --json "$OUT/ablation.json" ;;
    bench) run bench "${STAGE_TIMEOUT_bench:-240}" python3 -m ciphergrid bench --device "$CUDA" --device openssl \
             --cipher aes --direction "${BENCH_DIRECTION:-both}" --sizes ${BENCH_SIZES:-16,1Ki,16Ki,1Mi,16Mi,256Mi} \
             --json "$OUT/bench.json" ;;
    pipeline) run pipeline "${STAGE_TIMEOUT_pipeline:-150}" python3 -m ciphergrid bench pipeline \
             --device "$CUDA" --cipher aes-128-ctr ${PIPELINE_ARGS:---sizes 16Mi,256Mi,1Gi,4Gi} --json "$OUT/pipeline.json" ;;
    aead) run aead "${STAGE_TIMEOUT_aead:-300}" python3 -m ciphergrid bench aead --device "$CUDA" \
             --aead-shapes "${AEAD_SHAPES:-65536x16Ki}" --direction both --no-openssl --repeats "${AEAD_REPEATS:-40}" \
             --json "$OUT/aead.json" ;;
    files) run files "${STAGE_TIMEOUT_files:-500}" python3 -m ciphergrid bench files \
             --files-sizes "${FILES_SIZES:-256Mi,1Gi,4Gi}" ${FILES_ARGS:-} --json "$OUT/files.json" ;;
    scheduler) CUDAS=$(python3 -c 'import ciphergrid; print(",".join(x.spec for x in ciphergrid.devices() if x.runtime=="cuda"))')
             run scheduler "${STAGE_TIMEOUT_scheduler:-400}" python3 -m ciphergrid bench scheduler \
             --sched-size 4Gi --repeats 3 --sched-devices "$CUDAS" --sched-devices "$CUDAS,native" \
             ${SCHED_ARGS:---cipher aes-128-ctr,camellia-128-ctr,aes-128-gcm} --json "$OUT/scheduler.json" ;;
    gpus) run gpus "${STAGE_TIMEOUT_gpus:-200}" python3 -m ciphergrid bench gpus ${GPUS_ARGS:-} --json "$OUT/gpus.json" ;;
    study-*) run "$s" "${STAGE_TIMEOUT_study:-480}" python3 -m ciphergrid bench study --part "${s#study-}" \
             --study-dir "$OUT/study" ;;
    *) echo "unknown stage $s"; status=1 ;;
  esac
done
echo; echo "== summary ($(date -u +%F), $(head -2 "$OUT/gpu.txt" | tail -1 | cut -d, -f1))"
grep -hE "^(cuda|opencl)" "$OUT/ablation.txt" 2>/dev/null | sort -k3 -rn | head -6
printf '%s\n' "${summary[@]}"
exit $status
