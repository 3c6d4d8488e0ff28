#!/usr/bin/env bash
# Install ciphergrid into .venv, then encrypt and decrypt a 256 MiB file on the best device present
# (a GPU if there is one, else OpenSSL on every core), check the bytes against the openssl command,
# and print the devices and the throughput.  Run as root on a machine with apt and no working
# OpenCL CPU device, setup-venv.sh first installs the system PoCL (pocl-opencl-icd), saying so in
# one line; apt's output goes to .venv/apt-pocl.log.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-venv.sh
CG=.venv/bin/ciphergrid
$CG devices
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
size_mb=${SIZE_MB:-256}
head -c $((size_mb << 20)) /dev/urandom > "$work/plain"
key=$(.venv/bin/python -c 'import os; print(os.urandom(32).hex())')
printf '%s\n' "$key" > "$work/key"; chmod 600 "$work/key"
iv=$(.venv/bin/python -c 'import os; print(os.urandom(16).hex())')
t0=$(date +%s.%N)
$CG encrypt --cipher aes-256-ctr --key-file "$work/key" --iv "$iv" --in "$work/plain" --out "$work/enc" --quiet -v
t1=$(date +%s.%N)
$CG decrypt --cipher aes-256-ctr --key-file "$work/key" --iv "$iv" --in "$work/enc" --out "$work/dec" --quiet
cmp "$work/plain" "$work/dec"
if command -v openssl >/dev/null; then
  openssl enc -aes-256-ctr -nopad -K "$key" -iv "$iv" -in "$work/plain" | cmp - "$work/enc"
  echo "aes-256-ctr output is byte-identical to openssl enc"
fi
# the same file copied and synced (ciphergrid syncs a new output before naming it): what this
# machine's filesystem gives a plain copy, for comparison
c0=$(date +%s.%N)
cat "$work/plain" > "$work/copy" && { sync "$work/copy" 2>/dev/null || sync; }
c1=$(date +%s.%N)
.venv/bin/python -c "print(f'encrypted ${size_mb} MiB file to file in {$t1-$t0:.2f} s: {${size_mb}*2**20/($t1-$t0)/1e9:.2f} GB/s (device auto, CLI end to end, output synced); cat + sync of the same file: {$c1-$c0:.2f} s ({${size_mb}*2**20/($c1-$c0)/1e9:.2f} GB/s)')"
