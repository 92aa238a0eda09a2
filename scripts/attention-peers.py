"""Times PyTorch's scaled dot-product attention on the H200 with its cuDNN and flash backends,
on the shapes `examples/attention.rs` takes: bf16 [B, H, S, d], full or causal, d = 128 or 64.

    python3 scripts/attention-peers.py B H S full|causal [d]

Each backend is timed as the example times its kernel (`median_ms` of
examples/peers/torch_peers.py: a second of calls first, at whose end the clock is that of
sustained work, then the L2 flush of 128 MiB copied before each call, CUDA events around the call,
the median of 20 after 3 untimed); the line it prints gives the milliseconds and
TFLOP/s (4 B H S^2 d / t, halved for causal). A backend that does not run on the shape says so.
"""
import os
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "peers"))
from torch_peers import median_ms  # noqa: E402


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
                sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
                ms = median_ms(sdpa, warm_s=1.0)
            print(f"peer: {name} {ms:.3f} ms ({flops / ms / 1e9:.0f} TFLOP/s)")
        except RuntimeError as err:
            print(f"peer: {name} does not run here: {str(err).splitlines()[0]}")


if __name__ == "__main__":
    main()
