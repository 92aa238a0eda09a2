"""PyTorch peers of the gpu-async examples, for docs/benchmarks.md, run on the GPU machine by
scripts/h200-peers.sh next to the CUDA C++ peers and the Rust examples.

  saxpy     y.add_(x, alpha=a)                    12 bytes per element (read x, y; write y)
  copy      dst.copy_(src)                         8 bytes per element
  pipeline  torch.add(x * a, b, out=y)             8 bytes per element counted (read x, write y);
            two kernels, so the device really moves 16 (x*a goes through a temporary)
  pipeline fused  torch.add(b, x, alpha=a, out=y)  one kernel, b a 0-d tensor (may contract to FMA)
  pipeline compiled  torch.compile(lambda x: x * a + b)   only with --compile (Triton, one kernel)

Random inputs from a fixed seed (drawn on the GPU), every output element compared with a CPU
reference bit for bit (outputs poisoned with NaN first where the op is not in place), 3 warm-ups,
median of 20 runs between torch.cuda.Event pairs, each after an L2 flush (flush_l2), and in the same process a dst.copy_(src) of as
many bytes, timed the same way: GB/s counts bytes read plus bytes written.

  python3 examples/peers/torch_peers.py [elements, default 2^28] [copy elements, default 2^30] [--compile]

With --blocks, the peers of the block-level examples instead (scripts/h200-blocks.sh), each
checked against the CPU and printed as a `time: NAME MS ms` line as the Rust examples print theirs:

  histogram  torch.bincount(x, minlength=256) of 2^26 uint8, uniform and skewed (half of the bytes
             in the 16 bins 0x40..0x50, as examples/histogram.rs draws them)
  scan       torch.cumsum(x, 0, dtype=torch.int32) of 2^28 int32 (inclusive; the Rust example is
             exclusive, the same traffic), and dst.copy_(x) of as many bytes
  softmax    torch.softmax(x, dim=1) of 4096 x 4096 float32 logits in [-20, 20)

  python3 examples/peers/torch_peers.py --blocks
"""

import sys
import time

import torch


# Before each timed run, untimed: a copy of 128 MiB between two scratch tensors on the same
# stream, as the Rust examples (gpu_async::bench::Timing) and the C++ peers (peer_common.cuh) do.
# It evicts the L2 and keeps the GPU busy while the run is enqueued, so that the time is the
# GPU's and not the host's submission of the run.
_flush = {}


def flush_l2():
    if not _flush:
        words = (128 << 20) // 4
        _flush["src"] = torch.empty(words, dtype=torch.int32, device="cuda")
        _flush["dst"] = torch.empty(words, dtype=torch.int32, device="cuda")
    _flush["dst"].copy_(_flush["src"])


def median_ms(fn, warmup=3, iters=20, warm_s=0.0):
    """The median of `iters` timed calls of `fn`, each after an L2 flush, after `warmup` untimed
    calls; with `warm_s`, first runs flush and call, waited for, until that many seconds have
    passed (gpu_async::bench::warm_for: the clock of sustained work)."""
    start = time.monotonic()
    while time.monotonic() - start < warm_s:
        flush_l2()
        fn()
        torch.cuda.synchronize()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        flush_l2()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]  # the same element as the C++ peers take


def gbs(nbytes, ms):
    return nbytes / (ms * 1e-3) / 1e9


def mismatches(got, ref):
    """Elements whose float32 bits differ (a NaN left in `got` counts)."""
    return int((got.view(torch.int32) != ref.view(torch.int32)).sum())


def uniform(n, gen):
    # torch.rand draws multiples of 2^-24 in [0, 1); 2r - 1 is exact: multiples of 2^-23 in [-1, 1).
    return torch.rand(n, device="cuda", generator=gen, dtype=torch.float32) * 2 - 1


def blocks():
    """The peers of examples/histogram.rs, scan.rs and softmax.rs; returns the failures."""
    dev = torch.cuda.get_device_properties(0)
    print(f"torch block peers: torch {torch.__version__}, {dev.name}", flush=True)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(4321)
    failures = 0

    # ---- histogram: torch.bincount of 2^26 bytes.
    n = 1 << 26
    for kind in ("uniform", "skewed"):
        x = torch.randint(0, 256, (n,), device="cuda", generator=gen, dtype=torch.uint8)
        if kind == "skewed":
            hot = torch.randint(0x40, 0x50, (n,), device="cuda", generator=gen, dtype=torch.uint8)
            coin = torch.randint(0, 2, (n,), device="cuda", generator=gen, dtype=torch.uint8)
            x = torch.where(coin == 1, hot, x)
        got = torch.bincount(x, minlength=256)
        want = torch.bincount(x.cpu().long(), minlength=256)
        bad = int((got.cpu() != want).sum())
        failures += bad
        ms = median_ms(lambda: torch.bincount(x, minlength=256))
        print(f"histogram {kind} peer: torch.bincount, {n} bytes, {bad} bins differ: {ms:.3f} ms", flush=True)
        print(f"time: histogram_{kind}_peer {ms:.4f} ms", flush=True)
        del x

    # ---- scan: torch.cumsum of 2^28 int32, wrapping.
    n = 1 << 28
    x = torch.randint(-(1 << 31), (1 << 31) - 1, (n,), device="cuda", generator=gen, dtype=torch.int32)
    y = torch.cumsum(x, 0, dtype=torch.int32)
    want = torch.cumsum(x.cpu().long(), 0) & 0xFFFFFFFF
    got = y.cpu().long() & 0xFFFFFFFF
    bad = int((got != want).sum())
    failures += bad
    del want, got
    ms = median_ms(lambda: torch.cumsum(x, 0, dtype=torch.int32))
    dst = torch.empty_like(x)
    cms = median_ms(lambda: dst.copy_(x))
    print(f"scan peer: torch.cumsum(dtype=int32), {n} elements, {bad} mismatches: {ms:.3f} ms, "
          f"copy_ {cms:.3f} ms", flush=True)
    print(f"time: scan_peer {ms:.4f} ms", flush=True)
    del x, y, dst

    # ---- softmax: torch.softmax of 4096 x 4096 float32.
    rows = cols = 4096
    x = torch.rand(rows, cols, device="cuda", generator=gen, dtype=torch.float32) * 40 - 20
    y = torch.softmax(x, dim=1)
    ref = torch.softmax(x.cpu().double(), dim=1)
    worst = float(((y.cpu().double() - ref).abs() / ref).max())
    ok = worst <= 1e-5
    failures += 0 if ok else 1
    ms = median_ms(lambda: torch.softmax(x, dim=1))
    print(f"softmax peer: torch.softmax(dim=1), {rows} x {cols}, largest relative error {worst:.2e}: "
          f"{ms:.3f} ms", flush=True)
    print(f"time: softmax_peer {ms:.4f} ms", flush=True)

    print(f"torch block peers: {'all checks passed' if failures == 0 else 'CHECKS FAILED'}",
          flush=True)
    return failures


def main():
    if "--blocks" in sys.argv:
        return 0 if blocks() == 0 else 1
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    compile_too = "--compile" in sys.argv
    n = int(args[0]) if len(args) > 0 else 1 << 28
    ncopy = int(args[1]) if len(args) > 1 else 1 << 30
    dev = torch.cuda.get_device_properties(0)
    print(f"torch peers: torch {torch.__version__}, {dev.name}, {dev.multi_processor_count} SMs, "
          f"n = {n}, copy n = {ncopy}", flush=True)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    failures = 0

    # Copy buffers, sliced below for the byte counts of the other workloads.
    cap = max(ncopy, (3 * n) // 2, n)
    src = uniform(cap, gen)
    dst = torch.empty_like(src)

    def copy_ms(m):
        s, d = src[:m], dst[:m]
        return median_ms(lambda: d.copy_(s))

    # ---- copy: dst.copy_(src) at ncopy floats.
    dst.fill_(float("nan"))
    dst[:ncopy].copy_(src[:ncopy])
    bad = mismatches(dst[:ncopy].cpu(), src[:ncopy].cpu())
    failures += bad
    cms = copy_ms(ncopy)
    cg = gbs(8 * ncopy, cms)
    print(f"copy peer: torch dst.copy_(src), {ncopy} elements, {bad} mismatches: {cg:.0f} GB/s ({cms:.3f} ms), "
          f"ratio 1.00 (it is the copy)", flush=True)

    # ---- saxpy: y.add_(x, alpha=a), in place.
    a = 1.5
    x = uniform(n, gen)
    y = uniform(n, gen)
    xc, yc = x.cpu(), y.cpu()
    y.add_(x, alpha=a)
    got = y.cpu()
    fused = (yc.double() + a * xc.double()).float()  # exact in f64, so one rounding: fmaf
    unfused = yc + xc * a                              # a*x rounded, then + y rounded
    bf, bu = mismatches(got, fused), mismatches(got, unfused)
    failures += min(bf, bu)
    kms = median_ms(lambda: y.add_(x, alpha=-0.5))
    sms = copy_ms((3 * n) // 2)  # 6n bytes each way: 12 bytes per saxpy element
    kg, sg = gbs(12 * n, kms), gbs(12 * n, sms)
    print(f"saxpy peer: torch y.add_(x, alpha=a), {n} elements, {bf} mismatches against fmaf, {bu} against "
          f"a*x then +y: {kg:.0f} GB/s ({kms:.3f} ms), copy_ {sg:.0f} GB/s ({sms:.3f} ms), ratio {kg / sg:.2f}",
          flush=True)
    del x, y, xc, yc, got, fused, unfused

    # ---- pipeline: y = a*x + b.
    pms = copy_ms(n)  # 4n bytes each way
    pg = gbs(8 * n, pms)
    x = uniform(n, gen)
    xc = x.cpu()
    y = torch.empty_like(x)

    def check_pipeline(name, fn, a, b):
        y.fill_(float("nan"))
        fn(a, b)
        got = y.cpu()
        unfused = xc * a + b  # two CPU ops: each rounded to f32, no contraction
        fused_ref = (xc.double() * a + b).float()  # x*a exact in f64 here, so one rounding: fmaf
        bu, bf = mismatches(got, unfused), mismatches(got, fused_ref)
        return bu, bf

    b_tensors = {}

    def b_tensor(b):  # made once per value, so that no host-to-device copy is timed
        if b not in b_tensors:
            b_tensors[b] = torch.tensor(b, device="cuda", dtype=torch.float32)
        return b_tensors[b]

    variants = [
        ("pipeline peer: torch.add(x * a, b, out=y) (two kernels)",
         lambda a, b: torch.add(x * a, b, out=y)),
        ("pipeline fused peer: torch.add(b, x, alpha=a, out=y) (one kernel, b a 0-d tensor)",
         lambda a, b: torch.add(b_tensor(b), x, alpha=a, out=y)),
    ]
    if compile_too:
        compiled = torch.compile(lambda x, a, b: x * a + b)

        def run_compiled(a, b):
            y.copy_(compiled(x, a, b))  # torch.compile returns a new tensor; copy_ adds a pass

        def run_compiled_only(a, b):
            return compiled(x, a, b)

        variants.append(("pipeline compiled peer: torch.compile(x * a + b) (Triton; timed without the copy into y)",
                         run_compiled))
    for name, fn in variants:
        a, b = 0.75, -0.25
        bu, bf = check_pipeline(name, fn, a, b)
        # The Rust kernel does mul.rn then add.rn: the two-op torch form must match that exactly.
        failures += bu if "two kernels" in name else min(bu, bf)
        if "compiled" in name:
            ms = median_ms(lambda: run_compiled_only(2.0, 1.0))
        else:
            ms = median_ms(lambda: fn(2.0, 1.0))
        g = gbs(8 * n, ms)
        print(f"{name}, {n} elements, {bu} mismatches against (a*x)+b unfused, {bf} against fmaf: "
              f"{g:.0f} GB/s ({ms:.3f} ms, 8 bytes/element counted), copy_ {pg:.0f} GB/s ({pms:.3f} ms), "
              f"ratio {g / pg:.2f}", flush=True)

    print(f"torch peers: {'all checks passed' if failures == 0 else 'CHECKS FAILED'}, {failures} mismatches",
          flush=True)
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
