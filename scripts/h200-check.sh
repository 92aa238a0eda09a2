#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .gpu/ carried (the test and example
# executables, built in release mode on a machine with Rust, in .gpu/bin/): every GPU test
# (heavy ones included) with a time bound each, then the examples at a few sizes and grids.
# Everything is also written under $OUT (when set) for later reading.
set -u -o pipefail
out=${OUT:-/tmp}
export RUST_BACKTRACE=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
status=0
for t in test-examples test-bulk_copies test-channel_ends test-language test-differential test-reductions test-arrays test-warps test-barriers test-concurrency test-register_budgets test-device_failures test-abort_protocol test-executors test-streams test-buffer_lifetimes test-cuda_backend test-shared_arrays test-launch_lifecycle test-tracing test-simulator test-gpu_async-lib test-cuda_fault test-closing test-parts test-slot_values test-edges; do
  echo "=== $t"
  timeout 240 ".gpu/bin/$t" --include-ignored 2>&1 | tee "$out/$t.log" | grep -E "^test |test result|panicked" || status=1
  # A failing test prints its result line too: the status must come from the result itself.
  if grep -q "test result: FAILED" "$out/$t.log" || ! grep -q "test result: ok" "$out/$t.log"; then
    echo "FAILED: $t"
    grep -E -A12 "panicked|assertion" "$out/$t.log" | head -40
    status=1
  fi
done
for ex in saxpy pipeline stencil; do
  for n in 5000000 268435456; do
    for per_sm in tiles 4 8; do
      echo "=== $ex n=$n grid=$per_sm"
      timeout 120 ".gpu/bin/$ex" "$n" "$per_sm" 2>&1 | tee -a "$out/examples.log" | grep -E "check|bandwidth|Error" || status=1
    done
  done
done
for run in "join_cost 100000" "async_demos"; do
  echo "=== $run"
  timeout 120 .gpu/bin/$run 2>&1 | tee -a "$out/examples.log" | grep -E "check|cost|Error" || status=1
done
for run in "copy 1073741824 2" "copy 1073741824 3" "copy 1073741824 4" "reduce 268435456 4" "reduce 268435456 8" "softmax 4096 tiles" "softmax 4096 4" "histogram 67108864 4" "histogram 67108864 8" "transpose 8192" "transpose 4096" "scan 268435456" "scan 5000000"; do
  echo "=== $run"
  timeout 120 .gpu/bin/$run 2>&1 | tee -a "$out/examples.log" | grep -E "check|bandwidth|Error" || status=1
done
exit $status
