//! The devices a test runs its kernels on.

use gpu_async::Device;

/// The simulator, and the first CUDA device when there is one (its absence is printed, and the
/// GPU half of the test is skipped).
pub fn devices() -> Vec<Device> {
    let mut all = vec![Device::simulator()];
    match Device::cuda(0) {
        Ok(d) => all.push(d),
        Err(e) => eprintln!("GPU half skipped: no CUDA device: {e}"),
    }
    all
}
