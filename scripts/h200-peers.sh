#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .gpu/ carried: builds every CUDA C++ peer
# in examples/peers/ there (nvcc -O3 -arch=sm_90) and runs them, the PyTorch peers
# (examples/peers/torch_peers.py) and the Rust examples in the same run. A Rust executable that
# is not in .gpu/bin is skipped with a note.
#
#   bash scripts/h200-peers.sh [elements, default 2^28] [copy elements, default 2^30]
#   PEERS_TORCH_COMPILE=1 adds a torch.compile'd pipeline to the PyTorch peers; PEERS_TIMEOUT
#   (seconds, default 300) bounds each peer program, so that a hang costs one program's output;
#   PEERS_ROUNDS (default 2) is how many times the C++ peers and Rust examples run.
set -u -o pipefail
n=${1:-268435456}
ncopy=${2:-1073741824}
bin=/tmp/gpu-async-peers
mkdir -p "$bin"
rc=0
limit=${PEERS_TIMEOUT:-300}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
nvcc --version | tail -n 2 | head -n 1

# Builds every examples/peers/*.cu; prints each kernel's registers (and spills, if any).
built=()
for src in examples/peers/*.cu; do
  name=$(basename "$src" .cu)
  if nvcc -O3 -arch=sm_90 -Xptxas -v -o "$bin/$name" "$src" -lcuda 2>"$bin/$name.log"; then
    built+=("$name")
    awk -v peer="$name" '
      /Compiling entry function/ { split($0, q, "\047"); fn = q[2] }
      /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); print "build: " peer ": " fn ": " substr($0, RSTART, RLENGTH) }
      /spill/ && !/ 0 bytes spill stores, 0 bytes spill loads/ { print "build: " peer ": " fn ": " $0 }
    ' "$bin/$name.log"
  else
    cat "$bin/$name.log"
    echo "build: $src FAILED"
    rc=1
  fi
done
has() { [[ " ${built[*]} " == *" $1 "* ]]; }

# A Rust example from .gpu/bin, its check and bandwidth lines only; skipped when absent.
rust() {
  local exe=.gpu/bin/$1
  shift
  if [ -x "$exe" ]; then
    timeout "$limit" "$exe" "$@" | grep -E "check|bandwidth" || rc=1
  else
    echo "note: $exe is absent (carry .gpu/ with the bundled executables to run it), skipped"
  fi
}

for round in $(seq 1 "${PEERS_ROUNDS:-2}"); do
  echo "=== round $round"
  if has saxpy; then timeout "$limit" "$bin/saxpy" "$n" "$ncopy" || rc=1; fi
  for per_sm in 4 8; do
    rust saxpy "$n" "$per_sm"
  done
  if has pipeline_ws; then timeout "$limit" "$bin/pipeline_ws" "$n" || rc=1; fi
  for per_sm in tiles 4 8; do
    rust pipeline "$n" "$per_sm"
  done
done

echo "=== channel handoff: hand-written mbarriers and __syncthreads, then the generated kernels"
if has handoff; then timeout "$limit" "$bin/handoff" 100000 || rc=1; fi
if [ -x .gpu/bin/handoff ]; then timeout "$limit" .gpu/bin/handoff 100000 | grep handoff || rc=1; fi

echo "=== PyTorch peers"
PYTHONUNBUFFERED=1 timeout "$limit" python3 examples/peers/torch_peers.py "$n" "$ncopy" ${PEERS_TORCH_COMPILE:+--compile} || rc=1
echo "=== h200-peers: exit $rc"
exit $rc
