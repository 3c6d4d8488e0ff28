#!/usr/bin/env bash
# Check the CLI's file streaming on a device against the openssl command, byte for byte:
#   scripts/cli_check.sh DEVICE DIR   (DIR: where the test files go, e.g. a RAM disk)
set -euo pipefail
dev=${1:-auto}; dir=${2:-/tmp}
f=$dir/cg-check-$$; trap 'rm -f $f.*' EXIT
key=000102030405060708090a0b0c0d0e0f; iv=f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff
head -c $((300 * 1024 * 1024 + 5)) /dev/urandom > $f.in
head -c $((64 * 1024 * 1024)) $f.in > $f.in16
python3 -m ciphergrid encrypt -c aes-128-ctr -K $key --iv $iv --in $f.in --out $f.ct -d "$dev" -q
openssl enc -aes-128-ctr -K $key -iv $iv -nopad -in $f.in -out $f.ref
cmp $f.ct $f.ref && echo "aes-128-ctr encrypt, 300 MiB + 5 B: identical to openssl"
python3 -m ciphergrid decrypt -c aes-256-ecb -K $key$key --in $f.in16 --out $f.pt -d "$dev" -q
openssl enc -d -aes-256-ecb -K $key$key -nopad -in $f.in16 -out $f.ref
cmp $f.pt $f.ref && echo "aes-256-ecb decrypt, 64 MiB: identical to openssl"
python3 -m ciphergrid decrypt -c aes-128-cbc -K $key --iv $iv --in $f.in16 --out $f.pt -d "$dev" -q
openssl enc -d -aes-128-cbc -K $key -iv $iv -nopad -in $f.in16 -out $f.ref
cmp $f.pt $f.ref && echo "aes-128-cbc decrypt, 64 MiB: identical to openssl"
