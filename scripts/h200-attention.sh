#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .gpu/ carried (the example executables,
# built in release mode, in .gpu/bin/): the attention example on H = 16, B · S = 16384 at
# S = 4096, 8192 and 16384, full and causal, and a ragged S, with d = 128 and then d = 64, each
# checked against the exact result on sampled rows and timed after a second of the same launches
# (the clock of sustained work); after each, PyTorch's scaled dot-product attention with its cuDNN
# and flash backends on the same shape, timed the same way (scripts/attention-peers.py).
#
#   bash scripts/h200-attention.sh
set -u -o pipefail
rc=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>/dev/null
for d in 128 64; do
  for mask in full causal; do
    for shape in "4 16 4096" "2 16 8192" "1 16 16384" "1 16 1000"; do
      echo "=== attention $shape $mask $d"
      # shellcheck disable=SC2086 # the shape is three arguments
      if ! timeout 300 .gpu/bin/attention $shape $mask $d 2>&1 | grep -E "^(check|time|Error)"; then
        echo "FAILED: attention $shape $mask $d"
        rc=1
      fi
      # shellcheck disable=SC2086
      python3 scripts/attention-peers.py $shape $mask $d 2>&1 | grep -E "^peer|Error"
    done
  done
done
exit $rc
