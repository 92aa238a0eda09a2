"""Times PyTorch's scaled dot-product attention on the H200 with its cuDNN and flash backends,
on the shapes `examples/attention.rs` takes: bf16 [B, H, S, d], full or causal, d = 128 or 64.

    python3 scripts/attention-peers.py B H S full|causal [d]

Each backend is timed as the example times its kernel: an L2 flush (a 256 MiB memset) before
each call, CUDA events around the call, the median of 20 after 3 untimed; the line it prints
gives the milliseconds and TFLOP/s (4 B H S^2 d / t, halved for causal). A backend that does
not run on the shape says so.
"""
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F


def time_ms(fn):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    times = []
    for _ in range(20):
        flush.zero_()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    b, h, s = (int(x) for x in sys.argv[1:4])
    causal = sys.argv[4] == "causal"
    d = int(sys.argv[5]) if len(sys.argv) > 5 else 128
    gen = torch.Generator(device="cuda").manual_seed(11)
    q, k, v = (
        torch.rand(b, h, s, d, device="cuda", generator=gen, dtype=torch.float32)
        .mul_(2)
        .sub_(1)
        .to(torch.bfloat16)
        for _ in range(3)
    )
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    for name, backend in [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)]:
        try:
            with sdpa_kernel(backend):
                ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            print(f"peer: {name} {ms:.3f} ms ({flops / ms / 1e9:.0f} TFLOP/s)")
        except RuntimeError as err:
            print(f"peer: {name} does not run here: {str(err).splitlines()[0]}")


if __name__ == "__main__":
    main()
