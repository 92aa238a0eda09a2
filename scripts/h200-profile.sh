#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .gpu/ carried: Nsight Compute on one
# launch of a kernel of an example, the sections that say where a memory-bound kernel's time goes
# (speed of light, memory workload, occupancy, warp states, launch statistics). Each argument is
# "EXAMPLE ARGS... @KERNEL" (KERNEL: the kernel fn's name, a regex); reports go to $OUT/NAME.txt.
#
#   bash scripts/h200-profile.sh "transpose 8192 12 @transpose" "softmax 4096 4 @rows"
set -u -o pipefail
out=${OUT:-/tmp}
rc=0
for spec in "$@"; do
  kernel=${spec##*@}
  set -- ${spec%@*}
  name=$1
  shift
  echo "=== $name $* (kernel $kernel)"
  timeout 240 ncu --kernel-name "regex:^${kernel}\$" --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
    --section WarpStateStats --section LaunchStats --section SchedulerStats \
    ".gpu/bin/$name" "$@" >"$out/$name.txt" 2>&1 || rc=1
  grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Block Limit|Stall|Eligible|Issued Warp|Dynamic Shared|Static Shared|Waves" "$out/$name.txt" | head -40
done
exit $rc
