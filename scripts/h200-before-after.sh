#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root: the streaming examples of two builds side by
# side, in alternating rounds, so that a change's effect on speed is measured within one run.
#
#   bash scripts/h200-before-after.sh BEFORE AFTER [rounds, default 3]
#
# BEFORE and AFTER are folders as the bundling step makes them (`bin.tar.xz` and `unpack`, or an
# unpacked `bin/`): the examples built before and after the change. Prints each example's
# bandwidth (or time) line, labelled, round by round.
set -u -o pipefail
before=$1 after=$2 rounds=${3:-3}
for d in "$before" "$after"; do
  [ -d "$d/bin" ] || (cd "$d" && tar -xJf bin.tar.xz) || exit 2
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
status=0
for run in "saxpy 268435456" "pipeline 268435456" "pipeline 268435456 2" "copy 1073741824 2" \
           "reduce 268435456 8" "softmax 4096 4" "histogram 67108864 4"; do
  for r in $(seq "$rounds"); do
    for side in before after; do
      dir=$before; [ "$side" = after ] && dir=$after
      # An example exits with an error when its check fails.
      text=$(timeout 120 "$dir/bin/"$run 2>&1) || { status=1; echo "FAILED: $side $run"; }
      echo "$run | round $r | $side | $(echo "$text" | grep -E "bandwidth|Error" | tr '\n' ' ')"
    done
  done
done
exit $status
