//! The GPU of a `#[needs_gpu]` test.

use gpu_async::Device;

/// CUDA device 0. Without one the test fails, saying why: a `#[needs_gpu]` test is ignored where
/// the build found no GPU, so it runs without one only when asked to (`--include-ignored`).
#[track_caller]
pub fn gpu() -> Device {
    match Device::cuda(0) {
        Ok(device) => device,
        Err(e) => panic!("this test needs an NVIDIA GPU: {e}"),
    }
}
