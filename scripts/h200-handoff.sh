#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .gpu/ carried: the channel handoff
# benchmark (examples/handoff.rs) and its hand-written peer (examples/peers/handoff.cu, built
# here with nvcc -O3 -arch=sm_90) in the same run.
#
#   bash scripts/h200-handoff.sh [items, default 100000]
set -u -o pipefail
items=${1:-100000}
bin=/tmp/gpu-async-peers
mkdir -p "$bin"
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
nvcc -O3 -arch=sm_90 -o "$bin/handoff" examples/peers/handoff.cu || exit 1
for round in 1 2; do
  echo "=== round $round"
  timeout 120 .gpu/bin/handoff "$items" || exit 1
  timeout 120 "$bin/handoff" "$items" || exit 1
done
