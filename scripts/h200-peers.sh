#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .gpu/ carried: builds the CUDA C++
# peers there (nvcc -O3 -arch=sm_90) and runs them next to the Rust examples in the same call.
set -u -o pipefail
n=${1:-268435456}
nvcc -O3 -arch=sm_90 -o /tmp/saxpy_peer examples/peers/saxpy.cu || exit 1
for round in 1 2; do
  echo "=== round $round"
  /tmp/saxpy_peer "$n"
  for per_sm in 4 8; do
    .gpu/bin/saxpy "$n" "$per_sm" | grep -E "check|bandwidth"
  done
done
