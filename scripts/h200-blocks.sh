#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .gpu/ carried (the example executables,
# built in release mode, in .gpu/bin/): the block-level examples at their benchmark sizes and the
# PyTorch peers of the same workloads (examples/peers/torch_peers.py --blocks), then one line per
# workload: ours, the peer, and the peer's time over ours (above 1: ours is faster).
#
#   bash scripts/h200-blocks.sh
#
# Peers: torch.bincount (histogram, 2^26 bytes, uniform and skewed), a device copy of as many
# bytes measured by the Rust example itself (transpose, 8192 x 8192 f32, and stencil, 2^28 f32),
# torch.cumsum (scan, 2^28 u32; the scan's own line also shows a device copy), torch.softmax
# (softmax, 4096 x 4096 f32); the TMA tile copy (tile_copy, 8192 x 8192 f32) prints its ratio to
# a device copy itself. The hand-written CUDA transposes of examples/peers/transpose.cu
# (built here with nvcc -O3 -arch=sm_90) run too, as a second peer of the transpose.
# Each program is bounded by BLOCKS_TIMEOUT seconds (default 90); the whole run takes about two
# minutes. Everything is also written to $OUT/blocks.log (when OUT is set).
set -u -o pipefail
out=${OUT:-/tmp}
log="$out/blocks.log"
limit=${BLOCKS_TIMEOUT:-90}
: >"$log"
rc=0

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null

run() {
  echo "=== $*" | tee -a "$log"
  if ! timeout "$limit" "$@" 2>&1 | tee -a "$log" | grep -E "^(check|bandwidth|time|Error)|peer|FAILED"; then
    echo "FAILED: $*"
    rc=1
  fi
}

for ex in "histogram 67108864" "transpose 8192" "scan 268435456" "softmax 4096" "stencil 268435456" "tile_copy 8192"; do
  set -- $ex
  if [ -x ".gpu/bin/$1" ]; then
    run ".gpu/bin/$1" "$2"
  else
    echo "note: .gpu/bin/$1 is absent (build it with cargo build --release --example $1), skipped"
    rc=1
  fi
done
run python3 examples/peers/torch_peers.py --blocks
bin=$(mktemp -d)
if nvcc -O3 -arch=sm_90 -o "$bin/transpose_peer" examples/peers/transpose.cu 2>"$bin/nvcc.log"; then
  run "$bin/transpose_peer" 8192
else
  cat "$bin/nvcc.log"
  echo "FAILED: nvcc examples/peers/transpose.cu"
  rc=1
fi

# `time: NAME MS ms` lines: ours are NAME, the peers NAME_peer (or transpose_peer_copy).
echo
printf '%-20s %12s %12s %8s  %s\n' workload "ours (ms)" "peer (ms)" ratio peer
awk '
  $1 == "time:" { t[$2] = $3 }
  END {
    n = split("histogram_uniform histogram_skewed transpose transpose scan softmax stencil", names, " ")
    for (i = 1; i <= n; i++) {
      w = names[i]
      peer = w "_peer"
      what = (w == "scan") ? "torch.cumsum" : (w == "softmax") ? "torch.softmax" : "torch.bincount"
      if (w == "transpose" || w == "stencil") { peer = w "_peer_copy"; what = "device copy" }
      if (w == "transpose" && seen_transpose++) { peer = "transpose_cuda_classic"; what = "CUDA C++ transpose (classic)" }
      if ((w in t) && (peer in t)) {
        printf "%-20s %12.4f %12.4f %8.2f  %s\n", w, t[w], t[peer], t[peer] / t[w], what
      } else {
        printf "%-20s %12s %12s %8s  %s\n", w, (w in t) ? t[w] : "-", (peer in t) ? t[peer] : "-", "-", what
      }
    }
  }
' "$log" | tee -a "$log"
exit $rc
