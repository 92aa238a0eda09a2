#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root: where the pipeline example stands against its
# hand-written peer, in one run. Builds examples/peers/pipeline_ablation.cu and pipeline_ptx.cu
# there (nvcc -O3 -arch=sm_90), runs the ablation (the peer with each difference of the generated
# protocol added as a flag) and the generated PTX itself next to the peer, flushed and on an idle
# stream; then, from .gpu/bin when they are there, the typed launch against a raw cudarc launch of
# the same PTX in one process (pipeline_raw) and the Rust example.
#
#   on a machine with Rust, next to building the example executables into .gpu/bin/:
#          cargo run -p gpu-async-compiler --bin gpu-async-inspect -- examples/pipeline.rs \
#            --ptx-only > .gpu/scale_shift.ptx
#   then, with .gpu/ carried, on the GPU machine:
#          bash scripts/h200-pipeline-gap.sh [elements, default 2^28] [rounds, default 5] \
#            .gpu/scale_shift.ptx [more PTX files with the same entry]
set -u -o pipefail
n=${1:-268435456}
rounds=${2:-5}
shift 2 || shift $#
bin=/tmp/gpu-async-gap
mkdir -p "$bin"
rc=0
nvcc -O3 -arch=sm_90 -o "$bin/pipeline_ablation" examples/peers/pipeline_ablation.cu || exit 1
nvcc -O3 -arch=sm_90 -o "$bin/pipeline_ptx" examples/peers/pipeline_ptx.cu -lcuda || exit 1
if [ $# -gt 0 ]; then
  timeout 300 "$bin/pipeline_ptx" "$n" "$rounds" "$@" || rc=1
else
  echo "note: no PTX file given, pipeline_ptx skipped"
fi
timeout 300 "$bin/pipeline_ablation" "$n" 3 || rc=1
if [ -x .gpu/bin/pipeline_raw ]; then
  timeout 300 .gpu/bin/pipeline_raw "$n" "$rounds" | grep -v "^check: .* 0 mismatches" || rc=1
fi
if [ -x .gpu/bin/pipeline ]; then
  for r in 1 2 3; do
    for grid in tiles 2; do .gpu/bin/pipeline "$n" "$grid" | grep -E "bandwidth" || rc=1; done
  done
fi
echo "=== h200-pipeline-gap: exit $rc"
exit $rc
