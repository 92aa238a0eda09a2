#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .gpu/ carried (the example executables,
# built in release mode, in .gpu/bin/): the bf16 GEMM example at 4096^3, 8192^3 and a ragged
# shape, C = A · Bᵀ and then C = A · B (B given as K x N; the ragged shape's N is then 3000, a
# multiple of 8 as B's rows need), each checked against the exact product on sampled rows and
# against cuBLAS on every element, then timed next to cuBLAS (cublasGemmEx, bf16 in, f32 out and
# compute) in the same process. cuBLAS is loaded from /usr/local/cuda/lib64, which is not on the default library path.
#
#   bash scripts/h200-gemm.sh
#
# Each shape is bounded by GEMM_TIMEOUT seconds (default 150). Everything is also written to
# $OUT/gemm.log (when OUT is set).
set -u -o pipefail
out=${OUT:-/tmp}
log="$out/gemm.log"
limit=${GEMM_TIMEOUT:-150}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
: >"$log"
rc=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
for product in abt ab; do
  for shape in "4096 4096 4096" "8192 8192 8192" "1000 3000 520"; do
    echo "=== gemm $shape $product" | tee -a "$log"
    # shellcheck disable=SC2086 # the shape is three arguments
    if ! timeout "$limit" .gpu/bin/gemm $shape $product 2>&1 | tee -a "$log" | grep -E "^(check|time|Error)"; then
      echo "FAILED: gemm $shape $product"
      rc=1
    fi
  done
done
exit $rc
